//! In-memory key-value store.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

use super::{SharedCodec, decode_entry};
use crate::changelog::{ChangelogEntry, ChangelogRecord};
use crate::codec::Codec;
use crate::error::StateError;
use crate::store::{KeyValueStore, StateStore, StoreConfig, bounds_empty};

/// A key-value store holding typed entries in a `BTreeMap`.
pub struct InMemoryKeyValueStore<K, V> {
    config: StoreConfig,
    map: BTreeMap<K, V>,
    /// Keys written since the last flush, with the timestamp of their last write.
    dirty: BTreeMap<K, i64>,
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
            dirty: BTreeMap::new(),
            key_codec: Arc::new(key_codec),
            value_codec: Arc::new(value_codec),
        }
    }

    fn mark_dirty(&mut self, key: &K, timestamp: i64) {
        if !self.config.changelog_enabled() {
            return;
        }
        if let Some(ts) = self.dirty.get_mut(key) {
            *ts = timestamp;
        } else {
            self.dirty.insert(key.clone(), timestamp);
        }
    }
}

impl<K: Ord + Clone, V: Clone> StateStore for InMemoryKeyValueStore<K, V> {
    fn name(&self) -> &str {
        self.config.name()
    }

    fn changelog_enabled(&self) -> bool {
        self.config.changelog_enabled()
    }

    fn flush_changelog(&mut self, out: &mut Vec<ChangelogRecord>) -> Result<(), StateError> {
        let dirty = std::mem::take(&mut self.dirty);
        out.reserve(dirty.len());
        for (key, timestamp) in dirty {
            let value = self.map.get(&key).map(|v| self.value_codec.to_bytes(v));
            out.push(ChangelogRecord {
                key: self.key_codec.to_bytes(&key),
                value,
                timestamp,
            });
        }
        Ok(())
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
                self.map.insert(key, value);
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
        self.mark_dirty(&key, timestamp);
        self.map.insert(key, value);
        Ok(())
    }

    fn get(&self, key: &K) -> Result<Option<V>, StateError> {
        Ok(self.map.get(key).cloned())
    }

    fn delete(&mut self, key: &K, timestamp: i64) -> Result<Option<V>, StateError> {
        self.mark_dirty(key, timestamp);
        Ok(self.map.remove(key))
    }

    fn range(&self, from: Bound<&K>, to: Bound<&K>) -> Result<Vec<(K, V)>, StateError> {
        if bounds_empty(from, to) {
            // BTreeMap::range panics on an inverted range; an inverted query is just empty.
            return Ok(Vec::new());
        }
        Ok(self
            .map
            .range((from, to))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changelog::{ChangelogOffset, ChangelogPartition};
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
        let mut out = Vec::new();
        s.flush_changelog(&mut out).unwrap();
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
        out.clear();
        s.flush_changelog(&mut out).unwrap();
        assert!(out.is_empty());
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
        let mut out = Vec::new();
        s.flush_changelog(&mut out).unwrap();
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
        let mut out = Vec::new();
        s.flush_changelog(&mut out).unwrap();
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
