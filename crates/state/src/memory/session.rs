//! In-memory session store.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::{SharedCodec, decode_entry};
use crate::changelog::{ChangelogEntry, ChangelogRecord, decode_session_key, encode_session_key};
use crate::codec::Codec;
use crate::error::StateError;
use crate::segments::SegmentedConfig;
use crate::store::{Segmented, SessionStore, SessionWindow, StateStore, StoreConfig};

/// Sessions of one key in one segment, by (end, start).
type Sessions<V> = BTreeMap<(i64, i64), V>;

/// A session store holding typed entries as segment (of end) → key → (end, start) → value.
pub struct InMemorySessionStore<K, V> {
    config: StoreConfig,
    segmented: SegmentedConfig,
    segments: BTreeMap<i64, BTreeMap<K, Sessions<V>>>,
    /// Sessions written since the last flush: key → (end, start) → last write's timestamp.
    dirty: BTreeMap<K, BTreeMap<(i64, i64), i64>>,
    dirty_count: usize,
    entries: u64,
    frontier: i64,
    expired_writes: u64,
    key_codec: SharedCodec<K>,
    value_codec: SharedCodec<V>,
}

impl<K, V> fmt::Debug for InMemorySessionStore<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemorySessionStore")
            .field("name", &self.config.name())
            .field("segmented", &self.segmented)
            .field("segments", &self.segments.len())
            .field("entries", &self.entries)
            .field("dirty", &self.dirty_count)
            .finish()
    }
}

impl<K: Ord + Clone, V: Clone> InMemorySessionStore<K, V> {
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
            dirty: BTreeMap::new(),
            dirty_count: 0,
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

    fn mark_dirty(&mut self, key: &K, window: SessionWindow, timestamp: i64) {
        if !self.config.changelog_enabled() {
            return;
        }
        let sessions = match self.dirty.get_mut(key) {
            Some(s) => s,
            None => self.dirty.entry(key.clone()).or_default(),
        };
        if sessions
            .insert((window.end, window.start), timestamp)
            .is_none()
        {
            self.dirty_count += 1;
        }
    }

    fn insert_raw(&mut self, key: K, window: SessionWindow, value: V) {
        let seg = self.segmented.segment_id(window.end);
        let old = self
            .segments
            .entry(seg)
            .or_default()
            .entry(key)
            .or_default()
            .insert((window.end, window.start), value);
        if old.is_none() {
            self.entries += 1;
        }
    }

    fn remove_raw(&mut self, key: &K, window: SessionWindow) -> Option<V> {
        let seg_id = self.segmented.segment_id(window.end);
        let seg = self.segments.get_mut(&seg_id)?;
        let sessions = seg.get_mut(key)?;
        let old = sessions.remove(&(window.end, window.start));
        if sessions.is_empty() {
            seg.remove(key);
            if seg.is_empty() {
                self.segments.remove(&seg_id);
            }
        }
        if old.is_some() {
            self.entries -= 1;
        }
        old
    }

    fn get_raw(&self, key: &K, window: SessionWindow) -> Option<&V> {
        self.segments
            .get(&self.segmented.segment_id(window.end))?
            .get(key)?
            .get(&(window.end, window.start))
    }
}

impl<K: Ord + Clone, V: Clone> StateStore for InMemorySessionStore<K, V> {
    fn name(&self) -> &str {
        self.config.name()
    }

    fn changelog_enabled(&self) -> bool {
        self.config.changelog_enabled()
    }

    fn flush_changelog(&mut self, out: &mut Vec<ChangelogRecord>) -> Result<(), StateError> {
        let dirty = std::mem::take(&mut self.dirty);
        out.reserve(self.dirty_count);
        self.dirty_count = 0;
        let mut key_bytes = Vec::new();
        for (key, sessions) in dirty {
            key_bytes.clear();
            self.key_codec.encode(&key, &mut key_bytes);
            for ((end, start), timestamp) in sessions {
                let mut record_key = Vec::with_capacity(key_bytes.len() + 16);
                encode_session_key(&key_bytes, start, end, &mut record_key);
                let value = self
                    .get_raw(&key, SessionWindow::new(start, end))
                    .map(|v| self.value_codec.to_bytes(v));
                out.push(ChangelogRecord {
                    key: record_key,
                    value,
                    timestamp,
                });
            }
        }
        Ok(())
    }

    fn dirty_keys(&self) -> usize {
        self.dirty_count
    }

    fn apply_changelog(&mut self, entry: &ChangelogEntry) -> Result<(), StateError> {
        let name = self.config.name();
        let (key_bytes, start, end) = decode_session_key(&entry.key).ok_or_else(|| {
            entry.corrupt(
                name,
                format!(
                    "truncated session key: {} bytes, need at least 16",
                    entry.key.len()
                ),
            )
        })?;
        let key = decode_entry(&*self.key_codec, key_bytes, "key", name, entry)?;
        let window = SessionWindow::new(start, end);
        match &entry.value {
            None => {
                self.remove_raw(&key, window);
            }
            Some(bytes) => {
                let value = decode_entry(&*self.value_codec, bytes, "value", name, entry)?;
                // Only a whole expired segment is skipped: an entry of a live segment
                // existed in the committed state even if its own time has expired.
                let segment = self.segmented.segment_id(end);
                if !self.segmented.segment_expired(segment, self.frontier) {
                    self.insert_raw(key, window, value);
                }
            }
        }
        Ok(())
    }

    fn approximate_num_entries(&self) -> u64 {
        self.entries
    }
}

impl<K: Ord + Clone, V: Clone> Segmented for InMemorySessionStore<K, V> {
    fn expire(&mut self, committed_frontier: i64) -> Result<usize, StateError> {
        self.frontier = self.frontier.max(committed_frontier);
        let first_live = self.segmented.first_live_segment(self.frontier);
        let live = self.segments.split_off(&first_live);
        let dropped = std::mem::replace(&mut self.segments, live);
        for keys in dropped.values() {
            for sessions in keys.values() {
                self.entries -= sessions.len() as u64;
            }
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

impl<K: Ord + Clone, V: Clone> SessionStore<K, V> for InMemorySessionStore<K, V> {
    fn put(
        &mut self,
        key: K,
        window: SessionWindow,
        value: V,
        timestamp: i64,
    ) -> Result<(), StateError> {
        if self.segmented.is_expired(window.end, self.frontier) {
            self.expired_writes += 1;
            tracing::debug!(
                store = self.config.name(),
                end = window.end,
                frontier = self.frontier,
                "ignored write to an expired session"
            );
            return Ok(());
        }
        self.mark_dirty(&key, window, timestamp);
        self.insert_raw(key, window, value);
        Ok(())
    }

    fn fetch(&self, key: &K, window: SessionWindow) -> Result<Option<V>, StateError> {
        Ok(self.get_raw(key, window).cloned())
    }

    fn find_sessions(
        &self,
        key: &K,
        earliest_end: i64,
        latest_start: i64,
    ) -> Result<Vec<(SessionWindow, V)>, StateError> {
        let mut out = Vec::new();
        let first = self.segmented.segment_id(earliest_end);
        for keys in self.segments.range(first..).map(|(_, k)| k) {
            if let Some(sessions) = keys.get(key) {
                for ((end, start), v) in sessions.range((earliest_end, i64::MIN)..) {
                    if *start <= latest_start {
                        out.push((SessionWindow::new(*start, *end), v.clone()));
                    }
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
        let mut out = Vec::new();
        if end_from > end_to {
            return Ok(out);
        }
        let segs = self.segmented.segment_id(end_from)..=self.segmented.segment_id(end_to);
        for keys in self.segments.range(segs).map(|(_, k)| k) {
            let first = out.len();
            for (key, sessions) in keys {
                for ((end, start), v) in sessions.range((end_from, i64::MIN)..=(end_to, i64::MAX)) {
                    out.push((SessionWindow::new(*start, *end), key.clone(), v.clone()));
                }
            }
            // Within a segment entries are key-major; the emission pass wants end-major.
            out[first..]
                .sort_by(|a, b| (a.0.end, &a.1, a.0.start).cmp(&(b.0.end, &b.1, b.0.start)));
        }
        Ok(out)
    }

    fn remove(&mut self, key: &K, window: SessionWindow, timestamp: i64) -> Result<(), StateError> {
        self.mark_dirty(key, window, timestamp);
        self.remove_raw(key, window);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{I64Codec, StringCodec};

    fn store() -> InMemorySessionStore<String, i64> {
        InMemorySessionStore::new(
            StoreConfig::new("s"),
            SegmentedConfig::new(100).with_segment_interval(50),
            StringCodec,
            I64Codec,
        )
    }

    #[test]
    fn find_sessions_is_the_merge_scan() {
        let mut s = store();
        let a = "a".to_string();
        s.put(a.clone(), SessionWindow::new(0, 10), 1, 10).unwrap();
        s.put(a.clone(), SessionWindow::new(20, 30), 2, 30).unwrap();
        s.put(a.clone(), SessionWindow::new(60, 70), 3, 70).unwrap();
        s.put("b".into(), SessionWindow::new(20, 30), 9, 30)
            .unwrap();
        // A record at 25 with gap 5 merges sessions with end >= 20 and start <= 30.
        let found = s.find_sessions(&a, 20, 30).unwrap();
        assert_eq!(found, vec![(SessionWindow::new(20, 30), 2)]);
        let all = s.find_sessions(&a, i64::MIN, i64::MAX).unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(s.segments(), 2);
    }

    #[test]
    fn fetch_all_by_end_orders_by_end_key_start() {
        let mut s = store();
        s.put("b".into(), SessionWindow::new(5, 10), 1, 0).unwrap();
        s.put("a".into(), SessionWindow::new(7, 10), 2, 0).unwrap();
        s.put("a".into(), SessionWindow::new(1, 10), 3, 0).unwrap();
        s.put("a".into(), SessionWindow::new(0, 5), 4, 0).unwrap();
        let got: Vec<_> = s
            .fetch_all_by_end(0, 10)
            .unwrap()
            .into_iter()
            .map(|(w, k, v)| (w.end, k, w.start, v))
            .collect();
        assert_eq!(
            got,
            vec![
                (5, "a".to_string(), 0, 4),
                (10, "a".to_string(), 1, 3),
                (10, "a".to_string(), 7, 2),
                (10, "b".to_string(), 5, 1),
            ]
        );
    }

    #[test]
    fn changelog_key_uses_session_layout() {
        let mut s = store();
        s.put("k".into(), SessionWindow::new(3, 8), 1, 8).unwrap();
        s.remove(&"k".into(), SessionWindow::new(3, 8), 9).unwrap();
        let mut out = Vec::new();
        s.flush_changelog(&mut out).unwrap();
        let mut expected = Vec::new();
        encode_session_key(b"k", 3, 8, &mut expected);
        assert_eq!(
            out,
            vec![ChangelogRecord {
                key: expected,
                value: None,
                timestamp: 9
            }]
        );
    }
}
