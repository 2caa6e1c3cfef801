//! Running one query or workload for a number of events and measuring it.
//!
//! Nexmark events are generated in chunks outside the timed region (the
//! generator's own rate is the `gen` run), then pushed typed into the
//! pipeline; the watermark follows the largest event time seen, less the
//! out-of-orderness bound, and a barrier runs every `frontier_every` events.
//! The windowed workloads compute their input inline, in the timed region, as
//! the tumbling count does (a few integer operations per record).

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stoatflow_streams::{KStream, StreamsBuilder, StreamsConfig, Windowed};
use stoatflow_time::Watermark;

use crate::e2e_queries::E2eQuery;
pub use crate::error::BenchError;
pub use crate::nexmark::out_of_orderness;
use crate::nexmark::{Event, Generator, GeneratorConfig};
use crate::pipeline::Pipeline;
use crate::queries::{self, EVENTS_TOPIC};
use crate::report::{RunReport, peak_rss_bytes};
use crate::workloads::{
    self, KeyedInput, LEFT_TOPIC, RIGHT_TOPIC, TUMBLING_INPUT, WINDOWED_INPUT, join_record,
};
pub use crate::workloads::{TUMBLING_KEYS, TUMBLING_WINDOW_MS};

/// Every query and workload the binary runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Query {
    /// The Nexmark generator alone.
    Gen,
    /// Nexmark q0.
    Q0,
    /// Nexmark q1.
    Q1,
    /// Nexmark q2.
    Q2,
    /// Nexmark q5.
    Q5,
    /// Nexmark q7.
    Q7,
    /// Nexmark q8.
    Q8,
    /// Tumbling count: 1,000 keys, 1 ms spacing, 10 s windows, on close.
    Tumbling,
    /// Sliding count: 1,000 keys in bursts of 8, D = 10 s, on close.
    Sliding,
    /// Session count: 1,000 keys in bursts of 8, gap = 5 s, on close.
    Session,
    /// 1 s windowed inner join of two inputs over 10,000 keys.
    JoinInner,
    /// 1 s windowed left join of two inputs over 10,000 keys.
    JoinLeft,
    /// The tumbling count end to end (embedded log, exactly-once), 1 lane.
    E2eTumbling1,
    /// The tumbling count end to end (embedded log, exactly-once), 2 lanes.
    E2eTumbling2,
    /// Nexmark q5 end to end on one lane (runtime, embedded log, exactly-once).
    E2eQ5One,
    /// Nexmark q5 end to end on two lanes.
    E2eQ5Two,
    /// The tumbling count end to end on one lane, its input written while
    /// it runs at [`RunOptions::pace`] records per second: the final-result
    /// latency of a steady state rather than of a backlog.
    E2eTumblingPaced,
    /// Another query end to end on one lane, as the tumbling count and q5
    /// (q7, q8, sliding, session, the inner and left joins).
    E2eOne(crate::e2e_queries::E2eQuery),
}

impl Query {
    /// Every query, in report order.
    pub const ALL: &'static [Query] = &[
        Query::Gen,
        Query::Q0,
        Query::Q1,
        Query::Q2,
        Query::Q5,
        Query::Q7,
        Query::Q8,
        Query::Tumbling,
        Query::Sliding,
        Query::Session,
        Query::JoinInner,
        Query::JoinLeft,
        Query::E2eTumbling1,
        Query::E2eTumbling2,
        Query::E2eQ5One,
        Query::E2eQ5Two,
        Query::E2eTumblingPaced,
        Query::E2eOne(E2eQuery::Q7),
        Query::E2eOne(E2eQuery::Q8),
        Query::E2eOne(E2eQuery::Sliding),
        Query::E2eOne(E2eQuery::Session),
        Query::E2eOne(E2eQuery::JoinInner),
        Query::E2eOne(E2eQuery::JoinLeft),
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Query::Gen => "gen",
            Query::Q0 => "q0",
            Query::Q1 => "q1",
            Query::Q2 => "q2",
            Query::Q5 => "q5",
            Query::Q7 => "q7",
            Query::Q8 => "q8",
            Query::Tumbling => "tumbling",
            Query::Sliding => "sliding",
            Query::Session => "session",
            Query::JoinInner => "join-inner",
            Query::JoinLeft => "join-left",
            Query::E2eTumbling1 => "e2e-tumbling-1-lane",
            Query::E2eTumbling2 => "e2e-tumbling-2-lanes",
            Query::E2eQ5One => "e2e-q5-1-lane",
            Query::E2eQ5Two => "e2e-q5-2-lanes",
            Query::E2eTumblingPaced => "e2e-tumbling-paced",
            Query::E2eOne(E2eQuery::Q7) => "e2e-q7-1-lane",
            Query::E2eOne(E2eQuery::Q8) => "e2e-q8-1-lane",
            Query::E2eOne(E2eQuery::Sliding) => "e2e-sliding-1-lane",
            Query::E2eOne(E2eQuery::Session) => "e2e-session-1-lane",
            Query::E2eOne(E2eQuery::JoinInner) => "e2e-join-inner-1-lane",
            Query::E2eOne(E2eQuery::JoinLeft) => "e2e-join-left-1-lane",
        }
    }

    /// The query named `name`.
    pub fn from_name(name: &str) -> Option<Query> {
        Query::ALL.iter().copied().find(|q| q.name() == name)
    }

    /// Whether [`RunOptions::changelog`] applies: every task-path run except
    /// the generator alone (the end-to-end runs keep the runtime's own).
    pub fn takes_changelog_option(self) -> bool {
        !matches!(
            self,
            Query::Gen
                | Query::E2eTumbling1
                | Query::E2eTumbling2
                | Query::E2eQ5One
                | Query::E2eQ5Two
                | Query::E2eTumblingPaced
                | Query::E2eOne(_)
        )
    }

    /// Whether this is a Nexmark query (reads generated Nexmark events).
    pub fn is_nexmark(self) -> bool {
        !matches!(
            self,
            Query::Tumbling
                | Query::Sliding
                | Query::Session
                | Query::JoinInner
                | Query::JoinLeft
                | Query::E2eTumbling1
                | Query::E2eTumbling2
                | Query::E2eTumblingPaced
                | Query::E2eOne(
                    E2eQuery::Sliding
                        | E2eQuery::Session
                        | E2eQuery::JoinInner
                        | E2eQuery::JoinLeft
                )
        )
    }
}

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Events to push.
    pub events: u64,
    /// The Nexmark generator's settings.
    pub generator: GeneratorConfig,
    /// A barrier (watermark move, emission pass, commit) every this many events.
    pub frontier_every: u64,
    /// Whether the stores keep changelogs (each barrier serializes every
    /// store's dirty entries, as a user's application does; the records are
    /// then dropped, as no broker is on the task path). On by default.
    pub changelog: bool,
    /// Input records written per second of wall-clock time by the paced
    /// end-to-end run (`--pace`).
    pub pace: u64,
    /// The stores of the end-to-end runs (`--stores`): the defaults, or in
    /// memory on the same on-disk log.
    pub stores: crate::e2e::E2eStores,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            events: 1_000_000,
            generator: GeneratorConfig::default(),
            frontier_every: 10_000,
            changelog: true,
            pace: 500_000,
            stores: crate::e2e::E2eStores::Default,
        }
    }
}

/// Events generated per untimed chunk.
const CHUNK: usize = 1 << 16;

/// Runs `query` as `opts` say.
pub fn run(query: Query, opts: &RunOptions) -> Result<RunReport, BenchError> {
    let (seconds, outputs) = match query {
        Query::Gen => run_generator(opts),
        Query::Q0 => counted(|sink| run_nexmark("q0", queries::q0, sink, opts))?,
        Query::Q1 => counted(|sink| run_nexmark("q1", queries::q1, sink, opts))?,
        Query::Q2 => counted(|sink| run_nexmark("q2", queries::q2, sink, opts))?,
        Query::Q5 => counted(|sink| run_nexmark("q5", queries::q5, sink, opts))?,
        Query::Q7 => counted(|sink| run_nexmark("q7", queries::q7, sink, opts))?,
        Query::Q8 => counted(|sink| run_nexmark("q8", queries::q8, sink, opts))?,
        Query::Tumbling => counted(|sink| {
            run_windowed("tumbling", workloads::tumbling, &TUMBLING_INPUT, sink, opts)
        })?,
        Query::Sliding => counted(|sink| {
            run_windowed("sliding", workloads::sliding, &WINDOWED_INPUT, sink, opts)
        })?,
        Query::Session => counted(|sink| {
            run_windowed("session", workloads::session, &WINDOWED_INPUT, sink, opts)
        })?,
        Query::JoinInner => {
            counted(|sink| run_join("join-inner", workloads::join_inner, sink, opts))?
        }
        Query::JoinLeft => counted(|sink| run_join("join-left", workloads::join_left, sink, opts))?,
        Query::E2eTumbling1 => e2e_pair(crate::e2e::run_e2e_tumbling(opts.events, 1, opts.stores)?),
        Query::E2eTumbling2 => e2e_pair(crate::e2e::run_e2e_tumbling(opts.events, 2, opts.stores)?),
        Query::E2eQ5One => e2e_pair(crate::e2e::run_e2e_q5(
            opts.events,
            1,
            &opts.generator,
            opts.stores,
        )?),
        Query::E2eQ5Two => e2e_pair(crate::e2e::run_e2e_q5(
            opts.events,
            2,
            &opts.generator,
            opts.stores,
        )?),
        Query::E2eTumblingPaced => {
            crate::e2e::run_e2e_tumbling_paced(opts.events, opts.pace, opts.stores)?
        }
        Query::E2eOne(q) => e2e_pair(crate::e2e_queries::run_e2e(
            q,
            opts.events,
            1,
            &opts.generator,
            opts.stores,
        )?),
    };
    Ok(report(query, opts, seconds, outputs))
}

fn e2e_pair(r: crate::e2e::E2eResult) -> (f64, u64) {
    (r.seconds, r.outputs)
}

fn report(query: Query, opts: &RunOptions, seconds: f64, outputs: u64) -> RunReport {
    let cores = match query {
        Query::E2eTumbling2 | Query::E2eQ5Two => 2,
        _ => 1,
    };
    RunReport {
        query: query.name().to_owned(),
        events: opts.events,
        seconds,
        cores,
        changelog: query.takes_changelog_option().then_some(opts.changelog),
        outputs,
        peak_rss_bytes: peak_rss_bytes(),
        peak_store_entries: query
            .takes_changelog_option()
            .then(crate::pipeline::peak_store_entries),
    }
}

fn run_generator(opts: &RunOptions) -> (f64, u64) {
    let start = Instant::now();
    let mut n = 0;
    for e in Generator::new(opts.generator.clone()).take(opts.events as usize) {
        black_box(e);
        n += 1;
    }
    (start.elapsed().as_secs_f64(), n)
}

/// A Nexmark query: builds `build`'s topology with `sink` on its result and
/// pushes `opts.events` generated events (generated in chunks outside the
/// timed region) with a barrier every `opts.frontier_every` events at the
/// watermark [`out_of_orderness`] behind the largest time seen, then
/// finishes. Returns the seconds taken. The benchmark and the query tests
/// both run through here.
pub fn run_nexmark<K, V>(
    query: &'static str,
    build: impl FnOnce(&mut StreamsBuilder, Duration) -> KStream<K, V>,
    sink: impl Fn(&K, &V) + Send + Sync + 'static,
    opts: &RunOptions,
) -> Result<f64, BenchError>
where
    K: Clone + 'static,
    V: Clone + 'static,
{
    let ooo = out_of_orderness(&opts.generator);
    let mut builder = StreamsBuilder::new();
    build(&mut builder, ooo).foreach(sink);
    let mut p = pipeline(query, &builder, opts)?;
    let input = p
        .input::<(), Event>(EVENTS_TOPIC)
        .ok_or(BenchError::Input {
            query,
            topic: EVENTS_TOPIC,
        })?;
    let perr = |source| BenchError::Process { query, source };
    let lag = ooo.as_millis() as i64;
    let mut generator = Generator::new(opts.generator.clone());
    let mut chunk: Vec<Event> = Vec::with_capacity(CHUNK);
    let mut elapsed = Duration::ZERO;
    let mut pushed = 0u64;
    let mut max_ts = i64::MIN;
    while pushed < opts.events {
        let n = CHUNK.min((opts.events - pushed) as usize);
        chunk.extend(generator.by_ref().take(n));
        let start = Instant::now();
        for e in chunk.drain(..) {
            let ts = e.date_time();
            max_ts = max_ts.max(ts);
            p.push(&input, (), e, ts).map_err(perr)?;
            pushed += 1;
            if pushed.is_multiple_of(opts.frontier_every) {
                p.advance(Watermark::from_millis(max_ts - lag))
                    .map_err(perr)?;
            }
        }
        elapsed += start.elapsed();
    }
    let start = Instant::now();
    p.finish().map_err(perr)?;
    elapsed += start.elapsed();
    Ok(elapsed.as_secs_f64())
}

fn pipeline(
    query: &'static str,
    builder: &StreamsBuilder,
    opts: &RunOptions,
) -> Result<Pipeline, BenchError> {
    let topology = builder
        .build()
        .map_err(|source| BenchError::Topology { query, source })?;
    Pipeline::new(
        &topology,
        StreamsConfig::new(format!("stoatflow-bench-{query}")).with_changelog(opts.changelog),
    )
    .map_err(|source| BenchError::Topology { query, source })
}

/// The tumbling workload, its windows kept: `(key, window start, count)`
/// per emitted window, in emission order, beside the run's report (the
/// results `bench/compare` checks against the peers'). The sink collects
/// instead of counting; everything else is [`run`]'s.
pub fn tumbling_windows(
    opts: &RunOptions,
) -> Result<(RunReport, Vec<(i64, i64, i64)>), BenchError> {
    let windows = Arc::new(Mutex::new(Vec::new()));
    let sink = windows.clone();
    let seconds = run_windowed(
        "tumbling",
        workloads::tumbling,
        &TUMBLING_INPUT,
        move |w: &Windowed<i64>, n: &i64| {
            sink.lock()
                .expect("tumbling sink")
                .push((w.key, w.window.start, *n))
        },
        opts,
    )?;
    let windows = std::mem::take(&mut *windows.lock().expect("tumbling sink"));
    let report = report(Query::Tumbling, opts, seconds, windows.len() as u64);
    Ok((report, windows))
}

/// Runs `run` with a sink that counts what reaches it: (seconds, outputs).
fn counted<K: 'static, V: 'static>(
    run: impl FnOnce(Box<dyn Fn(&K, &V) + Send + Sync>) -> Result<f64, BenchError>,
) -> Result<(f64, u64), BenchError> {
    let outputs = Arc::new(AtomicU64::new(0));
    let n = outputs.clone();
    let seconds = run(Box::new(move |k, v| {
        black_box((k, v));
        n.fetch_add(1, Ordering::Relaxed);
    }))?;
    Ok((seconds, outputs.load(Ordering::Relaxed)))
}

/// A keyed count workload (tumbling, sliding, session): builds `build`'s
/// topology with `sink` on its result, pushes `opts.events` records of
/// `input` (value 1) with a barrier every `opts.frontier_every` at the
/// watermark `input.lag` behind the newest time, then finishes. Returns the
/// seconds taken. The benchmark and the workload tests both run through here.
pub fn run_windowed<K, V>(
    query: &'static str,
    build: impl FnOnce(&mut StreamsBuilder) -> KStream<K, V>,
    input: &KeyedInput,
    sink: impl Fn(&K, &V) + Send + Sync + 'static,
    opts: &RunOptions,
) -> Result<f64, BenchError>
where
    K: Clone + 'static,
    V: Clone + 'static,
{
    let mut builder = StreamsBuilder::new();
    build(&mut builder).foreach(sink);
    let mut p = pipeline(query, &builder, opts)?;
    let (topic, record) = (input.topic, input.record);
    let typed = p
        .input::<i64, i64>(topic)
        .ok_or(BenchError::Input { query, topic })?;
    let perr = |source| BenchError::Process { query, source };
    let lag = input.lag.as_millis() as i64;
    let start = Instant::now();
    for i in 0..opts.events {
        let (key, ts) = record(i);
        p.push(&typed, key, 1, ts).map_err(perr)?;
        if (i + 1).is_multiple_of(opts.frontier_every) {
            p.advance(Watermark::from_millis(ts - lag)).map_err(perr)?;
        }
    }
    p.finish().map_err(perr)?;
    Ok(start.elapsed().as_secs_f64())
}

/// A join workload: builds `build`'s topology with `sink` on its result and
/// pushes `opts.events` records in all, alternating left and right (pair
/// `i` of [`workloads::join_record`], value `i` on both sides), with a
/// barrier every `opts.frontier_every` records at the newest time, then
/// finishes. Returns the seconds taken.
pub fn run_join<V>(
    query: &'static str,
    build: impl FnOnce(&mut StreamsBuilder) -> KStream<i64, V>,
    sink: impl Fn(&i64, &V) + Send + Sync + 'static,
    opts: &RunOptions,
) -> Result<f64, BenchError>
where
    V: Clone + 'static,
{
    let mut builder = StreamsBuilder::new();
    build(&mut builder).foreach(sink);
    let mut p = pipeline(query, &builder, opts)?;
    let input = |topic| {
        p.input::<i64, i64>(topic)
            .ok_or(BenchError::Input { query, topic })
    };
    let (left, right) = (input(LEFT_TOPIC)?, input(RIGHT_TOPIC)?);
    let perr = |source| BenchError::Process { query, source };
    let start = Instant::now();
    for j in 0..opts.events {
        let i = j / 2;
        let (left_key, right_key, ts) = join_record(i);
        if j % 2 == 0 {
            p.push(&left, left_key, i as i64, ts).map_err(perr)?;
        } else {
            p.push(&right, right_key, i as i64, ts).map_err(perr)?;
        }
        if (j + 1).is_multiple_of(opts.frontier_every) {
            p.advance(Watermark::from_millis(ts)).map_err(perr)?;
        }
    }
    p.finish().map_err(perr)?;
    Ok(start.elapsed().as_secs_f64())
}
