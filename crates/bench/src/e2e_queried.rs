//! `--query e2e-tumbling-queried`: whether interactive queries slow the
//! engine. The end-to-end tumbling count ([`crate::e2e`], the default
//! stores unless `--stores` says otherwise) runs in pairs, alternated in
//! one process: once with nobody asking, once with a client reading one
//! key's windows, committed, `--queries-per-s` times a second (100) from
//! the start to the end of the timed region. Each pair prints both runs
//! and the ratio of their throughputs (queried over none), the order
//! within a pair alternating so that drift favours neither; the last line
//! sums them up with the load average. The client asks from RUNNING until
//! the input is consumed (before, the stores restore; after, the close
//! refuses queries), and reports its queries a second over the whole run.
//!
//! The client fires each query on time whatever the previous ones take
//! (a committed read waits for the next barrier): `CLIENTS` (64) threads take
//! turns, each firing every `CLIENTS` periods. A short unreported run
//! warms the process up first.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use stoatflow_log::EmbeddedLog;
use stoatflow_runtime::{AppHandle, AppState, StateQueryRequest, StreamsApp, WindowQuery};

use crate::e2e::{E2eStores, RunDir, engine_err, tumbling_topology_in, write_input};
use crate::error::BenchError;
use crate::workloads::TUMBLING_KEYS;

/// The window store the client reads.
const STORE: &str = "tumbling-counts";
/// The client's threads.
const CLIENTS: u32 = 64;

/// What one run measured.
#[derive(Debug, Clone, Copy)]
struct QueriedRun {
    seconds: f64,
    events: u64,
    /// Queries answered, failed, and the answers' summed latency (ms).
    answered: u64,
    failed: u64,
    latency_ms: f64,
}

impl QueriedRun {
    fn events_per_s(&self) -> f64 {
        self.events as f64 / self.seconds
    }

    fn line(&self, label: &str) -> String {
        format!(
            "{label} seconds={:.3} events_per_s={:.0} queries_answered={} queries_failed={} queries_per_s={:.1} query_mean_ms={:.1}",
            self.seconds,
            self.events_per_s(),
            self.answered,
            self.failed,
            self.answered as f64 / self.seconds,
            self.latency_ms / self.answered.max(1) as f64,
        )
    }
}

/// The client's counters.
#[derive(Debug, Default)]
struct Tally {
    answered: AtomicU64,
    failed: AtomicU64,
    latency_us: AtomicU64,
}

/// The querying client: [`CLIENTS`] threads firing `per_s` committed
/// window reads a second between them, until `stop`.
struct Client {
    stop: Arc<AtomicBool>,
    tally: Arc<Tally>,
    threads: Vec<JoinHandle<()>>,
}

impl Client {
    fn start(app: &AppHandle, per_s: u32) -> Client {
        let stop = Arc::new(AtomicBool::new(false));
        let tally = Arc::new(Tally::default());
        let period = Duration::from_secs(1) / per_s.max(1);
        let t0 = Instant::now();
        let threads = (0..CLIENTS)
            .map(|i| {
                let (app, stop, tally) = (app.clone(), stop.clone(), tally.clone());
                std::thread::spawn(move || {
                    ask(&app, &stop, &tally, t0 + period * i, period * CLIENTS)
                })
            })
            .collect();
        Client {
            stop,
            tally,
            threads,
        }
    }

    fn finish(self) -> (u64, u64, f64) {
        self.stop.store(true, Ordering::Release);
        for t in self.threads {
            let _ = t.join();
        }
        let t = &self.tally;
        (
            t.answered.load(Ordering::Acquire),
            t.failed.load(Ordering::Acquire),
            t.latency_us.load(Ordering::Acquire) as f64 / 1_000.0,
        )
    }
}

/// One client thread: a query at `first`, then every `every`, each for
/// the next key's windows over the whole input's time.
fn ask(app: &AppHandle, stop: &AtomicBool, tally: &Tally, first: Instant, every: Duration) {
    let mut next = first;
    let mut key = 0i64;
    while !stop.load(Ordering::Acquire) {
        let now = Instant::now();
        if now < next {
            std::thread::sleep((next - now).min(Duration::from_millis(50)));
            continue;
        }
        next += every;
        key = (key + 7) % TUMBLING_KEYS;
        let q = WindowQuery::<i64, i64>::with_key_and_window_starts(key, 0, i64::MAX);
        let request = StateQueryRequest::in_store(STORE, q).with_timeout(Duration::from_secs(10));
        let asked = Instant::now();
        match app.query(request) {
            Ok(_) => {
                tally.answered.fetch_add(1, Ordering::Relaxed);
                let us = asked.elapsed().as_micros() as u64;
                tally.latency_us.fetch_add(us, Ordering::Relaxed);
            }
            Err(error) => {
                if tally.failed.fetch_add(1, Ordering::Relaxed) == 0 {
                    eprintln!("e2e-tumbling-queried: a query failed: {error}");
                }
            }
        }
    }
}

/// One run over a fresh log of `events` records, queried `per_s` times a
/// second (0: not at all): from `start()` to the end of `close()`, as the
/// other end-to-end runs time it.
fn run_once(
    events: u64,
    lanes: usize,
    stores: E2eStores,
    per_s: u32,
) -> Result<QueriedRun, BenchError> {
    let dir = RunDir::new()?;
    let log: Arc<EmbeddedLog> = write_input(&dir, events)?;
    let config = stores.config(dir.path(), lanes);
    let topology = tumbling_topology_in(Some(STORE))?;
    let mut app = StreamsApp::with_log(topology, config, log).map_err(engine_err)?;
    let start = Instant::now();
    app.start().map_err(engine_err)?;
    // Queries before RUNNING (the stores restoring) or during the close
    // are refused, so the client asks from RUNNING until the input is
    // consumed: the whole of the processing.
    let client = if per_s > 0 {
        app.wait_for_state(AppState::Running, Duration::from_secs(600));
        Some(Client::start(&app.handle(), per_s))
    } else {
        None
    };
    let consumed = app
        .wait_until_consumed(Duration::from_secs(3_600))
        .map_err(engine_err)?;
    if !consumed {
        return Err(engine_err(format!(
            "did not consume its input: state {}, error {:?}",
            app.state(),
            app.error()
        )));
    }
    let (answered, failed, latency_ms) = client.map_or((0, 0, 0.0), Client::finish);
    if !app.close(Duration::from_secs(600)) {
        return Err(engine_err(format!("close failed: {:?}", app.error())));
    }
    let seconds = start.elapsed().as_secs_f64();
    Ok(QueriedRun {
        seconds,
        events,
        answered,
        failed,
        latency_ms,
    })
}

/// The options of `--query e2e-tumbling-queried`.
#[derive(Debug, Clone, Copy)]
pub struct QueriedOptions {
    /// Input records per run.
    pub events: u64,
    /// Pairs of runs (none, queried).
    pub pairs: u32,
    /// Queries a second while queried.
    pub queries_per_s: u32,
    /// Lanes.
    pub lanes: usize,
    /// The stores.
    pub stores: E2eStores,
}

impl Default for QueriedOptions {
    fn default() -> Self {
        QueriedOptions {
            events: 2_000_000,
            pairs: 3,
            queries_per_s: 100,
            lanes: 2,
            stores: E2eStores::Default,
        }
    }
}

/// Runs the pairs and prints them; returns each pair's throughput ratio
/// (queried over none).
///
/// # Errors
/// A run's.
pub fn run_pairs(opts: &QueriedOptions) -> Result<Vec<f64>, BenchError> {
    // Unreported: the first run of a process pays for cold caches.
    run_once(
        opts.events / 10,
        opts.lanes,
        opts.stores,
        opts.queries_per_s,
    )?;
    let mut ratios = Vec::new();
    for pair in 0..opts.pairs {
        let order: [u32; 2] = if pair % 2 == 0 {
            [0, opts.queries_per_s]
        } else {
            [opts.queries_per_s, 0]
        };
        let mut none = None;
        let mut queried = None;
        for per_s in order {
            let run = run_once(opts.events, opts.lanes, opts.stores, per_s)?;
            let label = if per_s == 0 { "none" } else { "queried" };
            println!("e2e-tumbling-queried pair={} {}", pair + 1, run.line(label));
            if per_s == 0 {
                none = Some(run);
            } else {
                queried = Some(run);
            }
        }
        if let (Some(n), Some(q)) = (none, queried) {
            let ratio = q.events_per_s() / n.events_per_s();
            println!("e2e-tumbling-queried pair={} ratio={ratio:.3}", pair + 1);
            ratios.push(ratio);
        }
    }
    Ok(ratios)
}

/// `--query e2e-tumbling-queried [--events N] [--pairs N]
/// [--queries-per-s N] [--lanes N] [--stores default|in-memory]`.
///
/// # Errors
/// A bad argument, or a run's.
pub fn run_from_args(args: &[String]) -> anyhow::Result<()> {
    let mut opts = QueriedOptions::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        let number = |v: &str| -> anyhow::Result<u64> {
            v.replace('_', "")
                .parse()
                .with_context(|| format!("{flag}: cannot parse {v}"))
        };
        match flag.as_str() {
            "--query" => {
                value()?;
            }
            "--events" => opts.events = number(value()?)?,
            "--pairs" => opts.pairs = u32::try_from(number(value()?)?)?.max(1),
            "--queries-per-s" => opts.queries_per_s = u32::try_from(number(value()?)?)?.max(1),
            "--lanes" => opts.lanes = usize::try_from(number(value()?)?)?.max(1),
            "--stores" => {
                let name = value()?;
                opts.stores = E2eStores::from_name(name).with_context(|| {
                    format!("--stores: expected default or in-memory, got {name}")
                })?;
            }
            other => bail!("unknown argument for --query e2e-tumbling-queried: {other}"),
        }
    }
    let ratios = run_pairs(&opts)?;
    let mean = ratios.iter().sum::<f64>() / ratios.len().max(1) as f64;
    let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let max = ratios.iter().copied().fold(0.0, f64::max);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "e2e-tumbling-queried events={} lanes={} stores={} queries_per_s={} ratio_mean={mean:.3} ratio_min={min:.3} ratio_max={max:.3} loadavg={}",
        opts.events,
        opts.lanes,
        opts.stores.name(),
        opts.queries_per_s,
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(",")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queried_run_answers_queries_and_counts_what_an_unqueried_one_does() {
        let opts = QueriedOptions {
            events: 30_000,
            ..QueriedOptions::default()
        };
        let none = run_once(opts.events, opts.lanes, opts.stores, 0).unwrap();
        assert_eq!(none.answered + none.failed, 0);
        let queried = run_once(opts.events, opts.lanes, opts.stores, 200).unwrap();
        assert!(queried.answered > 0, "{}", queried.line("queried"));
        assert_eq!(queried.failed, 0, "{}", queried.line("queried"));
    }
}
