//! Persistent window store.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::{
    PersistentConfig, SegmentSet, StoreDirectory, decode_stored, engine_err, open_database,
    time_bytes, time_from, validate_entry,
};
use crate::changelog::{ChangelogEntry, ChangelogRecord, decode_window_key, encode_window_key};
use crate::codec::Codec;
use crate::error::StateError;
use crate::segments::SegmentedConfig;
use crate::store::{Segmented, StateStore, StoreConfig, WindowStore};

/// A window store on disk: one keyspace per segment, entries laid out `[key][start]`.
pub struct PersistentWindowStore<K, V> {
    config: StoreConfig,
    segmented: SegmentedConfig,
    dir: StoreDirectory,
    segments: SegmentSet,
    /// (window start, encoded key) written since the last flush → last write's timestamp.
    dirty: BTreeMap<(i64, Vec<u8>), i64>,
    frontier: i64,
    expired_writes: u64,
    key_codec: Arc<dyn Codec<K>>,
    value_codec: Arc<dyn Codec<V>>,
}

impl<K, V> fmt::Debug for PersistentWindowStore<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PersistentWindowStore")
            .field("name", &self.config.name())
            .field("dir", &self.dir.path())
            .field("segments", &self.segments)
            .field("dirty", &self.dirty.len())
            .finish()
    }
}

fn engine_key(key: &[u8], start: i64) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 8);
    k.extend_from_slice(key);
    k.extend_from_slice(&time_bytes(start));
    k
}

/// Splits an engine key into (key bytes, start).
fn split(engine_key: &[u8]) -> Option<(&[u8], i64)> {
    let n = engine_key.len().checked_sub(8)?;
    Some((&engine_key[..n], time_from(&engine_key[n..])))
}

impl<K, V> PersistentWindowStore<K, V> {
    /// Opens the store in `<state dir>/<name>/`, creating it if needed.
    ///
    /// # Errors
    /// As [`StoreDirectory::open`], or [`StateError::Engine`].
    pub fn open(
        persistent: &PersistentConfig,
        config: StoreConfig,
        segmented: SegmentedConfig,
        key_codec: impl Codec<K> + 'static,
        value_codec: impl Codec<V> + 'static,
    ) -> Result<Self, StateError> {
        let dir = StoreDirectory::open(persistent, config.name())?;
        let db = open_database(&dir)?;
        let segments = SegmentSet::open(config.name(), db)?;
        Ok(Self {
            config,
            segmented,
            dir,
            segments,
            dirty: BTreeMap::new(),
            frontier: i64::MIN,
            expired_writes: 0,
            key_codec: Arc::new(key_codec),
            value_codec: Arc::new(value_codec),
        })
    }

    fn mark_dirty(&mut self, key: Vec<u8>, start: i64, timestamp: i64) {
        if self.config.changelog_enabled() {
            self.dirty.insert((start, key), timestamp);
        }
    }

    fn get_raw(&self, key: &[u8], start: i64) -> Result<Option<fjall::UserValue>, StateError> {
        match self.segments.get(self.segmented.segment_id(start)) {
            None => Ok(None),
            Some(ks) => ks
                .get(engine_key(key, start))
                .map_err(engine_err(self.config.name())),
        }
    }

    fn put_raw(&mut self, key: &[u8], start: i64, value: &[u8]) -> Result<(), StateError> {
        let name = self.config.name().to_string();
        let ks = self
            .segments
            .get_or_create(self.segmented.segment_id(start))?;
        ks.insert(engine_key(key, start), value)
            .map_err(engine_err(&name))
    }

    fn remove_raw(&mut self, key: &[u8], start: i64) -> Result<(), StateError> {
        match self.segments.get(self.segmented.segment_id(start)) {
            None => Ok(()),
            Some(ks) => ks
                .remove(engine_key(key, start))
                .map_err(engine_err(self.config.name())),
        }
    }
}

impl<K, V> StateStore for PersistentWindowStore<K, V> {
    fn name(&self) -> &str {
        self.config.name()
    }

    fn changelog_enabled(&self) -> bool {
        self.config.changelog_enabled()
    }

    fn flush_changelog(&mut self, out: &mut Vec<ChangelogRecord>) -> Result<(), StateError> {
        let dirty = std::mem::take(&mut self.dirty);
        out.reserve(dirty.len());
        for ((start, key), timestamp) in dirty {
            let mut record_key = Vec::with_capacity(key.len() + 12);
            encode_window_key(&key, start, 0, &mut record_key);
            let value = self.get_raw(&key, start)?.map(|v| v.to_vec());
            out.push(ChangelogRecord {
                key: record_key,
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
        let (key, start, _seqnum) = decode_window_key(&entry.key).ok_or_else(|| {
            entry.corrupt(
                name,
                format!(
                    "truncated windowed key: {} bytes, need at least 12",
                    entry.key.len()
                ),
            )
        })?;
        validate_entry(&*self.key_codec, key, "key", name, entry)?;
        match &entry.value {
            None => self.remove_raw(key, start),
            Some(v) => {
                validate_entry(&*self.value_codec, v, "value", name, entry)?;
                let segment = self.segmented.segment_id(start);
                if self.segmented.segment_expired(segment, self.frontier) {
                    Ok(())
                } else {
                    self.put_raw(key, start, v)
                }
            }
        }
    }

    fn approximate_num_entries(&self) -> u64 {
        self.segments.approximate_len()
    }
}

impl<K, V> Segmented for PersistentWindowStore<K, V> {
    fn expire(&mut self, committed_frontier: i64) -> Result<usize, StateError> {
        self.frontier = self.frontier.max(committed_frontier);
        self.segments
            .drop_below(self.segmented.first_live_segment(self.frontier))
    }

    fn segments(&self) -> usize {
        self.segments.non_empty()
    }

    fn expired_writes(&self) -> u64 {
        self.expired_writes
    }
}

impl<K, V> WindowStore<K, V> for PersistentWindowStore<K, V> {
    fn put(
        &mut self,
        key: K,
        window_start: i64,
        value: V,
        timestamp: i64,
    ) -> Result<(), StateError> {
        if self.segmented.is_expired(window_start, self.frontier) {
            self.expired_writes += 1;
            return Ok(());
        }
        let k = self.key_codec.to_bytes(&key);
        let v = self.value_codec.to_bytes(&value);
        self.put_raw(&k, window_start, &v)?;
        self.mark_dirty(k, window_start, timestamp);
        Ok(())
    }

    fn fetch(&self, key: &K, window_start: i64) -> Result<Option<V>, StateError> {
        let k = self.key_codec.to_bytes(key);
        match self.get_raw(&k, window_start)? {
            None => Ok(None),
            Some(v) => {
                decode_stored(&*self.value_codec, &v, "value", self.config.name(), &k).map(Some)
            }
        }
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
        let name = self.config.name();
        let k = self.key_codec.to_bytes(key);
        let (lo, hi) = (engine_key(&k, time_from), engine_key(&k, time_to));
        let segs = self.segmented.segment_id(time_from)..=self.segmented.segment_id(time_to);
        for (_, ks) in self.segments.range(segs) {
            for guard in ks.range(lo.as_slice()..=hi.as_slice()) {
                let (ek, v) = guard.into_inner().map_err(engine_err(name))?;
                // Longer keys sharing the prefix can fall in the byte range.
                match split(&ek) {
                    Some((kb, start)) if kb == k.as_slice() => {
                        out.push((
                            start,
                            decode_stored(&*self.value_codec, &v, "value", name, kb)?,
                        ));
                    }
                    _ => {}
                }
            }
        }
        Ok(out)
    }

    fn fetch_all(&self, time_from: i64, time_to: i64) -> Result<Vec<(i64, K, V)>, StateError> {
        let mut rows = Vec::new();
        if time_from > time_to {
            return Ok(Vec::new());
        }
        let name = self.config.name();
        let segs = self.segmented.segment_id(time_from)..=self.segmented.segment_id(time_to);
        for (_, ks) in self.segments.range(segs) {
            for guard in ks.iter() {
                let (ek, v) = guard.into_inner().map_err(engine_err(name))?;
                if let Some((kb, start)) = split(&ek)
                    && (time_from..=time_to).contains(&start)
                {
                    rows.push((start, kb.to_vec(), v));
                }
            }
        }
        rows.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        rows.into_iter()
            .map(|(start, kb, v)| {
                let key = decode_stored(&*self.key_codec, &kb, "key", name, &kb)?;
                let value = decode_stored(&*self.value_codec, &v, "value", name, &kb)?;
                Ok((start, key, value))
            })
            .collect()
    }

    fn delete(&mut self, key: &K, window_start: i64, timestamp: i64) -> Result<(), StateError> {
        let k = self.key_codec.to_bytes(key);
        self.remove_raw(&k, window_start)?;
        self.mark_dirty(k, window_start, timestamp);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{I64Codec, StringCodec};

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
        let mut w =
            PersistentWindowStore::open(&cfg, StoreConfig::new("w"), seg, StringCodec, I64Codec)
                .unwrap();
        assert_eq!(w.segments(), 2);
        assert_eq!(w.fetch(&"a".into(), 15).unwrap(), Some(2));
        assert_eq!(w.expire(110).unwrap(), 1);
        assert_eq!(w.segments(), 1);
    }
}
