//! Persistent session store.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::{
    PersistentConfig, SegmentSet, StoreDirectory, decode_stored, engine_err, open_database,
    time_bytes, time_from, validate_entry,
};
use crate::changelog::{ChangelogEntry, ChangelogRecord, decode_session_key, encode_session_key};
use crate::codec::Codec;
use crate::error::StateError;
use crate::segments::SegmentedConfig;
use crate::store::{Segmented, SessionStore, SessionWindow, StateStore, StoreConfig};

/// A session store on disk: one keyspace per segment of session end, entries laid out
/// `[key][end][start]`.
pub struct PersistentSessionStore<K, V> {
    config: StoreConfig,
    segmented: SegmentedConfig,
    dir: StoreDirectory,
    segments: SegmentSet,
    /// (encoded key, end, start) written since the last flush → last write's timestamp.
    dirty: BTreeMap<(Vec<u8>, i64, i64), i64>,
    frontier: i64,
    expired_writes: u64,
    key_codec: Arc<dyn Codec<K>>,
    value_codec: Arc<dyn Codec<V>>,
}

impl<K, V> fmt::Debug for PersistentSessionStore<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PersistentSessionStore")
            .field("name", &self.config.name())
            .field("dir", &self.dir.path())
            .field("segments", &self.segments)
            .field("dirty", &self.dirty.len())
            .finish()
    }
}

fn engine_key(key: &[u8], end: i64, start: i64) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 16);
    k.extend_from_slice(key);
    k.extend_from_slice(&time_bytes(end));
    k.extend_from_slice(&time_bytes(start));
    k
}

/// Splits an engine key into (key bytes, window).
fn split(engine_key: &[u8]) -> Option<(&[u8], SessionWindow)> {
    let n = engine_key.len().checked_sub(16)?;
    let end = time_from(&engine_key[n..n + 8]);
    let start = time_from(&engine_key[n + 8..]);
    Some((&engine_key[..n], SessionWindow::new(start, end)))
}

impl<K, V> PersistentSessionStore<K, V> {
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

    fn mark_dirty(&mut self, key: Vec<u8>, w: SessionWindow, timestamp: i64) {
        if self.config.changelog_enabled() {
            self.dirty.insert((key, w.end, w.start), timestamp);
        }
    }

    fn get_raw(
        &self,
        key: &[u8],
        w: SessionWindow,
    ) -> Result<Option<fjall::UserValue>, StateError> {
        match self.segments.get(self.segmented.segment_id(w.end)) {
            None => Ok(None),
            Some(ks) => ks
                .get(engine_key(key, w.end, w.start))
                .map_err(engine_err(self.config.name())),
        }
    }

    fn put_raw(&mut self, key: &[u8], w: SessionWindow, value: &[u8]) -> Result<(), StateError> {
        let name = self.config.name().to_string();
        let ks = self
            .segments
            .get_or_create(self.segmented.segment_id(w.end))?;
        ks.insert(engine_key(key, w.end, w.start), value)
            .map_err(engine_err(&name))
    }

    fn remove_raw(&mut self, key: &[u8], w: SessionWindow) -> Result<(), StateError> {
        match self.segments.get(self.segmented.segment_id(w.end)) {
            None => Ok(()),
            Some(ks) => ks
                .remove(engine_key(key, w.end, w.start))
                .map_err(engine_err(self.config.name())),
        }
    }
}

impl<K, V> StateStore for PersistentSessionStore<K, V> {
    fn name(&self) -> &str {
        self.config.name()
    }

    fn changelog_enabled(&self) -> bool {
        self.config.changelog_enabled()
    }

    fn flush_changelog(&mut self, out: &mut Vec<ChangelogRecord>) -> Result<(), StateError> {
        let dirty = std::mem::take(&mut self.dirty);
        out.reserve(dirty.len());
        for ((key, end, start), timestamp) in dirty {
            let mut record_key = Vec::with_capacity(key.len() + 16);
            encode_session_key(&key, start, end, &mut record_key);
            let value = self
                .get_raw(&key, SessionWindow::new(start, end))?
                .map(|v| v.to_vec());
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
        let (key, start, end) = decode_session_key(&entry.key).ok_or_else(|| {
            entry.corrupt(
                name,
                format!(
                    "truncated session key: {} bytes, need at least 16",
                    entry.key.len()
                ),
            )
        })?;
        validate_entry(&*self.key_codec, key, "key", name, entry)?;
        let w = SessionWindow::new(start, end);
        match &entry.value {
            None => self.remove_raw(key, w),
            Some(v) => {
                validate_entry(&*self.value_codec, v, "value", name, entry)?;
                let segment = self.segmented.segment_id(end);
                if self.segmented.segment_expired(segment, self.frontier) {
                    Ok(())
                } else {
                    self.put_raw(key, w, v)
                }
            }
        }
    }

    fn approximate_num_entries(&self) -> u64 {
        self.segments.approximate_len()
    }
}

impl<K, V> Segmented for PersistentSessionStore<K, V> {
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

impl<K, V> SessionStore<K, V> for PersistentSessionStore<K, V> {
    fn put(
        &mut self,
        key: K,
        window: SessionWindow,
        value: V,
        timestamp: i64,
    ) -> Result<(), StateError> {
        if self.segmented.is_expired(window.end, self.frontier) {
            self.expired_writes += 1;
            return Ok(());
        }
        let k = self.key_codec.to_bytes(&key);
        let v = self.value_codec.to_bytes(&value);
        self.put_raw(&k, window, &v)?;
        self.mark_dirty(k, window, timestamp);
        Ok(())
    }

    fn fetch(&self, key: &K, window: SessionWindow) -> Result<Option<V>, StateError> {
        let k = self.key_codec.to_bytes(key);
        match self.get_raw(&k, window)? {
            None => Ok(None),
            Some(v) => {
                decode_stored(&*self.value_codec, &v, "value", self.config.name(), &k).map(Some)
            }
        }
    }

    fn find_sessions(
        &self,
        key: &K,
        earliest_end: i64,
        latest_start: i64,
    ) -> Result<Vec<(SessionWindow, V)>, StateError> {
        let name = self.config.name();
        let k = self.key_codec.to_bytes(key);
        let lo = engine_key(&k, earliest_end, i64::MIN);
        let hi = engine_key(&k, i64::MAX, i64::MAX);
        let mut out = Vec::new();
        for (_, ks) in self
            .segments
            .range(self.segmented.segment_id(earliest_end)..)
        {
            for guard in ks.range(lo.as_slice()..=hi.as_slice()) {
                let (ek, v) = guard.into_inner().map_err(engine_err(name))?;
                match split(&ek) {
                    Some((kb, w)) if kb == k.as_slice() && w.start <= latest_start => {
                        out.push((w, decode_stored(&*self.value_codec, &v, "value", name, kb)?));
                    }
                    _ => {}
                }
            }
        }
        Ok(out)
    }

    fn fetch_all_by_end(
        &self,
        end_from: i64,
        end_to: i64,
    ) -> Result<Vec<(SessionWindow, K, V)>, StateError> {
        if end_from > end_to {
            return Ok(Vec::new());
        }
        let name = self.config.name();
        let mut rows = Vec::new();
        let segs = self.segmented.segment_id(end_from)..=self.segmented.segment_id(end_to);
        for (_, ks) in self.segments.range(segs) {
            for guard in ks.iter() {
                let (ek, v) = guard.into_inner().map_err(engine_err(name))?;
                if let Some((kb, w)) = split(&ek)
                    && (end_from..=end_to).contains(&w.end)
                {
                    rows.push((w, kb.to_vec(), v));
                }
            }
        }
        rows.sort_by(|a, b| (a.0.end, &a.1, a.0.start).cmp(&(b.0.end, &b.1, b.0.start)));
        rows.into_iter()
            .map(|(w, kb, v)| {
                let key = decode_stored(&*self.key_codec, &kb, "key", name, &kb)?;
                let value = decode_stored(&*self.value_codec, &v, "value", name, &kb)?;
                Ok((w, key, value))
            })
            .collect()
    }

    fn remove(&mut self, key: &K, window: SessionWindow, timestamp: i64) -> Result<(), StateError> {
        let k = self.key_codec.to_bytes(key);
        self.remove_raw(&k, window)?;
        self.mark_dirty(k, window, timestamp);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{I64Codec, StringCodec};

    #[test]
    fn merge_scan_filters_prefix_sharing_keys() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let mut s = PersistentSessionStore::open(
            &cfg,
            StoreConfig::new("s"),
            SegmentedConfig::new(1000),
            StringCodec,
            I64Codec,
        )
        .unwrap();
        s.put("a".into(), SessionWindow::new(0, 10), 1, 0).unwrap();
        s.put("ab".into(), SessionWindow::new(0, 12), 2, 0).unwrap();
        s.put("a".into(), SessionWindow::new(20, 30), 3, 0).unwrap();
        assert_eq!(
            s.find_sessions(&"a".into(), 5, 25).unwrap(),
            vec![
                (SessionWindow::new(0, 10), 1),
                (SessionWindow::new(20, 30), 3)
            ]
        );
        assert_eq!(s.find_sessions(&"a".into(), 11, 15).unwrap(), vec![]);
    }
}
