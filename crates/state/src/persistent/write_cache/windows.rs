//! The write-back cache of a window or session store, laid out as the in-memory engine
//! lays out its segments, holding the task's typed values.
//!
//! Owns [`WindowCache`]: per segment, a hash map from the encoded key to that key's windows
//! (ascending by the window's order, one held inline), each a [`Cached`] entry of the
//! store's value type with what it weighs against the bound; the keys it has let go of that
//! the changelog still owes, in the same layout; the byte bound; and, per segment, whether
//! the engine may hold entries of it. A point read or write is one hash of the key plus a
//! search among its few windows, and one key's time range is a slice of its windows:
//! nothing compares long byte keys. Order across keys exists nowhere here; the store sorts
//! where it needs one (the write-back, the changelog flush, a scan of every key).
//!
//! Why typed values: a stream task rewrites the same windows many times an epoch (a count,
//! an aggregate); holding its values as the task made them saves a decode and an encode per
//! record, and the store encodes a value only when the changelog or the engine needs its
//! bytes (the barrier's flush, a write-back). What a value weighs against the bound is what
//! the store says when it first caches the entry (its encoded size); a rewrite in place
//! keeps that weight, so a value that grows in place is counted at its first size until the
//! entry is cached anew.
//!
//! Whether the engine may hold a segment: decided by the store when the segment's first
//! entry arrives (the engine has nothing of a segment it never wrote), set again by
//! [`WindowCache::mark_clean`] (the store has just written the segments back). A store
//! reads nothing from the engine for a segment the cache knows it has nothing of.
//!
//! The contract of [`super`] holds: a (key, window) in the cache shadows the engine, and
//! the dirty and logged counts are kept as [`super::Counts`] says.
//!
//! This module never knows the engine, the codecs, the changelog or how a window is encoded.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use smallvec::SmallVec;

use super::{Cached, Counts, ENTRY_OVERHEAD};

/// One key's windows in a segment, ascending; one window is held inline.
type Windows<W, T> = SmallVec<[(W, T); 1]>;

/// Encoded key → that key's windows.
type ByKey<W, T> = HashMap<Box<[u8]>, Windows<W, T>, foldhash::fast::RandomState>;

/// Where `w` is among `windows` (ascending).
fn find<W: Ord, T>(windows: &[(W, T)], w: &W) -> Result<usize, usize> {
    windows.binary_search_by(|(x, _)| x.cmp(w))
}

/// The windows within `from..=to` (ascending) of an ascending list.
fn within<'a, W: Ord, T>(windows: &'a [(W, T)], from: &W, to: &W) -> &'a [(W, T)] {
    let lo = windows.partition_point(|(w, _)| w < from);
    let hi = windows.partition_point(|(w, _)| w <= to);
    windows.get(lo..hi).unwrap_or_default()
}

/// A cached window: its entry and what its value weighs (0 for a deletion).
#[derive(Debug)]
struct Slot<V> {
    entry: Cached<V>,
    weight: usize,
}

/// One segment's entries.
#[derive(Debug)]
struct Segment<W, V> {
    keys: ByKey<W, Slot<V>>,
    /// Whether the engine may hold entries of this segment.
    engine: bool,
}

/// The cache of one window or session store (see the module docs). `W` orders a key's
/// windows as the engine's bytes do; `V` is the store's value.
#[derive(Debug)]
pub(crate) struct WindowCache<W, V> {
    segments: BTreeMap<i64, Segment<W, V>>,
    counts: Counts,
    entries: usize,
    /// Keys written live since the last changelog flush whose entries the cache has let go
    /// of (emptied past its bound, or their segment dropped): their values are the engine's.
    spilled: BTreeMap<i64, ByKey<W, i64>>,
    spilled_len: usize,
    bytes: usize,
    max_bytes: usize,
}

/// What an entry of `key` whose value weighs `weight` costs the bound.
fn entry_cost<W>(key: &[u8], weight: usize) -> usize {
    key.len() + weight + ENTRY_OVERHEAD + size_of::<W>()
}

/// Which entries an eviction takes: every entry of the segments below `below`, and in
/// `partial`'s segment those whose window orders at or before its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut<W> {
    below: i64,
    partial: Option<(i64, W)>,
}

impl<W: Ord + Copy> Cut<W> {
    /// Whether the cut takes the entry of `window` in `segment`.
    pub(crate) fn covers(&self, segment: i64, window: W) -> bool {
        segment < self.below
            || self
                .partial
                .is_some_and(|(s, through)| s == segment && window <= through)
    }
}

impl<W: Ord + Copy + Hash, V> WindowCache<W, V> {
    /// An empty cache bounded by `max_bytes`.
    pub(crate) fn new(max_bytes: usize) -> Self {
        Self {
            segments: BTreeMap::new(),
            counts: Counts::default(),
            entries: 0,
            spilled: BTreeMap::new(),
            spilled_len: 0,
            bytes: 0,
            max_bytes,
        }
    }

    /// `Some(value or None if deleted)` if the cache knows (`key`, `window`) in `segment`;
    /// `None` if the engine must be asked.
    pub(crate) fn get(&self, segment: i64, key: &[u8], window: W) -> Option<Option<&V>> {
        let windows = self.segments.get(&segment)?.keys.get(key)?;
        let i = find(windows, &window).ok()?;
        Some(windows[i].1.entry.value.as_ref())
    }

    /// Whether the engine may hold entries of `segment`: `false` only for a segment the
    /// cache holds since the engine had nothing of it.
    pub(crate) fn engine_may_hold(&self, segment: i64) -> bool {
        self.segments.get(&segment).is_none_or(|s| s.engine)
    }

    /// Writes `value` with its weight (`None`: a deletion) under (`key`, `window`) in
    /// `segment`, dirty; `logged` is the timestamp of a live write the changelog must carry
    /// (`None` for a restored one). `engine` says, if the segment is new to the cache,
    /// whether the engine may hold entries of it.
    pub(crate) fn write(
        &mut self,
        segment: i64,
        key: &[u8],
        window: W,
        value: Option<(V, usize)>,
        logged: Option<i64>,
        engine: impl FnOnce() -> bool,
    ) {
        let (value, weight) = value.map_or((None, 0), |(v, w)| (Some(v), w));
        let seg = self.segments.entry(segment).or_insert_with(|| Segment {
            keys: ByKey::default(),
            engine: engine(),
        });
        let windows = match seg.keys.get_mut(key) {
            Some(windows) => windows,
            None => seg.keys.entry(key.into()).or_default(),
        };
        let slot = match find(windows, &window) {
            Ok(i) => {
                let slot = &mut windows[i].1;
                self.bytes -= entry_cost::<W>(key, slot.weight);
                slot.entry.value = value;
                slot.weight = weight;
                slot
            }
            Err(i) => {
                let entry = Cached {
                    value,
                    dirty: false,
                    logged: None,
                };
                windows.insert(i, (window, Slot { entry, weight }));
                self.entries += 1;
                &mut windows[i].1
            }
        };
        self.bytes += entry_cost::<W>(key, weight);
        if self.counts.written(&mut slot.entry, logged) {
            self.unspill(segment, key, window);
        }
    }

    /// Rewrites, in place, the value of (`key`, `window`) in `segment` if the cache holds it
    /// (one lookup): `update` gets the value (`None` if deleted) and returns whether it
    /// wrote, which counts the entry as written at `logged`. `None` if the cache does not
    /// hold it (`update` is not called). A rewrite keeps the entry's weight (a deletion
    /// rewritten to a value weighs `fallback`).
    pub(crate) fn rewrite(
        &mut self,
        segment: i64,
        key: &[u8],
        window: W,
        logged: Option<i64>,
        fallback: usize,
        update: impl FnOnce(&mut Option<V>) -> bool,
    ) -> Option<()> {
        let windows = self
            .segments
            .get_mut(&segment)
            .and_then(|s| s.keys.get_mut(key))?;
        let i = find(windows, &window).ok()?;
        let slot = &mut windows[i].1;
        if !update(&mut slot.entry.value) {
            return Some(());
        }
        let weight = match (&slot.entry.value, slot.weight) {
            (None, _) => 0,
            (Some(_), 0) => fallback,
            (Some(_), w) => w,
        };
        self.bytes = self.bytes - entry_cost::<W>(key, slot.weight) + entry_cost::<W>(key, weight);
        slot.weight = weight;
        if self.counts.written(&mut slot.entry, logged) {
            self.unspill(segment, key, window);
        }
        Some(())
    }

    /// Forgets that the changelog owes (`key`, `window`) of `segment` as a spilled key: an
    /// entry carries it now.
    fn unspill(&mut self, segment: i64, key: &[u8], window: W) {
        if self.spilled_len == 0 {
            return;
        }
        let Some(keys) = self.spilled.get_mut(&segment) else {
            return;
        };
        let Some(windows) = keys.get_mut(key) else {
            return;
        };
        if let Ok(i) = find(windows, &window) {
            windows.remove(i);
            self.spilled_len -= 1;
            if windows.is_empty() {
                keys.remove(key);
            }
        }
    }

    /// Whether the cache holds more than its bound.
    pub(crate) fn is_over(&self) -> bool {
        self.bytes > self.max_bytes
    }

    /// The bound.
    pub(crate) fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The oldest entries whose eviction leaves at most `target` bytes: whole segments from
    /// the oldest, then, in the first segment that must stay, its entries by window order
    /// (every entry of the last window taken goes with it). A stream task writes its newest
    /// windows, so the oldest are those it is done with: closed, emitted, waiting for their
    /// segment to expire. Entries of one window across keys go together.
    pub(crate) fn cut_to(&self, target: usize) -> Cut<W> {
        let mut bytes = self.bytes;
        for (&id, seg) in &self.segments {
            if bytes <= target {
                return Cut {
                    below: id,
                    partial: None,
                };
            }
            let costs = seg.keys.iter().flat_map(|(k, windows)| {
                windows
                    .iter()
                    .map(move |(w, s)| (*w, entry_cost::<W>(k, s.weight)))
            });
            let seg_bytes: usize = costs.clone().map(|(_, c)| c).sum();
            if bytes - seg_bytes > target {
                bytes -= seg_bytes;
                continue;
            }
            let mut by_window: Vec<(W, usize)> = costs.collect();
            by_window.sort_unstable_by_key(|(w, _)| *w);
            let mut through = None;
            for (w, cost) in by_window {
                if bytes <= target && through != Some(w) {
                    break;
                }
                bytes -= cost;
                through = Some(w);
            }
            return Cut {
                below: id,
                partial: through.map(|w| (id, w)),
            };
        }
        Cut {
            below: i64::MAX,
            partial: None,
        }
    }

    /// Lets go of the entries `cut` takes (the store has written their dirty ones back):
    /// what they owe the changelog stays owed, and the engine may now hold entries of the
    /// segment cut through.
    pub(crate) fn evict(&mut self, cut: Cut<W>) {
        let kept = self.segments.split_off(&cut.below);
        let taken = std::mem::replace(&mut self.segments, kept);
        for (id, seg) in taken {
            self.forget_segment(id, seg);
        }
        let Some((id, through)) = cut.partial else {
            return;
        };
        let Some(mut seg) = self.segments.remove(&id) else {
            return;
        };
        seg.engine = true;
        let mut owed: Vec<(Box<[u8]>, W, i64)> = Vec::new();
        seg.keys.retain(|key, windows| {
            let n = windows.partition_point(|(w, _)| *w <= through);
            for (w, slot) in windows.drain(..n) {
                self.bytes -= entry_cost::<W>(key, slot.weight);
                self.counts.forget(&slot.entry);
                self.entries -= 1;
                if let Some(ts) = slot.entry.logged {
                    owed.push((key.clone(), w, ts));
                }
            }
            !windows.is_empty()
        });
        for (key, w, ts) in owed {
            self.owe(id, key, w, ts);
        }
        if !seg.keys.is_empty() {
            self.segments.insert(id, seg);
        }
    }

    /// Entries the engine does not have yet.
    pub(crate) fn dirty_len(&self) -> usize {
        self.counts.dirty
    }

    /// Keys written live since the last changelog flush.
    pub(crate) fn logged_len(&self) -> usize {
        self.counts.logged + self.spilled_len
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.entries
    }

    /// The segments the cache holds entries of, ascending.
    pub(crate) fn segment_ids(&self) -> impl Iterator<Item = i64> + '_ {
        self.segments.keys().copied()
    }

    /// The entries of `segment`, in no order.
    fn cached_in(&self, segment: i64) -> impl Iterator<Item = (&[u8], W, &Cached<V>)> + '_ {
        self.segments
            .get(&segment)
            .into_iter()
            .flat_map(|s| s.keys.iter())
            .flat_map(|(key, windows)| windows.iter().map(move |(w, s)| (&**key, *w, &s.entry)))
    }

    /// The entries of `segment`, in no order: (key, window, value or `None` if deleted).
    pub(crate) fn entries_in(
        &self,
        segment: i64,
    ) -> impl Iterator<Item = (&[u8], W, Option<&V>)> + '_ {
        self.cached_in(segment)
            .map(|(key, w, c)| (key, w, c.value.as_ref()))
    }

    /// The entries of `key` in `segment` with windows in `from..=to`, ascending.
    pub(crate) fn windows(
        &self,
        segment: i64,
        key: &[u8],
        from: W,
        to: W,
    ) -> impl DoubleEndedIterator<Item = (&W, Option<&V>)> + '_ {
        let windows = self
            .segments
            .get(&segment)
            .and_then(|s| s.keys.get(key))
            .map_or(&[][..], |w| within(w, &from, &to));
        windows.iter().map(|(w, s)| (w, s.entry.value.as_ref()))
    }

    /// Whether `segment` holds a value (not only deletions).
    pub(crate) fn has_value_in(&self, segment: i64) -> bool {
        self.entries_in(segment).any(|(_, _, v)| v.is_some())
    }

    /// The dirty entries of `segment`, in no order.
    pub(crate) fn dirty_in(
        &self,
        segment: i64,
    ) -> impl Iterator<Item = (&[u8], W, Option<&V>)> + '_ {
        self.cached_in(segment)
            .filter(|(_, _, c)| c.dirty)
            .map(|(key, w, c)| (key, w, c.value.as_ref()))
    }

    /// Marks every entry clean: the engine has them all now, so it may hold every segment.
    pub(crate) fn mark_clean(&mut self) {
        for seg in self.segments.values_mut() {
            seg.engine = true;
            for (_, slot) in seg.keys.values_mut().flatten() {
                slot.entry.dirty = false;
            }
        }
        self.counts.dirty = 0;
    }

    /// The keys written live since the last changelog flush, in no order: (segment, key,
    /// window, the last write's timestamp).
    pub(crate) fn logged_keys(&self) -> Vec<(i64, &[u8], W, i64)> {
        let mut out = Vec::with_capacity(self.logged_len());
        if self.counts.logged > 0 {
            for (&id, seg) in &self.segments {
                for (key, windows) in &seg.keys {
                    for (w, s) in windows {
                        if let Some(ts) = s.entry.logged {
                            out.push((id, &**key, *w, ts));
                        }
                    }
                }
            }
        }
        for (&id, keys) in &self.spilled {
            for (key, windows) in keys {
                out.extend(windows.iter().map(|(w, ts)| (id, &**key, *w, *ts)));
            }
        }
        out
    }

    /// Forgets which keys the changelog must carry (it has them now).
    pub(crate) fn clear_logged(&mut self) {
        if self.counts.logged > 0 {
            for (_, slot) in self
                .segments
                .values_mut()
                .flat_map(|s| s.keys.values_mut())
                .flatten()
            {
                slot.entry.logged = None;
            }
        }
        self.counts.logged = 0;
        self.spilled.clear();
        self.spilled_len = 0;
    }

    /// Forgets every entry (keeping which keys the changelog must carry). Call only when
    /// none is dirty.
    pub(crate) fn clear(&mut self) {
        debug_assert_eq!(self.counts.dirty, 0, "a dirty entry would be lost");
        for (id, seg) in std::mem::take(&mut self.segments) {
            self.spill(id, seg);
        }
        self.bytes = 0;
        self.entries = 0;
        self.counts.logged = 0;
    }

    /// Keeps what the entries of `seg` owe the changelog among the spilled keys.
    fn spill(&mut self, id: i64, seg: Segment<W, V>) {
        for (key, windows) in seg.keys {
            for (w, slot) in windows {
                if let Some(ts) = slot.entry.logged {
                    self.owe(id, key.clone(), w, ts);
                }
            }
        }
    }

    /// Notes that the changelog owes (`key`, `window`) of `segment`, last written at `ts`,
    /// though the cache lets go of its entry.
    fn owe(&mut self, segment: i64, key: Box<[u8]>, window: W, ts: i64) {
        let spilled = self
            .spilled
            .entry(segment)
            .or_default()
            .entry(key)
            .or_default();
        match find(spilled, &window) {
            Ok(i) => spilled[i].1 = ts,
            Err(i) => {
                spilled.insert(i, (window, ts));
                self.spilled_len += 1;
            }
        }
    }

    /// Lets go of a whole segment: its bytes and counts, and what it owes the changelog
    /// stays owed.
    fn forget_segment(&mut self, id: i64, seg: Segment<W, V>) {
        for (key, windows) in &seg.keys {
            for (_, slot) in windows {
                self.bytes -= entry_cost::<W>(key, slot.weight);
                self.counts.forget(&slot.entry);
                self.entries -= 1;
            }
        }
        self.spill(id, seg);
    }

    /// Forgets the segments below `first_live` (the engine drops them too); what they owe
    /// the changelog stays owed.
    pub(crate) fn drop_below(&mut self, first_live: i64) {
        let live = self.segments.split_off(&first_live);
        let dropped = std::mem::replace(&mut self.segments, live);
        for (id, seg) in dropped {
            self.forget_segment(id, seg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Bytes = Vec<u8>;

    fn values(
        cache: &WindowCache<i64, Bytes>,
        segment: i64,
        key: &[u8],
    ) -> Vec<(i64, Option<Bytes>)> {
        cache
            .windows(segment, key, i64::MIN, i64::MAX)
            .map(|(w, v)| (*w, v.cloned()))
            .collect()
    }

    #[test]
    fn a_keys_windows_stay_ascending_and_a_range_is_a_slice_of_them() {
        let mut cache = WindowCache::new(1 << 20);
        for w in [30, 10, 20, 40] {
            cache.write(0, b"k", w, Some((vec![w as u8], 1)), None, || false);
        }
        cache.write(0, b"k", 20, None, None, || false);
        cache.write(0, b"k\x00", 25, Some((b"other".to_vec(), 5)), None, || {
            false
        });
        assert_eq!(
            values(&cache, 0, b"k"),
            vec![
                (10, Some(vec![10])),
                (20, None),
                (30, Some(vec![30])),
                (40, Some(vec![40]))
            ]
        );
        let got: Vec<i64> = cache.windows(0, b"k", 15, 30).map(|(w, _)| *w).collect();
        assert_eq!(got, vec![20, 30]);
        let back: Vec<i64> = cache
            .windows(0, b"k", 11, 40)
            .rev()
            .map(|(w, _)| *w)
            .collect();
        assert_eq!(back, vec![40, 30, 20]);
        assert_eq!(cache.windows(0, b"k", 31, 39).count(), 0);
        assert_eq!(cache.windows(0, b"k", 40, 10).count(), 0, "inverted");
        assert_eq!(cache.get(0, b"k", 20), Some(None));
        assert_eq!(cache.get(0, b"k", 21), None);
        assert_eq!(cache.get(1, b"k", 10), None);
        assert_eq!(cache.len(), 5);
    }

    #[test]
    fn the_engine_flag_is_decided_once_per_segment_and_set_by_a_write_back() {
        let mut cache = WindowCache::<i64, u64>::new(1 << 20);
        assert!(
            cache.engine_may_hold(0),
            "unknown to the cache: ask the engine"
        );
        cache.write(0, b"a", 1, Some((1, 8)), None, || false);
        cache.write(0, b"b", 1, Some((1, 8)), None, || panic!("asked twice"));
        cache.write(1, b"a", 1, Some((1, 8)), None, || true);
        assert!(!cache.engine_may_hold(0));
        assert!(cache.engine_may_hold(1));
        cache.mark_clean();
        assert!(cache.engine_may_hold(0), "written back: the engine has it");
        cache.clear();
        cache.write(0, b"a", 1, Some((2, 8)), None, || false);
        assert!(!cache.engine_may_hold(0), "asked again once emptied");
    }

    #[test]
    fn counts_bytes_and_owed_keys_follow_rewrites_spills_and_drops() {
        let mut cache = WindowCache::<i64, Bytes>::new(1 << 20);
        cache.write(1, b"a", 10, Some((b"1".to_vec(), 1)), Some(100), || false);
        cache.write(1, b"a", 10, Some((b"2".to_vec(), 1)), Some(101), || false);
        cache.write(1, b"a", 20, None, None, || false);
        cache.write(2, b"b", 30, Some((b"3".to_vec(), 1)), Some(102), || false);
        assert_eq!(
            (cache.dirty_len(), cache.len(), cache.logged_len()),
            (3, 3, 2)
        );
        let one = entry_cost::<i64>(b"a", 1);
        let bytes = one + entry_cost::<i64>(b"a", 0) + entry_cost::<i64>(b"b", 1);
        assert_eq!(cache.bytes, bytes, "a deletion weighs nothing");
        let rewritten = cache.rewrite(1, b"a", 10, Some(103), 7, |v| {
            assert_eq!(v.as_deref(), Some(&b"2"[..]));
            *v = Some(b"22".to_vec());
            true
        });
        assert_eq!(rewritten, Some(()));
        assert_eq!(cache.bytes, bytes, "a rewrite in place keeps the weight");
        assert_eq!(cache.rewrite(1, b"a", 11, None, 7, |_| true), None);
        cache.mark_clean();
        assert_eq!(cache.dirty_len(), 0);
        // A deletion rewritten to a value weighs the fallback.
        cache.rewrite(1, b"a", 20, None, 7, |v| {
            *v = Some(b"x".to_vec());
            true
        });
        assert_eq!(
            cache.bytes,
            bytes - entry_cost::<i64>(b"a", 0) + entry_cost::<i64>(b"a", 7)
        );
        cache.mark_clean();
        // Past the bound: emptied, still owing the two logged keys.
        cache.clear();
        assert_eq!((cache.len(), cache.bytes, cache.logged_len()), (0, 0, 2));
        // A live write of a spilled key carries it again: owed once, with the new time.
        cache.write(1, b"a", 10, Some((b"4".to_vec(), 1)), Some(104), || true);
        assert_eq!(cache.logged_len(), 2);
        let mut owed = cache.logged_keys();
        owed.sort();
        assert_eq!(owed, vec![(1, &b"a"[..], 10, 104), (2, &b"b"[..], 30, 102)]);
        // A dropped segment's entries go, but what they owe stays owed.
        cache.write(0, b"c", 5, Some((b"5".to_vec(), 1)), Some(105), || false);
        cache.drop_below(1);
        assert_eq!(cache.segment_ids().collect::<Vec<_>>(), vec![1]);
        assert_eq!(
            (cache.len(), cache.dirty_len(), cache.logged_len()),
            (1, 1, 3)
        );
        assert_eq!(cache.bytes, entry_cost::<i64>(b"a", 1));
        cache.clear_logged();
        assert_eq!(cache.logged_len(), 0);
        assert!(cache.logged_keys().is_empty());
    }

    #[test]
    fn a_declined_rewrite_leaves_the_entry_clean_and_unowed() {
        let mut cache = WindowCache::<i64, u64>::new(1 << 20);
        cache.write(0, b"k", 1, Some((5, 8)), None, || false);
        cache.mark_clean();
        let seen = cache.rewrite(0, b"k", 1, Some(2), 8, |v| {
            assert_eq!(*v, Some(5));
            false
        });
        assert_eq!(seen, Some(()));
        assert_eq!((cache.dirty_len(), cache.logged_len()), (0, 0));
        assert_eq!(cache.get(0, b"k", 1), Some(Some(&5)));
    }

    #[test]
    fn an_eviction_takes_the_oldest_windows_whole_and_keeps_what_they_owe() {
        let mut cache = WindowCache::<i64, u64>::new(1 << 20);
        // Segment 0: windows 0 and 10 of three keys; segment 1: window 60 of two keys.
        for key in [&b"a"[..], b"b", b"c"] {
            cache.write(0, key, 0, Some((1, 8)), Some(1), || false);
            cache.write(0, key, 10, Some((2, 8)), None, || false);
        }
        for key in [&b"a"[..], b"b"] {
            cache.write(1, key, 60, Some((3, 8)), Some(2), || false);
        }
        let one = entry_cost::<i64>(b"a", 8);
        assert_eq!(cache.bytes, 8 * one);
        // Down to 5 entries' worth: window 0 goes, for every key, and nothing newer.
        let cut = cache.cut_to(5 * one);
        assert!(cut.covers(0, 0) && !cut.covers(0, 10) && !cut.covers(1, 60));
        cache.evict(cut);
        assert_eq!((cache.len(), cache.bytes), (5, 5 * one));
        assert_eq!(cache.get(0, b"b", 0), None, "let go: the engine answers");
        assert_eq!(cache.get(0, b"b", 10), Some(Some(&2)));
        assert!(cache.engine_may_hold(0), "the engine has window 0 now");
        assert_eq!(cache.logged_len(), 5, "what window 0 owed stays owed");
        // Down to one entry: all of segment 0 and window 60 (both keys) go.
        let cut = cache.cut_to(one);
        assert!(cut.covers(0, 10) && cut.covers(1, 60));
        cache.evict(cut);
        assert_eq!((cache.len(), cache.bytes, cache.dirty_len()), (0, 0, 0));
        assert_eq!(cache.segment_ids().count(), 0);
        // Under the target already: nothing is taken.
        cache.write(2, b"a", 120, Some((4, 8)), None, || false);
        let cut = cache.cut_to(one);
        assert!(!cut.covers(2, 120));
        cache.evict(cut);
        assert_eq!(cache.len(), 1);
    }
}
