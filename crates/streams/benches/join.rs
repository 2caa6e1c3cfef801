//! Join throughput through the task path, one core: a 1 s windowed inner
//! join and a left join, two inputs of N records each (default 5 M, set
//! `STOATFLOW_BENCH_RECORDS` to shrink it) over 10 000 keys, interleaved
//! (one left record in 10 with a key the right side never has),
//! event time advancing 1 ms per 10 records per side. The frontier (the
//! emission pass and store expiry) advances every 1 000 records and the
//! epoch is committed with it. Prints records/s (both inputs counted).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use stoatflow_streams::{
    Consumed, JoinWindows, Serdes, StreamJoined, StreamsBuilder, StreamsConfig,
};
use stoatflow_time::Watermark;

const KEYS: u64 = 10_000;

fn run(left_join: bool, n: u64) -> (f64, u64) {
    let mut b = StreamsBuilder::new();
    let l = b.stream("l", Consumed::with(Serdes::i64(), Serdes::i64()));
    let r = b.stream("r", Consumed::with(Serdes::i64(), Serdes::i64()));
    let windows = JoinWindows::of_time_difference_with_no_grace(Duration::from_secs(1));
    let sj =
        StreamJoined::with(Serdes::i64(), Serdes::i64(), Serdes::i64()).with_logging_disabled();
    let out = Arc::new(AtomicU64::new(0));
    let o = out.clone();
    let joined = if left_join {
        l.left_join(
            &r,
            |a: &i64, b: Option<&i64>| a + b.copied().unwrap_or(0),
            windows,
            sj,
        )
    } else {
        l.join(&r, |a: &i64, b: &i64| a + b, windows, sj)
    };
    joined.foreach(move |_, _| {
        o.fetch_add(1, Ordering::Relaxed);
    });
    let topology = b.build().expect("topology");
    let config = Arc::new(StreamsConfig::new("bench").with_changelog(false));
    let mut task = topology.instantiate(0, &config);
    let li = task.typed_input::<i64, i64>("l").expect("left input");
    let ri = task.typed_input::<i64, i64>("r").expect("right input");
    let start = Instant::now();
    let mut watermark = i64::MIN;
    for i in 0..n {
        let ts = (i / 10) as i64;
        // Different key orders per side, so matches are not all immediate;
        // one left record in 10 has a key the right side never has.
        let lk = if i % 10 == 9 {
            (KEYS + (i / 10) % KEYS) as i64
        } else {
            (i % KEYS) as i64
        };
        let rk = ((i * 7 + 3) % KEYS) as i64;
        task.push_typed(&li, lk, i as i64, ts).expect("left");
        task.push_typed(&ri, rk, i as i64, ts).expect("right");
        watermark = watermark.max(ts);
        if i % 1_000 == 999 {
            task.set_floor(Watermark::from_millis(watermark));
            task.advance_frontier(Watermark::from_millis(watermark))
                .expect("frontier");
            task.commit().expect("commit");
        }
    }
    task.advance_frontier(Watermark::from_millis(watermark + 10_000))
        .expect("flush");
    let secs = start.elapsed().as_secs_f64();
    ((2 * n) as f64 / secs, out.load(Ordering::Relaxed))
}

fn main() {
    let n = std::env::var("STOATFLOW_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000_000u64);
    for (name, left) in [("inner join 1s", false), ("left join 1s", true)] {
        let (rate, out) = run(left, n);
        println!("{name}: {n} + {n} records over {KEYS} keys: {rate:.0} records/s ({out} results)");
    }
}
