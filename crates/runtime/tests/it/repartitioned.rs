//! `Repartitioned` with a partition count on the runtime: the repartition
//! topic is created with that count and the sub-topology reading it runs
//! that many tasks, with the driver's output on 1, 2 and 4 lanes; an
//! existing topic of another count is refused naming it; a repartition topic
//! co-read with it takes its count (Kafka Streams'
//! `shouldDeductNumberOfPartitionsFromRepartitionOperation`), and an external
//! topic of another count is refused naming both.

use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::{EmbeddedLog, Log, TopicSpec};
use stoatflow_runtime::StreamsApp;
use stoatflow_streams::{
    EmitStrategy, JoinWindows, Produced, Repartitioned, Serdes, StreamJoined, StreamsBuilder,
    StreamsConfig, TimeWindows, Topology,
};
use stoatflow_testing::TopologyTestDriver;

use crate::families::{OTHER, Raw, read_raw};
use crate::support::*;

const NAME: &str = "by-prefix";

/// A re-key to the key's first two characters, through a repartition topic
/// of `partitions` partitions named [`NAME`], then a windowed count.
fn rekeyed_count(partitions: u32) -> Topology {
    let mut b = StreamsBuilder::new();
    source(&mut b, INPUT)
        .select_key(|k: &String, _: &i64| k.chars().take(2).collect::<String>())
        .repartition(
            Repartitioned::with(Serdes::string(), Serdes::i64())
                .with_name(NAME)
                .with_number_of_partitions(partitions),
        )
        .group_by_key()
        .windowed_by(TimeWindows::of_size_and_grace(
            Duration::from_secs(10),
            Duration::from_secs(5),
        ))
        .emit_strategy(EmitStrategy::on_window_close())
        .count()
        .to_stream()
        .to(
            OUTPUT,
            Produced::with(
                Serdes::time_windowed(Serdes::string(), 10_000),
                Serdes::i64(),
            ),
        );
    b.build().unwrap()
}

/// The driver's output over `records`, sorted, sentinels left out.
fn driver_output(topology: Topology, records: &[Input]) -> Raw {
    let driver = TopologyTestDriver::new(topology, StreamsConfig::new("driver")).unwrap();
    let input = driver.create_input_topic(INPUT, Serdes::string(), Serdes::i64());
    let output = driver.create_output_topic(OUTPUT, Serdes::bytes(), Serdes::bytes());
    for r in records {
        input
            .pipe_input_with_timestamp(r.key.clone(), r.value, r.ts)
            .unwrap();
    }
    let mut out: Raw = output
        .read_key_values_to_list()
        .unwrap()
        .into_iter()
        .filter(|(k, _): &(Vec<u8>, Vec<u8>)| !k.starts_with(b"end"))
        .collect();
    out.sort();
    out
}

#[test]
fn the_repartition_topic_has_the_given_count_and_its_reader_as_many_tasks() {
    let records = input(300, 40, 101);
    for partitions in [1, 4] {
        let expected = driver_output(rekeyed_count(partitions), &records);
        assert!(!expected.is_empty());
        for lanes in [1, 2, 4] {
            let app_id = format!("repartitioned-{partitions}-{lanes}");
            let log = log_with_input(&records, 50);
            let mut app = StreamsApp::with_log(
                rekeyed_count(partitions),
                config(&app_id, lanes),
                log.clone(),
            )
            .unwrap();
            start_and_finish(&mut app);
            let topic = format!("{app_id}-{NAME}-repartition");
            let shape = log.describe_topic(&topic).unwrap().expect("created");
            assert_eq!(shape.partitions, partitions, "{topic}");
            let downstream: Vec<u32> = app
                .assignment()
                .active
                .iter()
                .filter(|t| t.subtopology == 1)
                .map(|t| t.partition)
                .collect();
            assert_eq!(
                downstream,
                (0..partitions).collect::<Vec<_>>(),
                "{partitions} partitions, {lanes} lanes"
            );
            assert_eq!(
                read_raw(&*log),
                expected,
                "{partitions} partitions, {lanes} lanes"
            );
        }
    }
}

#[test]
fn an_existing_repartition_topic_of_another_count_is_refused_naming_it() {
    let log = log_with_input(&input(20, 3, 102), 10);
    let topic = format!("stale-{NAME}-repartition");
    log.create_topic(&TopicSpec::new(topic.as_str(), 3))
        .unwrap();
    let mut app = StreamsApp::with_log(rekeyed_count(2), config("stale", 1), log.clone()).unwrap();
    let error = match app.start() {
        Err(e) => e.to_string(),
        Ok(()) => starts_into_error_after_start(&mut app),
    };
    for part in [topic.as_str(), "3 partitions", "2 partitions"] {
        assert!(error.contains(part), "{part:?} not in {error}");
    }
    assert_eq!(log.describe_topic(&topic).unwrap().unwrap().partitions, 3);
}

/// The error that stopped an app already started.
fn starts_into_error_after_start<L: Log + 'static>(app: &mut StreamsApp<L>) -> String {
    assert_eq!(
        app.wait_for_state(stoatflow_runtime::AppState::Error, Duration::from_secs(10)),
        stoatflow_runtime::AppState::Error
    );
    app.error()
        .expect("an app in ERROR has its error")
        .to_string()
}

/// The input repartitioned to `partitions`, joined with [`OTHER`] re-keyed
/// (so repartitioned too, with no count of its own).
fn repartitioned_join(partitions: u32) -> Topology {
    let mut b = StreamsBuilder::new();
    let other = source(&mut b, OTHER).select_key(|k: &String, _: &i64| k.clone());
    source(&mut b, INPUT)
        .repartition(
            Repartitioned::as_("join-repartition-test").with_number_of_partitions(partitions),
        )
        .join(
            &other,
            |l: &i64, r: &i64| l * 1_000_000 + r,
            JoinWindows::of_time_difference_and_grace(
                Duration::from_secs(1),
                Duration::from_secs(5),
            ),
            StreamJoined::with(Serdes::string(), Serdes::i64(), Serdes::i64()),
        )
        .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
    b.build().unwrap()
}

#[test]
fn a_repartition_topic_joined_with_a_counted_one_takes_its_count() {
    let records = input(100, 5, 103);
    let log = log_with_input(&records, 50);
    log.create_topic(&TopicSpec::new(OTHER, PARTITIONS))
        .unwrap();
    produce_to(&*log, OTHER, &records, 50);
    let mut app =
        StreamsApp::with_log(repartitioned_join(2), config("deduce", 2), log.clone()).unwrap();
    start_and_finish(&mut app);
    let counted = log
        .describe_topic("deduce-join-repartition-test-repartition")
        .unwrap()
        .expect("created");
    assert_eq!(counted.partitions, 2);
    let other_side: Vec<String> = log
        .topics()
        .into_iter()
        .map(|spec| spec.name)
        .filter(|t| {
            t.starts_with("deduce-")
                && t.ends_with("-repartition")
                && t != "deduce-join-repartition-test-repartition"
        })
        .collect();
    assert_eq!(other_side.len(), 1, "{other_side:?}");
    let shape = log.describe_topic(&other_side[0]).unwrap().unwrap();
    assert_eq!(shape.partitions, 2, "{}", other_side[0]);
    assert!(!read_raw(&*log).is_empty(), "the join matched nothing");
}

#[test]
fn a_counted_repartition_topic_co_read_with_an_external_topic_of_another_count_is_refused() {
    // The join reads the repartition topic (2 partitions) with OTHER as it
    // is (3 partitions): not co-partitioned.
    let mut b = StreamsBuilder::new();
    let other = source(&mut b, OTHER);
    source(&mut b, INPUT)
        .repartition(Repartitioned::as_("two").with_number_of_partitions(2))
        .join(
            &other,
            |l: &i64, r: &i64| l + r,
            JoinWindows::of_time_difference_and_grace(
                Duration::from_secs(1),
                Duration::from_secs(5),
            ),
            StreamJoined::with(Serdes::string(), Serdes::i64(), Serdes::i64()),
        )
        .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
    let log: Arc<EmbeddedLog> = log_with_input(&input(10, 2, 104), 10);
    log.create_topic(&TopicSpec::new(OTHER, PARTITIONS))
        .unwrap();
    let mut app =
        StreamsApp::with_log(b.build().unwrap(), config("apart", 1), log.clone()).unwrap();
    let error = match app.start() {
        Err(e) => e.to_string(),
        Ok(()) => starts_into_error_after_start(&mut app),
    };
    for part in ["two-repartition", "2 partitions", OTHER, "3 partitions"] {
        assert!(error.contains(part), "{part:?} not in {error}");
    }
}
