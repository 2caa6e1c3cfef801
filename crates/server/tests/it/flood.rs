//! A request flood on loopback against a running application: the
//! listener stays correct and the engine keeps cutting barriers
//! (`the_listener_stays_correct_under_a_flood`).
//! `flood_cost_on_barriers_and_throughput` measures what the flood costs the
//! engine (throughput over a fixed input and the mean barrier interval and
//! duration, with and without the flood, alternated) and prints the ratios
//! (10 000 records once; 200 000 twice under `STOATFLOW_HEAVY_TESTS`); it
//! asserts correctness only (every record consumed, every answer right),
//! never timing.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use stoatflow_server::{HttpServer, RecordingLevel};

use crate::support::{START, Served, get, request};

/// What the flood's clients did.
#[derive(Debug, Default)]
struct FloodCount {
    requests: AtomicU64,
    wrong: AtomicU64,
}

/// `clients` threads, each sending at most `per_client` requests (new
/// connection each) until `stop`; every answer is checked.
fn flood(
    addr: SocketAddr,
    clients: usize,
    per_client: u64,
    stop: Arc<AtomicBool>,
    count: Arc<FloodCount>,
) -> Vec<JoinHandle<()>> {
    const REQUESTS: [(&str, u16); 7] = [
        ("GET /metrics HTTP/1.1\r\n\r\n", 200),
        ("GET /watermarks HTTP/1.1\r\n\r\n", 200),
        ("GET /info HTTP/1.1\r\n\r\n", 200),
        ("GET / HTTP/1.1\r\n\r\n", 200),
        ("GET /watermarks/history HTTP/1.1\r\n\r\n", 200),
        ("GET /no/such/path HTTP/1.1\r\n\r\n", 404),
        ("POST /metrics HTTP/1.1\r\n\r\n", 405),
    ];
    (0..clients)
        .map(|c| {
            let (stop, count) = (stop.clone(), count.clone());
            std::thread::spawn(move || {
                for i in 0..per_client {
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    let (raw, want) = REQUESTS[(i as usize + c) % REQUESTS.len()];
                    let r = request(addr, raw.as_bytes());
                    count.requests.fetch_add(1, Ordering::Relaxed);
                    if r.status != want || r.body.is_empty() {
                        count.wrong.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect()
}

#[test]
fn the_listener_stays_correct_under_a_flood() {
    let mut served = Served::start("flood", RecordingLevel::Info);
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(FloodCount::default());
    let clients = flood(served.addr(), 4, 100, stop.clone(), count.clone());
    let barriers_before = served.app.committed_barriers();
    for i in 0..20 {
        served.produce(&[(0, "a", START + i * 1_000), (1, "b", START + i * 1_000)]);
        std::thread::sleep(Duration::from_millis(25));
    }
    served.settle(START + 19_000);
    let deadline = Instant::now() + Duration::from_secs(60);
    for c in clients {
        while !c.is_finished() {
            if Instant::now() > deadline {
                stop.store(true, Ordering::Release);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        c.join().unwrap();
    }
    assert_eq!(
        count.wrong.load(Ordering::Relaxed),
        0,
        "every answer was right"
    );
    assert!(count.requests.load(Ordering::Relaxed) > 0);
    assert!(
        served.app.committed_barriers() > barriers_before,
        "barriers went on"
    );
    assert_eq!(get(served.addr(), "/ready").status, 200);
}

/// What one measured run saw.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// Records consumed per second.
    throughput: f64,
    /// Mean commit-barrier interval and duration, ms (NaN without one).
    interval_ms: f64,
    duration_ms: f64,
    /// Requests answered per second.
    requests: f64,
    /// CPU time of the listener threads, as a share of one core.
    server_cpu: f64,
}

/// CPU seconds used so far by this process's threads named `stoatflow-http`
/// (Linux `/proc`; 0 elsewhere).
fn listener_cpu_seconds() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    let mut ticks = 0u64;
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ...`: utime and stime are fields 14 and 15.
        let Some((head, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        if !head.ends_with("(stoatflow-http") {
            continue;
        }
        let fields: Vec<&str> = rest.split(' ').collect();
        ticks += fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0);
    }
    ticks as f64 / 100.0
}

/// One measured run: `records` records written before the start, consumed
/// for at most `window` (or to the end); throughput and barrier figures
/// over that window.
fn measured_run(
    id: &str,
    records: i64,
    window: Duration,
    with_flood: bool,
    max_requests_per_second: u32,
) -> Run {
    let mut served = Served::start_with(
        id,
        HttpServer::builder().max_requests_per_second(max_requests_per_second),
    );
    let keys: Vec<String> = (0..100).map(|k| format!("k{k}")).collect();
    let batch: Vec<(u32, &str, i64)> = (0..records)
        .map(|i| ((i % 2) as u32, keys[(i % 100) as usize].as_str(), START + i))
        .collect();
    for chunk in batch.chunks(10_000) {
        served.produce(chunk);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(FloodCount::default());
    let handle = served.app.handle();
    let before = handle.metrics();
    let clients = if with_flood {
        flood(served.addr(), 4, 10_000_000, stop.clone(), count.clone())
    } else {
        Vec::new()
    };
    let started = Instant::now();
    let cpu_before = listener_cpu_seconds();
    let mut now = handle.metrics();
    while now.records_in < records as u64 && started.elapsed() < window {
        std::thread::sleep(Duration::from_millis(2));
        now = handle.metrics();
    }
    let took = started.elapsed().as_secs_f64();
    let server_cpu = (listener_cpu_seconds() - cpu_before) / took;
    stop.store(true, Ordering::Release);
    for c in clients {
        c.join().unwrap();
    }
    assert_eq!(
        count.wrong.load(Ordering::Relaxed),
        0,
        "{id}: wrong answers"
    );
    assert!(now.records_in > before.records_in, "{id}: nothing consumed");
    let mean = |a: &stoatflow_runtime::DurationHistogram,
                b: &stoatflow_runtime::DurationHistogram| {
        (b.sum_ms - a.sum_ms) / (b.count - a.count) as f64
    };
    served.app.close(Duration::from_secs(30));
    Run {
        throughput: (now.records_in - before.records_in) as f64 / took,
        interval_ms: mean(&before.barriers.interval, &now.barriers.interval),
        duration_ms: mean(&before.barriers.duration, &now.barriers.duration),
        requests: count.requests.load(Ordering::Relaxed) as f64 / took,
        server_cpu,
    }
}

#[test]
fn flood_cost_on_barriers_and_throughput() {
    let heavy = std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some();
    // Heavy: more input than a 5 s window consumes (release builds run
    // ~400k records/s on this machine), three alternated rounds.
    let (records, window, rounds) = match (heavy, cfg!(debug_assertions)) {
        (false, _) => (10_000, Duration::from_secs(5), 1),
        (true, true) => (300_000, Duration::from_secs(5), 2),
        (true, false) => (3_000_000, Duration::from_secs(5), 3),
    };
    let mut runs: [Vec<Run>; 3] = Default::default();
    for round in 0..rounds {
        for (i, (name, flood, rate)) in [
            ("quiet", false, 200),
            ("flooded", true, 200),
            ("unpaced", true, 0),
        ]
        .into_iter()
        .enumerate()
        {
            runs[i].push(measured_run(
                &format!("{name}-{round}"),
                records,
                window,
                flood,
                rate,
            ));
        }
    }
    let avg =
        |runs: &[Run], f: fn(&Run) -> f64| runs.iter().map(f).sum::<f64>() / runs.len() as f64;
    let [quiet, flooded, unpaced] = &runs;
    let q = (
        avg(quiet, |r| r.throughput),
        avg(quiet, |r| r.interval_ms),
        avg(quiet, |r| r.duration_ms),
    );
    for (name, runs) in [
        ("flood, 200 requests/s cap (the default)", flooded),
        ("flood, no cap", unpaced),
    ] {
        let f = (
            avg(runs, |r| r.throughput),
            avg(runs, |r| r.interval_ms),
            avg(runs, |r| r.duration_ms),
        );
        println!(
            "{name}: {:.0} requests/s answered, the listener using {:.1}% of a core; throughput {:.0} -> {:.0} records/s (ratio {:.3}); \
             barrier interval {:.1} -> {:.1} ms (ratio {:.3}); barrier duration {:.2} -> {:.2} ms (ratio {:.3}) \
             [{records} records, {} s windows, {rounds} rounds]",
            avg(runs, |r| r.requests),
            100.0 * avg(runs, |r| r.server_cpu),
            q.0,
            f.0,
            f.0 / q.0,
            q.1,
            f.1,
            f.1 / q.1,
            q.2,
            f.2,
            f.2 / q.2,
            window.as_secs(),
        );
    }
}
