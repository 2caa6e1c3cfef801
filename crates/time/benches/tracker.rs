//! Records through per-partition advance + global minimum, 64 partitions.
//!
//! Prints records/s and ns/record for the tracker alone, for ordered dispatch
//! feeding the tracker, and for a bare loop doing the same arithmetic (the
//! baseline measured in the same run), plus the ratios.
//!
//! `cargo bench -p stoatflow-time --bench tracker` (set `STOATFLOW_BENCH_RECORDS`
//! to change the record count, default 20 M).

use std::hint::black_box;
use std::time::{Duration, Instant};

use stoatflow_time::{
    EventTime, Offset, OrderedDispatch, SourcePartition, TrackerConfig, WallTime,
    WatermarkStrategy, WatermarkTracker,
};

const PARTITIONS: usize = 64;
/// One poll's worth of records between watermark recomputes.
const BATCH: usize = 500;

fn records() -> usize {
    std::env::var("STOATFLOW_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000_000)
}

/// Event time of record `i`: 1 ms spacing with some disorder.
#[inline]
fn ts(i: usize) -> i64 {
    1_700_000_000_000 + i as i64 - ((i * 7919) % 13) as i64
}

fn tracker() -> (WatermarkTracker, Vec<stoatflow_time::PartitionIndex>) {
    let mut t = WatermarkTracker::new(TrackerConfig::default());
    let s = WatermarkStrategy::<(), ()>::for_bounded_out_of_orderness(Duration::from_millis(100));
    let idx = (0..PARTITIONS)
        .map(|p| {
            t.register(
                SourcePartition::new("bench", p as i32),
                s.policy(),
                WallTime::EPOCH,
            )
            .unwrap()
        })
        .collect();
    (t, idx)
}

fn bare_loop(n: usize) -> f64 {
    let start = Instant::now();
    let mut max_seen = [i64::MIN; PARTITIONS];
    let mut global = i64::MIN;
    for i in 0..n {
        let p = i % PARTITIONS;
        let t = black_box(ts(i));
        if t > max_seen[p] {
            max_seen[p] = t;
        }
        if i % BATCH == BATCH - 1 {
            let m = max_seen.iter().min().copied().unwrap_or(i64::MIN) - 100;
            global = global.max(m);
        }
    }
    black_box(global);
    start.elapsed().as_secs_f64()
}

fn tracker_only(n: usize) -> f64 {
    let (mut t, idx) = tracker();
    let start = Instant::now();
    let mut now = 0;
    for i in 0..n {
        let p = idx[i % PARTITIONS];
        let e = EventTime::new(ts(i)).unwrap();
        black_box(t.on_record(p, e, WallTime::from_millis(now)).unwrap());
        if i % BATCH == BATCH - 1 {
            now += 1;
            t.poll_watermark(WallTime::from_millis(now));
        }
    }
    black_box(t.force_watermark(WallTime::from_millis(now)));
    start.elapsed().as_secs_f64()
}

fn dispatch_and_tracker(n: usize) -> f64 {
    let (mut t, idx) = tracker();
    let mut d = OrderedDispatch::new();
    let start = Instant::now();
    let mut now = 0;
    let mut offsets = [0i64; PARTITIONS];
    let mut i = 0;
    while i < n {
        let end = (i + BATCH).min(n);
        let w = WallTime::from_millis(now);
        for j in i..end {
            let p = j % PARTITIONS;
            d.push(
                &mut t,
                idx[p],
                Offset(offsets[p]),
                EventTime::new(ts(j)).unwrap(),
                j,
                w,
            )
            .unwrap();
            offsets[p] += 1;
        }
        while let Some(x) = d.next(&mut t, w) {
            black_box(x.record);
        }
        now += 1;
        t.poll_watermark(WallTime::from_millis(now));
        i = end;
    }
    start.elapsed().as_secs_f64()
}

fn report(name: &str, n: usize, secs: f64, baseline: f64) {
    println!(
        "{name:<28} {n} records  {secs:>7.3} s  {:>12.0} records/s  {:>6.2} ns/record  {:>5.2}x baseline time",
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
    // Warm up once, then measure.
    bare_loop(n / 10);
    tracker_only(n / 10);
    let base = bare_loop(n);
    let tracker = tracker_only(n);
    let dispatch = dispatch_and_tracker(n);
    println!(
        "stoatflow-time tracker bench: {PARTITIONS} partitions, recompute every {BATCH} records"
    );
    report("bare loop (baseline)", n, base, base);
    report("tracker advance + min", n, tracker, base);
    report("ordered dispatch + tracker", n, dispatch, base);
}
