//! Commit latency beside a compaction: small transactions to one partition
//! (one 100-byte record each, fsync per commit) while `maintain` compacts a
//! large compacted partition of the same log on another thread, against the
//! same number of commits with no compaction running. Prints p50, p99 and
//! the largest latency of each run and their ratios.
//!
//! `cargo bench -p stoatflow-log --bench compaction -- <MiB>`: the size of
//! the compacted partition (default 256; the figure to quote is 1024). Its
//! records are 100-byte values under 500,000 keys at most (four versions
//! of each key when the partition is small), written before the runs, in
//! segments of 64 MiB (the default) or an eighth of the partition if less.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use stoatflow_log::{
    EmbeddedConfig, EmbeddedLog, Log, Record, Timestamp, TopicPartition, TopicSpec,
    TransactionalProducer,
};

const VALUE: [u8; 100] = [7; 100];
/// Commits of each run alone.
const ALONE: usize = 1_000;

fn fill(log: &EmbeddedLog, tp: &TopicPartition, bytes: u64) -> (u64, u64) {
    let per_record = 140u64;
    let records = bytes / per_record;
    let keys = (records / 4).clamp(1, 500_000);
    let mut p = log.transactional_producer("fill").expect("producer");
    let mut i = 0u64;
    while i < records {
        p.begin().expect("begin");
        for _ in 0..10_000 {
            let key = format!("key-{:08}", i % keys);
            p.send(
                tp,
                &Record::new(Some(key.as_bytes()), Some(&VALUE), Timestamp(1)),
            )
            .expect("send");
            i += 1;
        }
        p.commit().expect("commit");
    }
    (i, keys)
}

/// Latency of each commit while `go` says so (at least `min` commits).
fn commits(
    p: &mut impl TransactionalProducer,
    tp: &TopicPartition,
    min: usize,
    go: impl Fn() -> bool,
) -> Vec<Duration> {
    let mut out = Vec::new();
    while out.len() < min || go() {
        let start = Instant::now();
        p.begin().expect("begin");
        p.send(tp, &Record::new(Some(b"k"), Some(&VALUE), Timestamp(1)))
            .expect("send");
        p.commit().expect("commit");
        out.push(start.elapsed());
    }
    out
}

fn percentiles(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort();
    let at = |q: usize| v[(v.len() * q / 100).min(v.len() - 1)];
    (at(50), at(99), v[v.len() - 1])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let mib: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(256);
    let dir = tempfile::tempdir().expect("tempdir");
    // The default segment size, or smaller for a small partition, so that
    // most of it lies in closed segments.
    let config = EmbeddedConfig {
        segment_bytes: (mib << 20).div_ceil(8).clamp(1 << 20, 64 << 20),
        ..EmbeddedConfig::default()
    };
    let segment_mib = config.segment_bytes >> 20;
    let log = EmbeddedLog::open_with(dir.path(), config).expect("open");
    let big = TopicPartition::new("big", 0);
    let hot = TopicPartition::new("hot", 0);
    log.create_topic(&TopicSpec::new("big", 1).compacted())
        .expect("create");
    log.create_topic(&TopicSpec::new("hot", 1)).expect("create");
    let start = Instant::now();
    let (records, keys) = fill(&log, &big, mib << 20);
    println!(
        "compacted partition: {mib} MiB in {segment_mib} MiB segments, {records} records under {keys} keys, written in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    let mut p = log.transactional_producer("hot").expect("producer");

    // Alone, then beside a compaction (committing until it ends), then
    // alone again: the baseline is both alone runs, so that the disk's and
    // the machine's drift shows in it too.
    let alone_before = commits(&mut p, &hot, ALONE, || false);
    let running = Arc::new(AtomicBool::new(true));
    let maintaining = {
        let log = log.clone();
        let running = Arc::clone(&running);
        std::thread::spawn(move || {
            let start = Instant::now();
            let report = log.maintain(Timestamp(0)).expect("maintain");
            running.store(false, Ordering::SeqCst);
            (report, start.elapsed())
        })
    };
    let beside = commits(&mut p, &hot, 1, || running.load(Ordering::SeqCst));
    let (report, took) = maintaining.join().expect("maintain");
    println!("maintain took {:.3} s: {report:?}", took.as_secs_f64());
    let alone_after = commits(&mut p, &hot, ALONE, || false);

    let show = |label: &str, v: &[Duration]| {
        let (p50, p99, max) = percentiles(v.to_vec());
        println!(
            "{label:<34} {:>6} commits  p50 {:8.3} ms  p99 {:8.3} ms  max {:8.3} ms",
            v.len(),
            ms(p50),
            ms(p99),
            ms(max)
        );
        (p50, p99, max)
    };
    show("commit latency alone, before", &alone_before);
    show("commit latency alone, after", &alone_after);
    let alone: Vec<Duration> = alone_before.iter().chain(&alone_after).copied().collect();
    let (a50, a99, amax) = show("commit latency alone, both", &alone);
    let (b50, b99, bmax) = show("commit latency beside compaction", &beside);
    println!(
        "ratio beside/alone: p50 {:.2}  p99 {:.2}  max {:.2}",
        ms(b50) / ms(a50),
        ms(b99) / ms(a99),
        ms(bmax) / ms(amax)
    );
}
