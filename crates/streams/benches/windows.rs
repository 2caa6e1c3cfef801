//! Windowed counts through the task path, one core: tumbling (10 s),
//! sliding (D = 10 s) and session (gap = 5 s) counts over 1,000 keys,
//! measured in the same run.
//!
//! Records enter through `StreamTask::typed_input` + `push_typed`; every
//! `BATCH` records the floor moves to the newest time minus a 100 ms lag,
//! `advance_frontier` runs the emission pass (on-window-close) and expiry,
//! and a barrier takes the epoch's output and changelog.
//!
//! `cargo bench -p stoatflow-streams --bench windows` (set
//! `STOATFLOW_BENCH_RECORDS` to change the record count, default 10 M).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stoatflow_streams::{
    Consumed, EmitStrategy, Materialized, Serdes, SessionWindows, SlidingWindows, StreamsBuilder,
    StreamsConfig, TimeWindows, Topology,
};
use stoatflow_time::Watermark;

const KEYS: i64 = 1_000;
/// Consecutive records of one key (1 ms apart); a key recurs every 8 s.
const BURST: i64 = 8;
const BATCH: usize = 10_000;
const LAG_MS: i64 = 100;

fn records() -> usize {
    std::env::var("STOATFLOW_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000)
}

#[inline]
fn record(i: usize) -> (i64, i64) {
    let i = i as i64;
    ((i / BURST) % KEYS, 1_700_000_000_000 + i)
}

enum Kind {
    Tumbling,
    Sliding,
    Session,
}

fn topology(kind: &Kind) -> Topology {
    let mut b = StreamsBuilder::new();
    let grouped = b
        .stream("in", Consumed::with(Serdes::i64(), Serdes::i64()))
        .group_by_key();
    let m = || Materialized::as_("counts");
    let table = match kind {
        Kind::Tumbling => grouped
            .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_secs(10)))
            .emit_strategy(EmitStrategy::on_window_close())
            .count_with(m()),
        Kind::Sliding => grouped
            .windowed_by(SlidingWindows::of_time_difference_with_no_grace(
                Duration::from_secs(10),
            ))
            .emit_strategy(EmitStrategy::on_window_close())
            .count_with(m()),
        Kind::Session => grouped
            .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(
                Duration::from_secs(5),
            ))
            .emit_strategy(EmitStrategy::on_window_close())
            .count_with(m()),
    };
    table.to_stream().map(|k, v| (k.key, v)).to(
        "out",
        stoatflow_streams::Produced::with(Serdes::i64(), Serdes::i64()),
    );
    b.build().expect("bench topology builds")
}

/// Runs `n` records; returns (elapsed, records emitted).
fn run(kind: &Kind, n: usize) -> (Duration, usize) {
    let config = Arc::new(StreamsConfig::new("bench"));
    let topology = topology(kind);
    topology.validate(&config).expect("valid");
    let mut task = topology.instantiate(0, &config);
    let input = task.typed_input::<i64, i64>("in").expect("typed input");
    let mut emitted = 0;
    let start = Instant::now();
    for i in 0..n {
        let (key, ts) = record(i);
        task.push_typed(&input, key, 1, ts).expect("push");
        if (i + 1) % BATCH == 0 {
            let w = Watermark::from_millis(ts - LAG_MS);
            task.set_floor(w);
            task.advance_frontier(w).expect("emission pass");
            emitted += task.commit().expect("commit").outputs.len();
        }
    }
    let elapsed = start.elapsed();
    (elapsed, black_box(emitted))
}

fn main() {
    let n = records();
    println!("{n} records, {KEYS} keys, bursts of {BURST}, barrier every {BATCH}");
    let mut base = None;
    for (name, kind) in [
        ("tumbling count (10 s)", Kind::Tumbling),
        ("sliding count (D = 10 s)", Kind::Sliding),
        ("session count (gap = 5 s)", Kind::Session),
    ] {
        let (elapsed, emitted) = run(&kind, n);
        let rate = n as f64 / elapsed.as_secs_f64();
        let ns = elapsed.as_nanos() as f64 / n as f64;
        let ratio = *base.get_or_insert(rate) / rate;
        println!(
            "{name:<28} {rate:>14.0} records/s {ns:>8.1} ns/record  {emitted:>9} final results  {ratio:.2}x tumbling time"
        );
    }
}
