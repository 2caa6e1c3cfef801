//! The persistent segmented core under the window and session stores.
//!
//! Owns [`SegmentedCore`]: the store directory and its [`SegmentSet`] (one keyspace per
//! segment), which segment an entry goes to, retention and expiry against the monotonic
//! committed frontier, the `segments` gauge, the expired-write counter, dirty tracking (an
//! ordered map of encoded (key, window) ids) with the barrier flush, restore (skipping whole
//! expired segments), single-entry reads and writes, and the two scans the queries are built
//! from (one key's entries in a range, every entry in a range). A store brings its
//! [`DiskLayout`] (the engine key of an entry) and keeps its queries.
//!
//! This module never knows which queries a store answers.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::RangeBounds;
use std::sync::Arc;

use super::{
    PersistentConfig, SegmentSet, StoreDirectory, decode_stored, encode_key, encode_value,
    engine_err, open_database, validate_entry,
};
use crate::changelog::ChangelogEntry;
use crate::changelog_batch::ChangelogBatch;
use crate::codec::Codec;
use crate::error::StateError;
use crate::segments::{Retention, SegmentedConfig};
use crate::store::StoreConfig;
use crate::windowed::WindowKind;

/// How a kind of entry is keyed on disk: `[key][times]`, times sign-flipped big-endian so
/// that byte order is time order.
pub(crate) trait DiskLayout: WindowKind {
    /// The engine key of (encoded key, window).
    fn engine_key(key: &[u8], window: Self::Window) -> Vec<u8>;

    /// Splits an engine key into (key bytes, window); `None` if it is too short.
    fn split(engine_key: &[u8]) -> Option<(&[u8], Self::Window)>;
}

/// A window or session store on disk (see the module docs).
pub(crate) struct SegmentedCore<K, V, L: DiskLayout> {
    config: StoreConfig,
    retention: Retention,
    dir: StoreDirectory,
    segments: SegmentSet,
    /// (encoded key, window) written since the last flush → last write's timestamp.
    dirty: BTreeMap<L::Id<Vec<u8>>, i64>,
    key_codec: Arc<dyn Codec<K>>,
    value_codec: Arc<dyn Codec<V>>,
}

impl<K, V, L: DiskLayout> SegmentedCore<K, V, L> {
    /// Opens the store in `<state dir>/<name>/`, creating it if needed.
    pub(crate) fn open(
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
            retention: Retention::new(segmented),
            dir,
            segments,
            dirty: BTreeMap::new(),
            key_codec: Arc::new(key_codec),
            value_codec: Arc::new(value_codec),
        })
    }

    /// Writes `name { .. }` for the store's `Debug`.
    pub(crate) fn fmt_as(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(name)
            .field("name", &self.config.name())
            .field("dir", &self.dir.path())
            .field("segments", &self.segments)
            .field("dirty", &self.dirty.len())
            .finish()
    }

    /// The segments that may hold times `from..=to` (call only with `from <= to`).
    pub(crate) fn segments_between(&self, from: i64, to: i64) -> std::ops::RangeInclusive<i64> {
        self.retention.segments_between(from, to)
    }

    /// The segment holding time `time`.
    pub(crate) fn segment_id(&self, time: i64) -> i64 {
        self.retention.segment_id(time)
    }

    /// Writes (key, window) = value at `timestamp`, unless its time has expired (then the
    /// write is counted and ignored).
    pub(crate) fn put(
        &mut self,
        key: &K,
        window: L::Window,
        value: &V,
        timestamp: i64,
    ) -> Result<(), StateError> {
        let name = self.config.name();
        if !self.retention.admit(name, L::time(window)) {
            return Ok(());
        }
        let k = encode_key(&*self.key_codec, key, name, "put")?;
        let v = encode_value(&*self.value_codec, value, name, &k)?;
        self.put_raw(&k, window, &v)?;
        self.mark_dirty(k, window, timestamp);
        Ok(())
    }

    /// The value of (key, window).
    pub(crate) fn fetch(&self, key: &K, window: L::Window) -> Result<Option<V>, StateError> {
        let name = self.config.name();
        let k = encode_key(&*self.key_codec, key, name, "fetch")?;
        match self.get_raw(&k, window)? {
            None => Ok(None),
            Some(v) => decode_stored(&*self.value_codec, &v, "value", name, &k).map(Some),
        }
    }

    /// Removes (key, window) as a live write at `timestamp`.
    pub(crate) fn delete(
        &mut self,
        key: &K,
        window: L::Window,
        timestamp: i64,
    ) -> Result<(), StateError> {
        let k = encode_key(&*self.key_codec, key, self.config.name(), "delete")?;
        self.remove_raw(&k, window)?;
        self.mark_dirty(k, window, timestamp);
        Ok(())
    }

    /// The entries of `key` in `segments` whose engine keys lie in `from..=to` and whose
    /// window passes `keep`, in engine-key order. Longer keys sharing the prefix can fall in
    /// the byte range; they are skipped.
    pub(crate) fn key_range(
        &self,
        key: &K,
        segments: impl RangeBounds<i64>,
        from: L::Window,
        to: L::Window,
        keep: impl Fn(L::Window) -> bool,
    ) -> Result<Vec<(L::Window, V)>, StateError> {
        let name = self.config.name();
        let k = encode_key(&*self.key_codec, key, name, "a key range query")?;
        let (lo, hi) = (L::engine_key(&k, from), L::engine_key(&k, to));
        let mut out = Vec::new();
        for (_, ks) in self.segments.range(segments) {
            for guard in ks.range(lo.as_slice()..=hi.as_slice()) {
                let (ek, v) = guard.into_inner().map_err(engine_err(name))?;
                match L::split(&ek) {
                    Some((kb, w)) if kb == k.as_slice() && keep(w) => {
                        out.push((w, decode_stored(&*self.value_codec, &v, "value", name, kb)?));
                    }
                    _ => {}
                }
            }
        }
        Ok(out)
    }

    /// Every entry whose time is in `from..=to`, ordered by `cmp` on (window, encoded key),
    /// decoded (the emission pass).
    pub(crate) fn all_between(
        &self,
        from: i64,
        to: i64,
        cmp: impl Fn((L::Window, &[u8]), (L::Window, &[u8])) -> Ordering,
    ) -> Result<Vec<(L::Window, K, V)>, StateError> {
        if from > to {
            return Ok(Vec::new());
        }
        let name = self.config.name();
        let mut rows = Vec::new();
        for (_, ks) in self.segments.range(self.segments_between(from, to)) {
            for guard in ks.iter() {
                let (ek, v) = guard.into_inner().map_err(engine_err(name))?;
                if let Some((kb, w)) = L::split(&ek)
                    && (from..=to).contains(&L::time(w))
                {
                    rows.push((w, kb.to_vec(), v));
                }
            }
        }
        rows.sort_by(|a, b| cmp((a.0, &a.1), (b.0, &b.1)));
        rows.into_iter()
            .map(|(w, kb, v)| {
                let key = decode_stored(&*self.key_codec, &kb, "key", name, &kb)?;
                let value = decode_stored(&*self.value_codec, &v, "value", name, &kb)?;
                Ok((w, key, value))
            })
            .collect()
    }

    fn mark_dirty(&mut self, key: Vec<u8>, window: L::Window, timestamp: i64) {
        if self.config.changelog_enabled() {
            self.dirty.insert(L::id(key, window), timestamp);
        }
    }

    fn get_raw(
        &self,
        key: &[u8],
        window: L::Window,
    ) -> Result<Option<fjall::UserValue>, StateError> {
        match self.segments.get(self.segment_id(L::time(window))) {
            None => Ok(None),
            Some(ks) => ks
                .get(L::engine_key(key, window))
                .map_err(engine_err(self.config.name())),
        }
    }

    fn put_raw(&mut self, key: &[u8], window: L::Window, value: &[u8]) -> Result<(), StateError> {
        let segment = self.segment_id(L::time(window));
        let ks = self.segments.get_or_create(segment)?;
        ks.insert(L::engine_key(key, window), value)
            .map_err(engine_err(self.config.name()))
    }

    fn remove_raw(&mut self, key: &[u8], window: L::Window) -> Result<(), StateError> {
        match self.segments.get(self.segment_id(L::time(window))) {
            None => Ok(()),
            Some(ks) => ks
                .remove(L::engine_key(key, window))
                .map_err(engine_err(self.config.name())),
        }
    }

    // What every segmented store does, handed over by `delegate_to_segmented_core!`.

    pub(crate) fn name(&self) -> &str {
        self.config.name()
    }

    pub(crate) fn changelog_enabled(&self) -> bool {
        self.config.changelog_enabled()
    }

    /// One record per dirty entry, its stored value or a tombstone. All or nothing: on an
    /// engine error `out` is left as it was and the entries stay dirty.
    pub(crate) fn flush_changelog(&mut self, out: &mut ChangelogBatch) -> Result<(), StateError> {
        out.reserve(self.dirty.len());
        let first = out.len();
        let mut record_key = Vec::new();
        for (id, timestamp) in &self.dirty {
            let (key, window) = (L::key(id), L::window(id));
            record_key.clear();
            L::changelog_key(key, window, &mut record_key);
            match self.get_raw(key, window) {
                Ok(value) => out.push(&record_key, value.as_deref(), *timestamp),
                Err(e) => {
                    out.truncate(first);
                    return Err(e);
                }
            }
        }
        self.dirty.clear();
        Ok(())
    }

    pub(crate) fn dirty_keys(&self) -> usize {
        self.dirty.len()
    }

    pub(crate) fn apply_changelog(&mut self, entry: &ChangelogEntry) -> Result<(), StateError> {
        let name = self.config.name();
        let (key, window) = L::restored(entry, name)?;
        validate_entry(&*self.key_codec, key, "key", name, entry)?;
        match &entry.value {
            None => self.remove_raw(key, window),
            Some(v) => {
                validate_entry(&*self.value_codec, v, "value", name, entry)?;
                if self.retention.restores(L::time(window)) {
                    self.put_raw(key, window, v)
                } else {
                    Ok(())
                }
            }
        }
    }

    pub(crate) fn approximate_num_entries(&self) -> u64 {
        self.segments.approximate_len()
    }

    pub(crate) fn expire(&mut self, committed_frontier: i64) -> Result<usize, StateError> {
        let first_live = self.retention.advance(committed_frontier);
        self.segments.drop_below(first_live)
    }

    pub(crate) fn segments(&self) -> usize {
        self.segments.non_empty()
    }

    /// The earliest time not expired at the frontier (`i64::MIN` before the first expiry).
    pub(crate) fn first_live_time(&self) -> i64 {
        self.retention.first_live_time()
    }

    pub(crate) fn expired_writes(&self) -> u64 {
        self.retention.expired_writes()
    }
}
