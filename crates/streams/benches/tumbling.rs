//! A 10 s tumbling count over 1,000 keys with 1 ms event spacing, through
//! the task path on one core, next to a bare loop doing
//! the same count measured in the same run.
//!
//! `cargo bench -p stoatflow-streams --bench tumbling`
//! (`STOATFLOW_BENCH_RECORDS` sets the record count, default 10 M).

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stoatflow_streams::{
    Consumed, EmitStrategy, Materialized, Serdes, StreamsBuilder, StreamsConfig, TimeWindows,
    Windowed,
};
use stoatflow_time::Watermark;

const KEYS: i64 = 1_000;
const WINDOW_MS: i64 = 10_000;
/// The watermark moves (and the emission pass runs) every this many records,
/// as a barrier cadence would.
const FRONTIER_EVERY: usize = 10_000;

fn records() -> usize {
    std::env::var("STOATFLOW_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000)
}

fn bare_loop(n: usize) -> (f64, u64) {
    let start = Instant::now();
    let mut windows: HashMap<(i64, i64), i64> = HashMap::new();
    let mut emitted = 0u64;
    let mut open_from = 0;
    for i in 0..n {
        let ts = i as i64;
        let key = black_box(i as i64 % KEYS);
        *windows
            .entry((ts / WINDOW_MS * WINDOW_MS, key))
            .or_default() += 1;
        if i % FRONTIER_EVERY == FRONTIER_EVERY - 1 {
            let closed = ts / WINDOW_MS * WINDOW_MS;
            if closed > open_from {
                windows.retain(|(s, _), c| {
                    let keep = *s >= closed;
                    if !keep {
                        emitted += 1;
                        black_box(c);
                    }
                    keep
                });
                open_from = closed;
            }
        }
    }
    emitted += windows.len() as u64;
    (start.elapsed().as_secs_f64(), emitted)
}

fn task_path(n: usize, emit: EmitStrategy) -> (f64, u64) {
    let mut b = StreamsBuilder::new();
    let emitted = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let e2 = emitted.clone();
    b.stream("events", Consumed::with(Serdes::i64(), Serdes::i64()))
        .group_by_key()
        .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_millis(
            WINDOW_MS as u64,
        )))
        .emit_strategy(emit)
        .count_with(Materialized::as_("counts").with_logging_disabled())
        .to_stream()
        .foreach(move |_: &Windowed<i64>, _| {
            e2.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
    let topology = b.build().expect("bench topology");
    let config = Arc::new(StreamsConfig::new("bench").with_changelog(false));
    let mut task = topology.instantiate(0, &config);
    let input = task.typed_input::<i64, i64>("events").expect("typed input");
    let start = Instant::now();
    for i in 0..n {
        let ts = i as i64;
        task.push_typed(&input, ts % KEYS, 1, ts).expect("push");
        if i % FRONTIER_EVERY == FRONTIER_EVERY - 1 {
            let w = Watermark::from_millis(ts);
            task.set_floor(w);
            task.advance_frontier(w).expect("emission pass");
        }
    }
    task.advance_frontier(Watermark::MAX).expect("final flush");
    (
        start.elapsed().as_secs_f64(),
        emitted.load(std::sync::atomic::Ordering::Relaxed),
    )
}

fn report(name: &str, n: usize, secs: f64, emitted: u64, baseline: f64) {
    println!(
        "{name:<34} {n} records  {secs:>7.3} s  {:>12.0} records/s  {:>7.1} ns/record  {emitted:>9} emitted  {:>5.2}x bare-loop time",
        n as f64 / secs,
        secs * 1e9 / n as f64,
        secs / baseline
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let n = records();
    bare_loop(n / 10);
    let (base, base_emitted) = bare_loop(n);
    let (close, close_emitted) = task_path(n, EmitStrategy::on_window_close());
    let (update, update_emitted) = task_path(n, EmitStrategy::on_window_update());
    println!(
        "tumbling count: {KEYS} keys, {WINDOW_MS} ms windows, 1 ms spacing, frontier every {FRONTIER_EVERY} records, one core"
    );
    report("bare loop (baseline)", n, base, base_emitted, base);
    report("task path, on_window_close", n, close, close_emitted, base);
    report(
        "task path, on_window_update",
        n,
        update,
        update_emitted,
        base,
    );
}
