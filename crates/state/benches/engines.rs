//! Engine figures: put/get/range throughput of both engines, restore speed, memory per
//! open window entry, and what checking a closed store's files costs at open. A plain
//! binary that prints one line per figure.
//!
//! `cargo bench -p stoatflow-state --bench engines`
//! Sizes: `STOATFLOW_BENCH_N` (operations per throughput figure, default 1 000 000) and
//! `STOATFLOW_BENCH_RESTORE_N` (changelog records restored, default 10 000 000).
//! `STOATFLOW_BENCH_ONLY=restore` prints only the restore figures.

use std::hint::black_box;
use std::ops::Bound;
use std::time::Instant;

use stoatflow_state::{
    ChangelogBatch, ChangelogEntry, ChangelogOffset, ChangelogPartition, I64Codec,
    InMemoryKeyValueStore, InMemoryWindowStore, KeyValueStore, LocalCopy, PersistentConfig,
    PersistentKeyValueStore, PersistentWindowStore, Recovery, Segmented, SegmentedConfig,
    StateStore, StoreConfig, StoreDirectory, U64Codec, WindowStore, encode_window_key, restore,
};

fn env_n(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// A permutation-ish sequence so gets do not walk keys in insertion order.
fn scatter(i: u64, n: u64) -> u64 {
    i.wrapping_mul(2_654_435_761) % n
}

fn rate(n: u64, t: Instant) -> String {
    let secs = t.elapsed().as_secs_f64();
    format!("{:>12.0} ops/s ({n} in {secs:.2} s)", n as f64 / secs)
}

fn kv_figures(engine: &str, store: &mut dyn KeyValueStore<u64, i64>, n: u64) {
    let t = Instant::now();
    for i in 0..n {
        store.put(i, i as i64, i as i64).expect("put");
    }
    println!("{engine:<10} kv put          {}", rate(n, t));
    let mut out = ChangelogBatch::new();
    let t = Instant::now();
    store.flush_changelog(&mut out).expect("flush");
    println!(
        "{engine:<10} kv flush        {} (changelog records)",
        rate(out.len() as u64, t)
    );
    drop(out);
    let t = Instant::now();
    let mut sum = 0i64;
    for i in 0..n {
        sum += store.get(&scatter(i, n)).expect("get").unwrap_or(0);
    }
    black_box(sum);
    println!("{engine:<10} kv get          {}", rate(n, t));
    // Ranges of 100 keys.
    let ranges = (n / 100).max(1);
    let t = Instant::now();
    let mut seen = 0u64;
    for r in 0..ranges {
        let from = scatter(r, ranges) * 100;
        let to = from + 99;
        seen += store
            .range(Bound::Included(&from), Bound::Included(&to))
            .expect("range")
            .len() as u64;
    }
    println!("{engine:<10} kv range(100)   {} (entries)", rate(seen, t));
}

/// Changelog records of a window store: `distinct` keys over 16 window starts, repeated.
fn window_changelog(n: u64, distinct: u64) -> impl Iterator<Item = ChangelogEntry> {
    (0..n).map(move |i| {
        let k = i % distinct;
        let start = ((i / distinct) % 16) as i64 * 60_000;
        let mut key = Vec::with_capacity(20);
        encode_window_key(&k.to_be_bytes(), start, 0, &mut key);
        ChangelogEntry {
            partition: ChangelogPartition(0),
            offset: ChangelogOffset(i),
            key,
            value: Some((i as i64).to_be_bytes().to_vec()),
            timestamp: start,
        }
    })
}

fn restore_figure(engine: &str, store: &mut dyn StateStore, n: u64) {
    let distinct = (n / 10).max(1);
    let t = Instant::now();
    let restored = restore(store, window_changelog(n, distinct), n, &mut |_| {}).expect("restore");
    println!(
        "{engine:<10} restore window  {} (records, incl. generating them; {} entries after)",
        rate(restored, t),
        store.approximate_num_entries()
    );
}

/// The tumbling-count hot path: fetch the window, add one, put it back (changelog on).
fn window_update_figure(n: u64, changelog: bool) {
    let mut store = InMemoryWindowStore::new(
        StoreConfig::new("count").with_changelog_enabled(changelog),
        SegmentedConfig::new(3_600_000),
        U64Codec,
        I64Codec,
    );
    let keys = 100_000u64;
    let t = Instant::now();
    for i in 0..n {
        let key = scatter(i, keys);
        let ts = (i / 1_000) as i64;
        let start = ts - ts.rem_euclid(60_000);
        let count = store.fetch(&key, start).expect("fetch").unwrap_or(0);
        store.put(key, start, count + 1, ts).expect("put");
    }
    println!(
        "in-memory  window fetch+put  {} (100 000 keys, changelog {})",
        rate(n, t),
        if changelog { "on" } else { "off" }
    );
    if !changelog {
        return;
    }
    let mut out = ChangelogBatch::new();
    let t = Instant::now();
    store.flush_changelog(&mut out).expect("flush");
    println!(
        "in-memory  window flush      {} (changelog records)",
        rate(out.len() as u64, t)
    );
}

/// The same loop through `WindowStore::update` (one traversal, no clone of the old value).
fn window_in_place_figure(n: u64) {
    let mut store = InMemoryWindowStore::new(
        StoreConfig::new("count").with_changelog_enabled(false),
        SegmentedConfig::new(3_600_000),
        U64Codec,
        I64Codec,
    );
    let keys = 100_000u64;
    let t = Instant::now();
    for i in 0..n {
        let key = scatter(i, keys);
        let ts = (i / 1_000) as i64;
        let start = ts - ts.rem_euclid(60_000);
        store
            .update(&key, start, ts, &mut |c| c.unwrap_or(0) + 1)
            .expect("update");
    }
    println!(
        "in-memory  window update     {} (100 000 keys, changelog off)",
        rate(n, t)
    );
}

/// The stream-stream join's probe: 10 000 keys, 10 writes per ms, each write followed by a
/// `fetch_key_range` of its key over ±1 s (so ~2 000 window starts in range, ~2 of the key's).
fn window_key_range_figure(n: u64) {
    let mut store = InMemoryWindowStore::new(
        StoreConfig::new("join").with_changelog_enabled(false),
        SegmentedConfig::new(2_000),
        U64Codec,
        I64Codec,
    );
    let keys = 10_000u64;
    let t = Instant::now();
    let mut found = 0usize;
    for i in 0..n {
        let ts = (i / 10) as i64;
        store.put(i % keys, ts, i as i64, ts).expect("put");
        found += store
            .fetch_key_range(&((i * 7 + 3) % keys), ts - 1_000, ts + 1_000)
            .expect("fetch_key_range")
            .len();
        if i % 1_000 == 999 {
            store.expire(ts).expect("expire");
        }
    }
    black_box(found);
    println!(
        "in-memory  window put+fetch_key_range {} (join probe, 10 000 keys, +-1 s)",
        rate(n, t)
    );
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn memory_figure(changelog: bool) {
    let entries = 2_000_000u64;
    let starts = 10u64;
    let before = rss_bytes();
    let mut store = InMemoryWindowStore::new(
        StoreConfig::new("mem").with_changelog_enabled(changelog),
        SegmentedConfig::new(3_600_000),
        U64Codec,
        I64Codec,
    );
    for i in 0..entries {
        let start = (i % starts) as i64 * 60_000;
        store.put(i / starts, start, i as i64, start).expect("put");
    }
    let after = rss_bytes();
    println!(
        "in-memory  window entry      {:>6.1} bytes/entry (u64 key, i64 value, {entries} entries over {starts} starts, changelog {}; RSS delta)",
        (after.saturating_sub(before)) as f64 / entries as f64,
        if changelog {
            "on, before the barrier flush"
        } else {
            "off"
        }
    );
    black_box(&store);
}

/// What checking a closed store's files against its checkpoint costs at open, against the
/// open itself, for the store in `cfg`/`name` (already closed, holding `n` entries).
fn open_verification_figure(cfg: &PersistentConfig, name: &str, n: u64) {
    let data = StoreDirectory::open(cfg, name).expect("dir").data_path();
    for round in 1..=3 {
        let t = Instant::now();
        StoreDirectory::open(cfg, name)
            .expect("dir")
            .write_checkpoint(&[(ChangelogPartition(0), ChangelogOffset(n))])
            .expect("checkpoint");
        let close = t.elapsed();
        let (files, bytes) = dir_size(&data);
        let t = Instant::now();
        let (_, recovery) =
            StoreDirectory::recover(cfg, name, LocalCopy::default()).expect("recover");
        let verify = t.elapsed();
        assert!(matches!(recovery, Recovery::Resumed { .. }), "{recovery:?}");
        let t = Instant::now();
        let store = PersistentKeyValueStore::open(cfg, StoreConfig::new(name), U64Codec, I64Codec)
            .expect("open");
        let open = t.elapsed();
        black_box(store.get(&0).expect("get"));
        drop(store);
        println!(
            "persistent open of {n} entries, round {round}: engine open {:.1} ms, manifest check {:.1} ms ({:.0}% of the open; {files} files, {:.1} MB), checkpoint with manifest at close {:.1} ms",
            open.as_secs_f64() * 1e3,
            verify.as_secs_f64() * 1e3,
            verify.as_secs_f64() / open.as_secs_f64() * 100.0,
            bytes as f64 / 1e6,
            close.as_secs_f64() * 1e3,
        );
    }
}

/// Files and bytes under `dir`.
fn dir_size(dir: &std::path::Path) -> (u64, u64) {
    let mut acc = (0, 0);
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            let (f, b) = dir_size(&p);
            acc = (acc.0 + f, acc.1 + b);
        } else {
            acc = (acc.0 + 1, acc.1 + p.metadata().expect("metadata").len());
        }
    }
    acc
}

fn main() {
    let n = env_n("STOATFLOW_BENCH_N", 1_000_000);
    let restore_n = env_n("STOATFLOW_BENCH_RESTORE_N", 10_000_000);
    if std::env::var_os("STOATFLOW_BENCH_MEMORY_CHILD").is_none() {
        println!("stoatflow-state engines: N={n}, restore N={restore_n}");
    }
    let tmp = std::env::temp_dir().join(format!("stoatflow-bench-{}", std::process::id()));
    let cfg = PersistentConfig::new(&tmp, "bench");
    if std::env::var("STOATFLOW_BENCH_ONLY").as_deref() == Ok("restore") {
        restore_figures(&cfg, restore_n);
        let _ = std::fs::remove_dir_all(&tmp);
        return;
    }

    // Memory in fresh child processes, so freed heap from another figure cannot hide growth.
    if let Ok(mode) = std::env::var("STOATFLOW_BENCH_MEMORY_CHILD") {
        memory_figure(mode == "on");
        return;
    }
    for mode in ["off", "on"] {
        let exe = std::env::current_exe().expect("current exe");
        let out = std::process::Command::new(exe)
            .env("STOATFLOW_BENCH_MEMORY_CHILD", mode)
            .output()
            .expect("memory child");
        print!("{}", String::from_utf8_lossy(&out.stdout));
    }

    window_update_figure(n, false);
    window_update_figure(n, true);
    window_in_place_figure(n);
    window_key_range_figure(n);

    let mut mem = InMemoryKeyValueStore::new(StoreConfig::new("kv"), U64Codec, I64Codec);
    kv_figures("in-memory", &mut mem, n);
    drop(mem);

    let mut disk = PersistentKeyValueStore::open(&cfg, StoreConfig::new("kv"), U64Codec, I64Codec)
        .expect("open");
    kv_figures("persistent", &mut disk, n);
    drop(disk);
    open_verification_figure(&cfg, "kv", n);
    restore_figures(&cfg, restore_n);
    let _ = std::fs::remove_dir_all(&tmp);
}

/// Restore of the same window changelog into each engine, and what generating it costs.
fn restore_figures(cfg: &PersistentConfig, restore_n: u64) {
    let seg = SegmentedConfig::new(3_600_000);
    let mut mem_w = InMemoryWindowStore::new(StoreConfig::new("w"), seg, U64Codec, I64Codec);
    restore_figure("in-memory", &mut mem_w, restore_n);
    black_box(mem_w.fetch(&0, 0).expect("fetch"));
    drop(mem_w);

    let mut disk_w =
        PersistentWindowStore::open(cfg, StoreConfig::new("w"), seg, U64Codec, I64Codec)
            .expect("open");
    restore_figure("persistent", &mut disk_w, restore_n);
    black_box(disk_w.fetch(&0, 0).expect("fetch"));
    drop(disk_w);

    let t = Instant::now();
    let mut bytes = 0usize;
    for e in window_changelog(restore_n, (restore_n / 10).max(1)) {
        bytes += e.key.len();
    }
    black_box(bytes);
    println!(
        "(generating the {restore_n} changelog records alone takes {:.2} s)",
        t.elapsed().as_secs_f64()
    );
}
