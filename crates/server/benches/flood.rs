//! What a bounded request flood on loopback costs a running application's
//! commit barriers (the goal: a request flood slows the engine's barriers
//! by no more than 10%).
//!
//! One application (a 10 s tumbling count per key on two partitions, in
//! memory, one lane) is fed at a fixed rate by a producer thread, with
//! event time following the wall clock, so it cuts barriers at its own
//! cadence. Two listeners serve it: one with the defaults (200 answers a
//! second at most), one unpaced. Phases alternate, in a rotated order per
//! round: quiet, a flood against the default listener, a flood against the
//! unpaced one. A flood is a separate process (this binary re-run with
//! `--flood-client`): a fixed request rate over a fixed number of
//! connections, each request a new connection, mixing every endpoint with
//! a 404 and a 405, every answer checked.
//!
//! Barriers are read from the application's timeline: each one's duration
//! (cut to commit) and interval (cut to the next cut), assigned to the phase
//! its cut falls in. Printed: percentiles per phase kind, the flood / quiet
//! ratios of p50 and p99, the listeners' CPU per 1000 answers (the
//! `stoatflow-http` threads, from `/proc`), the client's CPU, the load
//! average.
//!
//! `cargo bench -p stoatflow-server --bench flood -- [--rounds 3]
//! [--phase-secs 10] [--rate 500] [--connections 8] [--input-rate 20000]
//! [--barrier-ms 100] [--client-nice 19] [--listener-nice 10]` (Linux: `/proc`, `nice`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use stoatflow_log::{Log, Record, Timestamp, TopicPartition, TopicSpec, TransactionalProducer};
use stoatflow_runtime::{AppState, Backend, CommitBarrierConfig, RuntimeConfig, StreamsApp};
use stoatflow_server::HttpServer;

/// The application the server's tests serve: its topology and topics.
#[path = "../tests/it/support.rs"]
#[allow(dead_code)]
mod support;

use support::{INPUT, OUTPUT, PARTITIONS, START, topology};

/// The flood's requests and the status each must get.
const REQUESTS: [(&str, u16); 9] = [
    ("GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n", 200),
    ("GET /watermarks HTTP/1.1\r\nHost: test\r\n\r\n", 200),
    ("GET /health HTTP/1.1\r\nHost: test\r\n\r\n", 200),
    ("GET /ready HTTP/1.1\r\nHost: test\r\n\r\n", 200),
    ("GET /info HTTP/1.1\r\nHost: test\r\n\r\n", 200),
    ("GET / HTTP/1.1\r\nHost: test\r\n\r\n", 200),
    (
        "GET /watermarks/history HTTP/1.1\r\nHost: test\r\n\r\n",
        200,
    ),
    ("GET /no/such/path HTTP/1.1\r\nHost: test\r\n\r\n", 404),
    ("PUT /metrics HTTP/1.1\r\nHost: test\r\n\r\n", 405),
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--flood-client") {
        let arg = |k: usize| {
            args.get(i + k)
                .expect("--flood-client ADDR RATE CONNECTIONS SECS")
        };
        client(
            arg(1).parse().expect("address"),
            arg(2).parse().expect("rate"),
            arg(3).parse().expect("connections"),
            Duration::from_secs_f64(arg(4).parse().expect("seconds")),
        );
        return;
    }
    let option = |name: &str, default: f64| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map_or(default, |v| {
                v.parse().unwrap_or_else(|_| panic!("{name} {v}"))
            })
    };
    let settings = Settings {
        rounds: option("--rounds", 3.0) as usize,
        phase: Duration::from_secs_f64(option("--phase-secs", 10.0)),
        rate: option("--rate", 500.0) as u32,
        connections: option("--connections", 8.0) as u32,
        input_rate: option("--input-rate", 20_000.0) as u64,
        barrier: Duration::from_secs_f64(option("--barrier-ms", 100.0) / 1_000.0),
        client_nice: option("--client-nice", 19.0) as i32,
        listener_nice: option(
            "--listener-nice",
            f64::from(stoatflow_server::LISTENER_NICE),
        ) as i32,
    };
    measure(&settings);
}

#[derive(Debug)]
struct Settings {
    rounds: usize,
    phase: Duration,
    rate: u32,
    connections: u32,
    input_rate: u64,
    /// The commit-barrier interval (the engine's default seed is 500 ms;
    /// shorter gives more barriers per phase).
    barrier: Duration,
    /// The flood client's `nice` level: it stands in for clients on other
    /// machines, so the kernel is asked to favour everything else (0: as
    /// any process).
    client_nice: i32,
    /// How many nice steps below the process the listeners' threads run
    /// (the server's default; 0: the engine's priority, as before).
    listener_nice: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Quiet,
    /// A flood against the listener with its defaults (200 answers/s).
    Paced,
    /// A flood against the unpaced listener.
    Unpaced,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Quiet, Kind::Paced, Kind::Unpaced];

    fn name(self) -> &'static str {
        match self {
            Kind::Quiet => "quiet",
            Kind::Paced => "flood, default listener (200 answers/s)",
            Kind::Unpaced => "flood, unpaced listener",
        }
    }
}

/// One measured phase.
#[derive(Debug)]
struct Phase {
    kind: Kind,
    start: Instant,
    end: Instant,
    /// Answers the client got, and how many were wrong.
    answered: u64,
    wrong: u64,
    /// CPU seconds of the client process and of the listener threads.
    client_cpu: f64,
    server_cpu: f64,
}

fn measure(s: &Settings) {
    let config = RuntimeConfig::new("flood-bench", Backend::InMemory)
        .with_lanes(1)
        .with_barrier(CommitBarrierConfig {
            interval: s.barrier,
            min_interval: s.barrier.min(CommitBarrierConfig::default().min_interval),
            ..CommitBarrierConfig::default()
        });
    let mut app = StreamsApp::new(topology(), config).expect("the application");
    for topic in [INPUT, OUTPUT] {
        app.log()
            .create_topic(&TopicSpec::new(topic, PARTITIONS))
            .expect("topic");
    }
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let paced = HttpServer::builder()
        .listen(loopback)
        .listener_nice(s.listener_nice)
        .start(Arc::new(app.handle()))
        .expect("listener");
    let unpaced = HttpServer::builder()
        .listen(loopback)
        .listener_nice(s.listener_nice)
        .max_requests_per_second(0)
        .start(Arc::new(app.handle()))
        .expect("listener");
    app.start().expect("start");
    assert_eq!(
        app.wait_for_state(AppState::Running, Duration::from_secs(30)),
        AppState::Running
    );
    let stop = Arc::new(AtomicBool::new(false));
    let produced = Arc::new(AtomicU64::new(0));
    let producer = {
        let mut p = app
            .log()
            .transactional_producer("bench-input")
            .expect("producer");
        let (stop, produced, per_tick) = (stop.clone(), produced.clone(), s.input_rate / 100);
        std::thread::spawn(move || feed(&mut p, per_tick, &stop, &produced))
    };
    println!(
        "flood bench: {} rounds of {:?} phases; flood {} requests/s over {} connections (client at nice {}); input {} records/s; barriers every {:?}; load average {}",
        s.rounds,
        s.phase,
        s.rate,
        s.connections,
        s.client_nice,
        s.input_rate,
        s.barrier,
        loadavg()
    );
    std::thread::sleep(Duration::from_secs(2));
    let mut phases = Vec::new();
    for round in 0..s.rounds {
        for i in 0..Kind::ALL.len() {
            let kind = Kind::ALL[(i + round) % Kind::ALL.len()];
            let target = match kind {
                Kind::Quiet => None,
                Kind::Paced => Some(paced.local_addr()),
                Kind::Unpaced => Some(unpaced.local_addr()),
            };
            phases.push(phase(kind, target, s));
        }
    }
    let load_after = loadavg();
    stop.store(true, Ordering::Release);
    producer.join().expect("producer");
    let timeline = app.timeline();
    app.close(Duration::from_secs(30));
    drop((paced, unpaced));
    report(
        s,
        &phases,
        &timeline,
        produced.load(Ordering::Relaxed),
        &load_after,
    );
}

/// Writes `per_tick` records every 10 ms, event time following the wall clock.
fn feed(
    producer: &mut impl TransactionalProducer,
    per_tick: u64,
    stop: &AtomicBool,
    produced: &AtomicU64,
) {
    let keys: Vec<String> = (0..1_000).map(|k| format!("k{k}")).collect();
    let value = 1i64.to_be_bytes();
    let start = Instant::now();
    let mut tick = 0u32;
    while !stop.load(Ordering::Acquire) {
        let due = start + Duration::from_millis(10) * tick;
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let ts = START + start.elapsed().as_millis() as i64;
        producer.begin().expect("begin");
        for i in 0..per_tick {
            let n = produced.fetch_add(1, Ordering::Relaxed);
            let key = &keys[(n % keys.len() as u64) as usize];
            let record = Record::new(Some(key.as_bytes()), Some(&value), Timestamp(ts));
            let tp = TopicPartition::new(INPUT, (i % u64::from(PARTITIONS)) as u32);
            producer.send(&tp, &record).expect("send");
        }
        producer.commit().expect("commit");
        tick += 1;
    }
}

/// One phase: `s.phase` of quiet, or of a flood against `target`.
fn phase(kind: Kind, target: Option<SocketAddr>, s: &Settings) -> Phase {
    let cpu_before = listener_cpu_seconds();
    let Some(addr) = target else {
        let start = Instant::now();
        std::thread::sleep(s.phase);
        return Phase {
            kind,
            start,
            end: Instant::now(),
            answered: 0,
            wrong: 0,
            client_cpu: 0.0,
            server_cpu: listener_cpu_seconds() - cpu_before,
        };
    };
    // The client floods a little longer than the measured window.
    let mut child = Command::new("nice")
        .args([
            "-n".to_owned(),
            s.client_nice.to_string(),
            std::env::current_exe()
                .expect("this binary")
                .display()
                .to_string(),
            "--flood-client".to_owned(),
            addr.to_string(),
            s.rate.to_string(),
            s.connections.to_string(),
            (s.phase.as_secs_f64() + 0.5).to_string(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("the flood client");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("the client's ready line");
    assert_eq!(line.trim(), "ready", "the flood client said {line:?}");
    let cpu_before = listener_cpu_seconds();
    let start = Instant::now();
    std::thread::sleep(s.phase);
    let end = Instant::now();
    let server_cpu = listener_cpu_seconds() - cpu_before;
    line.clear();
    out.read_line(&mut line).expect("the client's figures");
    assert!(
        child.wait().expect("the client").success(),
        "the flood client failed"
    );
    let figures: Vec<f64> = line
        .split_whitespace()
        .map(|f| f.parse().expect("a figure"))
        .collect();
    let [answered, wrong, client_cpu] = figures[..] else {
        panic!("the client said {line:?}");
    };
    Phase {
        kind,
        start,
        end,
        answered: answered as u64,
        wrong: wrong as u64,
        client_cpu,
        server_cpu,
    }
}

/// The flood client: `rate` requests a second over `connections` threads
/// (each request a new connection) for `secs`; prints `ready`, then
/// `answered wrong cpu_seconds`.
fn client(addr: SocketAddr, rate: u32, connections: u32, secs: Duration) {
    let answered = Arc::new(AtomicU64::new(0));
    let wrong = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let end = start + secs;
    let gap = Duration::from_secs(1) * connections / rate.max(1);
    let threads: Vec<_> = (0..connections)
        .map(|c| {
            let (answered, wrong) = (answered.clone(), wrong.clone());
            std::thread::spawn(move || {
                let mut next = start + gap * c / connections;
                let mut i = c as usize;
                loop {
                    let now = Instant::now();
                    if now >= end {
                        return;
                    }
                    std::thread::sleep(next.saturating_duration_since(now));
                    let (raw, want) = REQUESTS[i % REQUESTS.len()];
                    i += 1;
                    match request(addr, raw.as_bytes()) {
                        Some(status) if status == want => {}
                        _ => {
                            wrong.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    answered.fetch_add(1, Ordering::Relaxed);
                    // A fixed rate: late requests are not made up in a burst.
                    next = (next + gap).max(Instant::now() - gap);
                }
            })
        })
        .collect();
    println!("ready");
    std::io::stdout().flush().expect("stdout");
    for t in threads {
        t.join().expect("a client thread");
    }
    println!(
        "{} {} {}",
        answered.load(Ordering::Relaxed),
        wrong.load(Ordering::Relaxed),
        process_cpu_seconds()
    );
}

/// One request on a new connection; the status, `None` if none came.
fn request(addr: SocketAddr, raw: &[u8]) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(raw).ok()?;
    let mut bytes = Vec::new();
    s.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))?
        .parse()
        .ok()?;
    (body.len() == length).then_some(())?;
    head.split(' ').nth(1)?.parse().ok()
}

/// `utime + stime` of the `stat` line `stat`, in seconds.
fn cpu_seconds(stat: &str) -> Option<f64> {
    // `pid (comm) state ...`: utime and stime are fields 14 and 15.
    let (_, rest) = stat.rsplit_once(") ")?;
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

fn process_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| cpu_seconds(&s))
        .unwrap_or(0.0)
}

/// CPU seconds used so far by this process's `stoatflow-http` threads.
fn listener_cpu_seconds() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .filter(|stat| stat.contains("(stoatflow-http) "))
        .filter_map(|stat| cpu_seconds(&stat))
        .sum()
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// The `p` quantile (nearest rank) of sorted `v`, ms.
fn quantile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

fn report(
    s: &Settings,
    phases: &[Phase],
    timeline: &stoatflow_runtime::Timeline,
    produced: u64,
    load_after: &str,
) {
    let mut durations: [Vec<f64>; 3] = Default::default();
    let mut intervals: [Vec<f64>; 3] = Default::default();
    let ms = |d: Duration| d.as_secs_f64() * 1_000.0;
    let mut previous = None;
    for b in timeline.barriers() {
        let phase = phases.iter().find(|p| p.start <= b.cut && b.cut < p.end);
        if let Some(p) = phase {
            let k = Kind::ALL.iter().position(|&k| k == p.kind).expect("a kind");
            durations[k].push(ms(b.committed.saturating_duration_since(b.cut)));
            if let Some(prev) = previous {
                intervals[k].push(ms(b.cut.saturating_duration_since(prev)));
            }
        }
        previous = Some(b.cut);
    }
    for v in durations.iter_mut().chain(intervals.iter_mut()) {
        v.sort_by(f64::total_cmp);
    }
    println!("records produced: {produced}; load average after: {load_after}");
    println!(
        "{:<42} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "phase", "barriers", "dur p50", "dur p90", "dur p99", "int p50", "int p90", "int p99"
    );
    for (k, kind) in Kind::ALL.iter().enumerate() {
        let (d, i) = (&durations[k], &intervals[k]);
        println!(
            "{:<42} {:>8} {:>9.2} {:>9.2} {:>9.2} {:>9.1} {:>9.1} {:>9.1}",
            kind.name(),
            d.len(),
            quantile(d, 0.5),
            quantile(d, 0.9),
            quantile(d, 0.99),
            quantile(i, 0.5),
            quantile(i, 0.9),
            quantile(i, 0.99),
        );
    }
    let quiet_cpu_rate = {
        let quiet: Vec<&Phase> = phases.iter().filter(|p| p.kind == Kind::Quiet).collect();
        let secs: f64 = quiet.iter().map(|p| (p.end - p.start).as_secs_f64()).sum();
        quiet.iter().map(|p| p.server_cpu).sum::<f64>() / secs
    };
    for (k, kind) in Kind::ALL.iter().enumerate().skip(1) {
        let ratio = |v: &[Vec<f64>; 3], p: f64| quantile(&v[k], p) / quantile(&v[0], p);
        let flooded: Vec<&Phase> = phases.iter().filter(|p| p.kind == *kind).collect();
        let secs: f64 = flooded
            .iter()
            .map(|p| (p.end - p.start).as_secs_f64())
            .sum();
        let answered: u64 = flooded.iter().map(|p| p.answered).sum();
        let wrong: u64 = flooded.iter().map(|p| p.wrong).sum();
        let server_cpu: f64 = flooded.iter().map(|p| p.server_cpu).sum();
        let client_cpu: f64 = flooded.iter().map(|p| p.client_cpu).sum();
        let net_server = server_cpu - quiet_cpu_rate * secs;
        // The client runs half a second past each window.
        let per_second = answered as f64 / (secs + 0.5 * flooded.len() as f64);
        let in_window = per_second * secs;
        println!(
            "{}: barrier duration p50 ratio {:.3}, p99 ratio {:.3}; interval p50 ratio {:.3}, p99 ratio {:.3}; \
             {:.0} answers/s ({} wrong); listener {:.1}% of a core, {:.1} ms CPU per 1000 answers (net of quiet); client {:.1} ms CPU per 1000",
            kind.name(),
            ratio(&durations, 0.5),
            ratio(&durations, 0.99),
            ratio(&intervals, 0.5),
            ratio(&intervals, 0.99),
            per_second,
            wrong,
            100.0 * server_cpu / secs,
            1_000.0 * net_server / in_window.max(1.0) * 1_000.0,
            1_000.0 * client_cpu / answered.max(1) as f64 * 1_000.0,
        );
    }
    println!("settings: {s:?}");
}
