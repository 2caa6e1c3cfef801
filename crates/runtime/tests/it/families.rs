//! For each topology family the engine's committed final output equals the
//! `TopologyTestDriver`'s for the same input where no record is late under
//! either clock, on 1, 2 and 4 lanes: sliding, session, suppress
//! (until_window_closes), and inner and left stream-stream joins. The crash
//! enumeration takes its topologies from here too (suppress until_time_limit
//! and until_barrier only there: their output is compared run against run).

use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::{
    Consumer, EmbeddedConfig, EmbeddedLog, Log, Offset, TopicPartition, TopicSpec,
    TransactionalProducer,
};
use stoatflow_runtime::StreamsApp;
use stoatflow_streams::{
    BufferConfig, EmitStrategy, Grouped, JoinWindows, Produced, Serdes, SessionWindows,
    SlidingWindows, StreamJoined, StreamsBuilder, StreamsConfig, Suppressed, TimeWindows, Topology,
    Windowed,
};
use stoatflow_testing::TopologyTestDriver;

use crate::support::*;

pub(crate) const OTHER: &str = "others";

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

pub(crate) fn sliding() -> Topology {
    let mut b = StreamsBuilder::new();
    source(&mut b, INPUT)
        .group_by_key()
        .windowed_by(SlidingWindows::of_time_difference_and_grace(
            secs(3),
            secs(5),
        ))
        .emit_strategy(EmitStrategy::on_window_close())
        .count()
        .to_stream()
        .to(
            OUTPUT,
            Produced::with(
                Serdes::time_windowed(Serdes::string(), 3_000),
                Serdes::i64(),
            ),
        );
    b.build().unwrap()
}

pub(crate) fn session() -> Topology {
    let mut b = StreamsBuilder::new();
    source(&mut b, INPUT)
        .group_by_key()
        .windowed_by(SessionWindows::of_inactivity_gap_and_grace(
            secs(2),
            secs(5),
        ))
        .emit_strategy(EmitStrategy::on_window_close())
        .count()
        .to_stream()
        .to(
            OUTPUT,
            Produced::with(Serdes::session_windowed(Serdes::string()), Serdes::i64()),
        );
    b.build().unwrap()
}

pub(crate) fn suppressed() -> Topology {
    suppressed_count(Suppressed::until_window_closes(BufferConfig::unbounded()))
}

/// A windowed count held by `until_time_limit` for size + grace: each
/// window's value leaves once the frontier passes its first update's time
/// plus the limit, when no admitted record can change it any more.
pub(crate) fn suppressed_time_limit() -> Topology {
    suppressed_count(Suppressed::until_time_limit(
        secs(15),
        BufferConfig::unbounded(),
    ))
}

/// A 10 s windowed count (grace 5 s), every update, through `suppressed`.
fn suppressed_count(suppressed: Suppressed<Windowed<String>>) -> Topology {
    let mut b = StreamsBuilder::new();
    source(&mut b, INPUT)
        .group_by_key()
        .windowed_by(TimeWindows::of_size_and_grace(secs(10), secs(5)))
        .count()
        .suppress(suppressed)
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

/// A running count per key released by `until_barrier`: at most one record
/// per key per epoch, so what it emits depends on where barriers fall; each
/// key's values rise strictly and end at its total.
pub(crate) fn suppressed_until_barrier() -> Topology {
    let mut b = StreamsBuilder::new();
    source(&mut b, INPUT)
        .group_by_key()
        .count()
        .suppress(Suppressed::until_barrier())
        .to_stream()
        .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
    b.build().unwrap()
}

fn inner_join() -> Topology {
    let mut b = StreamsBuilder::new();
    let left = source(&mut b, INPUT);
    let right = source(&mut b, OTHER);
    left.join(
        &right,
        |l: &i64, r: &i64| l * 1_000_000 + r,
        JoinWindows::of_time_difference_and_grace(secs(1), secs(5)),
        StreamJoined::with(Serdes::string(), Serdes::i64(), Serdes::i64()),
    )
    .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
    b.build().unwrap()
}

pub(crate) fn hopping() -> Topology {
    windowed_count(
        TimeWindows::of_size_and_grace(secs(10), secs(5)).advance_by(secs(3)),
        10_000,
        |s| s,
    )
}

pub(crate) fn outer_join() -> Topology {
    let mut b = StreamsBuilder::new();
    let left = source(&mut b, INPUT);
    let right = source(&mut b, OTHER);
    left.outer_join(
        &right,
        |l: Option<&i64>, r: Option<&i64>| {
            l.copied().unwrap_or(-1) * 1_000_000 + r.copied().unwrap_or(-1)
        },
        JoinWindows::of_time_difference_and_grace(secs(1), secs(5)),
        StreamJoined::with(Serdes::string(), Serdes::i64(), Serdes::i64()),
    )
    .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
    b.build().unwrap()
}

pub(crate) fn left_join() -> Topology {
    let mut b = StreamsBuilder::new();
    let left = source(&mut b, INPUT);
    let right = source(&mut b, OTHER);
    left.left_join(
        &right,
        |l: &i64, r: Option<&i64>| l * 1_000_000 + r.copied().unwrap_or(-1),
        JoinWindows::of_time_difference_and_grace(secs(1), secs(5)),
        StreamJoined::with(Serdes::string(), Serdes::i64(), Serdes::i64()),
    )
    .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
    b.build().unwrap()
}

/// A re-key (the key's first two characters, so keys merge across input
/// partitions), then a windowed count: one hop through a repartition topic.
pub(crate) fn repartition_hop() -> Topology {
    let mut b = StreamsBuilder::new();
    source(&mut b, INPUT)
        .map(|k: String, v: i64| (k.chars().take(2).collect::<String>(), v))
        .group_by_key_with(Grouped::with(Serdes::string(), Serdes::i64()))
        .windowed_by(TimeWindows::of_size_and_grace(secs(10), secs(5)))
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

/// Raw committed output records (key, value), sorted, sentinels left out.
pub(crate) type Raw = Vec<(Vec<u8>, Vec<u8>)>;

fn keep(out: Raw) -> Raw {
    let mut out: Raw = out
        .into_iter()
        .filter(|(k, _)| !k.starts_with(b"end"))
        .collect();
    out.sort();
    out
}

pub(crate) fn read_raw<L: Log>(log: &L) -> Raw {
    keep(read_committed(log))
}

fn driver_raw(topology: Topology, inputs: &[(&str, Vec<Input>)]) -> Raw {
    keep(driver_output(topology, inputs))
}

/// The driver's output over `inputs`, in the order it was written.
fn driver_output(topology: Topology, inputs: &[(&str, Vec<Input>)]) -> Raw {
    let driver = TopologyTestDriver::new(topology, StreamsConfig::new("driver")).unwrap();
    let output = driver.create_output_topic(OUTPUT, Serdes::bytes(), Serdes::bytes());
    // Interleave the topics in event-time order, as the engine dispatches.
    let mut all: Vec<(&str, &Input)> = inputs
        .iter()
        .flat_map(|(t, rs)| rs.iter().map(move |r| (*t, r)))
        .collect();
    all.sort_by_key(|(_, r)| r.ts);
    let topics: Vec<_> = inputs
        .iter()
        .map(|(t, _)| {
            (
                *t,
                driver.create_input_topic(t, Serdes::string(), Serdes::i64()),
            )
        })
        .collect();
    for (t, r) in all {
        let topic = &topics.iter().find(|(n, _)| *n == t).unwrap().1;
        topic
            .pipe_input_with_timestamp(r.key.clone(), r.value, r.ts)
            .unwrap();
    }
    output.read_key_values_to_list().unwrap()
}

fn engine_raw(
    topology: fn() -> Topology,
    inputs: &[(&str, Vec<Input>)],
    lanes: usize,
    app: &str,
) -> Raw {
    read_raw(&*engine_log(topology, inputs, lanes, app))
}

/// Runs `topology` over `inputs` on `lanes` until caught up and closed;
/// returns the log.
fn engine_log(
    topology: fn() -> Topology,
    inputs: &[(&str, Vec<Input>)],
    lanes: usize,
    app: &str,
) -> Arc<EmbeddedLog> {
    run_engine_log(topology, inputs, lanes, app, false)
}

/// As [`engine_log`], the input written while the app runs (in chunks, 15
/// ms apart), so its windows close over many barriers.
fn paced_engine_log(
    topology: fn() -> Topology,
    inputs: &[(&str, Vec<Input>)],
    lanes: usize,
    app: &str,
) -> Arc<EmbeddedLog> {
    run_engine_log(topology, inputs, lanes, app, true)
}

fn run_engine_log(
    topology: fn() -> Topology,
    inputs: &[(&str, Vec<Input>)],
    lanes: usize,
    app: &str,
    paced: bool,
) -> Arc<EmbeddedLog> {
    let log = Arc::new(EmbeddedLog::in_memory());
    log.create_topic(&TopicSpec::new(OUTPUT, PARTITIONS))
        .unwrap();
    for (topic, _) in inputs {
        log.create_topic(&TopicSpec::new(*topic, PARTITIONS))
            .unwrap();
    }
    let write = |chunk: usize, pause: Duration| {
        let chunks = inputs.iter().map(|(_, rs)| rs.len().div_ceil(chunk)).max();
        for c in 0..chunks.unwrap_or(0) {
            for (topic, records) in inputs {
                let part = records.chunks(chunk).nth(c).unwrap_or(&[]);
                produce_to(&*log, topic, part, 50);
            }
            std::thread::sleep(pause);
        }
    };
    if !paced {
        write(usize::MAX, Duration::ZERO);
    }
    let mut app = StreamsApp::with_log(topology(), config(app, lanes), log.clone()).unwrap();
    app.start().unwrap();
    if paced {
        write(25, Duration::from_millis(15));
    }
    assert!(
        app.wait_until_caught_up(Duration::from_secs(60)).unwrap(),
        "{:?}",
        app.error()
    );
    assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
    log
}

fn check_family(name: &str, topology: fn() -> Topology, inputs: Vec<(&str, Vec<Input>)>) {
    let driver = driver_raw(topology(), &inputs);
    assert!(!driver.is_empty(), "{name}: the driver emitted nothing");
    for lanes in [1, 2, 4] {
        let engine = engine_raw(topology, &inputs, lanes, &format!("{name}-{lanes}"));
        assert_eq!(
            engine.len(),
            driver.len(),
            "{name} on {lanes} lanes: {} results, the driver {}",
            engine.len(),
            driver.len()
        );
        assert_eq!(engine, driver, "{name} on {lanes} lanes");
    }
}

/// Every family over out-of-order input (jitter of up to 2 s, below the
/// sources' bound and the windows' grace): on 1, 2 and 4 lanes with lane
/// delays of several seeds, the output equals the driver's, and where it is
/// all final results, each output partition gets the same sequence in
/// every run (join matches are written as their records arrive, so only
/// their set is fixed).
#[test]
fn every_family_gives_one_output_whatever_the_lanes_and_delays() {
    let seeds: u64 = if std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some() {
        6
    } else {
        2
    };
    type Family = (
        &'static str,
        fn() -> Topology,
        Vec<(&'static str, Vec<Input>)>,
        bool,
    );
    let families: Vec<Family> = vec![
        ("sliding", sliding, vec![(INPUT, input(300, 5, 71))], true),
        ("session", session, vec![(INPUT, input(300, 23, 72))], true),
        (
            "suppress",
            suppressed,
            vec![(INPUT, input(300, 7, 73))],
            true,
        ),
        ("hopping", hopping, vec![(INPUT, input(300, 5, 74))], true),
        (
            "hop",
            repartition_hop,
            vec![(INPUT, input(300, 40, 75))],
            true,
        ),
        (
            "left-join",
            left_join,
            vec![(INPUT, input(200, 17, 76)), (OTHER, input(200, 17, 77))],
            false,
        ),
        (
            "outer-join",
            outer_join,
            vec![(INPUT, input(200, 23, 78)), (OTHER, input(200, 23, 79))],
            false,
        ),
    ];
    for (name, topology, inputs, sequenced) in families {
        let driver = driver_raw(topology(), &inputs);
        let mut first: Option<Raw> = None;
        for seed in 1..=seeds {
            for lanes in [1, 2, 4] {
                let app = format!("{name}-delays-{seed}-{lanes}");
                let log =
                    with_lane_delays(seed, || paced_engine_log(topology, &inputs, lanes, &app));
                let mut records = read_topic(&*log, OUTPUT, PARTITIONS);
                records.sort_by_key(|r| (r.partition.partition.0, r.offset.0));
                let written: Raw = records
                    .into_iter()
                    .map(|r| (r.record.key.unwrap(), r.record.value.unwrap()))
                    .filter(|(k, _)| !k.starts_with(b"end"))
                    .collect();
                let ours = if sequenced { written } else { keep(written) };
                assert_eq!(
                    keep(ours.clone()),
                    driver,
                    "{name}, seed {seed}, {lanes} lanes"
                );
                match &first {
                    None => first = Some(ours),
                    Some(f) => assert!(
                        *f == ours,
                        "{name}, seed {seed}, {lanes} lanes: another sequence than the first run's"
                    ),
                }
            }
        }
    }
}

#[test]
fn sliding_count_equals_the_driver() {
    check_family("sliding", sliding, vec![(INPUT, input(400, 5, 11))]);
}

#[test]
fn session_count_equals_the_driver() {
    check_family("session", session, vec![(INPUT, input(400, 23, 12))]);
}

#[test]
fn suppress_until_window_closes_equals_the_driver() {
    check_family("suppress", suppressed, vec![(INPUT, input(400, 7, 13))]);
}

#[test]
fn a_repartition_hop_equals_the_driver() {
    assert!(
        repartition_hop().sources().iter().any(|s| s.internal),
        "the topology repartitions"
    );
    check_family("hop", repartition_hop, vec![(INPUT, input(500, 40, 18))]);
}

#[test]
fn hopping_count_equals_the_driver() {
    check_family("hopping", hopping, vec![(INPUT, input(400, 5, 20))]);
}

#[test]
fn outer_join_equals_the_driver() {
    check_family(
        "outer-join",
        outer_join,
        vec![(INPUT, input(300, 23, 21)), (OTHER, input(300, 23, 22))],
    );
}

#[test]
fn inner_join_equals_the_driver() {
    check_family(
        "inner-join",
        inner_join,
        vec![(INPUT, input(300, 17, 14)), (OTHER, input(300, 17, 15))],
    );
}

#[test]
fn left_join_equals_the_driver() {
    check_family(
        "left-join",
        left_join,
        vec![(INPUT, input(300, 17, 16)), (OTHER, input(300, 17, 17))],
    );
}

/// A repartition topic is purged below what its reader committed
/// (`repartition.purge.interval.ms`), and the output stays the driver's;
/// with the purge far off, nothing goes.
#[test]
fn a_repartition_topic_is_purged_below_its_committed_offsets() {
    let inputs = vec![(INPUT, input(1500, 40, 21))];
    let driver = driver_raw(repartition_hop(), &inputs);
    let run = |interval: Duration, app_id: &str| {
        let log = Arc::new(EmbeddedLog::in_memory_with(EmbeddedConfig {
            segment_bytes: 2_000,
            ..EmbeddedConfig::default()
        }));
        log.create_topic(&TopicSpec::new(OUTPUT, PARTITIONS))
            .unwrap();
        log.create_topic(&TopicSpec::new(INPUT, PARTITIONS))
            .unwrap();
        produce_to(&*log, INPUT, &inputs[0].1, 50);
        let mut config = config(app_id, 2);
        config.purge_interval = interval;
        let mut app = StreamsApp::with_log(repartition_hop(), config, log.clone()).unwrap();
        start_and_finish(&mut app);
        assert_eq!(read_raw(&*log), driver, "{app_id}");
        let topic = log
            .topics()
            .into_iter()
            .find(|t| t.name.contains("repartition"))
            .expect("a repartition topic");
        let mut c = log.consumer("check").unwrap();
        (0..topic.shape.partitions)
            .map(|p| {
                c.beginning_offset(&TopicPartition::new(topic.name.clone(), p))
                    .unwrap()
            })
            .collect::<Vec<_>>()
    };
    let purged = run(Duration::from_millis(1), "purged");
    assert!(
        purged.iter().any(|o| *o > Offset(0)),
        "no repartition partition was purged: starts {purged:?}"
    );
    let kept = run(Duration::from_secs(3_600), "kept");
    assert!(kept.iter().all(|o| *o == Offset(0)), "starts {kept:?}");
}

/// Crashes of an application with a repartition hop, at varied points, then
/// a restart: each final result once, equal to the driver's. Upstream
/// output, downstream offsets and both sub-topologies' stamps commit
/// together, so a crash loses or repeats nothing across the hop.
#[test]
fn a_repartition_hop_survives_crashes() {
    let records = input(600, 40, 19);
    let inputs = vec![(INPUT, records.clone())];
    let driver = driver_raw(repartition_hop(), &inputs);
    for run in 0..4u64 {
        let log = Arc::new(EmbeddedLog::in_memory());
        log.create_topic(&TopicSpec::new(OUTPUT, PARTITIONS))
            .unwrap();
        log.create_topic(&TopicSpec::new(INPUT, PARTITIONS))
            .unwrap();
        let (first, rest) = records.split_at(records.len() / 2);
        produce_to(&*log, INPUT, first, 25);
        let app_id = format!("hop-crash-{run}");
        let lanes = 1 + run as usize % 2;
        {
            let mut app =
                StreamsApp::with_log(repartition_hop(), config(&app_id, lanes), log.clone())
                    .unwrap();
            app.start().unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while app.committed_barriers() < 1 + run && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_micros(300));
            }
            // Dropped without close: a crash.
        }
        produce_to(&*log, INPUT, rest, 25);
        let mut app =
            StreamsApp::with_log(repartition_hop(), config(&app_id, lanes), log.clone()).unwrap();
        app.start().unwrap();
        assert!(
            app.wait_until_caught_up(Duration::from_secs(60)).unwrap(),
            "{:?}",
            app.error()
        );
        assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
        assert_eq!(read_raw(&*log), driver, "run {run}");
    }
}

/// A left foreign-key join over tables read from two topics: each left row
/// (value v) joins the right row `k{v % 7}`. The subscriptions and the
/// responses cross partitions through the join's two internal topics, so
/// the engine's intermediate updates may differ from the driver's (a
/// response that went stale meanwhile is dropped), but every key's last
/// result must equal the driver's, on 1, 2 and 4 lanes.
#[test]
fn a_foreign_key_join_ends_where_the_driver_does() {
    fn topology() -> Topology {
        let mut b = StreamsBuilder::new();
        let consumed = || stoatflow_streams::Consumed::with(Serdes::string(), Serdes::i64());
        let left = b.table(INPUT, consumed(), "fk-left");
        let right = b.table(OTHER, consumed(), "fk-right");
        left.left_join_on_foreign_key(
            &right,
            |v: &i64| format!("k{}", v.rem_euclid(7)),
            |l: &i64, r: Option<&i64>| l * 1_000_000 + r.map_or(-1, |r| *r),
        )
        .to_stream()
        .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
        b.build().unwrap()
    }
    fn last_per_key(
        records: Vec<(Vec<u8>, Vec<u8>)>,
    ) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
        records
            .into_iter()
            .filter(|(k, _)| !k.starts_with(b"end"))
            .collect()
    }
    // A table keeps a key's last record by offset: the records go in
    // timestamp order, the order the driver pipes them.
    let sorted = |mut records: Vec<Input>| {
        records.sort_by_key(|r| r.ts);
        records
    };
    let inputs = vec![
        (INPUT, sorted(input(200, 13, 31))),
        (OTHER, sorted(input(200, 7, 32))),
    ];
    let expected = last_per_key(driver_output(topology(), &inputs));
    assert_eq!(expected.len(), 13, "every left key has a result");
    for lanes in [1, 2, 4] {
        let log = engine_log(topology, &inputs, lanes, &format!("fk-join-{lanes}"));
        assert_eq!(
            last_per_key(read_committed(&*log)),
            expected,
            "{lanes} lanes"
        );
    }
}

/// Kafka Streams' `stream(..).toTable()` feeding a foreign-key join, where a
/// null value deletes the left row: on 1, 2 and 4 lanes, a deleted key's last
/// committed result is a tombstone (its join result retracted) and every
/// other key's is its join with its right row. Each left row `aN` (value N)
/// joins `k{N % 7}` (value `100 + N % 7`); `a3`, `a7` and `a11` are deleted
/// after their results were written.
#[test]
fn a_stream_to_table_delete_retracts_its_foreign_key_join_result() {
    fn topology() -> Topology {
        let mut b = StreamsBuilder::new();
        let nullable =
            stoatflow_streams::Consumed::with(Serdes::string(), Serdes::nullable(Serdes::i64()));
        let left = b.stream(INPUT, nullable).to_table_deleting();
        let right = b.table(
            OTHER,
            stoatflow_streams::Consumed::with(Serdes::string(), Serdes::i64()),
            "fk-right",
        );
        left.join_on_foreign_key(
            &right,
            |v: &i64| format!("k{}", v.rem_euclid(7)),
            |l: &i64, r: &i64| l * 1_000_000 + r,
        )
        .to_stream()
        .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
        b.build().unwrap()
    }
    /// Writes `(key, value)` records at `ts`, a `None` value as a null.
    fn write(log: &EmbeddedLog, topic: &str, records: &[(String, Option<i64>, i64)]) {
        let mut producer = log.transactional_producer(&format!("in-{topic}")).unwrap();
        producer.begin().unwrap();
        for (key, value, ts) in records {
            let p = stoatflow_runtime::partition_for_key(key.as_bytes(), PARTITIONS);
            let bytes = value.map(i64::to_be_bytes);
            let record = stoatflow_log::Record::new(
                Some(key.as_bytes()),
                bytes.as_ref().map(|b| &b[..]),
                stoatflow_log::Timestamp(*ts),
            );
            producer
                .send(&TopicPartition::new(topic, p), &record)
                .unwrap();
        }
        producer.commit().unwrap();
    }
    let deleted = [3, 7, 11];
    let right: Vec<_> = (0..7)
        .map(|j| (format!("k{j}"), Some(100 + j), START + j))
        .collect();
    let mut left: Vec<_> = (0..13)
        .map(|i| (format!("a{i}"), Some(i), START + 1_000 + i))
        .collect();
    left.extend(deleted.map(|i| (format!("a{i}"), None, START + 2_000 + i)));
    let expected: std::collections::BTreeMap<String, Option<i64>> = (0..13)
        .map(|i| {
            let result = (!deleted.contains(&i)).then_some(i * 1_000_000 + 100 + i % 7);
            (format!("a{i}"), result)
        })
        .collect();
    for lanes in [1, 2, 4] {
        let log = Arc::new(EmbeddedLog::in_memory());
        for topic in [INPUT, OTHER, OUTPUT] {
            log.create_topic(&TopicSpec::new(topic, PARTITIONS))
                .unwrap();
        }
        write(&log, OTHER, &right);
        write(&log, INPUT, &left);
        let app_id = format!("to-table-fk-{lanes}");
        let mut app =
            StreamsApp::with_log(topology(), config(&app_id, lanes), log.clone()).unwrap();
        app.start().unwrap();
        assert!(
            app.wait_until_caught_up(Duration::from_secs(60)).unwrap(),
            "{:?}",
            app.error()
        );
        assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
        let last: std::collections::BTreeMap<String, Option<i64>> =
            read_topic(&*log, OUTPUT, PARTITIONS)
                .into_iter()
                .map(|r| {
                    let key = String::from_utf8(r.record.key.unwrap()).unwrap();
                    let value = r
                        .record
                        .value
                        .map(|v| i64::from_be_bytes(v.try_into().expect("an 8-byte i64")));
                    (key, value)
                })
                .collect();
        assert_eq!(last, expected, "{lanes} lanes");
    }
}
