//! A request flood on loopback against a running application: the
//! listener stays correct and the engine keeps cutting barriers
//! (`the_listener_stays_correct_under_a_flood`). What the flood costs the
//! engine's barriers is measured by the bench `benches/flood.rs`.

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
        ("GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n", 200),
        ("GET /watermarks HTTP/1.1\r\nHost: test\r\n\r\n", 200),
        ("GET /info HTTP/1.1\r\nHost: test\r\n\r\n", 200),
        ("GET / HTTP/1.1\r\nHost: test\r\n\r\n", 200),
        (
            "GET /watermarks/history HTTP/1.1\r\nHost: test\r\n\r\n",
            200,
        ),
        ("GET /no/such/path HTTP/1.1\r\nHost: test\r\n\r\n", 404),
        ("POST /metrics HTTP/1.1\r\nHost: test\r\n\r\n", 405),
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
                        eprintln!(
                            "{raw:?}: {} {:?}",
                            r.status,
                            &r.body[..r.body.len().min(200)]
                        );
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
    // Every flood request must get its expected answer: /watermarks says
    // 503 until the engine's first snapshot.
    served.produce(&[(0, "a", START), (1, "b", START)]);
    served.settle(START);
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
