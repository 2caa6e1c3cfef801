//! Dynamic sinks on the runtime: records go to the topics their extractor
//! picks, partitioned by key as a named sink's, committed with the epoch,
//! the same as the driver's on 1, 2 and 4 lanes; a topic that does not exist
//! goes to the production handler (fail names the topic and the record,
//! continue drops and counts it); an internal topic stops the application.
//! `dynamic_tumbling` is the crash enumeration's dynamic-sink family.

use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::{EmbeddedLog, Log, TopicSpec};
use stoatflow_runtime::StreamsApp;
use stoatflow_streams::{
    DropReason, EmitStrategy, Produced, ProductionHandler, RecordContext, Serdes, StreamsBuilder,
    StreamsConfig, TimeWindows, Topology, Windowed,
};
use stoatflow_testing::TopologyTestDriver;

use crate::support::*;

const EVENS: &str = "evens";
const ODDS: &str = "odds";
const ROUTED: [&str; 2] = [EVENS, ODDS];

/// Values routed by parity, or to `missing` when a multiple of three (when
/// given one).
fn routed(missing: Option<&'static str>) -> Topology {
    let mut b = StreamsBuilder::new();
    source(&mut b, INPUT).to_dynamic(
        move |_: &String, v: &i64, _: &RecordContext<'_>| match missing {
            Some(topic) if v % 3 == 0 => topic.to_owned(),
            _ if v % 2 == 0 => EVENS.to_owned(),
            _ => ODDS.to_owned(),
        },
        Produced::with(Serdes::string(), Serdes::i64()),
    );
    b.build().unwrap()
}

/// A tumbling count's final results written through a dynamic sink, which
/// names [`OUTPUT`] afresh for every record (the crash enumeration's
/// dynamic-sink family: its output must commit with the epoch as a named
/// sink's does).
pub(crate) fn dynamic_tumbling() -> Topology {
    let mut b = StreamsBuilder::new();
    source(&mut b, INPUT)
        .group_by_key()
        .windowed_by(TimeWindows::of_size_and_grace(
            Duration::from_millis(WINDOW_MS as u64),
            Duration::from_millis(GRACE_MS as u64),
        ))
        .emit_strategy(EmitStrategy::on_window_close())
        .count()
        .to_stream()
        .to_dynamic(
            |_: &Windowed<String>, _: &Option<i64>, _: &RecordContext<'_>| OUTPUT.to_owned(),
            Produced::with(
                Serdes::time_windowed(Serdes::string(), WINDOW_MS),
                Serdes::i64(),
            ),
        );
    b.build().unwrap()
}

/// A log with the input written and the routed topics created, of as many
/// partitions as the input.
fn routed_log(records: &[Input]) -> Arc<EmbeddedLog> {
    let log = log_with_input(records, 50);
    for topic in ROUTED {
        log.create_topic(&TopicSpec::new(topic, PARTITIONS))
            .unwrap();
    }
    log
}

/// Per routed topic, its committed (key, value) records, sorted, and where
/// each went: every key must land in the partition Kafka's partitioner gives it.
fn committed(log: &EmbeddedLog) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    ROUTED
        .iter()
        .map(|topic| {
            let mut records: Vec<_> = read_topic(log, topic, PARTITIONS)
                .into_iter()
                .map(|r| {
                    let key = r.record.key.unwrap();
                    assert_eq!(
                        r.partition.partition.0,
                        stoatflow_runtime::partition_for_key(&key, PARTITIONS),
                        "{topic}: a record outside its key's partition"
                    );
                    (key, r.record.value.unwrap())
                })
                .collect();
            records.sort();
            records
        })
        .collect()
}

/// The driver's output for the same input, per routed topic, sorted.
fn driver_routed(topology: Topology, records: &[Input]) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    let driver = TopologyTestDriver::new(topology, StreamsConfig::new("driver")).unwrap();
    let input = driver.create_input_topic(INPUT, Serdes::string(), Serdes::i64());
    for r in records {
        input
            .pipe_input_with_timestamp(r.key.clone(), r.value, r.ts)
            .unwrap();
    }
    ROUTED
        .iter()
        .map(|topic| {
            let out = driver.create_output_topic(topic, Serdes::bytes(), Serdes::bytes());
            let mut records = out.read_key_values_to_list().unwrap();
            records.sort();
            records
        })
        .collect()
}

#[test]
fn records_go_to_the_topics_their_extractor_picks_as_under_the_driver() {
    let records = input(300, 7, 91);
    let expected = driver_routed(routed(None), &records);
    assert!(expected.iter().all(|t| !t.is_empty()), "{expected:?}");
    assert_eq!(
        expected.iter().map(Vec::len).sum::<usize>(),
        records.len(),
        "every record routed once"
    );
    for lanes in [1, 2, 4] {
        let log = routed_log(&records);
        let mut app = StreamsApp::with_log(
            routed(None),
            config(&format!("dynamic-{lanes}"), lanes),
            log.clone(),
        )
        .unwrap();
        start_and_finish(&mut app);
        assert_eq!(committed(&log), expected, "{lanes} lanes");
    }
}

#[test]
fn a_record_for_a_missing_topic_fails_the_application_naming_topic_and_record() {
    let records = input(60, 3, 92);
    let log = routed_log(&records);
    let mut app =
        StreamsApp::with_log(routed(Some("nowhere")), config("missing", 2), log.clone()).unwrap();
    let error = starts_into_error(&mut app).to_string();
    for part in [
        "nowhere",
        "does not exist",
        "the record with key \"k",
        "from topic events",
    ] {
        assert!(error.contains(part), "{part:?} not in {error}");
    }
}

#[test]
fn under_continue_a_record_for_a_missing_topic_is_dropped_and_counted() {
    let records = input(300, 7, 93);
    let missing = records.iter().filter(|r| r.value % 3 == 0).count();
    assert!(missing > 0);
    let mut expected = driver_routed(routed(None), &records);
    let not_missing =
        |(_, v): &(Vec<u8>, Vec<u8>)| i64::from_be_bytes(v.as_slice().try_into().unwrap()) % 3 != 0;
    for topic in &mut expected {
        topic.retain(not_missing);
    }
    for lanes in [1, 2, 4] {
        let log = routed_log(&records);
        let config = config(&format!("continue-{lanes}"), lanes).with_streams(
            StreamsConfig::new(format!("continue-{lanes}"))
                .with_production_handler(ProductionHandler::Continue),
        );
        let mut app = StreamsApp::with_log(routed(Some("nowhere")), config, log.clone()).unwrap();
        start_and_finish(&mut app);
        assert_eq!(committed(&log), expected, "{lanes} lanes");
        let metrics = app.handle().metrics();
        let dropped = metrics
            .dropped
            .iter()
            .find(|(r, _)| *r == DropReason::MissingTopic)
            .map(|(_, n)| *n);
        assert_eq!(dropped, Some(missing as u64), "{lanes} lanes");
        assert!(log.describe_topic("nowhere").unwrap().is_none());
    }
}

#[test]
fn a_topic_created_before_a_restart_is_written_after_it() {
    // Every record goes to a topic the log does not have at the start;
    // the test creates it once the application has failed on it, and a new
    // application on the same log writes there.
    let records = input(40, 3, 94);
    let log = routed_log(&records);
    let mut app =
        StreamsApp::with_log(routed(Some("later")), config("later", 1), log.clone()).unwrap();
    assert!(starts_into_error(&mut app).to_string().contains("later"));
    drop(app);
    log.create_topic(&TopicSpec::new("later", 2)).unwrap();
    let mut app =
        StreamsApp::with_log(routed(Some("later")), config("later", 1), log.clone()).unwrap();
    start_and_finish(&mut app);
    let later = read_topic(&*log, "later", 2);
    assert_eq!(
        later.len(),
        records.iter().filter(|r| r.value % 3 == 0).count()
    );
}

#[test]
fn an_internal_topic_picked_by_a_dynamic_sink_stops_the_application() {
    let records = input(20, 3, 95);
    let log = routed_log(&records);
    let mut b = StreamsBuilder::new();
    let src = source(&mut b, INPUT);
    let _counts = src.group_by_key().count();
    src.to_dynamic(
        |_: &String, _: &i64, _: &RecordContext<'_>| {
            "own-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog".to_owned()
        },
        Produced::with(Serdes::string(), Serdes::i64()),
    );
    let mut app = StreamsApp::with_log(b.build().unwrap(), config("own", 1), log.clone()).unwrap();
    let error = starts_into_error(&mut app).to_string();
    assert!(error.contains("internal topic"), "{error}");
    assert!(
        error.contains("own-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog"),
        "{error}"
    );
}
