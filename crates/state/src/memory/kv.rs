//! In-memory key-value store.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

use super::{CLEAN, DirtyLog, SharedCodec, Slot, Slots, decode_entry, push_flushed};
use crate::changelog::ChangelogEntry;
use crate::changelog_batch::ChangelogBatch;
use crate::codec::Codec;
use crate::error::StateError;
use crate::store::{KeyValueStore, StateStore, StoreConfig, bounds_empty};

/// A key-value store holding typed entries in a `BTreeMap`.
pub struct InMemoryKeyValueStore<K, V> {
    config: StoreConfig,
    map: BTreeMap<K, Slot<V>>,
    /// Keys written since the last flush.
    dirty: DirtyLog<K>,
    key_codec: SharedCodec<K>,
    value_codec: SharedCodec<V>,
}

impl<K, V> fmt::Debug for InMemoryKeyValueStore<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryKeyValueStore")
            .field("name", &self.config.name())
            .field("entries", &self.map.len())
            .field("dirty", &self.dirty.len())
            .finish()
    }
}

impl<K: Ord + Clone, V: Clone> InMemoryKeyValueStore<K, V> {
    /// An empty store; the codecs are used only for the changelog.
    pub fn new(
        config: StoreConfig,
        key_codec: impl Codec<K> + 'static,
        value_codec: impl Codec<V> + 'static,
    ) -> Self {
        Self {
            config,
            map: BTreeMap::new(),
            dirty: DirtyLog::new(),
            key_codec: Arc::new(key_codec),
            value_codec: Arc::new(value_codec),
        }
    }

    /// Writes `value`; a live write (`timestamp` given, changelogging on) is logged dirty.
    fn write(&mut self, key: K, value: V, timestamp: Option<i64>) {
        let timestamp = timestamp.filter(|_| self.config.changelog_enabled());
        match self.map.get_mut(&key) {
            Some(slot) => {
                slot.value = value;
                if let Some(timestamp) = timestamp {
                    self.dirty.note(&mut slot.dirty, timestamp, || key);
                }
            }
            None => {
                let mut dirty = CLEAN;
                if let Some(timestamp) = timestamp {
                    self.dirty.note(&mut dirty, timestamp, || key.clone());
                }
                self.map.insert(key, Slot { value, dirty });
            }
        }
    }
}

impl<K: Ord, V> Slots<K, V> for BTreeMap<K, Slot<V>> {
    fn slot_mut(&mut self, key: &K) -> Option<&mut Slot<V>> {
        self.get_mut(key)
    }

    fn live(&self) -> u64 {
        self.len() as u64
    }

    fn for_each_slot<'a>(&'a self, f: &mut dyn FnMut(&'a Slot<V>)) {
        self.values().for_each(f);
    }

    fn mark_all_clean(&mut self) {
        self.values_mut().for_each(|s| s.dirty = CLEAN);
    }
}

impl<K: Ord + Clone, V: Clone> StateStore for InMemoryKeyValueStore<K, V> {
    fn name(&self) -> &str {
        self.config.name()
    }

    fn changelog_enabled(&self) -> bool {
        self.config.changelog_enabled()
    }

    fn flush_changelog(&mut self, out: &mut ChangelogBatch) -> Result<(), StateError> {
        let name = self.config.name();
        let (key_codec, value_codec) = (&self.key_codec, &self.value_codec);
        self.dirty
            .flush(out, &mut self.map, |n, key, value, timestamp, out| {
                let key = |bytes: &mut Vec<u8>| {
                    key_codec.encode(key, bytes)?;
                    Ok(bytes.len())
                };
                push_flushed(out, name, n, key, &**value_codec, value, timestamp)
            })
    }

    fn dirty_keys(&self) -> usize {
        self.dirty.len()
    }

    fn apply_changelog(&mut self, entry: &ChangelogEntry) -> Result<(), StateError> {
        let name = self.config.name();
        let key = decode_entry(&*self.key_codec, &entry.key, "key", name, entry)?;
        match &entry.value {
            None => {
                self.map.remove(&key);
            }
            Some(bytes) => {
                let value = decode_entry(&*self.value_codec, bytes, "value", name, entry)?;
                self.write(key, value, None);
            }
        }
        Ok(())
    }

    fn approximate_num_entries(&self) -> u64 {
        self.map.len() as u64
    }
}

impl<K: Ord + Clone, V: Clone> KeyValueStore<K, V> for InMemoryKeyValueStore<K, V> {
    fn put(&mut self, key: K, value: V, timestamp: i64) -> Result<(), StateError> {
        self.write(key, value, Some(timestamp));
        Ok(())
    }

    fn get(&self, key: &K) -> Result<Option<V>, StateError> {
        Ok(self.map.get(key).map(|slot| slot.value.clone()))
    }

    fn delete(&mut self, key: &K, timestamp: i64) -> Result<Option<V>, StateError> {
        let removed = self.map.remove(key);
        if self.config.changelog_enabled() {
            let dirty = removed.as_ref().map_or(CLEAN, |slot| slot.dirty);
            self.dirty.note_removed(dirty, timestamp, || key.clone());
        }
        Ok(removed.map(|slot| slot.value))
    }

    fn range(&self, from: Bound<&K>, to: Bound<&K>) -> Result<Vec<(K, V)>, StateError> {
        if bounds_empty(from, to) {
            // BTreeMap::range panics on an inverted range; an inverted query is just empty.
            return Ok(Vec::new());
        }
        Ok(self
            .map
            .range((from, to))
            .map(|(k, slot)| (k.clone(), slot.value.clone()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changelog::{ChangelogOffset, ChangelogPartition, ChangelogRecord};
    use crate::codec::{I64Codec, StringCodec};

    fn store() -> InMemoryKeyValueStore<String, i64> {
        InMemoryKeyValueStore::new(StoreConfig::new("kv"), StringCodec, I64Codec)
    }

    #[test]
    fn many_writes_of_one_key_flush_as_one_record() {
        let mut s = store();
        for i in 0..10 {
            s.put("a".into(), i, 100 + i).unwrap();
        }
        s.put("b".into(), 1, 5).unwrap();
        s.delete(&"b".into(), 6).unwrap();
        let mut batch = ChangelogBatch::new();
        s.flush_changelog(&mut batch).unwrap();
        let out = batch.to_records();
        assert_eq!(
            out,
            vec![
                ChangelogRecord {
                    key: b"a".to_vec(),
                    value: Some(9i64.to_be_bytes().to_vec()),
                    timestamp: 109
                },
                ChangelogRecord {
                    key: b"b".to_vec(),
                    value: None,
                    timestamp: 6
                },
            ]
        );
        assert_eq!(s.dirty_keys(), 0);
        batch.clear();
        s.flush_changelog(&mut batch).unwrap();
        assert!(batch.is_empty());
    }

    #[test]
    fn timestamped_store_changelogs_kafka_value_and_timestamp_and_restores() {
        use crate::codec::{ValueAndTimestamp, ValueAndTimestampCodec};
        use crate::store::TimestampedKeyValueStore;
        let make = || {
            InMemoryKeyValueStore::new(
                StoreConfig::new("ts"),
                StringCodec,
                ValueAndTimestampCodec::new(I64Codec),
            )
        };
        let mut s = make();
        s.put_timestamped("a".into(), 7, 1_234).unwrap();
        let mut batch = ChangelogBatch::new();
        s.flush_changelog(&mut batch).unwrap();
        let mut out = batch.to_records();
        let value = out[0].value.clone().unwrap();
        assert_eq!(&value[..8], &1_234i64.to_be_bytes());
        assert_eq!(&value[8..], &7i64.to_be_bytes());
        assert_eq!(out[0].timestamp, 1_234);
        let mut rebuilt = make();
        let entry =
            ChangelogEntry::from_record(out.remove(0), ChangelogPartition(0), ChangelogOffset(0));
        rebuilt.apply_changelog(&entry).unwrap();
        assert_eq!(
            rebuilt.get(&"a".into()).unwrap(),
            Some(ValueAndTimestamp::new(7, 1_234))
        );
    }

    #[test]
    fn disabled_changelog_tracks_nothing() {
        let mut s = InMemoryKeyValueStore::new(
            StoreConfig::new("kv").with_changelog_enabled(false),
            StringCodec,
            I64Codec,
        );
        s.put("a".into(), 1, 0).unwrap();
        assert_eq!(s.dirty_keys(), 0);
        let mut batch = ChangelogBatch::new();
        s.flush_changelog(&mut batch).unwrap();
        let out = batch.to_records();
        assert!(out.is_empty());
    }

    #[test]
    fn range_is_inclusive_and_tolerates_inverted_bounds() {
        let mut s = store();
        for k in ["a", "b", "c", "d"] {
            s.put(k.into(), 1, 0).unwrap();
        }
        let keys = |v: Vec<(String, i64)>| v.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        let (b, c) = ("b".to_string(), "c".to_string());
        assert_eq!(
            keys(s.range(Bound::Included(&b), Bound::Included(&c)).unwrap()),
            ["b", "c"]
        );
        assert!(
            s.range(Bound::Included(&c), Bound::Included(&b))
                .unwrap()
                .is_empty()
        );
        assert!(
            s.range(Bound::Excluded(&b), Bound::Excluded(&b))
                .unwrap()
                .is_empty()
        );
        assert_eq!(s.all().unwrap().len(), 4);
    }

    #[test]
    fn restore_does_not_mark_dirty_and_names_offset_on_corruption() {
        let mut s = store();
        let entry = ChangelogEntry {
            partition: ChangelogPartition(2),
            offset: ChangelogOffset(17),
            key: b"k".to_vec(),
            value: Some(vec![1, 2, 3]),
            timestamp: 0,
        };
        let err = s.apply_changelog(&entry).unwrap_err().to_string();
        assert_eq!(
            err,
            "store kv: corrupt changelog record at partition 2 offset 17: value does not decode: i64 needs exactly 8 bytes, got 3"
        );
        let ok = ChangelogEntry {
            value: Some(5i64.to_be_bytes().to_vec()),
            ..entry
        };
        s.apply_changelog(&ok).unwrap();
        assert_eq!(s.get(&"k".into()).unwrap(), Some(5));
        assert_eq!(s.dirty_keys(), 0);
    }
}
