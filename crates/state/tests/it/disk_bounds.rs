//! A persistent store's bytes on disk follow its live state: what expired segments held goes
//! with them, and writes leave no journal that grows with the count of writes.

use std::path::Path;

use stoatflow_state::{
    I64Codec, PersistentConfig, PersistentWindowStore, Segmented, SegmentedConfig, StateStore,
    StoreConfig, StringCodec, WindowStore,
};

/// Bytes the files under `dir` occupy on disk (a preallocated, sparse file counts what it
/// holds, not its length).
fn bytes_on_disk(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => bytes_on_disk(&e.path()),
            Ok(m) => std::os::unix::fs::MetadataExt::blocks(&m) * 512,
            Err(_) => 0,
        })
        .sum()
}

/// Writes `rounds` rounds of 2 000 windows, each round in a later 1 s segment, expiring
/// everything older than the round before; returns the bytes on disk after each round.
fn run(cache_bytes: usize, rounds: i64) -> Vec<u64> {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = PersistentConfig::new(tmp.path(), "app").with_cache_max_bytes(cache_bytes);
    let seg = SegmentedConfig::new(1_000).with_segment_interval(1_000);
    let mut w =
        PersistentWindowStore::open(&cfg, StoreConfig::new("w"), seg, StringCodec, I64Codec)
            .unwrap();
    let value = 7i64;
    let mut sizes = Vec::new();
    for round in 0..rounds {
        let start = round * 1_000;
        for k in 0..2_000 {
            // Each window rewritten a few times, as an aggregation does.
            for _ in 0..3 {
                w.put(
                    format!("key-{k:05}-{}", "x".repeat(40)),
                    start,
                    value,
                    start,
                )
                .unwrap();
            }
        }
        w.expire(start + 1_000).unwrap();
        sizes.push(bytes_on_disk(tmp.path()));
    }
    drop(w);
    sizes
}

#[test]
fn bytes_on_disk_stay_flat_while_segments_come_and_go() {
    // The smallest cache (it spills at least once a round) and the default (it holds a
    // round): 30 rounds of 6 000 writes each, about 10 MB of keys and values written in all,
    // one round's worth live at a time.
    for cache in [
        stoatflow_state::MIN_CACHE_MAX_BYTES,
        stoatflow_state::DEFAULT_CACHE_MAX_BYTES,
    ] {
        let sizes = run(cache, 30);
        let early = sizes[4];
        let late = *sizes.last().unwrap();
        assert!(early > 0);
        assert!(
            late <= early + early / 4,
            "cache {cache}: {early} bytes on disk after 5 rounds, {late} after 40: {sizes:?}"
        );
    }
}

/// (files, bytes on disk) under `dir`, directories not counted as files.
fn files_and_bytes(dir: &Path) -> (usize, u64) {
    let mut files = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(_) => files += 1,
                Err(_) => {}
            }
        }
    }
    (files, bytes_on_disk(dir))
}

/// Bytes on disk of the engine's journal files under `dir` (named `<n>.jnl`).
fn journal_bytes(dir: &Path) -> u64 {
    let mut bytes = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) if e.path().extension().is_some_and(|x| x == "jnl") => {
                    bytes += std::os::unix::fs::MetadataExt::blocks(&m) * 512
                }
                _ => {}
            }
        }
    }
    bytes
}

/// A store that runs for a month sees its windows advance through thousands of segments;
/// its directory follows what is live, not how many segments came and went. 500 segments
/// pass through a store with two live at a time (a cache small enough that every round
/// reaches the engine, a commit and an expiry per round, as the runtime does). The engine
/// compacts in the background, so a sample can catch a pile of tables and versions waiting
/// for it, which a busy machine makes larger; what must not grow is the low point: in each
/// run of 50 rounds the fewest files and bytes stay within four times the most seen in
/// rounds 20 to 50 (twice was exceeded once by a pile that lasted 50 rounds on a machine at
/// load 20). A keyspace per segment raised the low point by about six files a segment
/// (2 721 files and 219 MB by round 450), past either bound within the 500 rounds.
#[test]
fn files_and_bytes_stay_bounded_while_hundreds_of_segments_come_and_go() {
    let tmp = crate::scratch_root();
    let cfg = PersistentConfig::new(tmp.path(), "app").with_cache_max_bytes_unfloored(4 << 10);
    let seg = SegmentedConfig::new(1_000).with_segment_interval(1_000);
    let mut w =
        PersistentWindowStore::open(&cfg, StoreConfig::new("w"), seg, StringCodec, I64Codec)
            .unwrap();
    let mut batch = stoatflow_state::ChangelogBatch::new();
    let mut seen = Vec::new();
    let mut journal = Vec::new();
    for round in 0..500i64 {
        let start = round * 1_000;
        for k in 0..200 {
            w.put(format!("key-{k:04}"), start, round, start).unwrap();
        }
        batch.clear();
        w.flush_changelog(&mut batch).unwrap();
        w.expire(start + 1_000).unwrap();
        seen.push(files_and_bytes(tmp.path()));
        journal.push(journal_bytes(tmp.path()));
    }
    // Nothing goes through the journal: it stays empty, where writes through it (and so
    // through memtables no segment lives long enough to fill) kept every write of every
    // segment in it.
    let most = journal.iter().max().unwrap();
    assert!(
        *most <= 1 << 20,
        "the journal took up to {most} bytes on disk; every 25th round: {:?}",
        journal.iter().step_by(25).collect::<Vec<_>>()
    );
    let early = &seen[20..50];
    let files_bound = 4 * early.iter().map(|s| s.0).max().unwrap();
    let bytes_bound = 4 * early.iter().map(|s| s.1).max().unwrap();
    for (run, samples) in seen[50..].chunks(50).enumerate() {
        let files = samples.iter().map(|s| s.0).min().unwrap();
        let bytes = samples.iter().map(|s| s.1).min().unwrap();
        assert!(
            files <= files_bound && bytes <= bytes_bound,
            "rounds {} to {}: at least {files} files and {bytes} bytes on disk; bound {files_bound} files, {bytes_bound} bytes (four times the most in rounds 20 to 50); every 50th round: {:?}",
            50 * run + 51,
            50 * run + 100,
            seen.iter().step_by(50).collect::<Vec<_>>()
        );
    }
    // The store still reads its live segment.
    assert_eq!(
        w.fetch(&"key-0000".to_string(), 499_000).unwrap(),
        Some(499)
    );
}

/// `len` bytes of noise from a xorshift generator: the engine's compression cannot shrink
/// them, so a table holds about as many bytes as its entries.
fn noise(state: &mut u64, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// A segment's bytes leave the disk when the segment is dropped, not when the engine next
/// touches the keyspace that held it. Ten segments of about 0.9 MB each are live at once
/// (each in its own slot), then all but the newest are dropped, then segments come and go
/// one live at a time for 20 rounds. After each drop the store's directory holds at most
/// twice the live entries' bytes (their tables, and one rewrite of them a compaction may
/// have under way) plus 1 MiB for the engine's own small files (manifests, version records
/// and the slot map, each at least one 4 KiB block). No timing is involved: the bytes must
/// be gone when `expire` returns. The engine used to keep a dropped segment's tables until
/// a compaction of its slot, and a slot no new segment took kept them for good: about ten
/// segments' bytes here after the nine drops.
#[test]
fn a_dropped_segments_bytes_leave_the_disk_when_it_is_dropped() {
    const ENTRIES: usize = 4_000;
    const VALUE: usize = 200;
    // Engine key: "key-nnnnn" and the window start; then the value.
    const SEGMENT_BYTES: u64 = (ENTRIES * (9 + 8 + VALUE)) as u64;
    let tmp = crate::scratch_root();
    // The smallest cache: a segment's entries reach the engine in one or two spills.
    let cfg = PersistentConfig::new(tmp.path(), "app")
        .with_cache_max_bytes(stoatflow_state::MIN_CACHE_MAX_BYTES);
    let seg = SegmentedConfig::new(10_000).with_segment_interval(1_000);
    let mut w = PersistentWindowStore::open(
        &cfg,
        StoreConfig::new("w"),
        seg,
        StringCodec,
        stoatflow_state::BytesCodec,
    )
    .unwrap();
    let bound = 2 * SEGMENT_BYTES + bytes_on_disk(tmp.path()) + (1 << 20);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut batch = stoatflow_state::ChangelogBatch::new();
    let mut write_segment = |w: &mut PersistentWindowStore<String, Vec<u8>>, start: i64| {
        for k in 0..ENTRIES {
            w.put(format!("key-{k:05}"), start, noise(&mut rng, VALUE), start)
                .unwrap();
        }
        batch.clear();
        w.flush_changelog(&mut batch).unwrap();
    };
    for round in 0..10 {
        write_segment(&mut w, round * 1_000);
    }
    let full = bytes_on_disk(tmp.path());
    assert!(
        full > 6 * SEGMENT_BYTES,
        "ten segments of {SEGMENT_BYTES} bytes took only {full} bytes on disk"
    );
    // A frontier that leaves only the newest segment (times 9 000 to 9 999) live.
    w.expire(9_000 + 10_000).unwrap();
    assert_eq!(w.segments(), 1);
    let after = bytes_on_disk(tmp.path());
    assert!(
        after <= bound,
        "{full} bytes on disk with ten segments live, {after} once nine were dropped; bound {bound} (twice one segment's {SEGMENT_BYTES} bytes and 1 MiB over the empty store)"
    );
    for round in 10..30 {
        let start = round * 1_000;
        write_segment(&mut w, start);
        w.expire(start + 10_000).unwrap();
        assert_eq!(w.segments(), 1);
        let bytes = bytes_on_disk(tmp.path());
        assert!(
            bytes <= bound,
            "round {round}: {bytes} bytes on disk with one segment live; bound {bound}"
        );
    }
}
