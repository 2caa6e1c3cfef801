//! Embedded-log figures: transactional throughput (100-byte records in
//! 1,000-record epochs, fsync per commit) and restore speed.
//!
//! `cargo bench -p stoatflow-log --bench embedded` (env `EPOCHS`, default 300).

use std::time::{Duration, Instant};

use stoatflow_log::{
    EmbeddedLog, Log, Record, Timestamp, TopicPartition, TopicSpec, TransactionalProducer, restore,
};

fn produce(log: &EmbeddedLog, epochs: u64) -> Duration {
    log.create_topic(&TopicSpec::new("bench", 1).compacted())
        .expect("create");
    let tp = TopicPartition::new("bench", 0);
    let mut p = log.transactional_producer("bench").expect("producer");
    let value = [7u8; 100];
    let start = Instant::now();
    for e in 0..epochs {
        p.begin().expect("begin");
        for i in 0..1000u64 {
            let key = (e * 1000 + i).to_be_bytes();
            let r = Record::new(Some(&key), Some(&value), Timestamp(i as i64));
            p.send(&tp, &r).expect("send");
        }
        p.commit().expect("commit");
    }
    start.elapsed()
}

fn restore_all(log: &EmbeddedLog) -> (u64, Duration) {
    let tp = TopicPartition::new("bench", 0);
    let mut c = log.consumer("restore").expect("consumer");
    let start = Instant::now();
    let mut bytes = 0u64;
    let s = restore(&mut c, &tp, Duration::from_secs(30), |r| {
        bytes += r.record.value.map_or(0, |v| v.len() as u64);
    })
    .expect("restore");
    assert!(bytes > 0);
    (s.records, start.elapsed())
}

fn report(label: &str, records: u64, d: Duration) {
    println!(
        "{label:<44} {records:>9} records in {:>8.3} s = {:>12.0} records/s",
        d.as_secs_f64(),
        records as f64 / d.as_secs_f64()
    );
}

fn main() {
    let epochs: u64 = std::env::var("EPOCHS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let n = epochs * 1000;

    let mem = EmbeddedLog::in_memory();
    report("in-memory: transactional produce", n, produce(&mem, epochs));
    let (r, d) = restore_all(&mem);
    report("in-memory: restore (beginning to end)", r, d);

    let dir = tempfile::tempdir().expect("tempdir");
    let disk = EmbeddedLog::open(dir.path()).expect("open");
    report(
        "on-disk: transactional produce (fsync/epoch)",
        n,
        produce(&disk, epochs),
    );
    let (r, d) = restore_all(&disk);
    report("on-disk: restore, warm cache", r, d);
    drop(disk);
    let start = Instant::now();
    let disk = EmbeddedLog::open(dir.path()).expect("reopen");
    let open = start.elapsed();
    println!(
        "on-disk: reopen (recovery scan) of {n} records took {:.3} s",
        open.as_secs_f64()
    );
    let (r, d) = restore_all(&disk);
    report("on-disk: restore after reopen", r, d);
}
