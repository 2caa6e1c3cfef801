//! In-memory window store.
//!
//! Layout: segment → key → that key's windows (sorted by start), plus, per segment, the number
//! of entries under each start. Key-first within a segment, so a key's windows are one lookup
//! and a contiguous slice: [`WindowStore::fetch_key_range`] and its cloning-free visitor
//! [`WindowStore::for_each_in_key_range`] (the stream-stream join's probe, the sliding
//! aggregation's window set) visit only the key's own windows, however many other keys share the time range. A key's
//! windows sit in a small vector holding one window inline, so a key with a single window in
//! a segment (tumbling windows) costs no extra allocation. The per-start counts let
//! [`WindowStore::fetch_all`] (the emission pass) skip a segment that has nothing in range
//! without scanning its keys; a segment that has scans its keys and sorts the hits' (start,
//! position found) pairs by start (a radix sort, stable) before it clones them out.
//! [`WindowStore::update_key_range`] folds into every window of a key in a time range in one
//! traversal (the sliding aggregation's per-record update).
//!
//! Owns that layout (one [`WindowSegment`]) and the window queries; segments, retention,
//! dirty tracking, the changelog and restore are the [`SegmentedCore`]'s.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::ControlFlow;

use smallvec::SmallVec;

use super::segmented::{Segment, SegmentedCore};
use super::{CLEAN, DirtyLog, Slot, time_sort};
use crate::codec::Codec;
use crate::error::StateError;
use crate::segments::SegmentedConfig;
use crate::store::{StoreConfig, WindowStore, delegate_to_segmented_core};
use crate::windowed::TimeWindowKind;

/// One key's windows in a segment, sorted by start; one window is held inline.
type Windows<V> = SmallVec<[(i64, Slot<V>); 1]>;

/// One retention segment: key → windows, and the entry count per start.
pub(crate) struct WindowSegment<K, V> {
    keys: BTreeMap<K, Windows<V>>,
    /// Entries per window start (no zero counts), for the emission pass.
    starts: BTreeMap<i64, u32>,
    entries: u64,
}

impl<K, V> Default for WindowSegment<K, V> {
    fn default() -> Self {
        Self {
            keys: BTreeMap::new(),
            starts: BTreeMap::new(),
            entries: 0,
        }
    }
}

impl<K, V> WindowSegment<K, V> {
    fn added(&mut self, start: i64) {
        *self.starts.entry(start).or_insert(0) += 1;
        self.entries += 1;
    }

    fn removed(&mut self, start: i64) {
        if let Some(n) = self.starts.get_mut(&start) {
            *n -= 1;
            if *n == 0 {
                self.starts.remove(&start);
            }
        }
        self.entries -= 1;
    }
}

impl<K: Ord + Clone, V> Segment<K, V> for WindowSegment<K, V> {
    type Kind = TimeWindowKind;

    fn len(&self) -> u64 {
        self.entries
    }

    #[inline]
    fn slot(&self, key: &K, start: i64) -> Option<&Slot<V>> {
        let windows = self.keys.get(key)?;
        let i = position(windows, start).ok()?;
        Some(&windows[i].1)
    }

    #[inline]
    fn slot_mut(&mut self, key: &K, start: i64) -> Option<&mut Slot<V>> {
        let windows = self.keys.get_mut(key)?;
        let i = position(windows, start).ok()?;
        Some(&mut windows[i].1)
    }

    #[inline]
    fn upsert(
        &mut self,
        key: Cow<'_, K>,
        start: i64,
        timestamp: Option<i64>,
        log: &mut DirtyLog<(i64, K)>,
        f: impl FnOnce(Option<V>) -> V,
    ) -> bool {
        let mut dirty = CLEAN;
        if let Some(windows) = self.keys.get_mut(key.as_ref()) {
            match position(windows, start) {
                Ok(i) => {
                    let (_, slot) = windows.remove(i);
                    dirty = slot.dirty;
                    if let Some(timestamp) = timestamp {
                        log.note(&mut dirty, timestamp, || (start, key.into_owned()));
                    }
                    let value = f(Some(slot.value));
                    windows.insert(i, (start, Slot { value, dirty }));
                    return false;
                }
                Err(i) => {
                    if let Some(timestamp) = timestamp {
                        log.note(&mut dirty, timestamp, || (start, key.into_owned()));
                    }
                    let value = f(None);
                    windows.insert(i, (start, Slot { value, dirty }));
                }
            }
        } else {
            if let Some(timestamp) = timestamp {
                log.note(&mut dirty, timestamp, || (start, key.as_ref().clone()));
            }
            let mut windows = Windows::new();
            windows.push((
                start,
                Slot {
                    value: f(None),
                    dirty,
                },
            ));
            self.keys.insert(key.into_owned(), windows);
        }
        self.added(start);
        true
    }

    fn remove(&mut self, key: &K, start: i64) -> Option<Slot<V>> {
        let windows = self.keys.get_mut(key)?;
        let i = position(windows, start).ok()?;
        let (_, old) = windows.remove(i);
        if windows.is_empty() {
            self.keys.remove(key);
        }
        self.removed(start);
        Some(old)
    }

    fn for_each_slot<'a>(&'a self, f: &mut dyn FnMut(&'a Slot<V>)) {
        for (_, slot) in self.keys.values().flatten() {
            f(slot);
        }
    }

    fn mark_all_clean(&mut self) {
        for (_, slot) in self.keys.values_mut().flatten() {
            slot.dirty = CLEAN;
        }
    }
}

impl<K: Ord + Clone, V> WindowSegment<K, V> {
    /// Replaces the windows of `key` at each of `starts` (ascending, all in this segment)
    /// with `f(start, current)`, finding the key once; a live write (`timestamp` given) is
    /// noted in `log`. Returns how many windows are new.
    fn upsert_many(
        &mut self,
        key: &K,
        starts: &[i64],
        timestamp: Option<i64>,
        log: &mut DirtyLog<(i64, K)>,
        f: &mut dyn FnMut(i64, Option<V>) -> V,
    ) -> u64 {
        let WindowSegment {
            keys,
            starts: counts,
            entries,
        } = self;
        let windows = match keys.get_mut(key) {
            Some(windows) => windows,
            None => keys.entry(key.clone()).or_default(),
        };
        let mut added = 0;
        for &start in starts {
            let mut dirty = CLEAN;
            match position(windows, start) {
                Ok(i) => {
                    let ((_, slot), last) = take_window(windows, i);
                    dirty = slot.dirty;
                    if let Some(timestamp) = timestamp {
                        log.note(&mut dirty, timestamp, || (start, key.clone()));
                    }
                    let value = f(start, Some(slot.value));
                    put_back(windows, i, last, (start, Slot { value, dirty }));
                }
                Err(i) => {
                    if let Some(timestamp) = timestamp {
                        log.note(&mut dirty, timestamp, || (start, key.clone()));
                    }
                    let value = f(start, None);
                    windows.insert(i, (start, Slot { value, dirty }));
                    *counts.entry(start).or_insert(0) += 1;
                    *entries += 1;
                    added += 1;
                }
            }
        }
        added
    }
}

/// Moves window `i` out of `windows` in O(1) (the last window takes its place; `i` is
/// refilled by [`put_back`]), so a fold can own the value without shifting the windows after
/// it twice. Returns the window and the index the last window had.
#[inline]
fn take_window<V>(windows: &mut Windows<V>, i: usize) -> ((i64, Slot<V>), usize) {
    let last = windows.len() - 1;
    (windows.swap_remove(i), last)
}

/// Puts `window` back at `i` after [`take_window`], restoring the order by start.
#[inline]
fn put_back<V>(windows: &mut Windows<V>, i: usize, last: usize, window: (i64, Slot<V>)) {
    windows.push(window);
    windows.swap(i, last);
}

/// Where `start` is (`Ok`) or would go (`Err`) in a key's windows. Most writes hit the
/// newest window, so the last one is checked first.
fn position<V>(windows: &[(i64, Slot<V>)], start: i64) -> Result<usize, usize> {
    match windows.last() {
        Some((last, _)) if *last == start => Ok(windows.len() - 1),
        Some((last, _)) if *last < start => Err(windows.len()),
        _ => {
            let i = first_from(windows, start);
            match windows.get(i) {
                Some((s, _)) if *s == start => Ok(i),
                _ => Err(i),
            }
        }
    }
}

/// Windows [`first_from`] scans linearly before it gallops.
const LINEAR_SCAN: usize = 32;

/// Index of the first window starting at or after `start`. Reads and writes mostly touch
/// recent times, so this walks back from the newest window: linearly for the first
/// [`LINEAR_SCAN`] windows (the sliding aggregation's answers are typically 10-40 windows
/// back, where a scan whose branch predicts well beats a search whose every step is a coin
/// toss), then galloping before bisecting: O(log d) steps for d windows after the answer,
/// all near the end of the slice (a plain binary search would start in the middle and miss
/// the cache on each step).
fn first_from<V>(windows: &[(i64, Slot<V>)], start: i64) -> usize {
    // Every window in `windows[hi..]` starts at or after `start`.
    let mut hi = windows.len();
    for _ in 0..LINEAR_SCAN {
        if hi == 0 || windows[hi - 1].0 < start {
            return hi;
        }
        hi -= 1;
    }
    let mut step = 1;
    while step <= hi {
        let i = hi - step;
        if windows[i].0 < start {
            return i + 1 + windows[i + 1..hi].partition_point(|(s, _)| *s < start);
        }
        hi = i;
        step *= 2;
    }
    windows[..hi].partition_point(|(s, _)| *s < start)
}

/// A window store holding typed entries as segment → key → windows by start (see the module
/// docs).
pub struct InMemoryWindowStore<K, V> {
    core: SegmentedCore<K, V, WindowSegment<K, V>, (i64, K)>,
    /// Reused buffer for the windows `update_key_range` moves out and back.
    scratch: Vec<(i64, Slot<V>)>,
}

delegate_to_segmented_core!(InMemoryWindowStore where K: Ord + Clone, V: Clone);

impl<K: Ord + Clone, V: Clone> InMemoryWindowStore<K, V> {
    /// An empty store; the codecs are used only for the changelog.
    pub fn new(
        config: StoreConfig,
        segmented: SegmentedConfig,
        key_codec: impl Codec<K> + 'static,
        value_codec: impl Codec<V> + 'static,
    ) -> Self {
        Self {
            core: SegmentedCore::new(config, segmented, key_codec, value_codec),
            scratch: Vec::new(),
        }
    }

    /// The retention configuration.
    pub fn segmented_config(&self) -> SegmentedConfig {
        self.core.segmented_config()
    }

    /// The earliest window start not expired at the frontier the store was last expired to
    /// (`i64::MIN` before that): reads that must not depend on how the store is segmented
    /// (an expired entry stays until its whole segment goes) start here.
    pub fn first_live_time(&self) -> i64 {
        self.core.retention().first_live_time()
    }

    /// Visits the windows of `key` with start in `time_from..=time_to`, by start, in place:
    /// one key lookup per segment in range, then a slice of that key's windows.
    fn visit_key_range(&self, key: &K, time_from: i64, time_to: i64, mut f: impl FnMut(i64, &V)) {
        if time_from > time_to {
            return;
        }
        for (_, seg) in self.core.segments_between(time_from, time_to) {
            let Some(windows) = seg.keys.get(key) else {
                continue;
            };
            let from = first_from(windows, time_from);
            for (s, slot) in windows[from..].iter().take_while(|(s, _)| *s <= time_to) {
                f(*s, &slot.value);
            }
        }
    }
}

impl<K: Ord + Clone, V: Clone> WindowStore<K, V> for InMemoryWindowStore<K, V> {
    fn put(
        &mut self,
        key: K,
        window_start: i64,
        value: V,
        timestamp: i64,
    ) -> Result<(), StateError> {
        if self.core.admit(window_start) {
            self.core
                .upsert(Cow::Owned(key), window_start, Some(timestamp), |_| value);
        }
        Ok(())
    }

    fn update(
        &mut self,
        key: &K,
        window_start: i64,
        timestamp: i64,
        f: &mut dyn FnMut(Option<V>) -> V,
    ) -> Result<(), StateError> {
        if self.core.admit(window_start) {
            self.core
                .upsert(Cow::Borrowed(key), window_start, Some(timestamp), f);
        } else {
            // As the default: `f` sees the current value, its result is dropped.
            f(self.core.slot(key, window_start).map(|s| s.value.clone()));
        }
        Ok(())
    }

    fn update_windows(
        &mut self,
        key: &K,
        starts: &[i64],
        timestamp: i64,
        f: &mut dyn FnMut(i64, Option<V>) -> V,
    ) -> Result<(), StateError> {
        let config = self.core.segmented_config();
        let mut rest = starts;
        while let Some(&first) = rest.first() {
            if !self.core.admit(first) {
                // As `update`: `f` sees the current value, its result is dropped.
                f(first, self.core.slot(key, first).map(|s| s.value.clone()));
                rest = &rest[1..];
                continue;
            }
            // Expiry grows with time: the starts after an admitted one are admitted too.
            let segment = config.segment_id(first);
            let n = rest
                .iter()
                .take_while(|&&s| config.segment_id(s) == segment)
                .count();
            let (batch, next) = rest.split_at(n);
            rest = next;
            let (seg, log, logging) = self.core.segment_for_write(first);
            let added = seg.upsert_many(key, batch, logging.then_some(timestamp), log, f);
            self.core.added(added);
        }
        Ok(())
    }

    fn fetch(&self, key: &K, window_start: i64) -> Result<Option<V>, StateError> {
        Ok(self.core.slot(key, window_start).map(|s| s.value.clone()))
    }

    fn update_key_range(
        &mut self,
        key: &K,
        time_from: i64,
        time_to: i64,
        timestamp: i64,
        f: &mut dyn FnMut(i64, V) -> V,
    ) -> Result<(), StateError> {
        if time_from > time_to {
            return Ok(());
        }
        let log = self.core.changelog_enabled();
        let retention = self.core.retention();
        let mut moved = std::mem::take(&mut self.scratch);
        let mut expired = 0;
        let (segments, dirty_log) = self.core.segments_between_mut(time_from, time_to);
        for seg in segments.map(|(_, s)| s) {
            let Some(windows) = seg.keys.get_mut(key) else {
                continue;
            };
            let from = first_from(windows, time_from);
            let n = windows[from..]
                .iter()
                .take_while(|(s, _)| *s <= time_to)
                .count();
            // The range moves out and back once, so `f` owns each value without a clone.
            moved.extend(windows.drain(from..from + n));
            let folded = moved.drain(..).map(|(start, mut slot)| {
                if retention.is_expired(start) {
                    expired += 1;
                    return (start, slot);
                }
                slot.value = f(start, slot.value);
                if log {
                    dirty_log.note(&mut slot.dirty, timestamp, || (start, key.clone()));
                }
                (start, slot)
            });
            windows.insert_many(from, folded);
        }
        self.scratch = moved;
        self.core.ignored(expired);
        Ok(())
    }

    fn fetch_key_range(
        &self,
        key: &K,
        time_from: i64,
        time_to: i64,
    ) -> Result<Vec<(i64, V)>, StateError> {
        let mut out = Vec::new();
        self.visit_key_range(key, time_from, time_to, |s, v| out.push((s, v.clone())));
        Ok(out)
    }

    fn for_each_in_key_range(
        &self,
        key: &K,
        time_from: i64,
        time_to: i64,
        f: &mut dyn FnMut(i64, &V),
    ) -> Result<(), StateError> {
        self.visit_key_range(key, time_from, time_to, |s, v| f(s, v));
        Ok(())
    }

    fn for_each_in_key_range_backward(
        &self,
        key: &K,
        time_from: i64,
        time_to: i64,
        f: &mut dyn FnMut(i64, &V) -> ControlFlow<()>,
    ) -> Result<(), StateError> {
        if time_from > time_to {
            return Ok(());
        }
        for (_, seg) in self.core.segments_between(time_from, time_to).rev() {
            let Some(windows) = seg.keys.get(key) else {
                continue;
            };
            let end = match time_to.checked_add(1) {
                Some(after) => first_from(windows, after),
                None => windows.len(),
            };
            let in_range = windows[..end]
                .iter()
                .rev()
                .take_while(|(s, _)| *s >= time_from);
            for (s, slot) in in_range {
                if f(*s, &slot.value).is_break() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    fn fetch_all(&self, time_from: i64, time_to: i64) -> Result<Vec<(i64, K, V)>, StateError> {
        let mut out = Vec::new();
        if time_from > time_to {
            return Ok(out);
        }
        let mut found: Vec<(&K, &V)> = Vec::new();
        let (mut order, mut order_scratch) = (Vec::new(), Vec::new());
        for (_, seg) in self.core.segments_between(time_from, time_to) {
            let (mut starts, mut hits) = (0usize, 0usize);
            for (_, n) in seg.starts.range(time_from..=time_to) {
                starts += 1;
                hits += *n as usize;
            }
            if hits == 0 {
                continue;
            }
            out.reserve(hits);
            let in_range = seg.keys.iter().flat_map(|(key, windows)| {
                let from = first_from(windows, time_from);
                windows[from..]
                    .iter()
                    .take_while(|(s, _)| *s <= time_to)
                    .map(move |(s, slot)| (*s, key, &slot.value))
            });
            if starts == 1 {
                // One start: key order is the order.
                out.extend(in_range.map(|(s, key, value)| (s, key.clone(), value.clone())));
                continue;
            }
            // Found in key order, so a stable sort of (start, position found) by start
            // orders by start, then key: integer pairs sort (by radix), and each window
            // is cloned once, in its place.
            found.clear();
            order.clear();
            for (s, key, value) in in_range {
                order.push((s, found.len()));
                found.push((key, value));
            }
            time_sort::sort_by_time(&mut order, &mut order_scratch);
            out.extend(order.iter().map(|&(s, i)| {
                let (key, value) = found[i];
                (s, key.clone(), value.clone())
            }));
        }
        Ok(out)
    }

    fn delete(&mut self, key: &K, window_start: i64, timestamp: i64) -> Result<(), StateError> {
        self.core.remove(key, window_start, timestamp);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::fmt;

    use super::*;
    use crate::changelog::{ChangelogEntry, encode_window_key};
    use crate::changelog_batch::ChangelogBatch;
    use crate::codec::{I64Codec, U64Codec};
    use crate::store::{Segmented, StateStore};

    fn store() -> InMemoryWindowStore<u64, i64> {
        InMemoryWindowStore::new(
            StoreConfig::new("w"),
            SegmentedConfig::new(100).with_segment_interval(50),
            U64Codec,
            I64Codec,
        )
    }

    #[test]
    fn fetch_all_orders_by_start_then_key() {
        let mut s = store();
        s.put(2, 10, 1, 0).unwrap();
        s.put(1, 10, 2, 0).unwrap();
        s.put(1, 0, 3, 0).unwrap();
        s.put(3, 60, 4, 0).unwrap();
        let got = s.fetch_all(0, 60).unwrap();
        assert_eq!(got, vec![(0, 1, 3), (10, 1, 2), (10, 2, 1), (60, 3, 4)]);
        assert_eq!(s.fetch_all(5, 59).unwrap().len(), 2);
        assert_eq!(
            s.fetch_key_range(&1, 0, 100).unwrap(),
            vec![(0, 3), (10, 2)]
        );
        assert_eq!(s.segments(), 2);
        assert_eq!(s.approximate_num_entries(), 4);
    }

    /// The join stores' sizing: segments as wide as the retention keep far fewer entries
    /// than Kafka Streams' 60 s minimum, and a probe clipped at `first_live_time` (as the
    /// join's) sees exactly the same arrivals, every one not expired.
    #[test]
    fn retention_sized_segments_keep_fewer_entries_and_the_same_live_ones() {
        let store = |segmented| {
            InMemoryWindowStore::new(StoreConfig::new("j"), segmented, U64Codec, I64Codec)
        };
        let mut wide = store(SegmentedConfig::new(2_000));
        let mut sized = store(SegmentedConfig::sized_to_retention(2_000));
        assert_eq!(wide.segmented_config().segment_interval_ms(), 60_000);
        let (mut most_wide, mut most_sized) = (0, 0);
        let mut frontier = i64::MIN;
        for t in (0..30_000i64).step_by(10) {
            for s in [&mut wide, &mut sized] {
                s.put(t as u64 % 7, t, t, t).unwrap();
                if t % 500 == 0 {
                    s.expire(t).unwrap();
                }
            }
            if t % 500 == 0 {
                frontier = t;
            }
            most_wide = most_wide.max(wide.approximate_num_entries());
            most_sized = most_sized.max(sized.approximate_num_entries());
            let probe = |s: &InMemoryWindowStore<u64, i64>| {
                let mut seen = Vec::new();
                let from = (t - 3_000).max(s.first_live_time());
                s.for_each_in_key_range(&3, from, t, &mut |start, v| seen.push((start, *v)))
                    .unwrap();
                seen
            };
            let live: Vec<(i64, i64)> = (0..=t)
                .step_by(10)
                .filter(|u| *u as u64 % 7 == 3 && *u >= t - 3_000 && *u + 2_000 >= frontier)
                .map(|u| (u, u))
                .collect();
            assert_eq!(probe(&wide), live, "at {t}");
            assert_eq!(probe(&sized), live, "at {t}");
        }
        // 60 s segments hold the whole run; retention-sized ones at most about
        // retention + interval + the expiry cadence (4.5 s, 450 entries).
        assert_eq!(most_wide, 3_000);
        assert!(most_sized <= 460, "{most_sized}");
    }

    /// `update_windows` (one key lookup per segment) leaves the store, its entry counts
    /// and its changelog exactly as one `update` per start does, across a segment boundary
    /// and with an expired start.
    #[test]
    fn update_windows_equals_one_update_per_start() {
        let (mut batched, mut single) = (store(), store());
        for s in [&mut batched, &mut single] {
            s.put(1, 60, 7, 0).unwrap();
            s.put(2, 70, 1, 0).unwrap();
            s.expire(160).unwrap();
        }
        let fold = |start: i64, old: Option<i64>| old.unwrap_or(0) * 10 + start;
        // 55 has expired at 160 (55 + 100 < 160); 60..=90 are in segment 1 (interval 50:
        // 50..=99), 100 and 110 in segment 2; 60 exists.
        let starts = [55, 60, 70, 90, 100, 110];
        let mut seen_batched = Vec::new();
        batched
            .update_windows(&1, &starts, 170, &mut |start, old| {
                seen_batched.push((start, old));
                fold(start, old)
            })
            .unwrap();
        let mut seen_single = Vec::new();
        for start in starts {
            single
                .update(&1, start, 170, &mut |old| {
                    seen_single.push((start, old));
                    fold(start, old)
                })
                .unwrap();
        }
        assert_eq!(seen_batched, seen_single);
        // Updating existing windows again, in place.
        for s in [&mut batched, &mut single] {
            s.update_windows(&1, &[60, 100], 171, &mut |start, old| fold(start, old))
                .unwrap();
        }
        let all = |s: &InMemoryWindowStore<u64, i64>| s.fetch_all(0, 1_000).unwrap();
        assert_eq!(all(&batched), all(&single));
        assert_eq!(all(&batched).len(), 6, "two kept, four new");
        assert_eq!(
            batched.approximate_num_entries(),
            single.approximate_num_entries()
        );
        assert_eq!(batched.expired_writes(), 1);
        assert_eq!(batched.expired_writes(), single.expired_writes());
        let flushed = |s: &mut InMemoryWindowStore<u64, i64>| {
            let mut batch = ChangelogBatch::new();
            s.flush_changelog(&mut batch).unwrap();
            let out = batch.to_records();
            out.into_iter()
                .map(|r| (r.key, r.value, r.timestamp))
                .collect::<Vec<_>>()
        };
        assert_eq!(flushed(&mut batched), flushed(&mut single));
    }

    #[test]
    fn live_segments_reports_the_segment_count_through_the_untyped_store() {
        let mut s = store();
        s.put(1, 0, 1, 0).unwrap();
        s.put(1, 60, 1, 0).unwrap();
        let untyped: &dyn StateStore = &s;
        assert_eq!(untyped.live_segments(), Some(2));
        let kv = crate::InMemoryKeyValueStore::<u64, i64>::new(
            StoreConfig::new("kv"),
            U64Codec,
            I64Codec,
        );
        assert_eq!(
            StateStore::live_segments(&kv),
            None,
            "a key-value store has no segments"
        );
    }

    #[test]
    fn changelog_key_uses_windowed_layout() {
        let mut s = store();
        s.put(7, 20, 5, 33).unwrap();
        s.put(7, 20, 6, 34).unwrap();
        let mut batch = ChangelogBatch::new();
        s.flush_changelog(&mut batch).unwrap();
        let out = batch.to_records();
        assert_eq!(out.len(), 1);
        let mut expected = Vec::new();
        encode_window_key(&7u64.to_be_bytes(), 20, 0, &mut expected);
        assert_eq!(out[0].key, expected);
        assert_eq!(out[0].value, Some(6i64.to_be_bytes().to_vec()));
        assert_eq!(out[0].timestamp, 34);
    }

    #[test]
    fn delete_removes_empty_segments() {
        let mut s = store();
        s.put(1, 0, 1, 0).unwrap();
        s.delete(&1, 0, 1).unwrap();
        assert_eq!(s.segments(), 0);
        assert_eq!(s.approximate_num_entries(), 0);
        assert_eq!(s.dirty_keys(), 1);
    }

    #[test]
    fn delete_then_put_in_one_epoch_flushes_one_record() {
        let mut s = store();
        s.put(1, 0, 1, 10).unwrap();
        let mut batch = ChangelogBatch::new();
        s.flush_changelog(&mut batch).unwrap();
        s.put(1, 0, 2, 11).unwrap();
        s.delete(&1, 0, 12).unwrap();
        s.put(1, 0, 3, 13).unwrap();
        s.put(2, 0, 4, 14).unwrap();
        s.delete(&2, 0, 15).unwrap();
        batch.clear();
        s.flush_changelog(&mut batch).unwrap();
        let got: Vec<_> = batch
            .to_records()
            .into_iter()
            .map(|r| (r.value, r.timestamp))
            .collect();
        assert_eq!(
            got,
            vec![(Some(3i64.to_be_bytes().to_vec()), 13), (None, 15)]
        );
        // Flushed slots are clean again: a new write logs afresh.
        s.put(1, 0, 5, 16).unwrap();
        assert_eq!(s.dirty_keys(), 1);
    }

    #[test]
    fn first_from_scans_and_gallops_to_the_same_answer_as_a_bisection() {
        for n in 0..120i64 {
            let windows: Vec<(i64, Slot<()>)> = (0..n)
                .map(|i| {
                    (
                        i * 3,
                        Slot {
                            value: (),
                            dirty: CLEAN,
                        },
                    )
                })
                .collect();
            for start in -2..n * 3 + 2 {
                let want = windows.partition_point(|(s, _)| *s < start);
                assert_eq!(first_from(&windows, start), want, "n {n}, start {start}");
                let found = windows.binary_search_by_key(&start, |(s, _)| *s);
                assert_eq!(position(&windows, start), found, "n {n}, start {start}");
            }
        }
    }

    #[test]
    fn update_is_one_write_and_logs_like_put() {
        let mut s = store();
        s.update(&1, 10, 5, &mut |old| old.unwrap_or(0) + 1)
            .unwrap();
        s.update(&1, 10, 6, &mut |old| old.unwrap_or(0) + 1)
            .unwrap();
        s.update(&2, 10, 7, &mut |old| {
            assert_eq!(old, None);
            9
        })
        .unwrap();
        assert_eq!(s.fetch(&1, 10).unwrap(), Some(2));
        assert_eq!(s.approximate_num_entries(), 2);
        assert_eq!(s.dirty_keys(), 2);
        let mut batch = ChangelogBatch::new();
        s.flush_changelog(&mut batch).unwrap();
        let out = batch.to_records();
        let got: Vec<_> = out.iter().map(|r| (r.value.clone(), r.timestamp)).collect();
        assert_eq!(
            got,
            vec![
                (Some(2i64.to_be_bytes().to_vec()), 6),
                (Some(9i64.to_be_bytes().to_vec()), 7)
            ]
        );
        // Expired: `f` sees the current value, nothing is written.
        s.expire(150).unwrap();
        let mut seen = None;
        s.update(&1, 10, 8, &mut |old| {
            seen = Some(old);
            100
        })
        .unwrap();
        assert_eq!(seen, Some(None));
        assert_eq!(s.fetch(&1, 10).unwrap(), None);
        assert_eq!(s.expired_writes(), 1);
    }

    #[test]
    fn fetch_key_range_visits_only_the_key_across_segments() {
        let mut s = store();
        for start in [70, 0, 40, 10, 60] {
            s.put(5, start, start, 0).unwrap();
            s.put(6, start, -start, 0).unwrap();
        }
        assert_eq!(
            s.fetch_key_range(&5, 10, 60).unwrap(),
            vec![(10, 10), (40, 40), (60, 60)]
        );
        assert_eq!(s.fetch_key_range(&5, 61, 69).unwrap(), vec![]);
        assert_eq!(s.fetch_key_range(&7, 0, 100).unwrap(), vec![]);
        assert_eq!(s.fetch_key_range(&5, 60, 10).unwrap(), vec![]);
        // Several starts of several keys in one segment still come out by start, then key.
        assert_eq!(
            s.fetch_all(0, 45).unwrap(),
            vec![
                (0, 5, 0),
                (0, 6, 0),
                (10, 5, 10),
                (10, 6, -10),
                (40, 5, 40),
                (40, 6, -40)
            ]
        );
    }

    #[test]
    fn for_each_in_key_range_visits_what_fetch_key_range_returns() {
        let mut s = store();
        for start in [70, 0, 40, 10, 60] {
            s.put(5, start, start * 2, 0).unwrap();
            s.put(6, start, -start, 0).unwrap();
        }
        for (from, to) in [(10, 60), (0, 100), (61, 69), (60, 10), (i64::MIN, i64::MAX)] {
            let mut seen = Vec::new();
            s.for_each_in_key_range(&5, from, to, &mut |st, v| seen.push((st, *v)))
                .unwrap();
            assert_eq!(
                seen,
                s.fetch_key_range(&5, from, to).unwrap(),
                "{from}..={to}"
            );
        }
        let mut calls = 0;
        s.for_each_in_key_range(&7, 0, 100, &mut |_, _| calls += 1)
            .unwrap();
        assert_eq!(calls, 0);
    }

    /// A store that only implements the required methods: the trait's visitor and range
    /// update are built on `fetch_key_range`.
    #[test]
    fn default_for_each_in_key_range_visits_fetch_key_range() {
        struct Fixed;
        impl fmt::Debug for Fixed {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("Fixed")
            }
        }
        impl StateStore for Fixed {
            fn name(&self) -> &str {
                "fixed"
            }
            fn changelog_enabled(&self) -> bool {
                false
            }
            fn flush_changelog(&mut self, _: &mut ChangelogBatch) -> Result<(), StateError> {
                Ok(())
            }
            fn dirty_keys(&self) -> usize {
                0
            }
            fn apply_changelog(&mut self, _: &ChangelogEntry) -> Result<(), StateError> {
                Ok(())
            }
            fn approximate_num_entries(&self) -> u64 {
                0
            }
        }
        impl Segmented for Fixed {
            fn expire(&mut self, _: i64) -> Result<usize, StateError> {
                Ok(0)
            }
            fn segments(&self) -> usize {
                0
            }
            fn expired_writes(&self) -> u64 {
                0
            }
            fn first_live_time(&self) -> i64 {
                i64::MIN
            }
        }
        impl WindowStore<u64, i64> for Fixed {
            fn put(&mut self, _: u64, _: i64, _: i64, _: i64) -> Result<(), StateError> {
                Ok(())
            }
            fn fetch(&self, _: &u64, _: i64) -> Result<Option<i64>, StateError> {
                Ok(None)
            }
            fn fetch_key_range(
                &self,
                key: &u64,
                from: i64,
                to: i64,
            ) -> Result<Vec<(i64, i64)>, StateError> {
                Ok((from..=to).map(|s| (s, *key as i64 * s)).collect())
            }
            fn fetch_all(&self, _: i64, _: i64) -> Result<Vec<(i64, u64, i64)>, StateError> {
                Ok(Vec::new())
            }
            fn delete(&mut self, _: &u64, _: i64, _: i64) -> Result<(), StateError> {
                Ok(())
            }
        }
        let mut seen = Vec::new();
        Fixed
            .for_each_in_key_range(&3, 1, 3, &mut |s, v| seen.push((s, *v)))
            .unwrap();
        assert_eq!(seen, vec![(1, 3), (2, 6), (3, 9)]);
        seen.clear();
        Fixed
            .update_key_range(&2, 4, 5, 0, &mut |s, v| {
                seen.push((s, v));
                v + 1
            })
            .unwrap();
        assert_eq!(seen, vec![(4, 8), (5, 10)]);
        seen.clear();
        Fixed
            .for_each_in_key_range_backward(&3, 1, 5, &mut |s, v| {
                seen.push((s, *v));
                if s == 3 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .unwrap();
        assert_eq!(seen, vec![(5, 15), (4, 12), (3, 9)]);
    }

    /// Backwards, the visitor sees what `fetch_key_range` returns, newest first, across
    /// segments and past the linear scan of a key's windows, and stops where it breaks.
    #[test]
    fn for_each_in_key_range_backward_is_fetch_key_range_reversed_until_it_breaks() {
        let mut s = store();
        // 60 windows of key 5 in segment [50, 100), a few in [0, 50); key 6 between them.
        let starts: Vec<i64> = (0..10).map(|i| i * 5).chain(50..110).collect();
        for &start in starts.iter().rev() {
            s.put(5, start, start * 2, 0).unwrap();
            s.put(6, start, -start, 0).unwrap();
        }
        for (from, to) in [
            (10, 60),
            (0, 200),
            (51, 51),
            (41, 49),
            (60, 10),
            (55, 108),
            (i64::MIN, i64::MAX),
        ] {
            let mut seen = Vec::new();
            s.for_each_in_key_range_backward(&5, from, to, &mut |st, v| {
                seen.push((st, *v));
                ControlFlow::Continue(())
            })
            .unwrap();
            let mut forward = s.fetch_key_range(&5, from, to).unwrap();
            forward.reverse();
            assert_eq!(seen, forward, "{from}..={to}");
        }
        // Breaks at the first window before 50, in an older segment: 45 is the last seen.
        let mut seen = Vec::new();
        s.for_each_in_key_range_backward(&5, 0, 200, &mut |st, _| {
            seen.push(st);
            if st < 50 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
        let newest_first: Vec<i64> = (50..110).rev().chain([45]).collect();
        assert_eq!(seen, newest_first);
        let mut calls = 0;
        s.for_each_in_key_range_backward(&7, 0, 100, &mut |_, _| {
            calls += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(calls, 0);
    }

    #[test]
    fn update_key_range_folds_in_place_and_logs_like_put() {
        let mut s = store();
        for start in [0, 10, 40, 60, 70] {
            s.put(1, start, start, 1).unwrap();
            s.put(2, start, 0, 1).unwrap();
        }
        s.flush_changelog(&mut ChangelogBatch::new()).unwrap();
        let mut seen = Vec::new();
        s.update_key_range(&1, 10, 60, 9, &mut |start, v| {
            seen.push(start);
            v + 1
        })
        .unwrap();
        assert_eq!(seen, vec![10, 40, 60]);
        assert_eq!(
            s.fetch_key_range(&1, 0, 100).unwrap(),
            vec![(0, 0), (10, 11), (40, 41), (60, 61), (70, 70)]
        );
        assert_eq!(s.fetch_key_range(&2, 0, 100).unwrap().len(), 5);
        assert_eq!(s.approximate_num_entries(), 10);
        let mut batch = ChangelogBatch::new();
        s.flush_changelog(&mut batch).unwrap();
        let out = batch.to_records();
        let got: Vec<_> = out.iter().map(|r| (r.value.clone(), r.timestamp)).collect();
        assert_eq!(
            got,
            [11i64, 41, 61]
                .map(|v| (Some(v.to_be_bytes().to_vec()), 9))
                .to_vec()
        );
        // Expired windows are left alone and counted, as a put would.
        s.expire(135).unwrap();
        s.update_key_range(&1, 0, 100, 10, &mut |_, v| v + 100)
            .unwrap();
        assert_eq!(
            s.fetch_key_range(&1, 0, 100).unwrap(),
            vec![(0, 0), (10, 11), (40, 141), (60, 161), (70, 170)]
        );
        assert_eq!(s.expired_writes(), 2);
    }

    #[test]
    fn delete_of_one_window_keeps_the_keys_others() {
        let mut s = store();
        s.put(1, 0, 1, 0).unwrap();
        s.put(1, 10, 2, 0).unwrap();
        s.delete(&1, 0, 1).unwrap();
        s.delete(&1, 20, 1).unwrap();
        assert_eq!(s.fetch_key_range(&1, 0, 49).unwrap(), vec![(10, 2)]);
        assert_eq!(s.fetch_all(0, 9).unwrap(), vec![]);
        assert_eq!(s.segments(), 1);
        assert_eq!(s.approximate_num_entries(), 1);
    }

    #[test]
    fn writes_to_expired_windows_are_ignored() {
        let mut s = store();
        s.put(1, 0, 1, 0).unwrap();
        assert_eq!(s.expire(150).unwrap(), 1);
        s.put(1, 0, 2, 0).unwrap();
        assert_eq!(s.fetch(&1, 0).unwrap(), None);
        assert_eq!(s.expired_writes(), 1);
    }

    mod model {
        use std::collections::BTreeMap;

        use proptest::prelude::*;

        use super::*;

        #[derive(Debug, Clone)]
        enum Op {
            Put(u64, i64, i64),
            Update(u64, i64, i64),
            UpdateRange(u64, i64, i64, i64),
            Delete(u64, i64),
            Expire(i64),
            Flush,
        }

        fn ops() -> impl Strategy<Value = Vec<Op>> {
            prop::collection::vec(
                prop_oneof![
                    4 => (0u64..5, 0i64..30, -9i64..9).prop_map(|(k, s, v)| Op::Put(k, s * 7, v)),
                    4 => (0u64..5, 0i64..30, -9i64..9).prop_map(|(k, s, v)| Op::Update(k, s * 7, v)),
                    2 => (0u64..5, 0i64..30, 0i64..30, -9i64..9)
                        .prop_map(|(k, a, b, v)| Op::UpdateRange(k, a * 7, b * 7, v)),
                    2 => (0u64..5, 0i64..30).prop_map(|(k, s)| Op::Delete(k, s * 7)),
                    1 => (0i64..60).prop_map(Op::Expire),
                    1 => Just(Op::Flush),
                ],
                0..120,
            )
        }

        proptest! {
            /// Every read agrees with a plain ordered map of (start, key) under the same
            /// writes and whole-segment expiry.
            #[test]
            fn reads_match_an_ordered_map(ops in ops()) {
                let mut s = store();
                let cfg = s.segmented_config();
                let mut model: BTreeMap<(i64, u64), i64> = BTreeMap::new();
                let mut frontier = i64::MIN;
                for (t, op) in ops.into_iter().enumerate() {
                    let t = t as i64;
                    match op {
                        Op::Put(k, st, v) => {
                            s.put(k, st, v, t).unwrap();
                            if !cfg.is_expired(st, frontier) {
                                model.insert((st, k), v);
                            }
                        }
                        Op::Update(k, st, v) => {
                            s.update(&k, st, t, &mut |old| old.unwrap_or(100) + v).unwrap();
                            if !cfg.is_expired(st, frontier) {
                                *model.entry((st, k)).or_insert(100) += v;
                            }
                        }
                        Op::UpdateRange(k, from, to, v) => {
                            s.update_key_range(&k, from, to, t, &mut |_, x| x + v).unwrap();
                            for ((st, key), x) in model.iter_mut() {
                                if *key == k && (from..=to).contains(st) && !cfg.is_expired(*st, frontier) {
                                    *x += v;
                                }
                            }
                        }
                        Op::Delete(k, st) => {
                            s.delete(&k, st, t).unwrap();
                            model.remove(&(st, k));
                        }
                        Op::Expire(d) => {
                            frontier = frontier.max(0) + d;
                            s.expire(frontier).unwrap();
                            let first = cfg.first_live_segment(frontier);
                            model.retain(|(st, _), _| cfg.segment_id(*st) >= first);
                        }
                        Op::Flush => s.flush_changelog(&mut ChangelogBatch::new()).unwrap(),
                    }
                }
                let all: Vec<_> = model.iter().map(|((st, k), v)| (*st, *k, *v)).collect();
                prop_assert_eq!(s.fetch_all(i64::MIN, i64::MAX).unwrap(), all.clone());
                for (from, to) in [(0, 70), (21, 21), (30, 120), (100, 300)] {
                    let want: Vec<_> =
                        all.iter().filter(|e| e.0 >= from && e.0 <= to).cloned().collect();
                    prop_assert_eq!(s.fetch_all(from, to).unwrap(), want);
                    for k in 0..5 {
                        let want: Vec<_> = all
                            .iter()
                            .filter(|e| e.1 == k && e.0 >= from && e.0 <= to)
                            .map(|e| (e.0, e.2))
                            .collect();
                        let mut seen = Vec::new();
                        s.for_each_in_key_range(&k, from, to, &mut |st, v| seen.push((st, *v)))
                            .unwrap();
                        prop_assert_eq!(&seen, &want);
                        prop_assert_eq!(s.fetch_key_range(&k, from, to).unwrap(), want);
                    }
                }
                prop_assert_eq!(s.approximate_num_entries(), all.len() as u64);
                let segs: std::collections::BTreeSet<_> =
                    all.iter().map(|e| cfg.segment_id(e.0)).collect();
                prop_assert_eq!(s.segments(), segs.len());
            }
        }
    }
}
