//! In-memory window store.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::{CLEAN, SharedCodec, Slot, decode_entry};
use crate::changelog::{ChangelogEntry, ChangelogRecord, decode_window_key, encode_window_key};
use crate::codec::Codec;
use crate::error::StateError;
use crate::segments::SegmentedConfig;
use crate::store::{Segmented, StateStore, StoreConfig, WindowStore};

/// One (window start, key) written since the last flush, with its last write's timestamp.
#[derive(Debug)]
struct Dirty<K> {
    start: i64,
    key: K,
    timestamp: i64,
}

type Starts<K, V> = BTreeMap<i64, BTreeMap<K, Slot<V>>>;

/// A window store holding typed entries as segment → window start → key → value.
pub struct InMemoryWindowStore<K, V> {
    config: StoreConfig,
    segmented: SegmentedConfig,
    segments: BTreeMap<i64, Starts<K, V>>,
    /// Append-only log of entries written since the last flush. A live slot points at its
    /// entry; an entry whose slot is gone (deleted, expired) flushes as a tombstone. A key
    /// deleted and written again in one epoch has two entries; the flush deduplicates.
    dirty: Vec<Dirty<K>>,
    entries: u64,
    frontier: i64,
    expired_writes: u64,
    key_codec: SharedCodec<K>,
    value_codec: SharedCodec<V>,
}

impl<K, V> fmt::Debug for InMemoryWindowStore<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryWindowStore")
            .field("name", &self.config.name())
            .field("segmented", &self.segmented)
            .field("segments", &self.segments.len())
            .field("entries", &self.entries)
            .field("dirty", &self.dirty.len())
            .finish()
    }
}

impl<K: Ord + Clone, V: Clone> InMemoryWindowStore<K, V> {
    /// An empty store; the codecs are used only for the changelog.
    pub fn new(
        config: StoreConfig,
        segmented: SegmentedConfig,
        key_codec: impl Codec<K> + 'static,
        value_codec: impl Codec<V> + 'static,
    ) -> Self {
        Self {
            config,
            segmented,
            segments: BTreeMap::new(),
            dirty: Vec::new(),
            entries: 0,
            frontier: i64::MIN,
            expired_writes: 0,
            key_codec: Arc::new(key_codec),
            value_codec: Arc::new(value_codec),
        }
    }

    /// The retention configuration.
    pub fn segmented_config(&self) -> SegmentedConfig {
        self.segmented
    }

    /// Writes `value` as a restore or a live write; a live write (`timestamp` given, with
    /// changelogging on) is logged as dirty.
    fn write(&mut self, key: K, window_start: i64, value: V, timestamp: Option<i64>) {
        let seg = self.segmented.segment_id(window_start);
        let keys = self
            .segments
            .entry(seg)
            .or_default()
            .entry(window_start)
            .or_default();
        let timestamp = timestamp.filter(|_| self.config.changelog_enabled());
        match keys.get_mut(&key) {
            Some(slot) => {
                slot.value = value;
                if let Some(timestamp) = timestamp {
                    if slot.dirty == CLEAN {
                        slot.dirty = self.dirty.len();
                        self.dirty.push(Dirty {
                            start: window_start,
                            key,
                            timestamp,
                        });
                    } else {
                        self.dirty[slot.dirty].timestamp = timestamp;
                    }
                }
            }
            None => {
                let dirty = match timestamp {
                    Some(timestamp) => {
                        self.dirty.push(Dirty {
                            start: window_start,
                            key: key.clone(),
                            timestamp,
                        });
                        self.dirty.len() - 1
                    }
                    None => CLEAN,
                };
                keys.insert(key, Slot { value, dirty });
                self.entries += 1;
            }
        }
    }

    fn remove_raw(&mut self, key: &K, window_start: i64) -> Option<Slot<V>> {
        let seg_id = self.segmented.segment_id(window_start);
        let seg = self.segments.get_mut(&seg_id)?;
        let keys = seg.get_mut(&window_start)?;
        let old = keys.remove(key);
        if keys.is_empty() {
            seg.remove(&window_start);
            if seg.is_empty() {
                self.segments.remove(&seg_id);
            }
        }
        if old.is_some() {
            self.entries -= 1;
        }
        old
    }

    fn slot(&self, key: &K, window_start: i64) -> Option<&Slot<V>> {
        self.segments
            .get(&self.segmented.segment_id(window_start))?
            .get(&window_start)?
            .get(key)
    }

    fn slot_mut(&mut self, key: &K, window_start: i64) -> Option<&mut Slot<V>> {
        self.segments
            .get_mut(&self.segmented.segment_id(window_start))?
            .get_mut(&window_start)?
            .get_mut(key)
    }
}

impl<K: Ord + Clone, V: Clone> StateStore for InMemoryWindowStore<K, V> {
    fn name(&self) -> &str {
        self.config.name()
    }

    fn changelog_enabled(&self) -> bool {
        self.config.changelog_enabled()
    }

    fn flush_changelog(&mut self, out: &mut Vec<ChangelogRecord>) -> Result<(), StateError> {
        let mut dirty = std::mem::take(&mut self.dirty);
        // Order by (start, key), the latest write of a key last; keep one record per key.
        dirty.sort_by(|a, b| (a.start, &a.key).cmp(&(b.start, &b.key)));
        out.reserve(dirty.len());
        let mut key_bytes = Vec::new();
        let value_codec = Arc::clone(&self.value_codec);
        let mut entries = dirty.into_iter().peekable();
        while let Some(d) = entries.next() {
            if entries
                .peek()
                .is_some_and(|next| next.start == d.start && next.key == d.key)
            {
                continue;
            }
            key_bytes.clear();
            self.key_codec.encode(&d.key, &mut key_bytes);
            let mut record_key = Vec::with_capacity(key_bytes.len() + 12);
            encode_window_key(&key_bytes, d.start, 0, &mut record_key);
            let value = self.slot_mut(&d.key, d.start).map(|slot| {
                slot.dirty = CLEAN;
                value_codec.to_bytes(&slot.value)
            });
            out.push(ChangelogRecord {
                key: record_key,
                value,
                timestamp: d.timestamp,
            });
        }
        Ok(())
    }

    fn dirty_keys(&self) -> usize {
        self.dirty.len()
    }

    fn apply_changelog(&mut self, entry: &ChangelogEntry) -> Result<(), StateError> {
        let name = self.config.name();
        let (key_bytes, start, _seqnum) = decode_window_key(&entry.key).ok_or_else(|| {
            entry.corrupt(
                name,
                format!(
                    "truncated windowed key: {} bytes, need at least 12",
                    entry.key.len()
                ),
            )
        })?;
        let key = decode_entry(&*self.key_codec, key_bytes, "key", name, entry)?;
        match &entry.value {
            None => {
                self.remove_raw(&key, start);
            }
            Some(bytes) => {
                let value = decode_entry(&*self.value_codec, bytes, "value", name, entry)?;
                // Only a whole expired segment is skipped: an entry of a live segment
                // existed in the committed state even if its own time has expired.
                let segment = self.segmented.segment_id(start);
                if !self.segmented.segment_expired(segment, self.frontier) {
                    self.write(key, start, value, None);
                }
            }
        }
        Ok(())
    }

    fn approximate_num_entries(&self) -> u64 {
        self.entries
    }
}

impl<K: Ord + Clone, V: Clone> Segmented for InMemoryWindowStore<K, V> {
    fn expire(&mut self, committed_frontier: i64) -> Result<usize, StateError> {
        self.frontier = self.frontier.max(committed_frontier);
        let first_live = self.segmented.first_live_segment(self.frontier);
        let live = self.segments.split_off(&first_live);
        let dropped = std::mem::replace(&mut self.segments, live);
        // Dirty entries of dropped slots stay in the log and flush as tombstones.
        for starts in dropped.values() {
            for keys in starts.values() {
                self.entries -= keys.len() as u64;
            }
        }
        if !dropped.is_empty() {
            tracing::debug!(
                store = self.config.name(),
                dropped = dropped.len(),
                frontier = self.frontier,
                "dropped expired window segments"
            );
        }
        Ok(dropped.len())
    }

    fn segments(&self) -> usize {
        self.segments.len()
    }

    fn expired_writes(&self) -> u64 {
        self.expired_writes
    }
}

impl<K: Ord + Clone, V: Clone> WindowStore<K, V> for InMemoryWindowStore<K, V> {
    fn put(
        &mut self,
        key: K,
        window_start: i64,
        value: V,
        timestamp: i64,
    ) -> Result<(), StateError> {
        if self.segmented.is_expired(window_start, self.frontier) {
            self.expired_writes += 1;
            tracing::debug!(
                store = self.config.name(),
                window_start,
                frontier = self.frontier,
                "ignored write to an expired window"
            );
            return Ok(());
        }
        self.write(key, window_start, value, Some(timestamp));
        Ok(())
    }

    fn fetch(&self, key: &K, window_start: i64) -> Result<Option<V>, StateError> {
        Ok(self.slot(key, window_start).map(|s| s.value.clone()))
    }

    fn fetch_key_range(
        &self,
        key: &K,
        time_from: i64,
        time_to: i64,
    ) -> Result<Vec<(i64, V)>, StateError> {
        let mut out = Vec::new();
        if time_from > time_to {
            return Ok(out);
        }
        let segs = self.segmented.segment_id(time_from)..=self.segmented.segment_id(time_to);
        for starts in self.segments.range(segs).map(|(_, s)| s) {
            for (start, keys) in starts.range(time_from..=time_to) {
                if let Some(slot) = keys.get(key) {
                    out.push((*start, slot.value.clone()));
                }
            }
        }
        Ok(out)
    }

    fn fetch_all(&self, time_from: i64, time_to: i64) -> Result<Vec<(i64, K, V)>, StateError> {
        let mut out = Vec::new();
        if time_from > time_to {
            return Ok(out);
        }
        let segs = self.segmented.segment_id(time_from)..=self.segmented.segment_id(time_to);
        for starts in self.segments.range(segs).map(|(_, s)| s) {
            for (start, keys) in starts.range(time_from..=time_to) {
                out.extend(
                    keys.iter()
                        .map(|(k, slot)| (*start, k.clone(), slot.value.clone())),
                );
            }
        }
        Ok(out)
    }

    fn delete(&mut self, key: &K, window_start: i64, timestamp: i64) -> Result<(), StateError> {
        let removed = self.remove_raw(key, window_start);
        if self.config.changelog_enabled() {
            match removed {
                // Its log entry stays and now flushes as a tombstone.
                Some(slot) if slot.dirty != CLEAN => self.dirty[slot.dirty].timestamp = timestamp,
                _ => self.dirty.push(Dirty {
                    start: window_start,
                    key: key.clone(),
                    timestamp,
                }),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{I64Codec, U64Codec};

    fn store() -> InMemoryWindowStore<u64, i64> {
        InMemoryWindowStore::new(
            StoreConfig::new("w"),
            SegmentedConfig::new(100).with_segment_interval(50),
            U64Codec,
            I64Codec,
        )
    }

    #[test]
    fn fetch_all_orders_by_start_then_key() {
        let mut s = store();
        s.put(2, 10, 1, 0).unwrap();
        s.put(1, 10, 2, 0).unwrap();
        s.put(1, 0, 3, 0).unwrap();
        s.put(3, 60, 4, 0).unwrap();
        let got = s.fetch_all(0, 60).unwrap();
        assert_eq!(got, vec![(0, 1, 3), (10, 1, 2), (10, 2, 1), (60, 3, 4)]);
        assert_eq!(s.fetch_all(5, 59).unwrap().len(), 2);
        assert_eq!(
            s.fetch_key_range(&1, 0, 100).unwrap(),
            vec![(0, 3), (10, 2)]
        );
        assert_eq!(s.segments(), 2);
        assert_eq!(s.approximate_num_entries(), 4);
    }

    #[test]
    fn changelog_key_uses_windowed_layout() {
        let mut s = store();
        s.put(7, 20, 5, 33).unwrap();
        s.put(7, 20, 6, 34).unwrap();
        let mut out = Vec::new();
        s.flush_changelog(&mut out).unwrap();
        assert_eq!(out.len(), 1);
        let mut expected = Vec::new();
        encode_window_key(&7u64.to_be_bytes(), 20, 0, &mut expected);
        assert_eq!(out[0].key, expected);
        assert_eq!(out[0].value, Some(6i64.to_be_bytes().to_vec()));
        assert_eq!(out[0].timestamp, 34);
    }

    #[test]
    fn delete_removes_empty_segments() {
        let mut s = store();
        s.put(1, 0, 1, 0).unwrap();
        s.delete(&1, 0, 1).unwrap();
        assert_eq!(s.segments(), 0);
        assert_eq!(s.approximate_num_entries(), 0);
        assert_eq!(s.dirty_keys(), 1);
    }

    #[test]
    fn delete_then_put_in_one_epoch_flushes_one_record() {
        let mut s = store();
        s.put(1, 0, 1, 10).unwrap();
        let mut out = Vec::new();
        s.flush_changelog(&mut out).unwrap();
        s.put(1, 0, 2, 11).unwrap();
        s.delete(&1, 0, 12).unwrap();
        s.put(1, 0, 3, 13).unwrap();
        s.put(2, 0, 4, 14).unwrap();
        s.delete(&2, 0, 15).unwrap();
        out.clear();
        s.flush_changelog(&mut out).unwrap();
        let got: Vec<_> = out.iter().map(|r| (r.value.clone(), r.timestamp)).collect();
        assert_eq!(
            got,
            vec![(Some(3i64.to_be_bytes().to_vec()), 13), (None, 15)]
        );
        // Flushed slots are clean again: a new write logs afresh.
        s.put(1, 0, 5, 16).unwrap();
        assert_eq!(s.dirty_keys(), 1);
    }

    #[test]
    fn writes_to_expired_windows_are_ignored() {
        let mut s = store();
        s.put(1, 0, 1, 0).unwrap();
        assert_eq!(s.expire(150).unwrap(), 1);
        s.put(1, 0, 2, 0).unwrap();
        assert_eq!(s.fetch(&1, 0).unwrap(), None);
        assert_eq!(s.expired_writes(), 1);
    }
}
