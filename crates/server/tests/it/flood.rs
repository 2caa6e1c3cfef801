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

use stoatflow_server::RecordingLevel;

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
    let clients = flood(served.addr(), 4, 250, stop.clone(), count.clone());
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

/// One measured run: `records` records, fed at start; how long until
/// committed, and the mean barrier interval and duration (ms).
fn measured_run(id: &str, records: i64, with_flood: bool) -> (Duration, f64, f64, u64) {
    let mut served = Served::start(id, RecordingLevel::Info);
    let keys: Vec<String> = (0..100).map(|k| format!("k{k}")).collect();
    let batch: Vec<(u32, &str, i64)> = (0..records)
        .map(|i| ((i % 2) as u32, keys[(i % 100) as usize].as_str(), START + i))
        .collect();
    for chunk in batch.chunks(10_000) {
        served.produce(chunk);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(FloodCount::default());
    let clients = if with_flood {
        flood(served.addr(), 4, 1_000_000, stop.clone(), count.clone())
    } else {
        Vec::new()
    };
    let started = Instant::now();
    let deadline = started + Duration::from_secs(300);
    let handle = served.app.handle();
    while handle.metrics().records_in < records as u64 {
        assert!(
            Instant::now() < deadline,
            "{id}: input not consumed in 300 s"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let took = started.elapsed();
    stop.store(true, Ordering::Release);
    for c in clients {
        c.join().unwrap();
    }
    assert_eq!(count.wrong.load(Ordering::Relaxed), 0);
    let b = handle.metrics().barriers;
    // NaN when there was no observation (a short run cuts one barrier).
    let mean = |h: &stoatflow_runtime::DurationHistogram| h.sum_ms / h.count as f64;
    served.app.close(Duration::from_secs(30));
    (
        took,
        mean(&b.interval),
        mean(&b.duration),
        count.requests.load(Ordering::Relaxed),
    )
}

#[test]
fn flood_cost_on_barriers_and_throughput() {
    let heavy = std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some();
    let (records, rounds) = if heavy { (200_000, 2) } else { (10_000, 1) };
    let mut quiet = Vec::new();
    let mut flooded = Vec::new();
    for round in 0..rounds {
        quiet.push(measured_run(&format!("quiet-{round}"), records, false));
        flooded.push(measured_run(&format!("flooded-{round}"), records, true));
    }
    let avg = |runs: &[(Duration, f64, f64, u64)], f: fn(&(Duration, f64, f64, u64)) -> f64| {
        runs.iter().map(f).sum::<f64>() / runs.len() as f64
    };
    let secs = |r: &(Duration, f64, f64, u64)| r.0.as_secs_f64();
    let (q_s, f_s) = (avg(&quiet, secs), avg(&flooded, secs));
    let (q_i, f_i) = (avg(&quiet, |r| r.1), avg(&flooded, |r| r.1));
    let (q_d, f_d) = (avg(&quiet, |r| r.2), avg(&flooded, |r| r.2));
    let served = avg(&flooded, |r| r.3 as f64 / r.0.as_secs_f64());
    println!(
        "flood: {records} records; quiet {:.0} rec/s, flooded {:.0} rec/s (throughput ratio {:.3}); \
         barrier interval {q_i:.1} -> {f_i:.1} ms (ratio {:.3}); barrier duration {q_d:.2} -> {f_d:.2} ms \
         (ratio {:.3}); {served:.0} requests/s served during the flood",
        records as f64 / q_s,
        records as f64 / f_s,
        q_s / f_s,
        f_i / q_i,
        f_d / q_d,
    );
}
