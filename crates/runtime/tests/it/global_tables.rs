//! Global tables on the runtime (docs/global-tables.md): the global store is
//! restored from its topic in full before processing starts, so with the global
//! topic written before the stream input the join's output is the driver's on 1,
//! 2 and 4 lanes; a restarted application restores the store from its topic
//! again; a global record written while the application runs reaches later
//! stream records through the global thread; a global store kept by user code
//! (`add_global_store`) read by a processor gives the driver's output.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stoatflow_log::{
    EmbeddedLog, Log, Record as LogRecord, Timestamp, TopicPartition, TopicSpec,
    TransactionalProducer,
};
use stoatflow_runtime::{AppState, StreamsApp, partition_for_key};
use stoatflow_streams::{
    Consumed, GlobalStoreWriter, Materialized, ProcessError, Processor, ProcessorContext, Produced,
    Record, Serdes, StreamsBuilder, StreamsConfig, Topology,
};
use stoatflow_testing::TopologyTestDriver;

use crate::support::{config, read_topic, start_and_finish};

const STREAM: &str = "orders";
const GLOBAL: &str = "customers";
const OUT: &str = "enriched";
const STREAM_PARTITIONS: u32 = 4;
/// Another count than the stream's: a global topic needs no co-partitioning.
const GLOBAL_PARTITIONS: u32 = 3;

/// `(key, value)`, `None` a delete.
type Row = (String, Option<String>);

fn topology() -> Topology {
    let mut b = StreamsBuilder::new();
    let customers = b.global_table(
        GLOBAL,
        Consumed::with(Serdes::string(), Serdes::string()),
        Materialized::as_("customers-store"),
    );
    b.stream(STREAM, Consumed::with(Serdes::string(), Serdes::string()))
        .left_join_global(
            &customers,
            |_: &String, v: &String| v.split(',').nth(1).map(str::to_owned),
            |v: &String, c: Option<&String>| format!("{v}+{}", c.map_or("null", String::as_str)),
        )
        .to(OUT, Produced::with(Serdes::string(), Serdes::string()));
    b.build().unwrap()
}

/// Customers `c0..c6`, then `c1` deleted and `c2` updated.
fn customers() -> Vec<Row> {
    let mut rows: Vec<Row> = (0..7)
        .map(|i| (format!("c{i}"), Some(format!("name{i}"))))
        .collect();
    rows.push(("c1".into(), None));
    rows.push(("c2".into(), Some("renamed2".into())));
    rows
}

/// Orders `o<i>` of customer `c<i % 9>` (`c7`, `c8` have no row); every tenth has
/// no customer at all.
fn orders(from: usize, to: usize) -> Vec<Row> {
    (from..to)
        .map(|i| {
            let value = match i % 10 {
                0 => format!("order{i}"),
                _ => format!("order{i},c{}", i % 9),
            };
            (format!("o{i}"), Some(value))
        })
        .collect()
}

fn produce(log: &EmbeddedLog, topic: &str, partitions: u32, rows: &[Row]) {
    let mut producer = log
        .transactional_producer(&format!("input-{topic}"))
        .unwrap();
    producer.begin().unwrap();
    for (i, (k, v)) in rows.iter().enumerate() {
        let record = LogRecord::new(
            Some(k.as_bytes()),
            v.as_deref().map(str::as_bytes),
            Timestamp(i as i64),
        );
        let tp = TopicPartition::new(topic, partition_for_key(k.as_bytes(), partitions));
        producer.send(&tp, &record).unwrap();
    }
    producer.commit().unwrap();
}

fn new_log() -> Arc<EmbeddedLog> {
    let log = Arc::new(EmbeddedLog::in_memory());
    log.create_topic(&TopicSpec::new(STREAM, STREAM_PARTITIONS))
        .unwrap();
    log.create_topic(&TopicSpec::new(GLOBAL, GLOBAL_PARTITIONS))
        .unwrap();
    log.create_topic(&TopicSpec::new(OUT, STREAM_PARTITIONS))
        .unwrap();
    log
}

fn output(log: &EmbeddedLog) -> BTreeSet<(String, String)> {
    read_topic(log, OUT, STREAM_PARTITIONS)
        .into_iter()
        .map(|r| {
            let text = |b: Option<Vec<u8>>| String::from_utf8(b.unwrap()).unwrap();
            (text(r.record.key), text(r.record.value))
        })
        .collect()
}

/// The driver's output for the global rows piped first, then the orders.
fn driver_output(orders: &[Row]) -> BTreeSet<(String, String)> {
    let driver = TopologyTestDriver::new(topology(), StreamsConfig::new("driver")).unwrap();
    let g = driver.create_input_topic(GLOBAL, Serdes::string(), Serdes::nullable(Serdes::string()));
    for (k, v) in customers() {
        g.pipe_input_with_timestamp(k, v, 0).unwrap();
    }
    let s = driver.create_input_topic(STREAM, Serdes::string(), Serdes::string());
    for (k, v) in orders {
        s.pipe_input_with_timestamp(k.clone(), v.clone().unwrap(), 0)
            .unwrap();
    }
    let out = driver.create_output_topic(OUT, Serdes::string(), Serdes::string());
    out.read_key_values_to_list().unwrap().into_iter().collect()
}

fn run(log: &Arc<EmbeddedLog>, app: &str, lanes: usize) {
    let mut app = StreamsApp::with_log(topology(), config(app, lanes), log.clone()).unwrap();
    start_and_finish(&mut app);
}

#[test]
fn the_join_sees_the_whole_global_topic_on_every_lane_count() {
    let orders = orders(0, 60);
    let expected = driver_output(&orders);
    assert!(expected.contains(&("o2".into(), "order2,c2+renamed2".into())));
    assert!(expected.contains(&("o1".into(), "order1,c1+null".into())));
    for lanes in [1, 2, 4] {
        let log = new_log();
        produce(&log, GLOBAL, GLOBAL_PARTITIONS, &customers());
        produce(&log, STREAM, STREAM_PARTITIONS, &orders);
        run(&log, &format!("global-{lanes}"), lanes);
        assert_eq!(output(&log), expected, "{lanes} lanes");
    }
}

#[test]
fn a_restart_restores_the_global_store_from_its_topic() {
    let (first, second) = (orders(0, 30), orders(30, 60));
    let log = new_log();
    produce(&log, GLOBAL, GLOBAL_PARTITIONS, &customers());
    produce(&log, STREAM, STREAM_PARTITIONS, &first);
    run(&log, "global-restart", 2);
    produce(&log, STREAM, STREAM_PARTITIONS, &second);
    run(&log, "global-restart", 2);
    let all: Vec<Row> = first.into_iter().chain(second).collect();
    assert_eq!(output(&log), driver_output(&all));
}

#[test]
fn a_global_record_written_while_running_reaches_later_stream_records() {
    let log = new_log();
    let mut app = StreamsApp::with_log(topology(), config("global-live", 2), log.clone()).unwrap();
    app.start().unwrap();
    produce(
        &log,
        GLOBAL,
        GLOBAL_PARTITIONS,
        &[("c7".into(), Some("late7".into()))],
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut i = 0;
    let joined = loop {
        assert!(
            Instant::now() < deadline,
            "the global update never reached the join"
        );
        produce(
            &log,
            STREAM,
            STREAM_PARTITIONS,
            &[(format!("p{i}"), Some(format!("probe{i},c7")))],
        );
        assert!(app.wait_until_caught_up(Duration::from_secs(30)).unwrap());
        let out = output(&log);
        if let Some(hit) = out.iter().find(|(_, v)| v.ends_with("+late7")) {
            break hit.clone();
        }
        i += 1;
    };
    assert!(joined.1.starts_with("probe"), "{joined:?}");
    assert!(app.close(Duration::from_secs(30)));
}

/// Reads customer names from the store `add_global_store` keeps (upper-cased).
struct NameOf;

impl Processor<String, String, String, String> for NameOf {
    fn process(
        &mut self,
        ctx: &mut ProcessorContext<'_, String, String>,
        r: Record<String, String>,
    ) -> Result<(), ProcessError> {
        let store = ctx.global_store::<String, String>("names").expect("names");
        let customer = r.value.split(',').nth(1).unwrap_or("").to_owned();
        let name = store.get(&customer).map_or("?".to_owned(), |v| v.value);
        ctx.forward(Record::new(
            r.key,
            format!("{}:{name}", r.value),
            r.timestamp,
        ))
    }
}

fn kept_by_user_code() -> Topology {
    let mut b = StreamsBuilder::new();
    b.add_global_store(
        "names",
        GLOBAL,
        Consumed::with(Serdes::string(), Serdes::string()),
        |w: &mut GlobalStoreWriter<'_, String, String>, r: Record<String, Option<String>>| {
            match r.value {
                Some(v) => w.put(r.key, v.to_uppercase()),
                None => w.delete(&r.key),
            }
            Ok(())
        },
    );
    b.stream(STREAM, Consumed::with(Serdes::string(), Serdes::string()))
        .process(|| NameOf, &[])
        .to(OUT, Produced::with(Serdes::string(), Serdes::string()));
    b.build().unwrap()
}

#[test]
fn a_global_store_kept_by_user_code_gives_the_drivers_output() {
    let orders = orders(0, 40);
    let driver =
        TopologyTestDriver::new(kept_by_user_code(), StreamsConfig::new("driver")).unwrap();
    let g = driver.create_input_topic(GLOBAL, Serdes::string(), Serdes::nullable(Serdes::string()));
    for (k, v) in customers() {
        g.pipe_input_with_timestamp(k, v, 0).unwrap();
    }
    let s = driver.create_input_topic(STREAM, Serdes::string(), Serdes::string());
    for (k, v) in &orders {
        s.pipe_input_with_timestamp(k.clone(), v.clone().unwrap(), 0)
            .unwrap();
    }
    let out = driver.create_output_topic(OUT, Serdes::string(), Serdes::string());
    let expected: BTreeSet<(String, String)> =
        out.read_key_values_to_list().unwrap().into_iter().collect();
    assert!(expected.contains(&("o2".into(), "order2,c2:RENAMED2".into())));
    let log = new_log();
    produce(&log, GLOBAL, GLOBAL_PARTITIONS, &customers());
    produce(&log, STREAM, STREAM_PARTITIONS, &orders);
    let mut app =
        StreamsApp::with_log(kept_by_user_code(), config("kept", 2), log.clone()).unwrap();
    start_and_finish(&mut app);
    assert_eq!(output(&log), expected);
}

#[test]
fn a_global_record_that_does_not_deserialize_stops_the_application_naming_it() {
    let log = new_log();
    let mut app = StreamsApp::with_log(topology(), config("global-bad", 2), log.clone()).unwrap();
    app.start().unwrap();
    assert_eq!(
        app.wait_for_state(AppState::Running, Duration::from_secs(30)),
        AppState::Running
    );
    let mut producer = log.transactional_producer("bad-input").unwrap();
    producer.begin().unwrap();
    let bad = LogRecord::new(Some(b"c1"), Some(&[0xff, 0xfe]), Timestamp(0));
    producer
        .send(&TopicPartition::new(GLOBAL, 0), &bad)
        .unwrap();
    producer.commit().unwrap();
    assert_eq!(
        app.wait_for_state(AppState::Error, Duration::from_secs(30)),
        AppState::Error
    );
    let error = app.error().expect("the error").to_string();
    assert!(
        error.contains("global thread")
            && error.contains(GLOBAL)
            && error.contains("partition 0 offset 0"),
        "{error}"
    );
}
