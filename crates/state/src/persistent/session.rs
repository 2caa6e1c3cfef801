//! Persistent session store.
//!
//! Owns the on-disk layout of a session, `[key][end][start]` (see [`DiskLayout`]), and the
//! session queries; the directory, segments (of session end), retention, dirty tracking, the
//! changelog and restore are the [`SegmentedCore`]'s.

use super::segmented::{DiskLayout, SegmentedCore};
use super::{PersistentConfig, time_bytes, time_from};
use crate::codec::Codec;
use crate::error::StateError;
use crate::segments::SegmentedConfig;
use crate::store::{SessionStore, SessionWindow, StoreConfig, delegate_to_segmented_core};
use crate::windowed::SessionKind;

impl DiskLayout for SessionKind {
    fn push_window(w: SessionWindow, out: &mut Vec<u8>) {
        out.extend_from_slice(&time_bytes(w.end));
        out.extend_from_slice(&time_bytes(w.start));
    }

    fn split(engine_key: &[u8]) -> Option<(&[u8], SessionWindow)> {
        let n = engine_key.len().checked_sub(16)?;
        let end = time_from(&engine_key[n..n + 8]);
        let start = time_from(&engine_key[n + 8..]);
        Some((&engine_key[..n], SessionWindow::new(start, end)))
    }
}

/// A session store on disk: one keyspace per segment of session end, entries laid out
/// `[key][end][start]`.
pub struct PersistentSessionStore<K, V> {
    core: SegmentedCore<K, V, SessionKind>,
}

delegate_to_segmented_core!(bulk PersistentSessionStore where K: Ord);

impl<K, V> PersistentSessionStore<K, V> {
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
}

impl<K: Ord, V: Clone> SessionStore<K, V> for PersistentSessionStore<K, V> {
    fn put(
        &mut self,
        key: K,
        window: SessionWindow,
        value: V,
        timestamp: i64,
    ) -> Result<(), StateError> {
        self.core.put(&key, window, value, timestamp)
    }

    fn fetch(&self, key: &K, window: SessionWindow) -> Result<Option<V>, StateError> {
        self.core.fetch(key, window)
    }

    fn find_sessions(
        &self,
        key: &K,
        earliest_end: i64,
        latest_start: i64,
    ) -> Result<Vec<(SessionWindow, V)>, StateError> {
        self.core.key_range(
            key,
            self.core.segment_id(earliest_end)..,
            SessionWindow::new(i64::MIN, earliest_end),
            SessionWindow::new(i64::MAX, i64::MAX),
            |w| w.start <= latest_start,
        )
    }

    fn fetch_all_by_end(
        &self,
        end_from: i64,
        end_to: i64,
    ) -> Result<Vec<(SessionWindow, K, V)>, StateError> {
        // Sorted once decoded (no two entries share end, key and start).
        let mut all = self.core.all_between(end_from, end_to)?;
        all.sort_unstable_by(|a, b| (a.0.end, &a.1, a.0.start).cmp(&(b.0.end, &b.1, b.0.start)));
        Ok(all)
    }

    fn remove(&mut self, key: &K, window: SessionWindow, timestamp: i64) -> Result<(), StateError> {
        self.core.delete(key, window, timestamp)
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
