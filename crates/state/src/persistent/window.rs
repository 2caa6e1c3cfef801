//! Persistent window store.
//!
//! Owns the on-disk layout of a window, `[key][start]` (see [`DiskLayout`]), and the window
//! queries; the directory, segments, retention, dirty tracking, the changelog and restore are
//! the [`SegmentedCore`]'s.

use super::segmented::{DiskLayout, SegmentedCore};
use super::{PersistentConfig, time_bytes, time_from};
use crate::codec::Codec;
use crate::error::StateError;
use crate::segments::SegmentedConfig;
use crate::store::{StoreConfig, WindowStore, delegate_to_segmented_core};
use crate::windowed::TimeWindowKind;

impl DiskLayout for TimeWindowKind {
    fn engine_key(key: &[u8], start: i64) -> Vec<u8> {
        let mut k = Vec::with_capacity(key.len() + 8);
        k.extend_from_slice(key);
        k.extend_from_slice(&time_bytes(start));
        k
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

delegate_to_segmented_core!(PersistentWindowStore);

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

impl<K, V> WindowStore<K, V> for PersistentWindowStore<K, V> {
    fn put(
        &mut self,
        key: K,
        window_start: i64,
        value: V,
        timestamp: i64,
    ) -> Result<(), StateError> {
        self.core.put(&key, window_start, &value, timestamp)
    }

    fn fetch(&self, key: &K, window_start: i64) -> Result<Option<V>, StateError> {
        self.core.fetch(key, window_start)
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

    fn fetch_all(&self, time_from: i64, time_to: i64) -> Result<Vec<(i64, K, V)>, StateError> {
        self.core.all_between(time_from, time_to, |a, b| a.cmp(&b))
    }

    fn delete(&mut self, key: &K, window_start: i64, timestamp: i64) -> Result<(), StateError> {
        self.core.delete(key, window_start, timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{I64Codec, StringCodec};
    use crate::store::Segmented;

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
