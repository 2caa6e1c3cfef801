//! Regressions for the key order under a codec whose byte order is not the key order:
//! Kafka's `i64` puts negative keys after the others by bytes. For each store kind, over
//! both engines, with no write-back cache (every write in the engine) and the default one
//! (every write in the cache): range bounds straddling 0, the order of every answer holding
//! several keys, and the order of a flush's records, each against the order `K: Ord` gives.

use std::ops::{Bound, RangeBounds};

use stoatflow_state::{
    AnyKeyValueStore, AnySessionStore, AnyWindowStore, ChangelogBatch, Codec,
    DEFAULT_CACHE_MAX_BYTES, I64Codec, InMemoryKeyValueStore, InMemorySessionStore,
    InMemoryWindowStore, KeyValueStore, PersistentKeyValueStore, PersistentSessionStore,
    PersistentWindowStore, SegmentedConfig, SessionStore, SessionWindow, StateStore, StoreConfig,
    WatermarkKey, WatermarkKeyCodec, WindowStore, decode_session_key, decode_window_key,
};

use super::persistent;
use crate::scratch_root;

/// Keys on both sides of 0, written in neither key nor byte order.
const KEYS: [i64; 7] = [1, -1, i64::MAX, 0, i64::MIN, 255, -256];

/// No write-back cache, and the default one.
const CACHES: [usize; 2] = [0, DEFAULT_CACHE_MAX_BYTES];

/// The keys of a flush's records, each split by `split` into the key bytes and the rest.
fn flushed<T>(store: &mut dyn StateStore, split: impl Fn(&[u8]) -> (&[u8], T)) -> Vec<(i64, T)> {
    let mut batch = ChangelogBatch::new();
    store.flush_changelog(&mut batch).expect("flush");
    batch
        .iter()
        .map(|r| {
            let (key, rest) = split(r.key);
            (I64Codec.decode(key).expect("an i64 key"), rest)
        })
        .collect()
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

fn kv_stores(dir: &std::path::Path, cache: usize) -> [AnyKeyValueStore<i64, i64>; 2] {
    let config = StoreConfig::new("kv");
    [
        AnyKeyValueStore::InMemory(InMemoryKeyValueStore::new(
            config.clone(),
            I64Codec,
            I64Codec,
        )),
        AnyKeyValueStore::Persistent(
            PersistentKeyValueStore::open(&persistent(dir, cache), config, I64Codec, I64Codec)
                .expect("open"),
        ),
    ]
}

#[test]
fn key_value_ranges_answers_and_flushes_follow_the_key_order_of_negative_keys() {
    let tmp = scratch_root();
    for cache in CACHES {
        for (engine, mut s) in kv_stores(&tmp.path().join(cache.to_string()), cache)
            .into_iter()
            .enumerate()
        {
            let what = format!("engine {engine}, cache {cache}");
            for k in KEYS {
                s.put(k, k, 0).expect("put");
            }
            let all = sorted(KEYS.to_vec());
            let keys =
                |answer: Vec<(i64, i64)>| answer.into_iter().map(|e| e.0).collect::<Vec<_>>();
            assert_eq!(keys(s.all().expect("all")), all, "{what}: all");
            let (minus, zero, one) = (-1, 0, 1);
            let bounds: [(Bound<&i64>, Bound<&i64>); 6] = [
                (Bound::Included(&minus), Bound::Included(&one)),
                (Bound::Excluded(&minus), Bound::Unbounded),
                (Bound::Unbounded, Bound::Excluded(&zero)),
                (Bound::Included(&zero), Bound::Included(&i64::MAX)),
                (Bound::Included(&i64::MIN), Bound::Excluded(&one)),
                // Inverted by key, not by bytes: empty.
                (Bound::Included(&one), Bound::Included(&minus)),
            ];
            for (from, to) in bounds {
                let want: Vec<i64> = all
                    .iter()
                    .copied()
                    .filter(|k| (from, to).contains(k))
                    .collect();
                assert_eq!(
                    keys(s.range(from, to).expect("range")),
                    want,
                    "{what}: range {from:?}..{to:?}"
                );
            }
            assert_eq!(
                flushed(&mut s, |k| (k, ()))
                    .into_iter()
                    .map(|e| e.0)
                    .collect::<Vec<_>>(),
                all,
                "{what}: flush"
            );
        }
    }
}

#[test]
fn window_answers_and_flushes_follow_the_key_order_of_negative_keys() {
    let tmp = scratch_root();
    let seg = SegmentedConfig::new(1_000).with_segment_interval(100);
    for cache in CACHES {
        let dir = tmp.path().join(cache.to_string());
        let config = StoreConfig::new("w");
        let stores: [AnyWindowStore<i64, i64>; 2] = [
            AnyWindowStore::InMemory(InMemoryWindowStore::new(
                config.clone(),
                seg,
                I64Codec,
                I64Codec,
            )),
            AnyWindowStore::Persistent(
                PersistentWindowStore::open(
                    &persistent(&dir, cache),
                    config,
                    seg,
                    I64Codec,
                    I64Codec,
                )
                .expect("open"),
            ),
        ];
        for (engine, mut s) in stores.into_iter().enumerate() {
            let what = format!("engine {engine}, cache {cache}");
            let mut written = Vec::new();
            // Two windows in one segment and one in the next.
            for start in [150, 100, 250] {
                for k in KEYS {
                    s.put(k, start, k, 0).expect("put");
                    written.push((start, k));
                }
            }
            let by_start_then_key = sorted(written.clone());
            let fetched: Vec<(i64, i64)> = s
                .fetch_all(i64::MIN, i64::MAX)
                .expect("fetch_all")
                .into_iter()
                .map(|(start, k, _)| (start, k))
                .collect();
            assert_eq!(fetched, by_start_then_key, "{what}: fetch_all");
            let records: Vec<(i64, i64)> = flushed(&mut s, |k| {
                let (key, start, _) = decode_window_key(k).expect("a window key");
                (key, start)
            })
            .into_iter()
            .map(|(k, start)| (start, k))
            .collect();
            assert_eq!(records, by_start_then_key, "{what}: flush");
        }
    }
}

#[test]
fn session_answers_and_flushes_follow_the_key_order_of_negative_keys() {
    let tmp = scratch_root();
    let seg = SegmentedConfig::new(1_000).with_segment_interval(100);
    for cache in CACHES {
        let dir = tmp.path().join(cache.to_string());
        let config = StoreConfig::new("s");
        let stores: [AnySessionStore<i64, i64>; 2] = [
            AnySessionStore::InMemory(InMemorySessionStore::new(
                config.clone(),
                seg,
                I64Codec,
                I64Codec,
            )),
            AnySessionStore::Persistent(
                PersistentSessionStore::open(
                    &persistent(&dir, cache),
                    config,
                    seg,
                    I64Codec,
                    I64Codec,
                )
                .expect("open"),
            ),
        ];
        for (engine, mut s) in stores.into_iter().enumerate() {
            let what = format!("engine {engine}, cache {cache}");
            let mut written = Vec::new();
            for window in [
                SessionWindow::new(100, 150),
                SessionWindow::new(120, 150),
                SessionWindow::new(90, 260),
            ] {
                for k in KEYS {
                    s.put(k, window, k, 0).expect("put");
                    written.push((k, window.end, window.start));
                }
            }
            let by_end_key_start = sorted(written.iter().map(|&(k, e, st)| (e, k, st)).collect());
            let fetched: Vec<(i64, i64, i64)> = s
                .fetch_all_by_end(i64::MIN, i64::MAX)
                .expect("fetch_all_by_end")
                .into_iter()
                .map(|(w, k, _)| (w.end, k, w.start))
                .collect();
            assert_eq!(fetched, by_end_key_start, "{what}: fetch_all_by_end");
            let records: Vec<(i64, i64, i64)> = flushed(&mut s, |k| {
                let (key, start, end) = decode_session_key(k).expect("a session key");
                (key, (end, start))
            })
            .into_iter()
            .map(|(k, (end, start))| (k, end, start))
            .collect();
            assert_eq!(records, sorted(written), "{what}: flush by key, end, start");
        }
    }
}

#[test]
fn the_watermark_store_flushes_in_key_order() {
    let tmp = scratch_root();
    for cache in CACHES {
        let config = StoreConfig::new("wm");
        let stores: [AnyKeyValueStore<WatermarkKey, i64>; 2] = [
            AnyKeyValueStore::InMemory(InMemoryKeyValueStore::new(
                config.clone(),
                WatermarkKeyCodec,
                I64Codec,
            )),
            AnyKeyValueStore::Persistent(
                PersistentKeyValueStore::open(
                    &persistent(&tmp.path().join(cache.to_string()), cache),
                    config,
                    WatermarkKeyCodec,
                    I64Codec,
                )
                .expect("open"),
            ),
        ];
        for (engine, mut s) in stores.into_iter().enumerate() {
            let written = [
                WatermarkKey::Stamp(u64::MAX),
                WatermarkKey::GracefulFlush,
                WatermarkKey::Stamp(1),
                WatermarkKey::Stamp(256),
            ];
            for k in written {
                s.put(k, 0, 0).expect("put");
            }
            let mut batch = ChangelogBatch::new();
            s.flush_changelog(&mut batch).expect("flush");
            let keys: Vec<WatermarkKey> = batch
                .iter()
                .map(|r| WatermarkKeyCodec.decode(r.key).expect("a watermark key"))
                .collect();
            assert_eq!(
                keys,
                sorted(written.to_vec()),
                "engine {engine}, cache {cache}"
            );
        }
    }
}

/// The changelog never sees the persistent engine's stored form: both engines flush the
/// same records, byte for byte, whose keys begin with Kafka's bytes of the key.
#[test]
fn both_engines_flush_kafkas_bytes() {
    let tmp = scratch_root();
    let seg = SegmentedConfig::new(1_000).with_segment_interval(100);
    for cache in CACHES {
        let dir = tmp.path().join(cache.to_string());
        let config = StoreConfig::new("s");
        let mut stores: [AnySessionStore<i64, i64>; 2] = [
            AnySessionStore::InMemory(InMemorySessionStore::new(
                config.clone(),
                seg,
                I64Codec,
                I64Codec,
            )),
            AnySessionStore::Persistent(
                PersistentSessionStore::open(
                    &persistent(&dir, cache),
                    config,
                    seg,
                    I64Codec,
                    I64Codec,
                )
                .expect("open"),
            ),
        ];
        let records = stores.each_mut().map(|s| {
            for k in KEYS {
                s.put(k, SessionWindow::new(k.clamp(0, 90), 150), k, 4)
                    .expect("put");
            }
            let mut batch = ChangelogBatch::new();
            s.flush_changelog(&mut batch).expect("flush");
            batch.to_records()
        });
        assert_eq!(records[0], records[1], "cache {cache}");
        let keys: Vec<[u8; 8]> = records[1]
            .iter()
            .map(|r| r.key[..8].try_into().expect("8 bytes"))
            .collect();
        let kafka: Vec<[u8; 8]> = sorted(KEYS.to_vec())
            .into_iter()
            .map(i64::to_be_bytes)
            .collect();
        assert_eq!(keys, kafka, "cache {cache}");
    }
}
