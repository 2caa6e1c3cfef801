//! The persistent segmented core under the window and session stores.
//!
//! Owns [`SegmentedCore`]: the store directory and its [`SegmentSet`] (a keyspace per live
//! segment), which segment an entry goes to, retention and expiry against the monotonic
//! committed frontier, the `segments` gauge, the expired-write counter, the barrier flush
//! of the keys the cache says the changelog owes (sorted there once, by id: by the stored
//! keys' bytes where they sort as the keys, otherwise by decoded key), restore (skipping
//! whole expired segments), single-entry reads and writes through the store's write-back
//! cache ([`WindowCache`]: per segment, encoded key → that key's windows; written to the
//! engine, sorted into engine-key order, only when full and on close), and the scans the
//! queries are built from: one key's entries in a range (that key's cached windows merged
//! over the engine's by window), visited forwards or from the newest with each value
//! decoded only as visited, or folded with each new value written straight into the cache
//! (the sliding aggregation's read and update); and every entry in a range (the engine's
//! entries the cache does not shadow, then the cache's, decoded; the store sorts them). A segment the cache
//! knows the engine has nothing of is never read from the engine. A store brings its
//! [`DiskLayout`] (the engine key of an entry, and the order of a key's windows) and keeps
//! its queries.
//!
//! This module never knows which queries a store answers.

use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::ops::{ControlFlow, RangeBounds};
use std::sync::Arc;

use super::key_order::StoredKeys;

use super::bulk_load::SortedLoad;
use super::write_cache::{SPILL_TO_PERCENT, Seen, WindowCache, merge};
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
use crate::store::{SessionWindow, StoreConfig};
use crate::windowed::{SessionKind, TimeWindowKind, WindowKind};

/// How one key's windows order on disk (the order of the times a [`DiskLayout`] appends
/// to the key): the cache keeps each key's windows in it.
pub(crate) trait WindowOrder: WindowKind {
    /// A window's place among its key's.
    type Order: Ord + Copy + Hash + fmt::Debug;

    /// The order of `window`.
    fn order(window: Self::Window) -> Self::Order;

    /// The window of an order.
    fn window_of(order: Self::Order) -> Self::Window;
}

/// A window's start.
impl WindowOrder for TimeWindowKind {
    type Order = i64;

    fn order(start: i64) -> i64 {
        start
    }

    fn window_of(start: i64) -> i64 {
        start
    }
}

/// A session's (end, start).
impl WindowOrder for SessionKind {
    type Order = (i64, i64);

    fn order(w: SessionWindow) -> (i64, i64) {
        (w.end, w.start)
    }

    fn window_of((end, start): (i64, i64)) -> SessionWindow {
        SessionWindow::new(start, end)
    }
}

/// How a kind of entry is keyed on disk: `[key][times]`, times sign-flipped big-endian so
/// that byte order is time order (and [`WindowOrder`] among one key's).
pub(crate) trait DiskLayout: WindowOrder {
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
    /// Writes not yet in the engine (and the last ones that are), by segment and key, with
    /// the entries written since the last flush.
    cache: WindowCache<L::Order, V>,
    /// The keys as the engine and the cache keep them (docs/state.md#key-order).
    keys: StoredKeys<K>,
    value_codec: Arc<dyn Codec<V>>,
    /// The buffer the write paths encode a key into, kept between calls so that a write
    /// to a key the cache holds allocates nothing.
    key_buf: Vec<u8>,
    /// The buffer a value newly cached is encoded into to weigh it.
    value_buf: Vec<u8>,
    layout: PhantomData<L>,
}

/// A value of a window or session store read through its cache: the cache's typed value,
/// or the engine's bytes.
pub(crate) enum Found<'a, V> {
    Cached(&'a V),
    Engine(fjall::UserValue),
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
            cache: WindowCache::new(persistent.cache_max_bytes()),
            keys: StoredKeys::new(key_codec),
            value_codec: Arc::new(value_codec),
            key_buf: Vec::new(),
            value_buf: Vec::new(),
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
        value: V,
        timestamp: i64,
    ) -> Result<(), StateError> {
        let name = self.config.name();
        if !self.retention.admit(name, L::time(window)) {
            return Ok(());
        }
        self.with_key(key, "put", |core, k| {
            let logged = core.logged(timestamp);
            core.store_value(k, window, value, logged)
        })
    }

    /// Caches `value` under (stored key `k`, window) as a write at `logged`: in place if the
    /// cache holds the entry (keeping its weight), otherwise weighed by its encoding (a
    /// value that does not encode is refused here, naming the key); then the cache is
    /// written back if it is over its bound.
    fn store_value(
        &mut self,
        k: &[u8],
        window: L::Window,
        value: V,
        logged: Option<i64>,
    ) -> Result<(), StateError> {
        let segment = self.segment_id(L::time(window));
        let mut value = Some(value);
        let fallback = size_of::<V>();
        self.cache
            .rewrite(segment, k, L::order(window), logged, fallback, |slot| {
                *slot = value.take();
                true
            });
        if let Some(v) = value {
            let weight = self.weigh(k, &v)?;
            self.write_value(k, window, Some((v, weight)), logged);
        }
        self.spill_if_over()
    }

    /// What `value`, to be cached under stored key `k`, weighs against the cache's bound:
    /// its encoded size (and not less than its own), or the encoder's error naming the key.
    fn weigh(&mut self, k: &[u8], value: &V) -> Result<usize, StateError> {
        self.value_buf.clear();
        self.value_codec
            .encode(value, &mut self.value_buf)
            .map_err(|e| {
                StateError::encode_value(self.config.name(), &self.keys.shown(k).encoding(), e)
            })?;
        Ok(self.value_buf.len().max(size_of::<V>()))
    }

    /// Runs `write` with `key` encoded into the reused key buffer.
    fn with_key<R>(
        &mut self,
        key: &K,
        op: &str,
        write: impl FnOnce(&mut Self, &[u8]) -> Result<R, StateError>,
    ) -> Result<R, StateError> {
        let mut k = std::mem::take(&mut self.key_buf);
        k.clear();
        let result = match self.keys.encode(key, &mut k) {
            Ok(()) => write(self, &k),
            Err(e) => Err(StateError::encode_key(
                self.config.name(),
                format_args!("passed to {op}"),
                e,
            )),
        };
        self.key_buf = k;
        result
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
    ) -> Result<(), StateError>
    where
        V: Clone,
    {
        self.with_key(key, "update", |core, k| {
            core.update_encoded(k, window, timestamp, f)
        })
    }

    /// [`SegmentedCore::update`] of the stored key `k`.
    fn update_encoded(
        &mut self,
        k: &[u8],
        window: L::Window,
        timestamp: i64,
        f: &mut dyn FnMut(Option<V>) -> V,
    ) -> Result<(), StateError>
    where
        V: Clone,
    {
        let name = self.config.name();
        let order = L::order(window);
        let segment = self.segment_id(L::time(window));
        let admitted = self.retention.admit(name, L::time(window));
        let logged = self.config.changelog_enabled().then_some(timestamp);
        // An entry the cache holds is read and rewritten in place, in one lookup.
        let in_cache = self
            .cache
            .rewrite(segment, k, order, logged, size_of::<V>(), |slot| {
                if admitted {
                    let current = slot.take();
                    *slot = Some(f(current));
                } else {
                    f(slot.clone());
                }
                admitted
            });
        if in_cache.is_some() {
            return self.spill_if_over();
        }
        let current = match self.engine_segment(segment) {
            None => None,
            Some(ks) => ks.get(L::engine_key(k, window)).map_err(engine_err(name))?,
        };
        let current = current
            .as_deref()
            .map(|v| decode_stored(&*self.value_codec, v, "value", name, self.keys.shown(k)))
            .transpose()?;
        let value = f(current);
        if !admitted {
            return Ok(());
        }
        let weight = self.weigh(k, &value)?;
        self.write_value(k, window, Some((value, weight)), logged);
        self.spill_if_over()
    }

    /// The value of (key, window).
    pub(crate) fn fetch(&self, key: &K, window: L::Window) -> Result<Option<V>, StateError>
    where
        V: Clone,
    {
        let k = encode_key(&self.keys, key, self.config.name(), "fetch")?;
        self.get_raw(&k, window)?
            .map(|found| match found {
                Found::Cached(v) => Ok(v.clone()),
                Found::Engine(b) => self.owned(&k, Seen::Engine(&b)),
            })
            .transpose()
    }

    /// The value `seen` under stored key `k`, owned: the cache's cloned, the engine's
    /// decoded.
    fn owned(&self, k: &[u8], seen: Seen<'_, &V>) -> Result<V, StateError>
    where
        V: Clone,
    {
        match seen {
            Seen::Cached(v) => Ok(v.clone()),
            Seen::Engine(b) => decode_stored(
                &*self.value_codec,
                b,
                "value",
                self.config.name(),
                self.keys.shown(k),
            ),
        }
    }

    /// Removes (key, window) as a live write at `timestamp`.
    pub(crate) fn delete(
        &mut self,
        key: &K,
        window: L::Window,
        timestamp: i64,
    ) -> Result<(), StateError> {
        let k = encode_key(&self.keys, key, self.config.name(), "delete")?;
        let logged = self.logged(timestamp);
        self.write_value(&k, window, None, logged);
        self.spill_if_over()
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
    ) -> Result<Vec<(L::Window, V)>, StateError>
    where
        V: Clone,
    {
        let k = encode_key(&self.keys, key, self.config.name(), "a key range query")?;
        let mut out = Vec::new();
        self.visit_key_range(&k, segments, from, to, |w, v| {
            if keep(w) {
                out.push((w, self.owned(&k, v)?));
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Calls `f` with each entry of `key` with window in `from..=to` (by time: the windows'
    /// order on disk), or newest first if `backward`, until `f` breaks; a value is decoded
    /// only when visited, and a segment the engine has nothing of is read from the cache
    /// alone.
    pub(crate) fn for_each_in_key_range(
        &self,
        key: &K,
        from: L::Window,
        to: L::Window,
        backward: bool,
        f: &mut dyn FnMut(L::Window, V) -> ControlFlow<()>,
    ) -> Result<(), StateError>
    where
        V: Clone,
    {
        let name = self.config.name();
        let k = encode_key(&self.keys, key, name, "a key range query")?;
        if L::order(from) > L::order(to) {
            return Ok(());
        }
        if !backward {
            let mut done = false;
            let segments = self.segments_between(L::time(from), L::time(to));
            return self.visit_key_range(&k, segments, from, to, |w, v| {
                if !done {
                    done = f(w, self.owned(&k, v)?).is_break();
                }
                Ok(())
            });
        }
        let (lo, hi) = (L::order(from), L::order(to));
        let mut rows: Vec<(L::Window, V)> = Vec::new();
        let segments = self.segment_ids(self.segments_between(L::time(from), L::time(to)));
        for id in segments.into_iter().rev() {
            if self.engine_segment(id).is_none() {
                for (w, v) in self.cache.windows(id, &k, lo, hi).rev() {
                    if let Some(v) = v
                        && f(L::window_of(*w), v.clone()).is_break()
                    {
                        return Ok(());
                    }
                }
                continue;
            }
            // Merged forwards, then visited backwards.
            rows.clear();
            self.visit_key_range(&k, id..=id, from, to, |w, v| {
                rows.push((w, self.owned(&k, v)?));
                Ok(())
            })?;
            for (w, v) in rows.drain(..).rev() {
                if f(w, v).is_break() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Replaces every existing entry of `key` with window in `from..=to` with `f(window,
    /// value)`, each a live write at `timestamp`: the key is encoded once and each value
    /// straight into the cache. An expired window is left as it is (counted, `f` not
    /// called), as [`SegmentedCore::put`] would.
    pub(crate) fn update_key_range(
        &mut self,
        key: &K,
        from: L::Window,
        to: L::Window,
        timestamp: i64,
        f: &mut dyn FnMut(L::Window, V) -> V,
    ) -> Result<(), StateError>
    where
        V: Clone,
    {
        self.with_key(key, "update_key_range", |core, k| {
            core.update_key_range_encoded(k, from, to, timestamp, f)
        })
    }

    /// [`SegmentedCore::update_key_range`] of the stored key `k`.
    fn update_key_range_encoded(
        &mut self,
        k: &[u8],
        from: L::Window,
        to: L::Window,
        timestamp: i64,
        f: &mut dyn FnMut(L::Window, V) -> V,
    ) -> Result<(), StateError>
    where
        V: Clone,
    {
        if L::order(from) > L::order(to) {
            return Ok(());
        }
        let mut found = Vec::new();
        let segments = self.segments_between(L::time(from), L::time(to));
        self.visit_key_range(k, segments, from, to, |w, v| {
            found.push((w, self.owned(k, v)?));
            Ok(())
        })?;
        let logged = self.logged(timestamp);
        for (window, value) in found {
            if !self.retention.admit(self.config.name(), L::time(window)) {
                continue;
            }
            let value = f(window, value);
            self.store_value(k, window, value, logged)?;
        }
        Ok(())
    }

    /// Visits the entries of encoded key `k` in `segments` with windows in `from..=to` (in
    /// the windows' order on disk), each segment's cached windows merged over the engine's;
    /// the engine is not read for a segment the cache knows it has nothing of.
    fn visit_key_range(
        &self,
        k: &[u8],
        segments: impl RangeBounds<i64>,
        from: L::Window,
        to: L::Window,
        mut visit: impl FnMut(L::Window, Seen<'_, &V>) -> Result<(), StateError>,
    ) -> Result<(), StateError> {
        let name = self.config.name();
        let (lo, hi) = (L::order(from), L::order(to));
        if lo > hi {
            return Ok(());
        }
        let mut engine_range = None;
        for id in self.segment_ids(segments) {
            let cached = self.cache.windows(id, k, lo, hi);
            let Some(ks) = self.engine_segment(id) else {
                for (w, v) in cached {
                    if let Some(v) = v {
                        visit(L::window_of(*w), Seen::Cached(v))?;
                    }
                }
                continue;
            };
            let (elo, ehi) =
                engine_range.get_or_insert_with(|| (L::engine_key(k, from), L::engine_key(k, to)));
            // Longer keys sharing the prefix fall in the byte range: skipped.
            let engine =
                ks.range(elo.as_slice()..=ehi.as_slice())
                    .filter_map(|g| match g.into_inner() {
                        Err(e) => Some(Err(engine_err(name)(e))),
                        Ok((ek, v)) => match L::split(&ek) {
                            Some((kb, w)) if kb == k => Some(Ok((L::order(w), v))),
                            _ => None,
                        },
                    });
            merge(engine, cached, |w: &L::Order, v| visit(L::window_of(*w), v))?;
        }
        Ok(())
    }

    /// Every entry whose time is in `from..=to`, decoded, in no particular order (the
    /// emission pass; the store sorts the decoded entries, which costs no more than sorting
    /// their bytes would, even where the stored keys sort as the keys).
    pub(crate) fn all_between(
        &self,
        from: i64,
        to: i64,
    ) -> Result<Vec<(L::Window, K, V)>, StateError>
    where
        V: Clone,
    {
        if from > to {
            return Ok(Vec::new());
        }
        let name = self.config.name();
        let mut rows = Vec::new();
        let within = |w: L::Window| (from..=to).contains(&L::time(w));
        for id in self.segment_ids(self.segments_between(from, to)) {
            // The engine's entries the cache does not shadow, then the cache's: the sort
            // below orders them.
            if let Some(ks) = self.engine_segment(id) {
                for g in ks.iter() {
                    let (ek, v) = g.into_inner().map_err(engine_err(name))?;
                    if let Some((kb, w)) = L::split(&ek)
                        && within(w)
                        && self.cache.get(id, kb, L::order(w)).is_none()
                    {
                        rows.push((w, kb.to_vec(), self.owned(kb, Seen::Engine(&v))?));
                    }
                }
            }
            for (kb, order, v) in self.cache.entries_in(id) {
                let w = L::window_of(order);
                if let Some(v) = v
                    && within(w)
                {
                    rows.push((w, kb.to_vec(), v.clone()));
                }
            }
        }
        rows.into_iter()
            .map(|(w, kb, value)| {
                let key = decode_stored(&self.keys, &kb, "key", name, self.keys.shown(&kb))?;
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

    /// The value of (encoded key, window), from the cache or the engine.
    fn get_raw(&self, key: &[u8], window: L::Window) -> Result<Option<Found<'_, V>>, StateError> {
        let segment = self.segment_id(L::time(window));
        if let Some(cached) = self.cache.get(segment, key, L::order(window)) {
            return Ok(cached.map(Found::Cached));
        }
        match self.engine_segment(segment) {
            None => Ok(None),
            Some(ks) => Ok(ks
                .get(L::engine_key(key, window))
                .map_err(engine_err(self.config.name()))?
                .map(Found::Engine)),
        }
    }

    /// The engine's keyspace of `segment`, unless the cache knows the engine has nothing of
    /// it.
    fn engine_segment(&self, segment: i64) -> Option<&fjall::Keyspace> {
        if self.cache.engine_may_hold(segment) {
            self.segments.get(segment)
        } else {
            None
        }
    }

    /// Caches `value` with its weight (`None`: removes) under (stored key, window) as a
    /// write at `logged`; the caller then spills if the cache is over its bound.
    fn write_value(
        &mut self,
        key: &[u8],
        window: L::Window,
        value: Option<(V, usize)>,
        logged: Option<i64>,
    ) {
        let segment = self.segment_id(L::time(window));
        let segments = &self.segments;
        self.cache
            .write(segment, key, L::order(window), value, logged, || {
                segments.get(segment).is_some()
            });
    }

    /// Past its bound, the cache lets go of its oldest windows (see [`WindowCache::cut_to`])
    /// down to [`SPILL_TO_PERCENT`] of it, writing their dirty entries to the engine first.
    fn spill_if_over(&mut self) -> Result<(), StateError> {
        if self.cache.is_over() {
            let cut = self
                .cache
                .cut_to(self.cache.max_bytes() / 100 * SPILL_TO_PERCENT);
            self.write_back_where(|segment, w| cut.covers(segment, w))?;
            self.cache.evict(cut);
        }
        Ok(())
    }

    /// Writes every dirty entry of the cache to the engine and marks them clean (a close, a
    /// bulk restore). All or nothing: on an engine error they stay dirty.
    fn write_back(&mut self) -> Result<(), StateError> {
        if self.cache.dirty_len() == 0 {
            return Ok(());
        }
        self.write_back_where(|_, _| true)?;
        self.cache.mark_clean();
        Ok(())
    }

    /// Writes the cache's dirty entries that `take` selects (by segment and window) to the
    /// engine, one sorted table per segment; the entries stay in the cache as they are.
    /// A failure part-way leaves them all dirty: writing an already written segment again
    /// is harmless (the same values, newer).
    fn write_back_where(&mut self, take: impl Fn(i64, L::Order) -> bool) -> Result<(), StateError> {
        let name = self.config.name();
        let mut tables: Vec<(i64, Vec<(Vec<u8>, Option<Vec<u8>>)>)> = Vec::new();
        for segment in self.cache.segment_ids() {
            let mut rows = Vec::new();
            for (k, w, v) in self.cache.dirty_in(segment) {
                if !take(segment, w) {
                    continue;
                }
                let value = v
                    .map(|v| encode_value(&*self.value_codec, v, name, self.keys.shown(k)))
                    .transpose()?;
                rows.push((L::engine_key(k, L::window_of(w)), value));
            }
            if !rows.is_empty() {
                tables.push((segment, rows));
            }
        }
        for (segment, rows) in &mut tables {
            if rows.iter().any(|(_, v)| v.is_some()) {
                self.segments.get_or_create(*segment)?;
            }
            if let Some(ks) = self.segments.get(*segment) {
                rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                let sorted = rows.iter().map(|(k, v)| (k.as_slice(), v.as_deref()));
                write_sorted(ks, sorted, name)?;
            }
        }
        Ok(())
    }

    // What every segmented store does, handed over by `delegate_to_segmented_core!`.

    pub(crate) fn name(&self) -> &str {
        self.config.name()
    }

    pub(crate) fn changelog_enabled(&self) -> bool {
        self.config.changelog_enabled()
    }

    /// One record per dirty entry, its stored value or a tombstone, in id order ((start,
    /// key) or (key, end, start), as the in-memory engine writes them): by the stored keys'
    /// bytes where they sort as the keys, otherwise by the keys, each decoded once here.
    /// All or nothing: on an error `out` is left as it was and the entries stay dirty.
    pub(crate) fn flush_changelog(&mut self, out: &mut ChangelogBatch) -> Result<(), StateError>
    where
        K: Ord,
    {
        let logged = self.cache.logged_keys();
        out.reserve(logged.len());
        let first = out.len();
        let written = if self.keys.by_bytes() {
            let mut ids: Vec<(L::Id<&[u8]>, i64)> = logged
                .into_iter()
                .map(|(_, key, w, timestamp)| (L::id(key, L::window_of(w)), timestamp))
                .collect();
            ids.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            self.write_flushed(
                ids.iter().map(|(id, t)| (*L::key(id), L::window(id), *t)),
                out,
            )
        } else {
            let name = self.config.name();
            let decoded: Result<Vec<(L::Id<K>, &[u8], i64)>, StateError> = logged
                .into_iter()
                .map(|(_, key, w, timestamp)| {
                    let k = decode_stored(&self.keys, key, "key", name, self.keys.shown(key))?;
                    Ok((L::id(k, L::window_of(w)), key, timestamp))
                })
                .collect();
            decoded.and_then(|mut ids| {
                ids.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                self.write_flushed(ids.iter().map(|(id, k, t)| (*k, L::window(id), *t)), out)
            })
        };
        if let Err(e) = written {
            out.truncate(first);
            return Err(e);
        }
        self.cache.clear_logged();
        Ok(())
    }

    /// Appends a record per (stored key, window, timestamp), with the changelog's key (the
    /// key's encoding, then the window) and the entry's value or a tombstone.
    fn write_flushed<'k>(
        &self,
        records: impl Iterator<Item = (&'k [u8], L::Window, i64)>,
        out: &mut ChangelogBatch,
    ) -> Result<(), StateError> {
        let name = self.config.name();
        let mut record_key = Vec::new();
        let mut encoded = Vec::new();
        for (key, window, timestamp) in records {
            record_key.clear();
            record_key.reserve(key.len() + L::KEY_SUFFIX);
            self.keys.push_encoded(key, &mut record_key);
            L::push_key_suffix(window, &mut record_key);
            let value = match self.get_raw(key, window)? {
                None => None,
                Some(Found::Engine(b)) => Some(b),
                Some(Found::Cached(v)) => {
                    encoded.clear();
                    self.value_codec.encode(v, &mut encoded).map_err(|e| {
                        StateError::encode_value(name, &self.keys.shown(key).encoding(), e)
                    })?;
                    out.push(&record_key, Some(&encoded), timestamp);
                    continue;
                }
            };
            out.push(&record_key, value.as_deref(), timestamp);
        }
        Ok(())
    }

    pub(crate) fn dirty_keys(&self) -> usize {
        self.cache.logged_len()
    }

    pub(crate) fn apply_changelog(&mut self, entry: &ChangelogEntry) -> Result<(), StateError> {
        let name = self.config.name();
        let (key, window) = L::restored(entry, name)?;
        validate_entry(self.keys.changelog_codec(), key, "key", name, entry)?;
        let mut stored = Vec::with_capacity(key.len());
        self.keys.push_stored(key, &mut stored);
        match &entry.value {
            None => self.write_value(&stored, window, None, None),
            Some(v) => {
                let value = self
                    .value_codec
                    .decode(v)
                    .map_err(|e| entry.corrupt(name, format!("value does not decode: {e}")))?;
                if !self.retention.restores(L::time(window)) {
                    return Ok(());
                }
                let weight = v.len().max(size_of::<V>());
                self.write_value(&stored, window, Some((value, weight)), None);
            }
        }
        self.spill_if_over()
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
                        self.keys.push_stored(key, out);
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
        validate_record(self.keys.changelog_codec(), key, "key", name, record)?;
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
            || self.engine_segment(segment).is_some_and(|ks| {
                ks.iter().any(|g| {
                    g.key().is_ok_and(|ek| match L::split(&ek) {
                        Some((k, w)) => {
                            !matches!(self.cache.get(segment, k, L::order(w)), Some(None))
                        }
                        None => true,
                    })
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

    /// The value the cache holds for (key, window), for tests of what a spill keeps.
    #[cfg(test)]
    pub(crate) fn cached_value(&self, key: &K, window: L::Window) -> Option<V>
    where
        V: Clone,
    {
        let k = encode_key(&self.keys, key, self.config.name(), "a test").ok()?;
        let segment = self.segment_id(L::time(window));
        self.cache
            .get(segment, &k, L::order(window))
            .flatten()
            .cloned()
    }

    /// The engine's own keys (not the cache's), segment by segment in engine order, for
    /// tests of what the engine keeps.
    #[cfg(test)]
    pub(crate) fn engine_keys(&self) -> Vec<Vec<u8>> {
        self.segment_ids(..)
            .into_iter()
            .filter_map(|id| self.segments.get(id))
            .flat_map(|ks| ks.iter().map(|g| g.key().unwrap().to_vec()))
            .collect()
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
