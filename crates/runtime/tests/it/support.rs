//! What the runtime tests share: a windowed-count topology, input written
//! to the log in transactions, committed output read back, the same input
//! through the `TopologyTestDriver` for comparison, scratch directories, and
//! waiting for a condition while the apps run.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::{
    Consumer, EmbeddedLog, FetchedRecord, Log, Record, SeekTo, Timestamp, TopicPartition,
    TopicSpec, TransactionalProducer,
};
use stoatflow_runtime::{
    AppState, Backend, CommitBarrierConfig, RuntimeConfig, StreamsApp, partition_for_key,
};
use stoatflow_streams::{
    Consumed, EmitStrategy, KStream, Produced, Serde, Serdes, StreamsBuilder, StreamsConfig,
    TimeWindows, Topology, Windowed,
};
use stoatflow_testing::TopologyTestDriver;
use stoatflow_time::WatermarkStrategy;

pub const INPUT: &str = "events";
pub const OUTPUT: &str = "counts";
pub const PARTITIONS: u32 = 3;
pub const WINDOW_MS: i64 = 10_000;
pub const GRACE_MS: i64 = 5_000;
/// The source's out-of-orderness bound: above the input's jitter, so the
/// engine's floor never drops an on-time record.
pub const BOUND_MS: u64 = 3_000;
pub const START: i64 = 1_790_000_000_000;

thread_local! {
    /// Set by [`with_lane_delays`] on the thread building a topology.
    static LANE_DELAYS: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// A fresh scratch directory (state directories, log directories), on tmpfs
/// when there is one. The engine fsyncs at every commit and every store
/// open, which on a busy disk costs far more than the test; and no test here
/// can observe physical durability (a killed process leaves the page cache,
/// and tmpfs, as it was).
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().expect("tempdir")
}

/// Waits until `holds`, polling every 5 ms. Fails at once if any of `apps`
/// is in ERROR (with its error), and once `within` has passed (with each
/// app's state and assignment), naming `what` was awaited either way.
pub fn wait_for<L: Log + 'static>(
    what: &str,
    apps: &[&StreamsApp<L>],
    within: Duration,
    mut holds: impl FnMut() -> bool,
) {
    let deadline = std::time::Instant::now() + within;
    while !holds() {
        for (i, app) in apps.iter().enumerate() {
            assert_ne!(
                app.state(),
                AppState::Error,
                "app {i} stopped in ERROR while waiting for {what}: {:?}",
                app.error()
            );
        }
        if std::time::Instant::now() >= deadline {
            let apps: Vec<_> = apps.iter().map(|a| (a.state(), a.assignment())).collect();
            panic!("waited {within:?} for {what} in vain; the apps: {apps:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until `app_id`'s committed offsets reach the end of every
/// partition of [`INPUT`] (whichever instance commits each), as [`wait_for`]
/// does with `apps`.
pub fn wait_for_input_committed<L: Log, M: Log + 'static>(
    log: &L,
    app_id: &str,
    apps: &[&StreamsApp<M>],
) {
    let tps: Vec<TopicPartition> = (0..PARTITIONS)
        .map(|p| TopicPartition::new(INPUT, p))
        .collect();
    let mut consumer = log.consumer(&format!("{app_id}-input-ends")).unwrap();
    let ends: Vec<u64> = tps
        .iter()
        .map(|tp| consumer.end_offset(tp).unwrap().0)
        .collect();
    let what = format!("{app_id}'s committed offsets to reach the input's ends {ends:?}");
    wait_for(&what, apps, Duration::from_secs(60), || {
        let committed = log.committed_offsets(app_id, &tps).unwrap();
        committed
            .iter()
            .zip(&ends)
            .all(|((_, om), end)| om.as_ref().is_some_and(|om| om.offset.0 >= *end))
    });
}

/// Builds with `build` topologies whose sources stall their lane for 2 ms
/// on a pseudo-random one record in 32 (chosen by `seed` and the value), so
/// the lanes and the barriers interleave differently per seed.
pub fn with_lane_delays<T>(seed: u64, build: impl FnOnce() -> T) -> T {
    let outer = LANE_DELAYS.with(|d| d.replace(Some(seed)));
    let built = build();
    LANE_DELAYS.with(|d| d.set(outer));
    built
}

/// The input stream every test topology starts from: string keys, `i64`
/// values, a bounded-out-of-orderness strategy of [`BOUND_MS`] (and lane
/// delays inside [`with_lane_delays`]).
pub fn source(builder: &mut StreamsBuilder, topic: &str) -> KStream<String, i64> {
    let stream = builder.stream(
        topic,
        Consumed::with(Serdes::string(), Serdes::i64()).with_watermark_strategy(
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(BOUND_MS)),
        ),
    );
    match LANE_DELAYS.with(std::cell::Cell::get) {
        None => stream,
        Some(seed) => stream.peek(move |_k: &String, v: &i64| {
            let h = (*v as u64 ^ seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59;
            if h == 0 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }),
    }
}

/// `stage`, then a count per key in `windows` (of `size_ms`), final results
/// only, to [`OUTPUT`].
pub fn windowed_count(
    windows: TimeWindows,
    size_ms: i64,
    stage: impl FnOnce(KStream<String, i64>) -> KStream<String, i64>,
) -> Topology {
    let mut builder = StreamsBuilder::new();
    stage(source(&mut builder, INPUT))
        .group_by_key()
        .windowed_by(windows)
        .emit_strategy(EmitStrategy::on_window_close())
        .count()
        .to_stream()
        .to(
            OUTPUT,
            Produced::with(
                Serdes::time_windowed(Serdes::string(), size_ms),
                Serdes::i64(),
            ),
        );
    builder.build().expect("the topology builds")
}

/// A tumbling count per key, final results only.
pub fn tumbling_count() -> Topology {
    tumbling_count_after(|s| s)
}

/// `stage`, then the tumbling count of [`tumbling_count`].
pub fn tumbling_count_after(
    stage: impl FnOnce(KStream<String, i64>) -> KStream<String, i64>,
) -> Topology {
    windowed_count(
        TimeWindows::of_size_and_grace(
            Duration::from_millis(WINDOW_MS as u64),
            Duration::from_millis(GRACE_MS as u64),
        ),
        WINDOW_MS,
        stage,
    )
}

/// Starts `app` and waits (10 s at most) for ERROR: the error that
/// stopped it.
pub fn starts_into_error<L: Log + 'static>(
    app: &mut StreamsApp<L>,
) -> Arc<stoatflow_runtime::RuntimeError> {
    app.start().unwrap();
    assert_eq!(
        app.wait_for_state(stoatflow_runtime::AppState::Error, Duration::from_secs(10)),
        stoatflow_runtime::AppState::Error,
        "error: {:?}",
        app.error()
    );
    app.error().expect("an app in ERROR has its error")
}

/// One input record: key, event time (the record timestamp), value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub key: String,
    pub ts: i64,
    pub value: i64,
}

/// `n` records over `keys` keys, about 100 ms apart, jittered by up to 2 s
/// (below [`BOUND_MS`] and [`GRACE_MS`]), then one far-future record per
/// partition so that every earlier window closes under both clocks.
pub fn input(n: usize, keys: usize, seed: u64) -> Vec<Input> {
    let mut rng = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    let mut next = || {
        rng = rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        rng >> 33
    };
    let mut out: Vec<Input> = (0..n)
        .map(|i| {
            let key = format!("k{}", next() as usize % keys);
            let jitter = (next() % 2_000) as i64;
            Input {
                key,
                ts: START + i as i64 * 100 - jitter,
                value: i as i64,
            }
        })
        .collect();
    let end = START + n as i64 * 100 + 3_600_000;
    for p in 0..PARTITIONS {
        let key = (0..)
            .map(|i| format!("end{i}"))
            .find(|k| partition_for_key(k.as_bytes(), PARTITIONS) == p)
            .expect("some key lands in every partition");
        out.push(Input {
            key,
            ts: end,
            value: -1,
        });
    }
    out
}

/// Creates the input and output topics.
pub fn create_topics<L: Log>(log: &L) {
    log.create_topic(&TopicSpec::new(INPUT, PARTITIONS))
        .unwrap();
    log.create_topic(&TopicSpec::new(OUTPUT, PARTITIONS))
        .unwrap();
}

/// A fresh in-memory log with the input and output topics, `records`
/// written to the input in transactions of `per_txn`.
pub fn log_with_input(records: &[Input], per_txn: usize) -> Arc<EmbeddedLog> {
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    produce(&*log, records, per_txn);
    log
}

/// Writes `records` to the input topic in transactions of `per_txn`,
/// partitioned by key as Kafka's producer would.
pub fn produce<L: Log>(log: &L, records: &[Input], per_txn: usize) {
    produce_to(log, INPUT, records, per_txn);
}

/// As [`produce`], to `topic`.
pub fn produce_to<L: Log>(log: &L, topic: &str, records: &[Input], per_txn: usize) {
    let mut producer = log
        .transactional_producer(&format!("test-input-{topic}"))
        .unwrap();
    for chunk in records.chunks(per_txn.max(1)) {
        producer.begin().unwrap();
        for r in chunk {
            let p = partition_for_key(r.key.as_bytes(), PARTITIONS);
            let record = Record::new(
                Some(r.key.as_bytes()),
                Some(&r.value.to_be_bytes()),
                Timestamp(r.ts),
            );
            producer
                .send(&TopicPartition::new(topic, p), &record)
                .unwrap();
        }
        producer.commit().unwrap();
    }
}

/// Final counts keyed by (key, window start), each with every value emitted
/// for it (a window emitted twice shows two values).
pub type Finals = BTreeMap<(String, i64), Vec<i64>>;

/// Every committed record of [`OUTPUT`], as (key, value) bytes, in offset
/// order per partition.
pub fn read_committed<L: Log>(log: &L) -> Vec<(Vec<u8>, Vec<u8>)> {
    read_topic(log, OUTPUT, PARTITIONS)
        .into_iter()
        .map(|r| (r.record.key.unwrap(), r.record.value.unwrap()))
        .collect()
}

/// Every committed record of `topic`'s `partitions`, in offset order per
/// partition.
pub fn read_topic<L: Log>(log: &L, topic: &str, partitions: u32) -> Vec<FetchedRecord> {
    let mut consumer = log.consumer("test-reader").unwrap();
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
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while tps
        .iter()
        .zip(&ends)
        .any(|(tp, end)| consumer.position(tp).unwrap() < *end)
    {
        assert!(std::time::Instant::now() < deadline, "{topic} not readable");
        out.extend(consumer.fetch(Duration::from_millis(20)).unwrap());
    }
    out
}

/// The committed output topic, read back as windowed counts.
pub fn read_output<L: Log>(log: &L) -> Finals {
    let key_serde = Serdes::time_windowed(Serdes::string(), WINDOW_MS);
    let mut out = Finals::new();
    for (key, value) in read_committed(log) {
        let w: Windowed<String> = key_serde.deserialize(OUTPUT, &key).unwrap();
        let count = i64::from_be_bytes(value.as_slice().try_into().unwrap());
        out.entry((w.key, w.window.start)).or_default().push(count);
    }
    out
}

/// The same input through the test driver, in input order.
pub fn driver_finals(topology: Topology, records: &[Input]) -> Finals {
    let driver = TopologyTestDriver::new(topology, StreamsConfig::new("driver")).unwrap();
    let input = driver.create_input_topic(INPUT, Serdes::string(), Serdes::i64());
    let output = driver.create_output_topic(
        OUTPUT,
        Serdes::time_windowed(Serdes::string(), WINDOW_MS),
        Serdes::i64(),
    );
    for r in records {
        input
            .pipe_input_with_timestamp(r.key.clone(), r.value, r.ts)
            .unwrap();
    }
    let mut out = Finals::new();
    for r in output.read_records_to_list().unwrap() {
        out.entry((r.key.key, r.key.window.start))
            .or_default()
            .push(r.value);
    }
    out
}

/// Keeps only windows of regular keys (the far-future sentinels' windows
/// are still open at the end).
pub fn regular(finals: Finals) -> Finals {
    finals
        .into_iter()
        .filter(|((k, _), _)| !k.starts_with("end"))
        .collect()
}

/// A runtime config on `lanes` lanes with a fast barrier cadence.
pub fn config(app: &str, lanes: usize) -> RuntimeConfig {
    RuntimeConfig::new(app, Backend::InMemory)
        .with_lanes(lanes)
        .with_barrier(CommitBarrierConfig {
            interval: Duration::from_millis(20),
            min_interval: Duration::from_millis(10),
            ..CommitBarrierConfig::default()
        })
}

/// Starts `app`, waits until the input is consumed, closes it gracefully.
pub fn start_and_finish<L: Log + 'static>(app: &mut StreamsApp<L>) {
    app.start().unwrap();
    assert!(
        app.wait_until_caught_up(Duration::from_secs(60)).unwrap(),
        "caught up; state {}, error {:?}",
        app.state(),
        app.error()
    );
    assert!(
        app.close(Duration::from_secs(30)),
        "closed: {:?}",
        app.error()
    );
}

/// Starts an app on `log`, waits until the input is consumed, closes it.
pub fn run_to_end(log: &Arc<EmbeddedLog>, app_id: &str, lanes: usize) {
    let mut app =
        StreamsApp::with_log(tumbling_count(), config(app_id, lanes), log.clone()).unwrap();
    start_and_finish(&mut app);
}

/// Asserts `ours` equals `expected`, naming the windows that differ (the
/// first few of them, with both sides) rather than printing both maps.
pub fn assert_same_finals(ours: &Finals, expected: &Finals) {
    let differing: Vec<_> = expected
        .keys()
        .chain(ours.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|w| ours.get(*w) != expected.get(*w))
        .collect();
    let first: Vec<_> = differing
        .iter()
        .take(8)
        .map(|w| (*w, ours.get(*w), expected.get(*w)))
        .collect();
    assert!(
        differing.is_empty(),
        "{} of {} windows differ (window, ours, expected): {first:?}",
        differing.len(),
        expected.len()
    );
}

/// Asserts each window appears once.
pub fn assert_each_once(finals: &Finals) {
    for (window, values) in finals {
        assert_eq!(values.len(), 1, "window {window:?} emitted {values:?}");
    }
}
