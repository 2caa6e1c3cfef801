//! The runtime end to end on a real broker: a windowed count under
//! exactly-once, crashed (the app dropped mid-run: its open transaction is
//! never committed, and the next producer with its transactional id fences
//! it), restarted, and closed. Read committed, every final result is there
//! exactly once with the count of the records it covers. And the same
//! count under at-least-once: no transaction, its offsets committed as the
//! group's member while it runs; after a crash there, every window at
//! least once, with at least its count.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stoatflow_kafka::KafkaLog;
use stoatflow_log::{
    Consumer, FetchedRecord, Log, Record, SeekTo, Timestamp, TopicPartition, TopicSpec,
    TransactionalProducer,
};
use stoatflow_runtime::{
    AppState, Backend, CommitBarrierConfig, ProcessingGuarantee, RuntimeConfig, StreamsApp,
    partition_for_key,
};
use stoatflow_streams::{
    Consumed, EmitStrategy, Produced, Serde, Serdes, StreamsBuilder, TimeWindows, Topology,
    Windowed,
};
use stoatflow_time::WatermarkStrategy;

use crate::broker::TestBroker;

pub(crate) const INPUT: &str = "orders";
pub(crate) const OUTPUT: &str = "order-counts";
pub(crate) const PARTITIONS: u32 = 3;
const WINDOW_MS: i64 = 10_000;
pub(crate) const START: i64 = 1_790_000_000_000;

pub(crate) fn topology() -> Topology {
    let mut b = StreamsBuilder::new();
    b.stream(
        INPUT,
        Consumed::with(Serdes::string(), Serdes::i64()).with_watermark_strategy(
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(3)),
        ),
    )
    .group_by_key()
    .windowed_by(TimeWindows::of_size_and_grace(
        Duration::from_millis(WINDOW_MS as u64),
        Duration::from_secs(5),
    ))
    .emit_strategy(EmitStrategy::on_window_close())
    .count()
    .to_stream()
    .to(
        OUTPUT,
        Produced::with(
            Serdes::time_windowed(Serdes::string(), WINDOW_MS),
            Serdes::i64(),
        ),
    );
    b.build().unwrap()
}

/// (key, time) pairs: 400 records over 6 keys, 100 ms apart, then one
/// far-future record per partition so every earlier window closes.
fn input() -> Vec<(String, i64)> {
    let mut out = records(400);
    out.extend(sentinels());
    out
}

/// `n` (key, time) pairs over 6 keys, 100 ms apart, up to 600 ms out of order.
pub(crate) fn records(n: i64) -> Vec<(String, i64)> {
    (0..n)
        .map(|i: i64| {
            (
                format!("shop{}", (i * 7) % 6),
                START + i * 100 - (i * 13 % 7) * 100,
            )
        })
        .collect()
}

/// One far-future record per partition: every earlier window closes.
pub(crate) fn sentinels() -> Vec<(String, i64)> {
    sentinels_of(PARTITIONS)
}

/// [`sentinels`] for an input of `partitions` partitions.
pub(crate) fn sentinels_of(partitions: u32) -> Vec<(String, i64)> {
    (0..partitions)
        .map(|p| {
            let key = (0..)
                .map(|i| format!("end{i}"))
                .find(|k| partition_for_key(k.as_bytes(), partitions) == p)
                .unwrap();
            (key, START + 100_000_000)
        })
        .collect()
}

pub(crate) fn expected(input: &[(String, i64)]) -> BTreeMap<(String, i64), Vec<i64>> {
    let mut out: BTreeMap<(String, i64), Vec<i64>> = BTreeMap::new();
    for (k, ts) in input.iter().filter(|(k, _)| !k.starts_with("end")) {
        let counts = out
            .entry((k.clone(), ts - ts % WINDOW_MS))
            .or_insert(vec![0]);
        counts[0] += 1;
    }
    out
}

pub(crate) fn produce(log: &KafkaLog, records: &[(String, i64)]) {
    produce_of(log, records, PARTITIONS);
}

/// [`produce`] to an input of `partitions` partitions.
pub(crate) fn produce_of(log: &KafkaLog, records: &[(String, i64)], partitions: u32) {
    let mut producer = log.transactional_producer("input-writer").unwrap();
    for chunk in records.chunks(100) {
        producer.begin().unwrap();
        for (k, ts) in chunk {
            let p = partition_for_key(k.as_bytes(), partitions);
            let r = Record::new(
                Some(k.as_bytes()),
                Some(&1i64.to_be_bytes()),
                Timestamp(*ts),
            );
            producer.send(&TopicPartition::new(INPUT, p), &r).unwrap();
        }
        producer.commit().unwrap();
    }
}

/// The committed output; a read that finds nothing is repeated for a few
/// seconds (a fresh consumer can see end offsets of 0 until the broker's
/// metadata reaches it), so an empty result is a real one.
pub(crate) fn read_committed(log: &KafkaLog) -> BTreeMap<(String, i64), Vec<i64>> {
    read_committed_of(log, PARTITIONS)
}

/// [`read_committed`] of an output topic of `partitions` partitions.
pub(crate) fn read_committed_of(
    log: &KafkaLog,
    partitions: u32,
) -> BTreeMap<(String, i64), Vec<i64>> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = read_committed_once(log, partitions);
        if !out.is_empty() || Instant::now() > deadline {
            return out;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn read_committed_once(log: &KafkaLog, partitions: u32) -> BTreeMap<(String, i64), Vec<i64>> {
    let serde = Serdes::time_windowed(Serdes::string(), WINDOW_MS);
    let mut out: BTreeMap<(String, i64), Vec<i64>> = BTreeMap::new();
    for r in read_topic_of(log, OUTPUT, partitions) {
        let w: Windowed<String> = serde.deserialize(OUTPUT, &r.record.key.unwrap()).unwrap();
        let v = i64::from_be_bytes(r.record.value.unwrap().try_into().unwrap());
        out.entry((w.key, w.window.start)).or_default().push(v);
    }
    out.retain(|(k, _), _| !k.starts_with("end"));
    out
}

/// Every committed record of `topic`, in offset order per partition.
pub(crate) fn read_topic(log: &KafkaLog, topic: &str) -> Vec<FetchedRecord> {
    read_topic_of(log, topic, PARTITIONS)
}

/// [`read_topic`] of a topic of `partitions` partitions.
pub(crate) fn read_topic_of(log: &KafkaLog, topic: &str, partitions: u32) -> Vec<FetchedRecord> {
    let mut consumer = log.consumer("verifier").unwrap();
    let tps: Vec<_> = (0..partitions)
        .map(|p| TopicPartition::new(topic, p))
        .collect();
    consumer.assign(&tps).unwrap();
    let mut ends = Vec::new();
    for tp in &tps {
        consumer.seek(tp, SeekTo::Beginning).unwrap();
        ends.push(consumer.end_offset(tp).unwrap());
    }
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while tps
        .iter()
        .zip(&ends)
        .any(|(tp, end)| consumer.position(tp).unwrap() < *end)
    {
        assert!(Instant::now() < deadline, "{topic} not readable to its end");
        out.extend(consumer.fetch(Duration::from_millis(200)).unwrap());
    }
    out
}

fn config() -> RuntimeConfig {
    config_for("eos-app")
}

/// The application's configuration under `app_id`: 2 lanes, a 150 ms
/// barrier, and windowed changelogs kept for ten years past their stores'
/// retention: the broker judges a changelog's retention against the wall
/// clock, and the input is stamped at [`START`], months before it (with the
/// default margin the broker deletes the windows a restart must restore).
pub(crate) fn config_for(app_id: &str) -> RuntimeConfig {
    RuntimeConfig::new(app_id, Backend::InMemory)
        .with_lanes(2)
        .with_barrier(CommitBarrierConfig {
            interval: Duration::from_millis(150),
            ..CommitBarrierConfig::default()
        })
        .with_windowstore_changelog_additional_retention(Duration::from_secs(10 * 365 * 86_400))
}

/// A broker for `test` with the input and output topics created.
fn broker_with_topics(test: &str) -> (TestBroker, Arc<KafkaLog>) {
    let broker = TestBroker::start(test);
    let log = Arc::new(broker.log());
    log.create_topic(&TopicSpec::new(INPUT, PARTITIONS))
        .unwrap();
    log.create_topic(&TopicSpec::new(OUTPUT, PARTITIONS))
        .unwrap();
    (broker, log)
}

/// Runs the app on `log` until two barriers committed, then drops it
/// without `close`: a crash mid-run.
fn crash_after_two_barriers(log: &Arc<KafkaLog>, config: RuntimeConfig) {
    let mut app = StreamsApp::with_log(topology(), config, log.clone()).unwrap();
    app.start().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while app.committed_barriers() < 2 && Instant::now() < deadline {
        assert_ne!(app.state(), AppState::Error, "{:?}", app.error());
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        app.committed_barriers() >= 2,
        "no barrier committed on the broker"
    );
}

#[test]
fn runtime_on_kafka_crash_restart_commits_each_final_result_once() {
    let (_broker, log) =
        broker_with_topics("runtime_on_kafka_crash_restart_commits_each_final_result_once");
    let records = input();
    let (first, rest) = records.split_at(200);
    produce(&log, first);
    crash_after_two_barriers(&log, config());
    produce(&log, rest);
    let mut app = StreamsApp::with_log(topology(), config(), log.clone()).unwrap();
    app.start().unwrap();
    finish(&mut app);
    assert_eq!(read_committed(&log), expected(&records));
}

#[test]
fn runtime_on_kafka_at_least_once_commits_its_offsets_as_the_groups_member() {
    let (_broker, log) = broker_with_topics(
        "runtime_on_kafka_at_least_once_commits_its_offsets_as_the_groups_member",
    );
    let records = input();
    produce(&log, &records);
    let app_id = "alos-app";
    let config = config_for(app_id).with_guarantee(ProcessingGuarantee::AtLeastOnce);
    let inputs: Vec<TopicPartition> = (0..PARTITIONS)
        .map(|p| TopicPartition::new(INPUT, p))
        .collect();
    let mut app = StreamsApp::with_log(topology(), config, log.clone()).unwrap();
    app.start().unwrap();
    // While the member is in the group, its offsets commit: a client
    // outside an active group would be refused.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert_ne!(app.state(), AppState::Error, "{:?}", app.error());
        let committed = log.committed_offsets(app_id, &inputs).unwrap();
        if committed.iter().any(|(_, om)| om.is_some()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no offset committed while running"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    finish(&mut app);
    assert_eq!(read_committed(&log), expected(&records));
    let mut consumer = log.consumer("alos-ends").unwrap();
    for (tp, om) in log.committed_offsets(app_id, &inputs).unwrap() {
        let end = consumer.end_offset(&tp).unwrap();
        assert_eq!(
            om.map(|om| om.offset),
            Some(end),
            "{tp}: offsets at the end"
        );
    }
}

#[test]
fn runtime_on_kafka_at_least_once_crash_restart_loses_nothing() {
    let (_broker, log) =
        broker_with_topics("runtime_on_kafka_at_least_once_crash_restart_loses_nothing");
    let records = input();
    let (first, rest) = records.split_at(200);
    produce(&log, first);
    let config = || config_for("alos-crash").with_guarantee(ProcessingGuarantee::AtLeastOnce);
    crash_after_two_barriers(&log, config());
    produce(&log, rest);
    let mut app = StreamsApp::with_log(topology(), config(), log.clone()).unwrap();
    app.start().unwrap();
    finish(&mut app);
    // At least once: every window is there, with at least its count (an
    // epoch read again after the crash may count its records twice, and a
    // window may come out twice).
    let got = read_committed(&log);
    for (window, counts) in expected(&records) {
        let seen = got.get(&window).map(Vec::as_slice).unwrap_or_default();
        assert!(
            seen.iter().any(|c| *c >= counts[0]),
            "window {window:?}: {seen:?}, expected at least {}",
            counts[0]
        );
    }
}

/// Waits until `app` has consumed its input, then closes it.
pub(crate) fn finish(app: &mut StreamsApp<KafkaLog>) {
    assert!(
        app.wait_until_caught_up(Duration::from_secs(120)).unwrap(),
        "state {}, error {:?}",
        app.state(),
        app.error()
    );
    assert!(app.close(Duration::from_secs(60)), "{:?}", app.error());
}
