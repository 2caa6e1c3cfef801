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
mod window;

pub use kv::InMemoryKeyValueStore;
pub use session::InMemorySessionStore;
pub use window::InMemoryWindowStore;

use std::sync::Arc;

use crate::changelog::{ChangelogEntry, ChangelogRecord};
use crate::codec::Codec;
use crate::error::StateError;

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
#[derive(Debug)]
pub(crate) struct DirtyLog<I> {
    entries: Vec<(I, i64)>,
}

impl<I> DirtyLog<I> {
    pub(crate) fn new() -> Self {
        Self {
            entries: Vec::new(),
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
    pub(crate) fn flush<V>(
        &mut self,
        out: &mut Vec<ChangelogRecord>,
        slots: &mut impl Slots<I, V>,
        mut record: impl FnMut(
            usize,
            &I,
            Option<&V>,
            i64,
            &mut Vec<ChangelogRecord>,
        ) -> Result<(), StateError>,
    ) -> Result<(), StateError> {
        let mut log = std::mem::take(&mut self.entries);
        // Stable: an id's later entry stays last.
        log.sort_by(|a, b| a.0.cmp(&b.0));
        out.reserve(log.len());
        let first = out.len();
        for (i, (id, timestamp)) in log.iter().enumerate() {
            if log.get(i + 1).is_some_and(|next| next.0 == *id) {
                continue;
            }
            let mut slot = slots.slot_mut(id);
            let value = slot.as_ref().map(|s| &s.value);
            if let Err(e) = record(out.len() - first, id, value, *timestamp, out) {
                out.truncate(first);
                self.keep_after_failed_flush(log, slots);
                return Err(e);
            }
            if let Some(s) = slot.as_mut() {
                s.dirty = CLEAN;
            }
        }
        Ok(())
    }

    /// Puts the log of a failed flush back and points every slot into it again.
    #[cold]
    #[inline(never)]
    fn keep_after_failed_flush<V>(&mut self, log: Vec<(I, i64)>, slots: &mut impl Slots<I, V>) {
        for (i, (id, _)) in log.iter().enumerate() {
            if let Some(s) = slots.slot_mut(id) {
                s.dirty = i;
            }
        }
        self.entries = log;
    }
}

/// Where a store's slots are found by their dirty-log id.
pub(crate) trait Slots<I, V> {
    /// The live slot of `id`.
    fn slot_mut(&mut self, id: &I) -> Option<&mut Slot<V>>;
}

/// A codec shared by a store's clones of itself.
pub(crate) type SharedCodec<T> = Arc<dyn Codec<T>>;

/// The changelog value of a flushed entry of `store` whose key encodes as `key`: the
/// encoding of `value`, or `None` (a tombstone).
#[inline]
pub(crate) fn encode_flushed_value<V>(
    codec: &dyn Codec<V>,
    value: Option<&V>,
    store: &str,
    key: &[u8],
) -> Result<Option<Vec<u8>>, StateError> {
    value
        .map(|v| codec.to_bytes(v))
        .transpose()
        .map_err(|e| StateError::encode_value(store, key, e))
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
