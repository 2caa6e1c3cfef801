//! Scale-out on one machine (docs/scale-out.md): the same windowed count over
//! a 6-partition input, run by one, three and six instances of the
//! application (each on its own `KafkaLog`, one consumer group, dynamic
//! membership), alternated so broker noise is shared; each run on fresh
//! topics holding the same records, timed from the first `start` until the
//! group has committed every input offset (the joins and rebalances are
//! part of their time). Each run also prints how the partitions were shared
//! at its end, when they were first shared evenly, and the CPU time the
//! instances (this process) and the broker (its process group) used over
//! it. Or, with `roll`, a rolling restart of three instances under a
//! constant flow (`scale/roll.rs`).
//!
//! `cargo bench -p stoatflow-kafka --bench scale [-- <instances>...]`
//! (default `1 3`), or `... -- roll`. Env `RECORDS` (default 200 000),
//! `REPEATS` (default 3), `LANES` (per instance, default 2),
//! `STOATFLOW_KAFKA_BOOTSTRAP` (else noida-db is spawned); for `roll`, those
//! its module names.

mod common;
#[path = "scale/roll.rs"]
mod roll;

use std::sync::Arc;
use std::time::{Duration, Instant};

use stoatflow_kafka::KafkaLog;
use stoatflow_log::{Consumer as _, Log, TopicPartition};
use stoatflow_runtime::{AppState, Backend, RuntimeConfig, StreamsApp};
use stoatflow_streams::{
    Consumed, EmitStrategy, Produced, Serdes, StreamsBuilder, TimeWindows, Topology,
};
use stoatflow_time::WatermarkStrategy;

use common::{Sizes, broker, config, fill, median, run_topics};

const PARTITIONS: u32 = 6;
const TIMEOUT: Duration = Duration::from_secs(30);
const WINDOW: Duration = Duration::from_secs(10);
const GRACE: Duration = Duration::from_secs(1);
/// Event time of the first record; each next one is 1 ms later.
const START_MS: i64 = 1_790_000_000_000;

/// Counts per key in tumbling windows of `window`, each closed `grace`
/// after its end, read from `input` into `output`.
fn topology(input: &str, output: &str, window: Duration, grace: Duration) -> Topology {
    let mut b = StreamsBuilder::new();
    b.stream(
        input,
        Consumed::with(Serdes::string(), Serdes::i64()).with_watermark_strategy(
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO),
        ),
    )
    .group_by_key()
    .windowed_by(TimeWindows::of_size_and_grace(window, grace))
    .emit_strategy(EmitStrategy::on_window_close())
    .count()
    .to_stream()
    .to(
        output,
        Produced::with(
            Serdes::time_windowed(Serdes::string(), window.as_millis() as i64),
            Serdes::i64(),
        ),
    );
    b.build().expect("topology")
}

/// User and system CPU seconds used so far by this process (the bench and
/// every instance's threads) and by the processes of `broker_group`.
fn cpu_seconds(broker_group: Option<u32>) -> (f64, f64) {
    // (process group, utime + stime in clock ticks) of a /proc/<pid>/stat.
    fn stat(path: &std::path::Path) -> Option<(u32, u64)> {
        let s = std::fs::read_to_string(path).ok()?;
        let f: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
        let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
        Some((f.get(2)?.parse().ok()?, ticks))
    }
    // Linux's USER_HZ, which /proc reports in.
    const TICKS_PER_S: f64 = 100.0;
    let own = stat(std::path::Path::new("/proc/self/stat")).map_or(0, |(_, t)| t);
    let broker: u64 = broker_group.map_or(0, |group| {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| stat(&e.path().join("stat")))
            .filter(|&(g, _)| g == group)
            .map(|(_, t)| t)
            .sum()
    });
    (own as f64 / TICKS_PER_S, broker as f64 / TICKS_PER_S)
}

/// `instances` instances of one application on `input`: the time from the
/// first start until the group has committed every offset of `input`.
fn run(
    bootstrap: &str,
    broker_group: Option<u32>,
    input: &str,
    output: &str,
    instances: usize,
    lanes: usize,
) -> Duration {
    let app_id = format!("{output}-app");
    let watcher = KafkaLog::connect(config(bootstrap)).expect("connect");
    let tps: Vec<TopicPartition> = (0..PARTITIONS)
        .map(|p| TopicPartition::new(input, p))
        .collect();
    let mut ends = watcher.consumer("scale-ends").expect("consumer");
    let ends: Vec<u64> = tps
        .iter()
        .map(|tp| ends.end_offset(tp).expect("end offset").0)
        .collect();
    let mut apps: Vec<StreamsApp<KafkaLog>> = (0..instances)
        .map(|i| {
            let log = KafkaLog::connect(config(bootstrap).with_static_membership(false))
                .expect("connect");
            let mut c = RuntimeConfig::new(app_id.clone(), Backend::InMemory).with_lanes(lanes);
            c.instance_id = format!("i{i}");
            StreamsApp::with_log(topology(input, output, WINDOW, GRACE), c, Arc::new(log))
                .expect("app")
        })
        .collect();
    let cpu_before = cpu_seconds(broker_group);
    let start = Instant::now();
    for app in &mut apps {
        app.start().expect("start");
    }
    let mut settled = None;
    loop {
        if settled.is_none()
            && owned(&apps)
                .iter()
                .all(|&n| n == PARTITIONS as usize / instances)
        {
            settled = Some(start.elapsed());
        }
        let committed = watcher.committed_offsets(&app_id, &tps).expect("committed");
        if committed
            .iter()
            .zip(&ends)
            .all(|((_, om), end)| om.as_ref().is_some_and(|om| om.offset.0 >= *end))
        {
            break;
        }
        for app in &apps {
            assert_ne!(app.state(), AppState::Error, "{:?}", app.error());
        }
        assert!(
            start.elapsed() < Duration::from_secs(900),
            "not caught up: {committed:?} < {ends:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = start.elapsed();
    let cpu_after = cpu_seconds(broker_group);
    let (apps_cpu, broker_cpu) = (cpu_after.0 - cpu_before.0, cpu_after.1 - cpu_before.1);
    println!(
        "  partitions owned at the end: {:?}; evenly shared after {}; CPU: instances {apps_cpu:.1} s, \
         broker {broker_cpu:.1} s = {:.2} cores over the run",
        owned(&apps),
        settled.map_or("never".into(), |t| format!("{:.3} s", t.as_secs_f64())),
        (apps_cpu + broker_cpu) / took.as_secs_f64()
    );
    for app in &mut apps {
        assert!(app.close(TIMEOUT), "close: {:?}", app.error());
    }
    took
}

/// How many input partitions each instance reads now.
fn owned(apps: &[StreamsApp<KafkaLog>]) -> Vec<usize> {
    apps.iter()
        .map(|a| {
            if a.state() == AppState::Running {
                a.watermarks().map_or(0, |w| w.partitions.len())
            } else {
                0
            }
        })
        .collect()
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn main() {
    // Cargo passes `--bench`; the rest say what to run.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let sizes = Sizes::from_env();
    let b = broker();
    println!("load average before: {}", load_average());
    if args.iter().any(|a| a == "roll") {
        roll::run(&b, sizes.lanes);
    } else {
        let counts: Vec<usize> = if args.is_empty() {
            vec![1, 3]
        } else {
            args.iter()
                .map(|a| a.parse().expect("an instance count or `roll`"))
                .collect()
        };
        throughput(&b, &sizes, &counts);
    }
    println!("load average after: {}", load_average());
}

/// Records/s of each of `counts` instances on one input, alternated.
fn throughput(b: &common::Broker, sizes: &Sizes, counts: &[usize]) {
    let (n, lanes) = (sizes.records, sizes.lanes);
    let log = KafkaLog::connect(config(&b.1)).expect("connect");
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); counts.len()];
    for r in 0..sizes.repeats as usize {
        // Alternated, the order turned every repeat.
        for k in 0..counts.len() {
            let at = (k + r) % counts.len();
            let instances = counts[at];
            let (input, output) =
                run_topics(&log, "scale", &format!("{r}-{instances}"), PARTITIONS);
            // 1 ms of event time apart: each 10 s window holds every key 10 times.
            fill(&b.1, &input, n, &1i64.to_be_bytes(), Some(START_MS));
            let took = run(&b.1, b.process_group(), &input, &output, instances, lanes);
            let rate = n as f64 / took.as_secs_f64();
            println!(
                "repeat {r} {instances} instance(s) x {lanes} lanes {n:>8} records in {:>7.3} s = \
                 {rate:>9.0} records/s (load {})",
                took.as_secs_f64(),
                load_average()
            );
            rates[at].push(rate);
        }
    }
    let medians: Vec<f64> = rates.into_iter().map(median).collect();
    for (instances, rate) in counts.iter().zip(&medians) {
        println!(
            "median records/s: {instances} instance(s) {rate:.0} = {:.2} x {} instance(s)",
            rate / medians[0],
            counts[0]
        );
    }
}
