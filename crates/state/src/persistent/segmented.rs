//! The persistent segmented core under the window and session stores.
//!
//! Owns [`SegmentedCore`]: the store directory and its [`SegmentSet`] (one keyspace per
//! segment), which segment an entry goes to, retention and expiry against the monotonic
//! committed frontier, the `segments` gauge, the expired-write counter, dirty tracking (an
//! ordered map of encoded (key, window) ids) with the barrier flush, restore (skipping whole
//! expired segments), single-entry reads and writes through the store's write-back cache
//! ([`WriteCache`], written to the engine in one batch per barrier, when full and on
//! close), and the two scans the queries are built from (one key's entries in a range,
//! every entry in a range), each merging the cache over the engine. A store brings its
//! [`DiskLayout`] (the engine key of an entry) and keeps its queries.
//!
//! This module never knows which queries a store answers.

use std::cmp::Ordering;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use super::bulk_load::SortedLoad;
use super::write_cache::{WriteCache, merge};
use super::{
    BULK_LOAD_MIN_BYTES, PersistentConfig, SegmentSet, StoreDirectory, closed, decode_stored,
    encode_key, encode_value, engine_err, ingest, open_database, validate_entry, validate_record,
    write_sorted,
};
use crate::changelog::ChangelogEntry;
use crate::changelog_batch::ChangelogBatch;
use crate::codec::Codec;
use crate::error::StateError;
use crate::restore_batch::{RestoreBatch, RestoreRecord};
use crate::segments::{Retention, SegmentedConfig};
use crate::store::StoreConfig;
use crate::windowed::WindowKind;

/// How a kind of entry is keyed on disk: `[key][times]`, times sign-flipped big-endian so
/// that byte order is time order.
pub(crate) trait DiskLayout: WindowKind {
    /// Appends the times of `window` to an encoded key.
    fn push_window(window: Self::Window, out: &mut Vec<u8>);

    /// The engine key of (encoded key, window).
    fn engine_key(key: &[u8], window: Self::Window) -> Vec<u8> {
        let mut k = Vec::with_capacity(key.len() + 16);
        k.extend_from_slice(key);
        Self::push_window(window, &mut k);
        k
    }

    /// Splits an engine key into (key bytes, window); `None` if it is too short.
    fn split(engine_key: &[u8]) -> Option<(&[u8], Self::Window)>;
}

/// A window or session store on disk (see the module docs).
pub(crate) struct SegmentedCore<K, V, L: DiskLayout> {
    config: StoreConfig,
    retention: Retention,
    dir: StoreDirectory,
    segments: SegmentSet,
    /// Writes not yet in the engine (and the last ones that are), by segment, with the
    /// entries written since the last flush.
    cache: WriteCache<i64>,
    key_codec: Arc<dyn Codec<K>>,
    value_codec: Arc<dyn Codec<V>>,
    layout: PhantomData<L>,
}

/// A value read through the cache: borrowed from it, or owned from the engine.
pub(crate) enum Stored<'a> {
    Cached(&'a [u8]),
    Engine(fjall::UserValue),
}

impl std::ops::Deref for Stored<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Stored::Cached(v) => v,
            Stored::Engine(v) => v,
        }
    }
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
            cache: WriteCache::new(persistent.cache_max_bytes()),
            key_codec: Arc::new(key_codec),
            value_codec: Arc::new(value_codec),
            layout: PhantomData,
        })
    }

    /// Writes `name { .. }` for the store's `Debug`.
    pub(crate) fn fmt_as(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(name)
            .field("name", &self.config.name())
            .field("dir", &self.dir.path())
            .field("segments", &self.segments)
            .field("cached", &self.cache.len())
            .field("dirty", &self.cache.logged_len())
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
        let logged = self.logged(timestamp);
        self.write_raw(&k, window, Some(&v), logged)
    }

    /// Replaces (key, window) with `f(current)` at `timestamp`: the key is encoded once and
    /// the new value encoded straight into the cache. An expired window: `f` sees the
    /// current value and the write is counted and ignored, as [`SegmentedCore::put`] does.
    pub(crate) fn update(
        &mut self,
        key: &K,
        window: L::Window,
        timestamp: i64,
        f: &mut dyn FnMut(Option<V>) -> V,
    ) -> Result<(), StateError> {
        let name = self.config.name();
        let mut ek = Vec::with_capacity(32);
        self.key_codec
            .encode(key, &mut ek)
            .map_err(|e| StateError::encode_key(name, format_args!("passed to update"), e))?;
        let key_len = ek.len();
        L::push_window(window, &mut ek);
        let segment = self.segment_id(L::time(window));
        let admitted = self.retention.admit(name, L::time(window));
        let logged = self.config.changelog_enabled().then_some(timestamp);
        let (key_codec_bytes, value_codec) = (&ek[..key_len], &*self.value_codec);
        let decode = |v: &[u8]| decode_stored(value_codec, v, "value", name, key_codec_bytes);
        let encode = |value: &V, out: &mut Vec<u8>| {
            value_codec
                .encode(value, out)
                .map_err(|e| StateError::encode_value(name, key_codec_bytes, e))
        };
        // A key the cache holds is read and rewritten in one lookup.
        let in_cache = self.cache.rewrite(segment, &ek, logged, |current, out| {
            let value = f(current.map(decode).transpose()?);
            if admitted {
                encode(&value, out)?;
            }
            Ok(admitted)
        })?;
        if in_cache.is_some() {
            return self.spill_if_over();
        }
        let current = match &self.segments.get(segment) {
            None => None,
            Some(ks) => ks.get(&ek).map_err(engine_err(name))?,
        };
        let value = f(current.as_deref().map(decode).transpose()?);
        if !admitted {
            return Ok(());
        }
        self.cache
            .write_encoded(segment, &ek, logged, |out| encode(&value, out))?;
        self.spill_if_over()
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
        let logged = self.logged(timestamp);
        self.write_raw(&k, window, None, logged)
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
        for id in self.segment_ids(segments) {
            let engine = self
                .segments
                .get(id)
                .into_iter()
                .flat_map(|ks| ks.range(lo.as_slice()..=hi.as_slice()))
                .map(|g| g.into_inner().map_err(engine_err(name)));
            let cached = self.cache.range(
                id,
                Bound::Included(lo.as_slice()),
                Bound::Included(hi.as_slice()),
            );
            merge(engine, cached, |ek, v| {
                match L::split(ek) {
                    Some((kb, w)) if kb == k.as_slice() && keep(w) => {
                        out.push((w, decode_stored(&*self.value_codec, v, "value", name, kb)?));
                    }
                    _ => {}
                }
                Ok(())
            })?;
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
        for id in self.segment_ids(self.segments_between(from, to)) {
            let engine = self
                .segments
                .get(id)
                .into_iter()
                .flat_map(|ks| ks.iter())
                .map(|g| g.into_inner().map_err(engine_err(name)));
            let cached = self.cache.range(id, Bound::Unbounded, Bound::Unbounded);
            merge(engine, cached, |ek, v| {
                if let Some((kb, w)) = L::split(ek)
                    && (from..=to).contains(&L::time(w))
                {
                    rows.push((w, kb.to_vec(), v.to_vec()));
                }
                Ok(())
            })?;
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

    /// The ids of the segments in `range` that the engine or the cache holds, ascending.
    fn segment_ids(&self, range: impl RangeBounds<i64>) -> Vec<i64> {
        let in_range = |id: &i64| range.contains(id);
        let mut ids: Vec<i64> = self.segments.ids().filter(in_range).collect();
        ids.extend(self.cache.segment_ids().filter(in_range));
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// What a live write at `timestamp` owes the changelog.
    fn logged(&self, timestamp: i64) -> Option<i64> {
        self.config.changelog_enabled().then_some(timestamp)
    }

    fn get_raw(&self, key: &[u8], window: L::Window) -> Result<Option<Stored<'_>>, StateError> {
        let segment = self.segment_id(L::time(window));
        self.get_engine_key(segment, &L::engine_key(key, window))
    }

    /// The value under engine key `ek` of `segment`, from the cache or the engine.
    fn get_engine_key(&self, segment: i64, ek: &[u8]) -> Result<Option<Stored<'_>>, StateError> {
        if let Some(cached) = self.cache.get(segment, ek) {
            return Ok(cached.map(Stored::Cached));
        }
        match self.segments.get(segment) {
            None => Ok(None),
            Some(ks) => Ok(ks
                .get(ek)
                .map_err(engine_err(self.config.name()))?
                .map(Stored::Engine)),
        }
    }

    /// Writes `value` (`None`: removes) under (key, window) into the cache, and the cache to
    /// the engine if it is over its bound.
    fn write_raw(
        &mut self,
        key: &[u8],
        window: L::Window,
        value: Option<&[u8]>,
        logged: Option<i64>,
    ) -> Result<(), StateError> {
        let segment = self.segment_id(L::time(window));
        self.cache
            .write(segment, &L::engine_key(key, window), value, logged);
        self.spill_if_over()
    }

    /// Past its bound, the cache is written to the engine and emptied.
    fn spill_if_over(&mut self) -> Result<(), StateError> {
        if self.cache.is_over() {
            self.write_back()?;
            self.cache.clear();
        }
        Ok(())
    }

    /// Writes the cache's dirty entries to the engine as sorted tables. All or nothing: on an
    /// engine error they stay dirty in the cache.
    fn write_back(&mut self) -> Result<(), StateError> {
        if self.cache.dirty_len() == 0 {
            return Ok(());
        }
        for segment in self.cache.segments_with_dirty_values() {
            self.segments.get_or_create(segment)?;
        }
        // One sorted table per segment. A failure part-way leaves every entry dirty; writing
        // an already written segment again is harmless (the same values, newer).
        for segment in self.cache.segments_with_dirty() {
            if let Some(ks) = self.segments.get(segment) {
                write_sorted(ks, self.cache.dirty_in(segment), self.config.name())?;
            }
        }
        self.cache.mark_clean();
        Ok(())
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
        let name = self.config.name();
        // Records go out in id order ((start, key) or (key, end, start)), as the in-memory
        // engine writes them.
        let keys = self.cache.logged_keys();
        let mut logged: Vec<(L::Id<&[u8]>, i64, &[u8])> = Vec::with_capacity(keys.len());
        for (_, ek, timestamp) in &keys {
            let (key, window) = L::split(ek).ok_or_else(|| StateError::Engine {
                store: name.to_string(),
                detail: format!("cached key {} is too short", crate::error::hex(ek)),
            })?;
            logged.push((L::id(key, window), *timestamp, ek));
        }
        logged.sort_by(|a, b| a.0.cmp(&b.0));
        out.reserve(logged.len());
        let first = out.len();
        let mut record_key = Vec::new();
        for (id, timestamp, ek) in &logged {
            let window = L::window(id);
            record_key.clear();
            L::changelog_key(L::key::<&[u8]>(id), window, &mut record_key);
            match self.get_engine_key(self.segment_id(L::time(window)), ek) {
                Ok(value) => out.push(&record_key, value.as_deref(), *timestamp),
                Err(e) => {
                    out.truncate(first);
                    return Err(e);
                }
            }
        }
        drop(logged);
        self.cache.clear_logged();
        Ok(())
    }

    pub(crate) fn dirty_keys(&self) -> usize {
        self.cache.logged_len()
    }

    pub(crate) fn apply_changelog(&mut self, entry: &ChangelogEntry) -> Result<(), StateError> {
        let name = self.config.name();
        let (key, window) = L::restored(entry, name)?;
        validate_entry(&*self.key_codec, key, "key", name, entry)?;
        match &entry.value {
            None => self.write_raw(key, window, None, None),
            Some(v) => {
                validate_entry(&*self.value_codec, v, "value", name, entry)?;
                if self.retention.restores(L::time(window)) {
                    self.write_raw(key, window, Some(v), None)
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Applies a restore batch in bulk: the cache is written back and emptied (so nothing it
    /// holds shadows a restored entry), then the batch's entries go to the engine sorted, one
    /// table per segment, as [`SegmentedCore::apply_changelog`] on each would leave them.
    /// A corrupt record: every record before it is written, then its error returned.
    pub(crate) fn apply_changelog_batch(&mut self, batch: &RestoreBatch) -> Result<(), StateError> {
        if batch.bytes() < BULK_LOAD_MIN_BYTES {
            return batch
                .iter()
                .try_for_each(|record| self.apply_changelog(&record.to_entry()));
        }
        if self.cache.len() > 0 {
            self.write_back()?;
            self.cache.clear();
        }
        let mut load = SortedLoad::with_capacity(batch.len());
        let mut failed = None;
        for record in batch.iter() {
            match self.restored_entry(&record) {
                Ok(Some((key, window))) => load.push(
                    self.segment_id(L::time(window)),
                    |out| {
                        out.extend_from_slice(key);
                        L::push_window(window, out);
                    },
                    record.value,
                ),
                Ok(None) => {}
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        load.sort();
        let segments = &mut self.segments;
        ingest(&load, self.config.name(), |segment, has_value| {
            Ok(match has_value {
                true => Some(segments.get_or_create(segment)?.clone()),
                false => segments.get(segment).cloned(),
            })
        })?;
        failed.map_or(Ok(()), Err)
    }

    /// The (key bytes, window) of a batch record once its key and value decode; `None` for
    /// a value whose time has expired (a deletion is always kept).
    fn restored_entry<'r>(
        &self,
        record: &RestoreRecord<'r>,
    ) -> Result<Option<(&'r [u8], L::Window)>, StateError> {
        let name = self.config.name();
        let (key, window) = L::split_changelog_key(record.key).ok_or_else(|| {
            record.corrupt(
                name,
                format!(
                    "truncated {} key: {} bytes, need at least {}",
                    L::KEY_NAME,
                    record.key.len(),
                    L::KEY_SUFFIX
                ),
            )
        })?;
        validate_record(&*self.key_codec, key, "key", name, record)?;
        match record.value {
            None => Ok(Some((key, window))),
            Some(v) => {
                validate_record(&*self.value_codec, v, "value", name, record)?;
                Ok(self
                    .retention
                    .restores(L::time(window))
                    .then_some((key, window)))
            }
        }
    }

    pub(crate) fn approximate_num_entries(&self) -> u64 {
        self.segments.approximate_len() + self.cache.len() as u64
    }

    pub(crate) fn expire(&mut self, committed_frontier: i64) -> Result<usize, StateError> {
        let first_live = self.retention.advance(committed_frontier);
        // Counted before the drop, as the gauge counts them: a segment whose engine entries
        // the cache has all deleted held nothing, whichever side drops it.
        let dropped = self
            .segment_ids(..first_live)
            .into_iter()
            .filter(|&id| self.holds_an_entry(id))
            .count();
        self.segments.drop_below(first_live)?;
        self.cache.drop_below(first_live);
        Ok(dropped)
    }

    /// Segments holding at least one entry (in the engine or the cache).
    pub(crate) fn segments(&self) -> usize {
        self.segment_ids(..)
            .into_iter()
            .filter(|&id| self.holds_an_entry(id))
            .count()
    }

    /// Whether `segment` holds an entry: one in the cache, or one in the engine the cache
    /// has not deleted.
    fn holds_an_entry(&self, segment: i64) -> bool {
        self.cache.has_value_in(segment)
            || self.segments.get(segment).is_some_and(|ks| {
                ks.iter().any(|g| {
                    g.key()
                        .is_ok_and(|k| self.cache.get(segment, &k) != Some(None))
                })
            })
    }

    /// The earliest time not expired at the frontier (`i64::MIN` before the first expiry).
    pub(crate) fn first_live_time(&self) -> i64 {
        self.retention.first_live_time()
    }

    pub(crate) fn expired_writes(&self) -> u64 {
        self.retention.expired_writes()
    }

    /// Entries the cache holds, for tests of what reaches the engine when.
    #[cfg(test)]
    pub(crate) fn cached_entries(&self) -> usize {
        self.cache.len()
    }

    /// Entries the engine itself holds (not counting the cache), for tests of what reaches
    /// it when.
    #[cfg(test)]
    pub(crate) fn engine_entries(&self) -> usize {
        self.segment_ids(..)
            .into_iter()
            .filter_map(|id| self.segments.get(id))
            .map(|ks| ks.iter().count())
            .sum()
    }
}

impl<K, V, L: DiskLayout> Drop for SegmentedCore<K, V, L> {
    /// A close writes the cache to the engine (see [`closed`]).
    fn drop(&mut self) {
        let written_back = self.write_back();
        closed(&self.dir, written_back);
    }
}
