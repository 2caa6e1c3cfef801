//! The in-memory engine: typed values in ordered maps.
//!
//! Owns [`InMemoryKeyValueStore`], [`InMemoryWindowStore`] and [`InMemorySessionStore`]. They
//! hold `K` and `V` as they are; a write costs one B-tree descent. Every store keeps a dirty
//! flag in each slot and an append-only dirty log ([`DirtyLog`]), so changelog tracking adds
//! no lookup (the key is cloned only the first time it is written in an epoch). Keys and
//! values are serialized only at [`flush_changelog`](crate::StateStore::flush_changelog) and
//! decoded only at restore. The window and session stores share one segmented core
//! (`segmented`): segments, retention, the dirty log, the flush and restore live there once.
//!
//! Layouts: key-value entries as key → value; windows as segment → key → that key's windows
//! sorted by start (one held inline), with per-segment entry counts per start, so a probe of
//! one key's time range (the stream-stream join) is one key lookup and a contiguous slice,
//! and the emission pass skips segments with nothing in range; sessions as segment (of end)
//! → key → (end, start) → value. In every segmented store a whole segment drops with one
//! `split_off`. [`WindowStore::update`](crate::WindowStore::update) folds into a window in
//! one traversal without cloning the old value;
//! [`WindowStore::update_key_range`](crate::WindowStore::update_key_range) does the same for
//! every window of a key in a time range, and
//! [`WindowStore::for_each_in_key_range`](crate::WindowStore::for_each_in_key_range) lends a
//! key's windows to a visitor without cloning them.
//!
//! This module never touches the disk.

mod kv;
mod segmented;
mod session;
mod time_sort;
mod window;

pub use kv::InMemoryKeyValueStore;
pub use session::InMemorySessionStore;
pub use window::InMemoryWindowStore;

use std::sync::Arc;

use crate::changelog::ChangelogEntry;
use crate::changelog_batch::ChangelogBatch;
use crate::codec::Codec;
use crate::error::{StateError, flushed_key};

/// Marks a slot that has not been written since the last flush.
pub(crate) const CLEAN: usize = usize::MAX;

/// A stored value and, if it was written since the last flush, its index in the store's
/// dirty log. Keeping the flag in the slot makes a repeated write's dirty tracking free: no
/// second map to search on the hot path.
#[derive(Debug, Clone)]
pub(crate) struct Slot<V> {
    pub(crate) value: V,
    pub(crate) dirty: usize,
}

/// What a store wrote since the last flush: an append-only log of (entry id, timestamp of
/// its last write). A live slot points at its entry, so a repeated write only updates the
/// timestamp; an entry whose slot is gone (deleted, expired) flushes as a tombstone. An id
/// deleted and written again in one epoch has two entries; the flush keeps the later.
/// Entries flush in id order, so the id type sets the changelog order (window stores use
/// (start, key), session stores (key, end, start)).
///
/// An id whose order begins with a time (window stores' (start, key)) can name that time
/// ([`DirtyLog::with_leading_time`]): the flush then orders (time, index) pairs, plain
/// integers, by a radix sort on the time (`time_sort`), and compares whole ids only among
/// entries of one time, instead of comparing ids through the log at every step of a sort.
#[derive(Debug)]
pub(crate) struct DirtyLog<I> {
    entries: Vec<(I, i64)>,
    /// The time an id's order begins with, if it has one.
    leading_time: Option<fn(&I) -> i64>,
    /// Scratch for the flush's (time, index) pairs and their sort, kept across flushes.
    timed: Vec<(i64, usize)>,
    timed_scratch: Vec<(i64, usize)>,
}

impl<I> DirtyLog<I> {
    pub(crate) fn new() -> Self {
        Self::with_leading_time(None)
    }

    /// An empty log whose ids order first by `leading_time(id)` (then by the whole id).
    pub(crate) fn with_leading_time(leading_time: Option<fn(&I) -> i64>) -> Self {
        Self {
            entries: Vec::new(),
            leading_time,
            timed: Vec::new(),
            timed_scratch: Vec::new(),
        }
    }

    /// Entries logged since the last flush (an id written, deleted and written again
    /// counts twice).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

impl<I: Ord> DirtyLog<I> {
    /// Records a live write at `timestamp` to the slot whose dirty index is `dirty`: a clean
    /// slot logs `id()` and points at it, a dirty one only updates its timestamp.
    #[inline]
    pub(crate) fn note(&mut self, dirty: &mut usize, timestamp: i64, id: impl FnOnce() -> I) {
        if *dirty == CLEAN {
            self.entries.push((id(), timestamp));
            *dirty = self.entries.len() - 1;
        } else {
            self.entries[*dirty].1 = timestamp;
        }
    }

    /// Records a delete at `timestamp`; `removed` is the dirty index of the removed slot, or
    /// [`CLEAN`] if there was none or it was clean. Its entry now flushes as a tombstone.
    pub(crate) fn note_removed(&mut self, removed: usize, timestamp: i64, id: impl FnOnce() -> I) {
        if removed == CLEAN {
            self.entries.push((id(), timestamp));
        } else {
            self.entries[removed].1 = timestamp;
        }
    }

    /// The barrier flush: one record per logged id, in id order, appended to `out` by
    /// `record(n, id, current value, timestamp, out)` (`n` counts the records of this flush;
    /// `None` is a tombstone), each live slot in `slots` marked clean. All or nothing: if
    /// `record` fails, `out` is left as it was, every slot points into the log again and the
    /// error is returned, so a later flush still writes every key.
    ///
    /// The log is ordered through a permutation of its indices (an id's later entry last),
    /// so the log itself keeps its indices. When the log is large against the store (a
    /// sliding count dirties nearly every live window between barriers), the current values
    /// are found by one walk over the live slots, each dirty slot naming its entry, instead
    /// of one lookup per entry; otherwise each entry's slot is looked up.
    pub(crate) fn flush<V>(
        &mut self,
        out: &mut ChangelogBatch,
        slots: &mut impl Slots<I, V>,
        record: impl FnMut(usize, &I, Option<&V>, i64, &mut ChangelogBatch) -> Result<(), StateError>,
    ) -> Result<(), StateError> {
        let walk = slots.live() <= WALK_RATIO * self.entries.len() as u64;
        self.flush_by(walk, out, slots, record)
    }

    /// [`DirtyLog::flush`], walking the slots or looking each one up as `walk` says.
    fn flush_by<V>(
        &mut self,
        walk: bool,
        out: &mut ChangelogBatch,
        slots: &mut impl Slots<I, V>,
        mut record: impl MakeRecord<I, V>,
    ) -> Result<(), StateError> {
        if self.entries.is_empty() {
            return Ok(());
        }
        let order = self.order();
        out.reserve(order.len());
        let first = out.len();
        // A store's records are of much the same size: once the first is made, room for
        // the rest is reserved at its size, instead of the buffer doubling as it fills.
        let record = |n, id: &I, value: Option<&V>, timestamp, out: &mut ChangelogBatch| {
            record(n, id, value, timestamp, out)?;
            if n == 0 {
                out.reserve_like_last(order.len() - 1);
            }
            Ok(())
        };
        let flushed = self.write_records(walk, &order, out, slots, record);
        if flushed.is_err() {
            out.truncate(first);
            if !walk {
                self.repoint_after_failed_flush(slots);
            }
        } else {
            self.entries.clear();
        }
        flushed
    }

    /// The log's indices by (id, index): an id's later entry comes last.
    fn order(&mut self) -> Vec<usize> {
        let entries = &self.entries;
        let by_id = |&a: &usize, &b: &usize| entries[a].0.cmp(&entries[b].0).then(a.cmp(&b));
        let Some(leading_time) = self.leading_time else {
            let mut order: Vec<usize> = (0..entries.len()).collect();
            order.sort_unstable_by(by_id);
            return order;
        };
        let timed = &mut self.timed;
        // Stable: entries of one time stay in index order.
        timed.clear();
        timed.extend(
            entries
                .iter()
                .enumerate()
                .map(|(i, (id, _))| (leading_time(id), i)),
        );
        time_sort::sort_by_time(timed, &mut self.timed_scratch);
        let mut order: Vec<usize> = timed.iter().map(|&(_, i)| i).collect();
        // Entries of one time keep their index order so far; the rest of the id decides.
        let mut from = 0;
        for run in timed.chunk_by(|a, b| a.0 == b.0) {
            if run.len() > 1 {
                order[from..from + run.len()].sort_unstable_by(by_id);
            }
            from += run.len();
        }
        order
    }

    /// The positions in `order` that flush: the last of each id.
    fn flushed<'a>(&'a self, order: &'a [usize]) -> impl Iterator<Item = usize> + 'a {
        order.iter().enumerate().filter_map(move |(pos, &i)| {
            let superseded = order
                .get(pos + 1)
                .is_some_and(|&next| self.entries[next].0 == self.entries[i].0);
            (!superseded).then_some(i)
        })
    }

    /// Makes the records of `order`'s flushed entries. Walking, the values are read by one
    /// walk over the live slots and every slot is marked clean only once every record is
    /// made, so a failure changes no slot; otherwise each entry's slot is looked up and
    /// marked clean in turn.
    fn write_records<V>(
        &self,
        walk: bool,
        order: &[usize],
        out: &mut ChangelogBatch,
        slots: &mut impl Slots<I, V>,
        mut record: impl MakeRecord<I, V>,
    ) -> Result<(), StateError> {
        if walk {
            {
                let mut values: Vec<Option<&V>> = vec![None; self.entries.len()];
                slots.for_each_slot(&mut |slot| {
                    if slot.dirty != CLEAN {
                        values[slot.dirty] = Some(&slot.value);
                    }
                });
                for (n, i) in self.flushed(order).enumerate() {
                    let (id, timestamp) = &self.entries[i];
                    record(n, id, values[i], *timestamp, out)?;
                }
            }
            slots.mark_all_clean();
        } else {
            for (n, i) in self.flushed(order).enumerate() {
                let (id, timestamp) = &self.entries[i];
                let mut slot = slots.slot_mut(id);
                record(n, id, slot.as_ref().map(|s| &s.value), *timestamp, out)?;
                if let Some(s) = slot.as_mut() {
                    s.dirty = CLEAN;
                }
            }
        }
        Ok(())
    }

    /// Points every slot into the log again after a failed flush (an id's last entry wins).
    #[cold]
    #[inline(never)]
    fn repoint_after_failed_flush<V>(&self, slots: &mut impl Slots<I, V>) {
        for (i, (id, _)) in self.entries.iter().enumerate() {
            if let Some(s) = slots.slot_mut(id) {
                s.dirty = i;
            }
        }
    }
}

/// Makes the changelog record of one flushed entry: `(n, id, current value, timestamp,
/// out)`, as [`DirtyLog::flush`] takes it.
trait MakeRecord<I, V>:
    FnMut(usize, &I, Option<&V>, i64, &mut ChangelogBatch) -> Result<(), StateError>
{
}

impl<I, V, F> MakeRecord<I, V> for F where
    F: FnMut(usize, &I, Option<&V>, i64, &mut ChangelogBatch) -> Result<(), StateError>
{
}

/// A flush walks every live slot rather than looking up each logged entry when the store
/// holds at most this many live slots per logged entry (a walk step is several times
/// cheaper than a lookup).
const WALK_RATIO: u64 = 8;

/// Where a store's slots are found by their dirty-log id.
pub(crate) trait Slots<I, V> {
    /// The live slot of `id`.
    fn slot_mut(&mut self, id: &I) -> Option<&mut Slot<V>>;

    /// How many live slots there are.
    fn live(&self) -> u64;

    /// Visits every live slot, in any order.
    fn for_each_slot<'a>(&'a self, f: &mut dyn FnMut(&'a Slot<V>));

    /// Marks every live slot clean.
    fn mark_all_clean(&mut self);
}

/// A codec shared by a store's clones of itself.
pub(crate) type SharedCodec<T> = Arc<dyn Codec<T>>;

/// Appends the changelog record of the `n`-th flushed entry of `store` to `out`, encoded in
/// place in the batch's buffer: `key` appends the record key and returns where the key
/// codec's bytes end (a window store appends its window suffix after them; an error names
/// the key by those bytes), then `value`'s encoding follows, or the record is a tombstone.
/// On failure nothing is appended and the codec's error names the store and the key.
#[inline]
pub(crate) fn push_flushed<V>(
    out: &mut ChangelogBatch,
    store: &str,
    n: usize,
    key: impl FnOnce(&mut Vec<u8>) -> Result<usize, crate::codec::CodecError>,
    value_codec: &dyn Codec<V>,
    value: Option<&V>,
    timestamp: i64,
) -> Result<(), StateError> {
    let bytes = out.bytes_mut();
    let start = bytes.len();
    let codec_key_end = match key(bytes) {
        Ok(end) => end,
        Err(e) => {
            bytes.truncate(start);
            return Err(StateError::encode_key(store, flushed_key(n), e));
        }
    };
    let key_end = bytes.len();
    let value = match value {
        None => None,
        Some(value) => {
            if let Err(e) = value_codec.encode(value, bytes) {
                let err = StateError::encode_value(store, &bytes[start..codec_key_end], e);
                bytes.truncate(start);
                return Err(err);
            }
            Some(key_end..bytes.len())
        }
    };
    out.push_encoded(start..key_end, value, timestamp);
    Ok(())
}

/// Decodes a restored key or value, mapping failure to a corrupt-record error.
pub(crate) fn decode_entry<T>(
    codec: &dyn Codec<T>,
    bytes: &[u8],
    what: &str,
    store: &str,
    entry: &ChangelogEntry,
) -> Result<T, StateError> {
    codec
        .decode(bytes)
        .map_err(|e| entry.corrupt(store, format!("{what} does not decode: {e}")))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A key-value layout driven through the dirty log as the stores drive it.
    struct Model {
        slots: BTreeMap<u64, Slot<i64>>,
        log: DirtyLog<u64>,
        /// What the next flush must write: key -> (value or tombstone, timestamp).
        expected: BTreeMap<u64, (Option<i64>, i64)>,
    }

    impl Model {
        fn put(&mut self, key: u64, value: i64, timestamp: i64) {
            let slot = self.slots.entry(key).or_insert(Slot {
                value,
                dirty: CLEAN,
            });
            slot.value = value;
            self.log.note(&mut slot.dirty, timestamp, || key);
            self.expected.insert(key, (Some(value), timestamp));
        }

        fn delete(&mut self, key: u64, timestamp: i64) {
            let removed = self.slots.remove(&key).map_or(CLEAN, |s| s.dirty);
            self.log.note_removed(removed, timestamp, || key);
            self.expected.insert(key, (None, timestamp));
        }

        /// Flushes by `walk`; the `fail_at`-th record (if any) fails.
        fn flush(
            &mut self,
            walk: bool,
            fail_at: Option<usize>,
        ) -> Result<Vec<(u64, Option<i64>, i64)>, StateError> {
            let mut out = ChangelogBatch::new();
            out.push(&[9], None, -1);
            self.log
                .flush_by(walk, &mut out, &mut self.slots, |n, key, value, ts, out| {
                    if Some(n) == fail_at {
                        return Err(StateError::encode_key(
                            "m",
                            n,
                            crate::codec::CodecError::new("no"),
                        ));
                    }
                    let value = value.map(|v| v.to_be_bytes());
                    out.push(&key.to_be_bytes(), value.as_ref().map(|v| &v[..]), ts);
                    Ok(())
                })?;
            let out = out.to_records();
            assert_eq!(out[0].timestamp, -1, "records before the flush's are kept");
            Ok(out[1..]
                .iter()
                .map(|r| {
                    let key = u64::from_be_bytes(r.key.clone().try_into().unwrap());
                    let value = r
                        .value
                        .as_ref()
                        .map(|v| i64::from_be_bytes(v.clone().try_into().unwrap()));
                    (key, value, r.timestamp)
                })
                .collect())
        }
    }

    /// A seeded xorshift: each call returns a number below its argument.
    fn below(mut rng: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        }
    }

    /// A log whose ids begin with a time orders its entries exactly as a plain sort by
    /// (id, index) does: by time, then the rest of the id, an id's later entry last; over
    /// randomized logs with many entries per time and repeated ids.
    #[test]
    fn the_leading_time_order_is_the_id_order() {
        let mut next = below(0x2545_f491_4f6c_dd1du64);
        for round in 0..50 {
            let times = 1 + next(if round % 2 == 0 { 4 } else { 400 }) as i64;
            let ids: Vec<(i64, u64)> = (0..next(500))
                .map(|_| (next(times as u64) as i64 - times / 2, next(30)))
                .collect();
            let mut timed = DirtyLog::with_leading_time(Some(|id: &(i64, u64)| id.0));
            let mut plain = DirtyLog::new();
            for (n, id) in ids.iter().enumerate() {
                timed.entries.push((*id, n as i64));
                plain.entries.push((*id, n as i64));
            }
            let mut expected: Vec<usize> = (0..ids.len()).collect();
            expected.sort_by_key(|&i| (ids[i], i));
            assert_eq!(timed.order(), expected, "round {round}");
            assert_eq!(plain.order(), expected, "round {round}");
        }
    }

    /// Both flush paths (the walk over live slots and the lookup per logged entry) write
    /// one record per written key, in key order, with its last value (or a tombstone) and
    /// last timestamp, leave every slot clean, and on a failed record write nothing and
    /// keep every entry for the next flush; over a randomized sequence of puts, deletes,
    /// re-puts and failures.
    #[test]
    fn both_flush_paths_write_each_key_once_in_order_with_its_last_write() {
        let mut next = below(0x9e37_79b9_7f4a_7c15u64);
        for walk in [true, false] {
            let mut m = Model {
                slots: BTreeMap::new(),
                log: DirtyLog::new(),
                expected: BTreeMap::new(),
            };
            let mut ts = 0;
            for epoch in 0..200 {
                for _ in 0..next(40) {
                    ts += 1;
                    let key = next(24);
                    if next(4) == 0 {
                        m.delete(key, ts);
                    } else {
                        m.put(key, ts * 10, ts);
                    }
                }
                let expected: Vec<_> = m.expected.iter().map(|(k, (v, t))| (*k, *v, *t)).collect();
                if epoch % 7 == 3 && !expected.is_empty() {
                    let at = next(expected.len() as u64) as usize;
                    assert!(m.flush(walk, Some(at)).is_err());
                }
                assert_eq!(m.flush(walk, None).unwrap(), expected, "walk {walk}");
                m.expected.clear();
                assert!(m.slots.values().all(|s| s.dirty == CLEAN));
                assert_eq!(m.flush(walk, None).unwrap(), vec![]);
            }
        }
    }
}
