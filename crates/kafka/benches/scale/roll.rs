//! The rolling restart of three instances under a constant flow
//! (docs/scale-out.md#rolling-restart), for `scale -- roll`: a writer
//! produces `RATE` records/s (default 2 000) over 120 keys, each stamped
//! with the wall clock as event time, into a 6-partition input; three
//! instances, static members with their own state directories, count them
//! in 1 s windows closed with no grace. After `WARMUP_S` seconds (default
//! 10) each instance in turn is closed and started again as the same
//! instance on the same directory, the next once it commits again and
//! `PAUSE_S` seconds (default 5) later. A reader follows the output read
//! committed from the start.
//!
//! Prints, per restart, how long the instance was away, what it restored,
//! and the longest gap between committed barriers on each instance that
//! kept its tasks; then the final-result delay (from the moment a window's
//! end passed on the writer's clock until its result was read) of the
//! windows closing in the 5 s before the roll and of those closing during
//! it, and how many windows came out more than once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::producer::{BaseRecord, Producer as _};
use stoatflow_kafka::KafkaLog;
use stoatflow_log::{Consumer as _, Log, SeekTo, TopicPartition};
use stoatflow_runtime::{AppState, Backend, RuntimeConfig, StreamsApp};
use stoatflow_streams::{Serde as _, Serdes, Windowed};

use crate::common::{Broker, config, env, producer, run_topics, send};
use crate::{PARTITIONS, START_MS, TIMEOUT, topology};

const WINDOW: Duration = Duration::from_secs(1);
const KEYS: u64 = 120;
const INSTANCES: usize = 3;

/// The wall-clock moment of event time `ms` on the writer's clock.
fn wall(t0: Instant, ms: i64) -> Instant {
    t0 + Duration::from_millis((ms - START_MS).max(0) as u64)
}

/// Writes `rate` records/s to `topic` until `stop`, each stamped with the
/// milliseconds since `t0` after [`START_MS`]; how many it wrote.
fn writer(
    bootstrap: &str,
    topic: &str,
    rate: u64,
    t0: Instant,
    stop: Arc<AtomicBool>,
) -> JoinHandle<u64> {
    let (bootstrap, topic) = (bootstrap.to_owned(), topic.to_owned());
    std::thread::spawn(move || {
        let p = producer(&bootstrap, None);
        let (one, mut sent) = (1i64.to_be_bytes(), 0u64);
        while !stop.load(Ordering::Acquire) {
            let due = (t0.elapsed().as_secs_f64() * rate as f64) as u64;
            while sent < due {
                let key = format!("key-{:04}", sent % KEYS);
                let now = START_MS + t0.elapsed().as_millis() as i64;
                let rec = BaseRecord::to(topic.as_str())
                    .key(key.as_bytes())
                    .payload(&one[..])
                    .timestamp(now);
                send(&p, rec);
                sent += 1;
            }
            p.poll(Duration::ZERO);
            std::thread::sleep(Duration::from_millis(5));
        }
        p.flush(Duration::from_secs(30)).expect("flush the input");
        sent
    })
}

/// Every final result of `topic` read committed until `stop`: per
/// (key, window start), when each copy was read.
fn reader(
    log: Arc<KafkaLog>,
    topic: &str,
    stop: Arc<AtomicBool>,
) -> JoinHandle<BTreeMap<(String, i64), Vec<Instant>>> {
    let topic = topic.to_owned();
    std::thread::spawn(move || {
        let serde = Serdes::time_windowed(Serdes::string(), WINDOW.as_millis() as i64);
        let mut consumer = log.consumer("scale-roll-reader").expect("consumer");
        let tps: Vec<_> = (0..PARTITIONS)
            .map(|p| TopicPartition::new(topic.as_str(), p))
            .collect();
        consumer.assign(&tps).expect("assign");
        for tp in &tps {
            consumer.seek(tp, SeekTo::Beginning).expect("seek");
        }
        let mut out: BTreeMap<(String, i64), Vec<Instant>> = BTreeMap::new();
        while !stop.load(Ordering::Acquire) {
            for r in consumer.fetch(Duration::from_millis(50)).expect("fetch") {
                let read = Instant::now();
                let key = r.record.key.expect("a windowed key");
                let w: Windowed<String> = serde.deserialize(&topic, &key).expect("window");
                out.entry((w.key, w.window.start)).or_default().push(read);
            }
        }
        out
    })
}

fn instance(
    bootstrap: &str,
    app_id: &str,
    topics: &(String, String),
    i: usize,
    dir: &Path,
    lanes: usize,
) -> StreamsApp<KafkaLog> {
    let log = KafkaLog::connect(config(bootstrap)).expect("connect");
    let mut c = RuntimeConfig::new(app_id, Backend::InMemory)
        .with_lanes(lanes)
        .with_state_dir(dir);
    c.instance_id = format!("i{i}");
    let mut app = StreamsApp::with_log(
        topology(&topics.0, &topics.1, WINDOW, Duration::ZERO),
        c,
        Arc::new(log),
    )
    .expect("app");
    app.start().expect("start");
    app
}

/// The input partitions `app` reads now.
fn owned(app: &StreamsApp<KafkaLog>) -> BTreeSet<String> {
    if app.state() != AppState::Running {
        return BTreeSet::new();
    }
    app.watermarks()
        .map(|w| w.partitions.keys().cloned().collect())
        .unwrap_or_default()
}

/// Waits until `done`, failing on an instance's error or after 120 s.
fn until(
    apps: &[StreamsApp<KafkaLog>],
    what: &str,
    done: impl Fn(&[StreamsApp<KafkaLog>]) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done(apps) {
        for app in apps {
            assert_ne!(app.state(), AppState::Error, "{:?}", app.error());
        }
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

/// The median and the largest of `v`, in seconds.
fn median_max(mut v: Vec<Duration>) -> String {
    if v.is_empty() {
        return "none".into();
    }
    v.sort();
    format!(
        "median {}, max {} ({} windows)",
        secs(v[v.len() / 2]),
        secs(v[v.len() - 1]),
        v.len()
    )
}

pub fn run(b: &Broker, lanes: usize) {
    let (rate, warmup, pause) = (env("RATE", 2_000), env("WARMUP_S", 10), env("PAUSE_S", 5));
    let log = Arc::new(KafkaLog::connect(config(&b.1)).expect("connect"));
    let topics = run_topics(&log, "scale-roll", "0", PARTITIONS);
    let app_id = format!("{}-app", topics.1);
    let dirs: Vec<_> = (0..INSTANCES)
        .map(|_| tempfile::tempdir().expect("dir"))
        .collect();
    println!(
        "rolling restart of {INSTANCES} instances x {lanes} lanes, {rate} records/s over {KEYS} keys, \
         {} windows, default commit barriers",
        secs(WINDOW)
    );

    let t0 = Instant::now();
    let (stop_writing, stop_reading) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let written = writer(&b.1, &topics.0, rate, t0, stop_writing.clone());
    let read = reader(log.clone(), &topics.1, stop_reading.clone());
    let mut apps: Vec<_> = (0..INSTANCES)
        .map(|i| instance(&b.1, &app_id, &topics, i, dirs[i].path(), lanes))
        .collect();
    until(&apps, "an even share", |apps| {
        let sets: Vec<_> = apps.iter().map(owned).collect();
        let all: BTreeSet<&String> = sets.iter().flatten().collect();
        all.len() == PARTITIONS as usize
            && sets
                .iter()
                .all(|s| s.len() == PARTITIONS as usize / INSTANCES)
    });
    std::thread::sleep(Duration::from_secs(warmup));

    let roll_start = Instant::now();
    for (i, app) in apps.iter().enumerate() {
        let gap = app
            .timeline()
            .longest_commit_gap(roll_start - Duration::from_secs(5), roll_start);
        println!(
            "  before the roll, longest gap between committed barriers on i{i} over 5 s: {}",
            secs(gap)
        );
    }
    let mut worst = Duration::ZERO;
    for i in 0..INSTANCES {
        let partitions = owned(&apps[i]);
        let closing_at = Instant::now();
        assert!(apps[i].close(TIMEOUT), "close: {:?}", apps[i].error());
        apps[i] = instance(&b.1, &app_id, &topics, i, dirs[i].path(), lanes);
        until(&apps, "the restarted instance committing", |apps| {
            owned(&apps[i]) == partitions && apps[i].committed_barriers() > 0
        });
        let back_at = Instant::now();
        println!(
            "  restart of i{i}: committing again {} after its close began; restored {} changelog records",
            secs(back_at - closing_at),
            apps[i].restored_records()
        );
        for (j, app) in apps.iter().enumerate().filter(|&(j, _)| j != i) {
            let gap = app.timeline().longest_commit_gap(closing_at, back_at);
            worst = worst.max(gap);
            println!(
                "    longest gap between committed barriers on i{j} (kept its tasks): {}",
                secs(gap)
            );
        }
        if i + 1 < INSTANCES {
            std::thread::sleep(Duration::from_secs(pause));
        }
    }
    let roll_end = Instant::now();
    // Every window closing during the roll is emitted and read.
    std::thread::sleep(Duration::from_secs(5));
    stop_writing.store(true, Ordering::Release);
    let written = written.join().expect("writer");
    std::thread::sleep(Duration::from_secs(2));
    stop_reading.store(true, Ordering::Release);
    let results = read.join().expect("reader");
    for app in &mut apps {
        assert!(app.close(TIMEOUT), "close: {:?}", app.error());
    }

    let window_ms = WINDOW.as_millis() as i64;
    let (mut before, mut during) = (Vec::new(), Vec::new());
    let mut twice = 0;
    for ((_, start), reads) in &results {
        twice += usize::from(reads.len() > 1);
        let closed = wall(t0, start + window_ms);
        let delay = reads[0].saturating_duration_since(closed);
        if closed >= roll_start - Duration::from_secs(5) && closed < roll_start {
            before.push(delay);
        } else if closed >= roll_start && closed <= roll_end {
            during.push(delay);
        }
    }
    println!(
        "  {written} records written, {} final results read, {twice} read more than once",
        results.len()
    );
    println!(
        "final-result delay, windows closing in the 5 s before the roll: {}",
        median_max(before)
    );
    println!(
        "final-result delay, windows closing during the roll ({}): {}",
        secs(roll_end - roll_start),
        median_max(during)
    );
    println!(
        "longest gap between committed barriers on an instance that kept its tasks, over the roll: {}",
        secs(worst)
    );
}
