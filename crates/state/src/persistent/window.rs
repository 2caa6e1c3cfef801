//! Persistent window store.
//!
//! Owns the on-disk layout of a window, `[key][start]` (see [`DiskLayout`]), and the window
//! queries; the directory, segments, retention, dirty tracking, the changelog and restore are
//! the [`SegmentedCore`]'s.

use std::ops::ControlFlow;

use super::segmented::{DiskLayout, SegmentedCore};
use super::{PersistentConfig, time_bytes, time_from};
use crate::codec::Codec;
use crate::error::StateError;
use crate::segments::SegmentedConfig;
use crate::store::{StoreConfig, WindowStore, delegate_to_segmented_core};
use crate::windowed::TimeWindowKind;

impl DiskLayout for TimeWindowKind {
    fn push_window(start: i64, out: &mut Vec<u8>) {
        out.extend_from_slice(&time_bytes(start));
    }

    fn split(engine_key: &[u8]) -> Option<(&[u8], i64)> {
        let n = engine_key.len().checked_sub(8)?;
        Some((&engine_key[..n], time_from(&engine_key[n..])))
    }
}

/// A window store on disk: one keyspace per segment, entries laid out `[key][start]`.
pub struct PersistentWindowStore<K, V> {
    core: SegmentedCore<K, V, TimeWindowKind>,
}

delegate_to_segmented_core!(bulk PersistentWindowStore where K: Ord);

impl<K, V> PersistentWindowStore<K, V> {
    /// Opens the store in `<state dir>/<name>/`, creating it if needed.
    ///
    /// # Errors
    /// As [`StoreDirectory::open`](super::StoreDirectory::open), or [`StateError::Engine`].
    pub fn open(
        persistent: &PersistentConfig,
        config: StoreConfig,
        segmented: SegmentedConfig,
        key_codec: impl Codec<K> + 'static,
        value_codec: impl Codec<V> + 'static,
    ) -> Result<Self, StateError> {
        SegmentedCore::open(persistent, config, segmented, key_codec, value_codec)
            .map(|core| Self { core })
    }

    /// The earliest window start not expired at the frontier the store was last expired to
    /// (`i64::MIN` before that): reads that must not depend on how the store is segmented
    /// start here.
    pub fn first_live_time(&self) -> i64 {
        self.core.first_live_time()
    }
}

impl<K: Ord, V: Clone> WindowStore<K, V> for PersistentWindowStore<K, V> {
    fn put(
        &mut self,
        key: K,
        window_start: i64,
        value: V,
        timestamp: i64,
    ) -> Result<(), StateError> {
        self.core.put(&key, window_start, value, timestamp)
    }

    fn update(
        &mut self,
        key: &K,
        window_start: i64,
        timestamp: i64,
        f: &mut dyn FnMut(Option<V>) -> V,
    ) -> Result<(), StateError>
    where
        K: Clone,
    {
        self.core.update(key, window_start, timestamp, f)
    }

    /// The key's windows read once, each value written straight into the cache.
    fn update_key_range(
        &mut self,
        key: &K,
        time_from: i64,
        time_to: i64,
        timestamp: i64,
        f: &mut dyn FnMut(i64, V) -> V,
    ) -> Result<(), StateError>
    where
        K: Clone,
    {
        self.core
            .update_key_range(key, time_from, time_to, timestamp, f)
    }

    fn fetch(&self, key: &K, window_start: i64) -> Result<Option<V>, StateError> {
        self.core.fetch(key, window_start)
    }

    /// Each value decoded as it is visited, none collected.
    fn for_each_in_key_range(
        &self,
        key: &K,
        time_from: i64,
        time_to: i64,
        f: &mut dyn FnMut(i64, &V),
    ) -> Result<(), StateError> {
        self.core
            .for_each_in_key_range(key, time_from, time_to, false, &mut |start, value| {
                f(start, &value);
                ControlFlow::Continue(())
            })
    }

    /// From the newest window, decoding only those visited.
    fn for_each_in_key_range_backward(
        &self,
        key: &K,
        time_from: i64,
        time_to: i64,
        f: &mut dyn FnMut(i64, &V) -> ControlFlow<()>,
    ) -> Result<(), StateError> {
        self.core
            .for_each_in_key_range(key, time_from, time_to, true, &mut |start, value| {
                f(start, &value)
            })
    }

    fn fetch_key_range(
        &self,
        key: &K,
        time_from: i64,
        time_to: i64,
    ) -> Result<Vec<(i64, V)>, StateError> {
        if time_from > time_to {
            return Ok(Vec::new());
        }
        let segments = self.core.segments_between(time_from, time_to);
        self.core
            .key_range(key, segments, time_from, time_to, |_| true)
    }

    /// By start, then key, sorted once decoded (no two entries share both).
    fn fetch_all(&self, time_from: i64, time_to: i64) -> Result<Vec<(i64, K, V)>, StateError> {
        let mut all = self.core.all_between(time_from, time_to)?;
        all.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        Ok(all)
    }

    fn delete(&mut self, key: &K, window_start: i64, timestamp: i64) -> Result<(), StateError> {
        self.core.delete(key, window_start, timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ChangelogBatch;
    use crate::codec::{I64Codec, StringCodec};
    use crate::store::{Segmented, StateStore};

    #[test]
    fn prefix_sharing_keys_do_not_leak_into_key_ranges() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let mut w = PersistentWindowStore::open(
            &cfg,
            StoreConfig::new("w"),
            SegmentedConfig::new(1000),
            StringCodec,
            I64Codec,
        )
        .unwrap();
        w.put("a".into(), 10, 1, 0).unwrap();
        w.put("a\u{1}".into(), 5, 2, 0).unwrap();
        w.put("a".into(), 20, 3, 0).unwrap();
        assert_eq!(
            w.fetch_key_range(&"a".into(), 0, 100).unwrap(),
            vec![(10, 1), (20, 3)]
        );
        assert_eq!(w.fetch_all(0, 100).unwrap().len(), 3);
    }

    #[test]
    fn segments_survive_reopen() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let seg = SegmentedConfig::new(100).with_segment_interval(10);
        {
            let mut w = PersistentWindowStore::open(
                &cfg,
                StoreConfig::new("w"),
                seg,
                StringCodec,
                I64Codec,
            )
            .unwrap();
            w.put("a".into(), 0, 1, 0).unwrap();
            w.put("a".into(), 15, 2, 0).unwrap();
            assert_eq!(w.segments(), 2);
        }
        // A clean close vouches for the files the next open serves.
        crate::StoreDirectory::open(&cfg, "w")
            .unwrap()
            .write_checkpoint(&[])
            .unwrap();
        let mut w =
            PersistentWindowStore::open(&cfg, StoreConfig::new("w"), seg, StringCodec, I64Codec)
                .unwrap();
        assert_eq!(w.segments(), 2);
        assert_eq!(w.fetch(&"a".into(), 15).unwrap(), Some(2));
        assert_eq!(w.expire(110).unwrap(), 1);
        assert_eq!(w.segments(), 1);
    }

    fn open_window_store(cfg: &PersistentConfig) -> PersistentWindowStore<String, i64> {
        let seg = SegmentedConfig::new(1_000).with_segment_interval(100);
        PersistentWindowStore::open(cfg, StoreConfig::new("w"), seg, StringCodec, I64Codec).unwrap()
    }

    /// Drives one store through updates, deletes, a flush and an expiry; returns every
    /// answer and changelog record.
    fn drive(w: &mut PersistentWindowStore<String, i64>) -> Vec<String> {
        let mut seen = Vec::new();
        for i in 0..300i64 {
            let key = format!("k{}", i % 7);
            w.update(&key, (i % 5) * 100, i, &mut |old| old.unwrap_or(0) + i)
                .unwrap();
            if i % 11 == 0 {
                w.delete(&key, (i % 3) * 100, i).unwrap();
            }
            if i % 13 == 0 {
                w.update_key_range(&key, 100, 300, i, &mut |start, v| v + start)
                    .unwrap();
                let mut newest = Vec::new();
                w.for_each_in_key_range_backward(&key, 0, 400, &mut |start, v| {
                    newest.push((start, *v));
                    if newest.len() < 2 {
                        ControlFlow::Continue(())
                    } else {
                        ControlFlow::Break(())
                    }
                })
                .unwrap();
                seen.push(format!("{newest:?}"));
            }
            if i % 50 == 49 {
                let mut batch = ChangelogBatch::new();
                w.flush_changelog(&mut batch).unwrap();
                seen.push(format!("{:?}", batch.to_records()));
            }
        }
        seen.push(format!("{:?}", w.fetch_all(i64::MIN, i64::MAX).unwrap()));
        seen.push(format!(
            "{:?}",
            w.fetch_key_range(&"k3".into(), 0, 400).unwrap()
        ));
        w.expire(1_250).unwrap();
        let mut batch = ChangelogBatch::new();
        w.flush_changelog(&mut batch).unwrap();
        seen.push(format!("{:?}", batch.to_records()));
        seen.push(format!("{:?}", w.fetch_all(i64::MIN, i64::MAX).unwrap()));
        seen
    }

    #[test]
    fn writes_reach_the_engine_only_past_the_cache_bound_and_on_close() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let mut w = open_window_store(&cfg);
        for i in 0..100 {
            w.update(&"a".into(), 0, i, &mut |old| old.unwrap_or(0) + 1)
                .unwrap();
        }
        assert_eq!(w.fetch(&"a".into(), 0).unwrap(), Some(100));
        let mut batch = ChangelogBatch::new();
        w.flush_changelog(&mut batch).unwrap();
        assert_eq!(batch.len(), 1);
        assert_eq!(
            w.core.engine_entries(),
            0,
            "a barrier writes nothing to the engine"
        );
        drop(w);
        // A clean close vouches for the files the next open serves.
        crate::StoreDirectory::open(&cfg, "w")
            .unwrap()
            .write_checkpoint(&[])
            .unwrap();
        let w = open_window_store(&cfg);
        assert_eq!(w.fetch(&"a".into(), 0).unwrap(), Some(100));
        assert_eq!(w.core.engine_entries(), 1, "the close wrote the cache back");

        // A bound of one entry: every write after the first spills, once per key.
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app").with_cache_max_bytes_unfloored(1);
        let mut w = open_window_store(&cfg);
        w.put("a".into(), 0, 1, 0).unwrap();
        assert_eq!(w.core.engine_entries(), 1);
        w.put("b".into(), 0, 2, 0).unwrap();
        assert_eq!(w.core.engine_entries(), 2);
        assert_eq!(w.fetch(&"a".into(), 0).unwrap(), Some(1));
    }

    #[test]
    fn a_spill_lets_go_of_the_oldest_windows_and_keeps_the_newest() {
        let tmp = tempfile::tempdir().unwrap();
        // Room for about 49 entries (114 bytes each); ten keys, windows 0, 10, .. 90, all in
        // segment 0.
        let cfg = PersistentConfig::new(tmp.path(), "app").with_cache_max_bytes_unfloored(40 * 140);
        let mut w = open_window_store(&cfg);
        for start in (0..100).step_by(10) {
            for key in 0..10 {
                w.update(&format!("k{key}"), start, start, &mut |old| {
                    old.unwrap_or(0) + 1
                })
                .unwrap();
            }
        }
        let cached = w.core.cached_entries();
        assert!(
            (1..50).contains(&cached),
            "a spill takes a slice, not the whole cache: {cached} entries left"
        );
        for key in 0..10 {
            let k = format!("k{key}");
            assert_eq!(
                w.core.cached_value(&k, 90),
                Some(1),
                "the newest window of {k} stays in the cache"
            );
            assert_eq!(w.core.cached_value(&k, 0), None, "the oldest of {k} went");
            assert_eq!(
                w.fetch(&k, 0).unwrap(),
                Some(1),
                "and reads back from the engine"
            );
        }
    }

    #[test]
    fn a_close_writes_the_cache_back() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let mut w = open_window_store(&cfg);
        w.put("a".into(), 0, 7, 0).unwrap();
        w.put("b".into(), 100, 8, 0).unwrap();
        drop(w);
        // A clean close vouches for the files the next open serves.
        crate::StoreDirectory::open(&cfg, "w")
            .unwrap()
            .write_checkpoint(&[])
            .unwrap();
        let w = open_window_store(&cfg);
        assert_eq!(w.fetch(&"a".into(), 0).unwrap(), Some(7));
        assert_eq!(w.fetch(&"b".into(), 100).unwrap(), Some(8));
    }

    fn entry(key: &str, start: i64, value: Option<i64>, offset: u64) -> crate::ChangelogEntry {
        let mut k = Vec::new();
        crate::encode_window_key(key.as_bytes(), start, 0, &mut k);
        crate::ChangelogEntry {
            partition: crate::ChangelogPartition(0),
            offset: crate::ChangelogOffset(offset),
            key: k,
            value: value.map(|v| v.to_be_bytes().to_vec()),
            timestamp: start,
        }
    }

    #[test]
    fn a_restore_goes_to_the_engine_in_bulk_after_the_cache_and_wins_over_it() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let mut w = open_window_store(&cfg);
        // Live writes the cache holds: one the restore overwrites, one it deletes, one it
        // leaves alone; and the changelog still owes them.
        w.put("a".into(), 0, 1, 5).unwrap();
        w.put("b".into(), 0, 2, 5).unwrap();
        w.put("c".into(), 100, 3, 5).unwrap();
        let mut restored = vec![
            entry("a", 0, Some(10), 0),
            entry("b", 0, None, 1),
            entry("d", 200, Some(4), 2),
            entry("a", 0, Some(11), 3),
            entry("e", 300, Some(5), 4),
            entry("e", 300, None, 5),
        ];
        // Long keys in a later window: a batch past the bulk-load floor.
        let filler = (super::super::BULK_LOAD_MIN_BYTES / 100) as u64 + 1;
        restored.extend((0..filler).map(|i| entry(&format!("{i:0>90}"), 900, Some(1), 6 + i)));
        crate::restore(&mut w, restored, 0, &mut |_| {}).unwrap();
        assert_eq!(
            w.core.cached_entries(),
            0,
            "restored entries bypass the cache"
        );
        assert_eq!(
            w.core.engine_entries(),
            3 + filler as usize,
            "a, c, d and the filler, all in the engine"
        );
        assert_eq!(
            w.fetch_all(i64::MIN, 899).unwrap(),
            vec![
                (0, "a".into(), 11),
                (100, "c".into(), 3),
                (200, "d".into(), 4)
            ]
        );
        let mut batch = ChangelogBatch::new();
        w.flush_changelog(&mut batch).unwrap();
        let records: Vec<(Vec<u8>, Option<Vec<u8>>)> = batch
            .to_records()
            .into_iter()
            .map(|r| (r.key, r.value))
            .collect();
        let key = |k: &str, start: i64| {
            let mut out = Vec::new();
            crate::encode_window_key(k.as_bytes(), start, 0, &mut out);
            out
        };
        assert_eq!(
            records,
            vec![
                (key("a", 0), Some(11i64.to_be_bytes().to_vec())),
                (key("b", 0), None),
                (key("c", 100), Some(3i64.to_be_bytes().to_vec())),
            ],
            "the live writes are still owed, with what the store holds now"
        );
    }

    #[test]
    fn a_small_restore_batch_goes_through_the_cache() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let mut w = open_window_store(&cfg);
        let restored = vec![entry("a", 0, Some(1), 0), entry("b", 100, Some(2), 1)];
        crate::restore(&mut w, restored, 2, &mut |_| {}).unwrap();
        assert_eq!(
            (w.core.cached_entries(), w.core.engine_entries()),
            (2, 0),
            "no table for a few records"
        );
        assert_eq!(w.fetch(&"b".into(), 100).unwrap(), Some(2));
    }

    #[test]
    fn a_long_restore_is_written_as_two_tables_and_reads_back_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let mut w = open_window_store(&cfg);
        let n = 70_000u64;
        let entries = (0..n)
            .map(|i| entry(&format!("k{i:06}"), 0, Some(i as i64), i))
            .chain(
                (0..n)
                    .step_by(7)
                    .map(|i| entry(&format!("k{i:06}"), 0, None, n + i)),
            );
        crate::restore(&mut w, entries, 0, &mut |_| {}).unwrap();
        let all = w.fetch_all(0, 0).unwrap();
        let want: Vec<(i64, String, i64)> = (0..n)
            .filter(|i| i % 7 != 0)
            .map(|i| (0, format!("k{i:06}"), i as i64))
            .collect();
        assert_eq!(all.len(), want.len());
        assert!(all == want, "every entry, in key order");
        assert_eq!(w.fetch(&"k035001".into(), 0).unwrap(), Some(35_001));
        assert_eq!(w.fetch(&"k035000".into(), 0).unwrap(), None);
    }

    #[test]
    fn a_corrupt_record_in_a_batch_leaves_every_record_before_it_restored() {
        // Past the bulk-load floor (long keys in a later window), the bad record last.
        let filler = (super::super::BULK_LOAD_MIN_BYTES / 100) as u64 + 1;
        let mut entries = vec![entry("x", 0, Some(1), 0), entry("y", 0, Some(2), 1)];
        entries.extend((0..filler).map(|i| entry(&format!("{i:0>90}"), 900, Some(1), 2 + i)));
        let mut bad = entry("z", 0, Some(1), 2 + filler);
        bad.value = Some(vec![1, 2, 3]);
        let bad_offset = format!("offset {}", 2 + filler);
        entries.push(bad);
        for entries in [
            entries.clone(),
            entries[..2]
                .iter()
                .cloned()
                .chain(entries.last().cloned())
                .collect(),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let mut w = open_window_store(&PersistentConfig::new(tmp.path(), "app"));
            let err = crate::restore(&mut w, entries, 0, &mut |_| {}).unwrap_err();
            assert!(err.to_string().contains(&bad_offset), "{err}");
            assert_eq!(
                w.fetch_all(i64::MIN, 899).unwrap(),
                vec![(0, "x".into(), 1), (0, "y".into(), 2)]
            );
        }
    }

    /// Kafka's `i64` keys are kept in their sortable form (the sign bit flipped), so the
    /// engine's own order is the key order, while a flush and a restore carry Kafka's bytes;
    /// the answers are in key order, as the in-memory engine gives them.
    #[test]
    fn i64_keys_are_kept_sortable_and_the_changelog_keeps_kafkas_bytes() {
        let keys = [1i64, -1, i64::MAX, 0, i64::MIN, 300, -300];
        let seg = SegmentedConfig::new(1_000).with_segment_interval(100);
        let config = StoreConfig::new("w");
        let mut memory =
            crate::InMemoryWindowStore::new(config.clone(), seg, I64Codec, StringCodec);
        let tmp = tempfile::tempdir().unwrap();
        // No cache: every write goes to the engine.
        let cfg = PersistentConfig::new(tmp.path(), "app").with_cache_max_bytes_unfloored(0);
        let mut disk =
            PersistentWindowStore::open(&cfg, config, seg, I64Codec, StringCodec).unwrap();
        for start in [150, 100] {
            for k in keys {
                memory.put(k, start, format!("{k}@{start}"), 7).unwrap();
                disk.put(k, start, format!("{k}@{start}"), 7).unwrap();
            }
        }
        let mut sorted = keys;
        sorted.sort();
        let stored: Vec<Vec<u8>> = disk.core.engine_keys();
        let want: Vec<Vec<u8>> = sorted
            .iter()
            .flat_map(|k| {
                [100, 150].map(|start| {
                    let mut b = ((*k as u64) ^ (1 << 63)).to_be_bytes().to_vec();
                    b.extend_from_slice(&super::time_bytes(start));
                    b
                })
            })
            .collect();
        assert_eq!(
            stored, want,
            "sign-flipped keys, in key order in the engine"
        );
        assert_eq!(
            disk.fetch_all(i64::MIN, i64::MAX).unwrap(),
            memory.fetch_all(i64::MIN, i64::MAX).unwrap()
        );
        assert_eq!(
            disk.fetch_key_range(&-300, 0, 200).unwrap(),
            memory.fetch_key_range(&-300, 0, 200).unwrap()
        );
        let (mut on_disk, mut in_memory) = (ChangelogBatch::new(), ChangelogBatch::new());
        disk.flush_changelog(&mut on_disk).unwrap();
        memory.flush_changelog(&mut in_memory).unwrap();
        let records = on_disk.to_records();
        assert_eq!(
            records,
            in_memory.to_records(),
            "the same records, byte for byte"
        );
        let kafka: Vec<Vec<u8>> = [100, 150]
            .iter()
            .flat_map(|&start| {
                sorted.map(|k| {
                    let mut b = Vec::new();
                    crate::encode_window_key(&k.to_be_bytes(), start, 0, &mut b);
                    b
                })
            })
            .collect();
        let keys_of = |records: &[crate::ChangelogRecord]| -> Vec<Vec<u8>> {
            records.iter().map(|r| r.key.clone()).collect()
        };
        assert_eq!(keys_of(&records), kafka, "Kafka's bytes, by start then key");

        // Restored, one by one and in bulk, the changelog's keys are kept sortable again.
        for filler in [0, super::super::BULK_LOAD_MIN_BYTES / 40 + 1] {
            let tmp = tempfile::tempdir().unwrap();
            let cfg = PersistentConfig::new(tmp.path(), "app").with_cache_max_bytes_unfloored(0);
            let mut restored = PersistentWindowStore::open(
                &cfg,
                StoreConfig::new("w"),
                seg,
                I64Codec,
                StringCodec,
            )
            .unwrap();
            let entries = records
                .iter()
                .cloned()
                .chain((0..filler as i64).map(|i| {
                    let mut key = Vec::new();
                    crate::encode_window_key(&(-i - 1_000).to_be_bytes(), 900, 0, &mut key);
                    crate::ChangelogRecord {
                        key,
                        value: Some(vec![b'x'; 24]),
                        timestamp: 0,
                    }
                }))
                .enumerate()
                .map(|(offset, r)| crate::ChangelogEntry {
                    partition: crate::ChangelogPartition(0),
                    offset: crate::ChangelogOffset(offset as u64),
                    key: r.key,
                    value: r.value,
                    timestamp: r.timestamp,
                });
            crate::restore(&mut restored, entries, 0, &mut |_| {}).unwrap();
            assert_eq!(
                restored.fetch_all(i64::MIN, 200).unwrap(),
                memory.fetch_all(i64::MIN, 200).unwrap(),
                "filler {filler}"
            );
            let mut engine = restored.core.engine_keys();
            engine.truncate(want.len());
            assert_eq!(engine, want, "filler {filler}");
        }
    }

    #[test]
    fn every_cache_bound_gives_the_same_answers_and_changelog() {
        let runs: Vec<Vec<String>> = [0, 200, crate::DEFAULT_CACHE_MAX_BYTES]
            .into_iter()
            .map(|bound| {
                let tmp = tempfile::tempdir().unwrap();
                let cfg =
                    PersistentConfig::new(tmp.path(), "app").with_cache_max_bytes_unfloored(bound);
                drive(&mut open_window_store(&cfg))
            })
            .collect();
        for run in &runs[1..] {
            for (i, (a, b)) in runs[0].iter().zip(run).enumerate() {
                assert_eq!(a, b, "step {i}");
            }
        }
    }
}
