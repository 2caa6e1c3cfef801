//! In-memory session store.
//!
//! Layout: segment (of session end) → key → (end, start) → value. Owns that layout (one
//! [`SessionSegment`]) and the session queries (the merge scan, the emission pass by end);
//! segments, retention, dirty tracking, the changelog and restore are the
//! [`SegmentedCore`]'s.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::segmented::{Segment, SegmentedCore};
use super::{CLEAN, DirtyLog, Slot};
use crate::codec::Codec;
use crate::error::StateError;
use crate::segments::SegmentedConfig;
use crate::store::{SessionStore, SessionWindow, StoreConfig, delegate_to_segmented_core};
use crate::windowed::SessionKind;

/// Sessions of one key in one segment, by (end, start).
type Sessions<V> = BTreeMap<(i64, i64), Slot<V>>;

/// One retention segment: key → sessions.
pub(crate) struct SessionSegment<K, V> {
    keys: BTreeMap<K, Sessions<V>>,
    entries: u64,
}

impl<K, V> Default for SessionSegment<K, V> {
    fn default() -> Self {
        Self {
            keys: BTreeMap::new(),
            entries: 0,
        }
    }
}

impl<K: Ord + Clone, V> Segment<K, V> for SessionSegment<K, V> {
    type Kind = SessionKind;

    fn len(&self) -> u64 {
        self.entries
    }

    fn slot(&self, key: &K, w: SessionWindow) -> Option<&Slot<V>> {
        self.keys.get(key)?.get(&(w.end, w.start))
    }

    fn slot_mut(&mut self, key: &K, w: SessionWindow) -> Option<&mut Slot<V>> {
        self.keys.get_mut(key)?.get_mut(&(w.end, w.start))
    }

    fn for_each_slot<'a>(&'a self, f: &mut dyn FnMut(&'a Slot<V>)) {
        self.keys.values().flat_map(BTreeMap::values).for_each(f);
    }

    fn mark_all_clean(&mut self) {
        for slot in self.keys.values_mut().flat_map(BTreeMap::values_mut) {
            slot.dirty = CLEAN;
        }
    }

    fn upsert(
        &mut self,
        key: Cow<'_, K>,
        w: SessionWindow,
        timestamp: Option<i64>,
        log: &mut DirtyLog<(K, i64, i64)>,
        f: impl FnOnce(Option<V>) -> V,
    ) -> bool {
        let sessions = match self.keys.get_mut(key.as_ref()) {
            Some(sessions) => sessions,
            None => self.keys.entry(key.as_ref().clone()).or_default(),
        };
        // A key's sessions in one segment are few: moving the old value out and the new one
        // in costs two searches of a small map.
        let old = sessions.remove(&(w.end, w.start));
        let new = old.is_none();
        let (mut dirty, current) = match old {
            Some(slot) => (slot.dirty, Some(slot.value)),
            None => (CLEAN, None),
        };
        if let Some(timestamp) = timestamp {
            log.note(&mut dirty, timestamp, || (key.into_owned(), w.end, w.start));
        }
        let value = f(current);
        sessions.insert((w.end, w.start), Slot { value, dirty });
        self.entries += u64::from(new);
        new
    }

    fn remove(&mut self, key: &K, w: SessionWindow) -> Option<Slot<V>> {
        let sessions = self.keys.get_mut(key)?;
        let old = sessions.remove(&(w.end, w.start))?;
        if sessions.is_empty() {
            self.keys.remove(key);
        }
        self.entries -= 1;
        Some(old)
    }
}

/// A session store holding typed entries as segment (of end) → key → (end, start) → value.
pub struct InMemorySessionStore<K, V> {
    core: SegmentedCore<K, V, SessionSegment<K, V>, (K, i64, i64)>,
}

delegate_to_segmented_core!(InMemorySessionStore where K: Ord + Clone, V: Clone);

impl<K: Ord + Clone, V: Clone> InMemorySessionStore<K, V> {
    /// An empty store; the codecs are used only for the changelog.
    pub fn new(
        config: StoreConfig,
        segmented: SegmentedConfig,
        key_codec: impl Codec<K> + 'static,
        value_codec: impl Codec<V> + 'static,
    ) -> Self {
        Self {
            core: SegmentedCore::new(config, segmented, key_codec, value_codec),
        }
    }

    /// The retention configuration.
    pub fn segmented_config(&self) -> SegmentedConfig {
        self.core.segmented_config()
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
        if self.core.admit(window.end) {
            self.core
                .upsert(Cow::Owned(key), window, Some(timestamp), |_| value);
        }
        Ok(())
    }

    fn fetch(&self, key: &K, window: SessionWindow) -> Result<Option<V>, StateError> {
        Ok(self.core.slot(key, window).map(|s| s.value.clone()))
    }

    fn find_sessions(
        &self,
        key: &K,
        earliest_end: i64,
        latest_start: i64,
    ) -> Result<Vec<(SessionWindow, V)>, StateError> {
        let mut out = Vec::new();
        for seg in self.core.segments_from(earliest_end) {
            if let Some(sessions) = seg.keys.get(key) {
                for ((end, start), slot) in sessions.range((earliest_end, i64::MIN)..) {
                    if *start <= latest_start {
                        out.push((SessionWindow::new(*start, *end), slot.value.clone()));
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
        for (_, seg) in self.core.segments_between(end_from, end_to) {
            let first = out.len();
            for (key, sessions) in &seg.keys {
                for ((end, start), slot) in
                    sessions.range((end_from, i64::MIN)..=(end_to, i64::MAX))
                {
                    out.push((
                        SessionWindow::new(*start, *end),
                        key.clone(),
                        slot.value.clone(),
                    ));
                }
            }
            // Within a segment entries are key-major; the emission pass wants end-major.
            out[first..]
                .sort_by(|a, b| (a.0.end, &a.1, a.0.start).cmp(&(b.0.end, &b.1, b.0.start)));
        }
        Ok(out)
    }

    fn remove(&mut self, key: &K, window: SessionWindow, timestamp: i64) -> Result<(), StateError> {
        self.core.remove(key, window, timestamp);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changelog::{ChangelogRecord, encode_session_key};
    use crate::changelog_batch::ChangelogBatch;
    use crate::codec::{I64Codec, StringCodec};
    use crate::store::{Segmented, StateStore};

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
        let mut batch = ChangelogBatch::new();
        s.flush_changelog(&mut batch).unwrap();
        let out = batch.to_records();
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
