//! End-to-end runs: the task path's workloads through the whole engine — a
//! `StreamsApp` on the embedded log in a fresh temporary directory (the
//! default backend) with exactly-once commits:
//! fetch, event-time reading, ordered dispatch, record lanes,
//! deserialization, barriers, serialized output and one transaction per
//! epoch.
//!
//! - The tumbling count: key `i mod 1000` as an `i64`, value 1, timestamp
//!   `i` ms, 10 s windows, final results only.
//! - Nexmark q5: the generator's events, serialized, unkeyed, timed by
//!   their `date_time`; the query as the task path runs it (two repartition
//!   hops), its hot-item counts written to the output topic.
//!
//! The stores are what a user gets without configuring any
//! ([`E2eStores::Default`]: persistent, in `<dir>/state`), or in memory
//! ([`E2eStores::InMemory`]) on the same on-disk log, for the second column.
//!
//! The input is written to two partitions before the clock starts; the
//! timed region runs from `start()` until every input record was handed to
//! the lanes (`wait_until_consumed`) and `close()` has committed the final
//! barrier, which carries every result; for q5, whose results cross two
//! repartition hops after the input is consumed, until the last barrier
//! before the application went quiet. The tumbling run also reports its
//! final-result latency per window close (see [`Latency`]).
//!
//! A backlog makes every barrier wait behind full lane inboxes, so the
//! paced run (`e2e-tumbling-paced`) writes the tumbling input while the
//! application runs, at a fixed number of records per wall-clock second,
//! and reports the latency of that steady state.

use std::sync::Arc;
use std::time::{Duration, Instant};

use stoatflow_log::{
    Consumer, EmbeddedLog, Log, Record, Timestamp, TopicPartition, TopicSpec, TransactionalProducer,
};
use stoatflow_runtime::{Backend, RuntimeConfig, StreamsApp, Timeline};
use stoatflow_streams::{
    Consumed, EmitStrategy, Materialized, Produced, Serde, Serdes, StoreType, StreamsBuilder,
    TimeWindows, Topology,
};
use stoatflow_time::WatermarkStrategy;

use crate::error::BenchError;
use crate::nexmark::{Generator, GeneratorConfig, out_of_orderness};
use crate::queries::{self, EVENTS_TOPIC, HotItems};
use crate::serdes::EventSerde;
use crate::workloads::{TUMBLING_KEYS, TUMBLING_WINDOW_MS};

pub(crate) const INPUT: &str = "events";
pub(crate) const OUTPUT: &str = "counts";
/// Input partitions: lanes are partition-affine, so two partitions let two
/// lanes work; the one-lane run reads the same two.
pub const E2E_PARTITIONS: u32 = 2;
/// Records per input transaction when writing the input.
const WRITE_BATCH: usize = 10_000;

/// Which stores an end-to-end run's topology gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum E2eStores {
    /// What a user gets without configuring any: persistent stores under the
    /// log's directory.
    #[default]
    Default,
    /// In-memory stores on the same on-disk log.
    InMemory,
}

impl E2eStores {
    /// The `--stores` value naming it.
    pub fn name(self) -> &'static str {
        match self {
            E2eStores::Default => "default",
            E2eStores::InMemory => "in-memory",
        }
    }

    /// The `--stores` value `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "default" => Some(E2eStores::Default),
            "in-memory" => Some(E2eStores::InMemory),
            _ => None,
        }
    }

    /// The runtime's configuration for a run on the log in `dir`.
    pub(crate) fn config(self, dir: &std::path::Path, lanes: usize) -> RuntimeConfig {
        let mut config = RuntimeConfig::new(
            "bench-e2e",
            Backend::Embedded {
                dir: dir.to_path_buf(),
            },
        )
        .with_lanes(lanes);
        if self == E2eStores::InMemory {
            config.streams.default_dsl_store = Some(StoreType::InMemory);
        }
        config
    }
}

/// A fresh directory under the system's temporary directory for one run's
/// log and stores, removed when dropped.
#[derive(Debug)]
pub struct RunDir(std::path::PathBuf);

impl RunDir {
    pub(crate) fn new() -> Result<Self, BenchError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "stoatflow-bench-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).map_err(engine_err)?;
        Ok(RunDir(path))
    }

    /// The directory.
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    /// Bytes on disk of every file under the directory whose path contains
    /// `part` (all of them for `""`).
    pub fn bytes_under(&self, part: &str) -> u64 {
        fn walk(dir: &std::path::Path, part: &str, inside: bool) -> u64 {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return 0;
            };
            entries
                .flatten()
                .map(|e| {
                    let path = e.path();
                    let inside = inside || e.file_name().to_string_lossy().contains(part);
                    // Bytes the file occupies on disk (a preallocated sparse journal
                    // counts what it holds, not its length).
                    match e.metadata() {
                        Ok(m) if m.is_dir() => walk(&path, part, inside),
                        Ok(m) if inside => std::os::unix::fs::MetadataExt::blocks(&m) * 512,
                        _ => 0,
                    }
                })
                .sum()
        }
        walk(&self.0, part, part.is_empty())
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tumbling_topology() -> Result<Topology, BenchError> {
    tumbling_topology_in(None)
}

/// The tumbling count, its window store named `store` if given (a query
/// names it).
pub(crate) fn tumbling_topology_in(store: Option<&str>) -> Result<Topology, BenchError> {
    let mut builder = StreamsBuilder::new();
    let windowed = builder
        .stream(
            INPUT,
            Consumed::with(Serdes::i64(), Serdes::i64())
                .with_watermark_strategy(WatermarkStrategy::for_monotonous_timestamps()),
        )
        .group_by_key()
        .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_millis(
            TUMBLING_WINDOW_MS,
        )))
        .emit_strategy(EmitStrategy::on_window_close());
    let counts = match store {
        Some(name) => windowed.count_with(Materialized::as_(name)),
        None => windowed.count(),
    };
    counts.to_stream().to(
        OUTPUT,
        Produced::with(
            Serdes::time_windowed(Serdes::i64(), TUMBLING_WINDOW_MS as i64),
            Serdes::i64(),
        ),
    );
    builder.build().map_err(|source| BenchError::Topology {
        query: "e2e-tumbling",
        source,
    })
}

/// q5 as the task path runs it; each window's hot-item count goes to the
/// output topic.
fn q5_topology(generator: &GeneratorConfig) -> Result<Topology, BenchError> {
    let mut builder = StreamsBuilder::new();
    queries::q5(&mut builder, out_of_orderness(generator))
        .map_values(|_, hot: HotItems| hot.count)
        .to(OUTPUT, Produced::with(Serdes::i64(), Serdes::i64()));
    builder.build().map_err(|source| BenchError::Topology {
        query: "e2e-q5",
        source,
    })
}

pub(crate) fn engine_err(e: impl std::fmt::Display) -> BenchError {
    BenchError::Engine {
        query: "e2e",
        reason: e.to_string(),
    }
}

/// A fresh log in `dir` with `input` and the output topic, and `records`
/// (partition, record) written into `input` in transactions of
/// [`WRITE_BATCH`].
pub(crate) fn write_log(
    dir: &RunDir,
    input: &str,
    records: impl Iterator<Item = (u32, Record)>,
) -> Result<Arc<EmbeddedLog>, BenchError> {
    write_topics(dir, &[input], records.map(|(p, r)| (0, p, r)))
}

/// A fresh log in `dir` with every topic of `inputs` and the output topic,
/// and `records` (index in `inputs`, partition, record) written in
/// transactions of [`WRITE_BATCH`].
pub(crate) fn write_topics(
    dir: &RunDir,
    inputs: &[&str],
    records: impl Iterator<Item = (usize, u32, Record)>,
) -> Result<Arc<EmbeddedLog>, BenchError> {
    let log = Arc::new(EmbeddedLog::open(dir.path()).map_err(engine_err)?);
    for topic in inputs.iter().chain([&OUTPUT]) {
        log.create_topic(&TopicSpec::new(*topic, E2E_PARTITIONS))
            .map_err(engine_err)?;
    }
    let mut producer = log
        .transactional_producer("bench-input")
        .map_err(engine_err)?;
    let tps: Vec<Vec<TopicPartition>> = inputs
        .iter()
        .map(|topic| {
            (0..E2E_PARTITIONS)
                .map(|p| TopicPartition::new(*topic, p))
                .collect()
        })
        .collect();
    let mut open = 0;
    for (t, p, record) in records {
        if open == 0 {
            producer.begin().map_err(engine_err)?;
        }
        producer
            .send(&tps[t][p as usize], &record)
            .map_err(engine_err)?;
        open += 1;
        if open == WRITE_BATCH {
            producer.commit().map_err(engine_err)?;
            open = 0;
        }
    }
    if open > 0 {
        producer.commit().map_err(engine_err)?;
    }
    Ok(log)
}

/// Writes the tumbling workload's `events` records into a fresh log in `dir`.
pub fn write_input(dir: &RunDir, events: u64) -> Result<Arc<EmbeddedLog>, BenchError> {
    write_log(
        dir,
        INPUT,
        (0..events as i64).map(|ts| {
            let key = ts % TUMBLING_KEYS;
            let record = Record::new(
                Some(&key.to_be_bytes()),
                Some(&1i64.to_be_bytes()),
                Timestamp(ts),
            );
            ((key as u32) % E2E_PARTITIONS, record)
        }),
    )
}

/// Writes `events` Nexmark events, unkeyed, alternating partitions, each
/// timestamped with its `date_time`.
pub(crate) fn write_nexmark(
    dir: &RunDir,
    events: u64,
    generator: &GeneratorConfig,
) -> Result<Arc<EmbeddedLog>, BenchError> {
    let mut buf = Vec::new();
    let records = Generator::new(generator.clone())
        .take(events as usize)
        .enumerate()
        .map(move |(i, e)| {
            buf.clear();
            EventSerde
                .serialize(EVENTS_TOPIC, &e, &mut buf)
                .expect("every generated event serializes");
            let record = Record::new(None, Some(&buf), Timestamp(e.date_time()));
            (i as u32 % E2E_PARTITIONS, record)
        });
    write_log(dir, EVENTS_TOPIC, records)
}

/// What an end-to-end run gives its caller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct E2eResult {
    /// Seconds of the timed region.
    pub seconds: f64,
    /// Final results committed to the output topic.
    pub outputs: u64,
    /// [`output_digest`] of the output topic.
    pub digest: u64,
}

/// What an end-to-end run measured.
#[derive(Debug, Clone)]
pub struct E2eRun {
    /// Seconds from `start()` to the end of `close()`.
    pub seconds: f64,
    /// Final results committed to the output topic.
    pub outputs: u64,
    /// The run's barriers and watermark moves.
    pub timeline: Timeline,
    /// CPU seconds of every thread of the process (user and system) spent
    /// in the timed region.
    pub cpu_seconds: f64,
}

impl E2eRun {
    /// `resources query=… stores=… cpu_s_per_m_events=… disk_mib=… log_mib=… state_mib=…`:
    /// the CPU the process spent per million input events, and the bytes left
    /// on disk at the end (all, the log's, the stores').
    pub fn resources_line(
        &self,
        query: &str,
        stores: E2eStores,
        events: u64,
        dir: &RunDir,
    ) -> String {
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        let all = dir.bytes_under("");
        let state = dir.bytes_under("state");
        format!(
            "resources query={query} stores={} cpu_s_per_m_events={:.3} disk_mib={:.1} log_mib={:.1} state_mib={:.1}",
            stores.name(),
            self.cpu_seconds / (events.max(1) as f64 / 1e6),
            mib(all),
            mib(all - state),
            mib(state),
        )
    }
}

/// CPU seconds (user and system) every thread of this process has used so
/// far, from `/proc/self/stat`; 0 where it cannot be read.
pub fn process_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // The fields after the command (which is in parentheses and may hold
    // spaces): utime and stime are the 12th and 13th, in clock ticks of 1/100 s.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// How long without a barrier means every hop has drained: several barrier
/// intervals (an application with nothing left to do cuts none).
const QUIET: Duration = Duration::from_millis(2_000);

/// Runs `topology` on `lanes` lanes over what `log` holds. With `drain`,
/// the clock stops at the last barrier commit before the application went
/// quiet (results crossing repartition hops take barriers after the input
/// is consumed); without, at the end of the `close()` called once the
/// input is consumed.
pub(crate) fn run_app(
    topology: Topology,
    log: &Arc<EmbeddedLog>,
    setup: (&RunDir, E2eStores),
    lanes: usize,
    drain: bool,
) -> Result<E2eRun, BenchError> {
    let config = setup.1.config(setup.0.path(), lanes);
    let mut app = StreamsApp::with_log(topology, config, log.clone()).map_err(engine_err)?;
    let start = Instant::now();
    let cpu_start = process_cpu_seconds();
    app.start().map_err(engine_err)?;
    let consumed = match drain {
        true => app.wait_until_caught_up(Duration::from_secs(3_600)),
        false => app.wait_until_consumed(Duration::from_secs(3_600)),
    };
    if !consumed.map_err(engine_err)? {
        return Err(engine_err(format!(
            "did not consume its input: state {}, error {:?}",
            app.state(),
            app.error()
        )));
    }
    let drained = if drain {
        Some(wait_until_quiet(&app)?)
    } else {
        None
    };
    if !app.close(Duration::from_secs(600)) {
        return Err(engine_err(format!("close failed: {:?}", app.error())));
    }
    let cpu_seconds = process_cpu_seconds() - cpu_start;
    let end = drained.unwrap_or_else(Instant::now);
    let seconds = end.duration_since(start).as_secs_f64();
    Ok(E2eRun {
        cpu_seconds,
        seconds,
        outputs: committed_records(log, OUTPUT)?,
        timeline: app.timeline(),
    })
}

/// Waits until `app` has cut no barrier for [`QUIET`]; returns when its last
/// barrier committed.
fn wait_until_quiet(app: &StreamsApp<EmbeddedLog>) -> Result<Instant, BenchError> {
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut seen = app.committed_barriers();
    let mut since = Instant::now();
    while since.elapsed() < QUIET {
        if Instant::now() > deadline || app.state().has_stopped() {
            return Err(engine_err(format!(
                "did not go quiet: state {}, error {:?}",
                app.state(),
                app.error()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
        let now = app.committed_barriers();
        if now != seen {
            seen = now;
            since = Instant::now();
        }
    }
    app.timeline()
        .barriers()
        .last()
        .map(|b| b.committed)
        .ok_or_else(|| engine_err("no barrier committed"))
}

/// Runs the tumbling count end to end on `lanes` lanes over `events`
/// records. Prints its final-result latency and resources lines first.
pub fn run_e2e_tumbling(
    events: u64,
    lanes: usize,
    stores: E2eStores,
) -> Result<E2eResult, BenchError> {
    let dir = RunDir::new()?;
    let log = write_input(&dir, events)?;
    let run = run_app(tumbling_topology()?, &log, (&dir, stores), lanes, false)?;
    let latency = Latency::of_closes(&run.timeline, (1..).map(|k| k * TUMBLING_WINDOW_MS as i64));
    let query = format!("e2e-tumbling-{lanes}-lane");
    println!("{}", latency.line(&query));
    println!("{}", run.resources_line(&query, stores, events, &dir));
    Ok(E2eResult {
        seconds: run.seconds,
        outputs: run.outputs,
        digest: output_digest(&log, OUTPUT)?,
    })
}

/// Records per input transaction of the paced writer.
const PACED_BATCH: u64 = 1_000;

/// Runs the tumbling count end to end on one lane while this thread writes
/// its `events` records at `pace` records per second of wall-clock time
/// (event time still 1 ms per record, so windows close `pace / 10 000`
/// times a second): (seconds, final results committed). Prints the
/// latency line first.
pub fn run_e2e_tumbling_paced(
    events: u64,
    pace: u64,
    stores: E2eStores,
) -> Result<(f64, u64), BenchError> {
    let dir = RunDir::new()?;
    let log = write_log(&dir, INPUT, std::iter::empty())?;
    let config = stores.config(dir.path(), 1);
    let mut app =
        StreamsApp::with_log(tumbling_topology()?, config, log.clone()).map_err(engine_err)?;
    let start = Instant::now();
    app.start().map_err(engine_err)?;
    let mut producer = log
        .transactional_producer("bench-input")
        .map_err(engine_err)?;
    let tps: Vec<TopicPartition> = (0..E2E_PARTITIONS)
        .map(|p| TopicPartition::new(INPUT, p))
        .collect();
    let mut written = 0u64;
    while written < events {
        let due = start + Duration::from_secs_f64(written as f64 / pace as f64);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        producer.begin().map_err(engine_err)?;
        let end = (written + PACED_BATCH).min(events);
        for ts in written as i64..end as i64 {
            let key = ts % TUMBLING_KEYS;
            let record = Record::new(
                Some(&key.to_be_bytes()),
                Some(&1i64.to_be_bytes()),
                Timestamp(ts),
            );
            producer
                .send(&tps[(key as u32 % E2E_PARTITIONS) as usize], &record)
                .map_err(engine_err)?;
        }
        producer.commit().map_err(engine_err)?;
        written = end;
        if app.state().has_stopped() {
            return Err(engine_err(format!("stopped: {:?}", app.error())));
        }
    }
    if !app
        .wait_until_caught_up(Duration::from_secs(600))
        .map_err(engine_err)?
    {
        return Err(engine_err("did not consume its input"));
    }
    if !app.close(Duration::from_secs(600)) {
        return Err(engine_err(format!("close failed: {:?}", app.error())));
    }
    let seconds = start.elapsed().as_secs_f64();
    let timeline = app.timeline();
    let latency = Latency::of_closes(&timeline, (1..).map(|k| k * TUMBLING_WINDOW_MS as i64));
    println!("{} pace={pace}", latency.line("e2e-tumbling-paced"));
    Ok((seconds, committed_records(&log, OUTPUT)?))
}

/// Runs Nexmark q5 end to end on `lanes` lanes over `events` generated
/// events, until every hop has drained. Prints its barrier and resources
/// lines first.
pub fn run_e2e_q5(
    events: u64,
    lanes: usize,
    generator: &GeneratorConfig,
    stores: E2eStores,
) -> Result<E2eResult, BenchError> {
    let dir = RunDir::new()?;
    let log = write_nexmark(&dir, events, generator)?;
    let run = run_app(q5_topology(generator)?, &log, (&dir, stores), lanes, true)?;
    let latency = Latency::of_closes(&run.timeline, std::iter::empty());
    let query = format!("e2e-q5-{lanes}-lane");
    println!("{}", latency.line(&query));
    println!("{}", run.resources_line(&query, stores, events, &dir));
    Ok(E2eResult {
        seconds: run.seconds,
        outputs: run.outputs,
        digest: output_digest(&log, OUTPUT)?,
    })
}

/// Final-result latencies of a run's window closes (sub-topology 0): from
/// the first barrier stamp at or past the close, and from the moment the
/// watermark reached it, to the commit of the transaction carrying the
/// window's results.
#[derive(Debug, Clone, Default)]
pub struct Latency {
    from_stamp: Vec<Duration>,
    from_watermark: Vec<Duration>,
    /// Each close's `from_stamp` less its carrying transaction's own
    /// duration: the barrier intervals it waited through, ascending.
    waited: Vec<Duration>,
    /// The mean interval between barrier cuts.
    interval: Duration,
    /// Each barrier's duration, cut to commit, ascending.
    barrier: Vec<Duration>,
    /// Each interval between consecutive cuts, ascending (the mean above
    /// includes the start's and the close's short ones).
    intervals: Vec<Duration>,
}

impl Latency {
    /// The latencies of `closes` (ascending), up to the first one no
    /// committed barrier carries.
    pub fn of_closes(timeline: &Timeline, closes: impl Iterator<Item = i64>) -> Latency {
        let mut out = Latency::default();
        for close in closes {
            let Some(l) = timeline.final_result_latency(0, close) else {
                break;
            };
            out.from_stamp.push(l.from_stamp);
            out.from_watermark.push(l.from_watermark);
            out.waited
                .push(l.from_stamp.saturating_sub(l.carrier_commit));
        }
        out.from_stamp.sort();
        out.waited.sort();
        out.from_watermark.sort();
        out.barrier = timeline.barriers().map(|b| b.committed - b.cut).collect();
        out.barrier.sort();
        let cuts: Vec<Instant> = timeline.barriers().map(|b| b.cut).collect();
        out.intervals = cuts.windows(2).map(|w| w[1] - w[0]).collect();
        out.intervals.sort();
        if let (Some(first), Some(last)) = (cuts.first(), cuts.last())
            && cuts.len() > 1
        {
            out.interval = (*last - *first) / (cuts.len() as u32 - 1);
        }
        out
    }

    /// `latency query=… closes=… interval_ms=… interval_p50_ms=… barrier_p50_ms=… barrier_p99_ms=… p50_ms=… p99_ms=… max_ms=… p99_from_watermark_ms=… max_from_watermark_ms=… p99_waited_ms=…`
    /// (`waited`: from the stamp to the carrying barrier's cut, which the
    /// target bounds by two commit intervals).
    pub fn line(&self, query: &str) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let pct = |v: &[Duration], p: f64| {
            if v.is_empty() {
                return f64::NAN;
            }
            let i = ((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1;
            ms(v[i])
        };
        format!(
            "latency query={query} closes={} interval_ms={:.0} interval_p50_ms={:.0} barrier_p50_ms={:.1} barrier_p99_ms={:.1} p50_ms={:.0} p99_ms={:.0} max_ms={:.0} p99_from_watermark_ms={:.0} max_from_watermark_ms={:.0} p99_waited_ms={:.0}",
            self.from_stamp.len(),
            ms(self.interval),
            pct(&self.intervals, 0.5),
            pct(&self.barrier, 0.5),
            pct(&self.barrier, 0.99),
            pct(&self.from_stamp, 0.5),
            pct(&self.from_stamp, 0.99),
            pct(&self.from_stamp, 1.0),
            pct(&self.from_watermark, 0.99),
            pct(&self.from_watermark, 1.0),
            pct(&self.waited, 0.99),
        )
    }
}

/// A digest of every committed record of `topic` (partition, key, value,
/// timestamp), independent of their order: equal digests mean the same
/// results, whichever stores or lanes made them.
pub fn output_digest(log: &EmbeddedLog, topic: &str) -> Result<u64, BenchError> {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut consumer = log.consumer("bench-digest").map_err(engine_err)?;
    let tps: Vec<TopicPartition> = (0..E2E_PARTITIONS)
        .map(|p| TopicPartition::new(topic, p))
        .collect();
    let mut left = 0;
    for tp in &tps {
        left += consumer.end_offset(tp).map_err(engine_err)?.0
            - consumer.beginning_offset(tp).map_err(engine_err)?.0;
    }
    consumer.assign(&tps).map_err(engine_err)?;
    let mut digest = 0u64;
    while left > 0 {
        let fetched = consumer.fetch(Duration::from_secs(5)).map_err(engine_err)?;
        if fetched.is_empty() {
            return Err(engine_err(format!(
                "{left} committed records of {topic} not fetched"
            )));
        }
        for r in fetched {
            let mut h = DefaultHasher::new();
            (
                r.partition.partition,
                &r.record.key,
                &r.record.value,
                r.record.timestamp.0,
            )
                .hash(&mut h);
            digest = digest.wrapping_add(h.finish());
            left = left.saturating_sub(1);
        }
    }
    Ok(digest)
}

fn committed_records(log: &EmbeddedLog, topic: &str) -> Result<u64, BenchError> {
    let mut consumer = log.consumer("bench-reader").map_err(engine_err)?;
    let mut total = 0;
    for p in 0..E2E_PARTITIONS {
        let tp = TopicPartition::new(topic, p);
        total += consumer.end_offset(&tp).map_err(engine_err)?.0
            - consumer.beginning_offset(&tp).map_err(engine_err)?.0;
    }
    Ok(total)
}
