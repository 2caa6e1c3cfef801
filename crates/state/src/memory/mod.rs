//! The in-memory engine: typed values in ordered maps.
//!
//! Owns [`InMemoryKeyValueStore`], [`InMemoryWindowStore`] and [`InMemorySessionStore`]. They
//! hold `K` and `V` as they are; a write costs one B-tree descent. Key-value and window
//! stores keep a dirty flag in each slot and an append-only dirty log, so changelog tracking
//! adds no lookup (the key is cloned only the first time it is written in an epoch). Keys and
//! values are serialized only at [`flush_changelog`](crate::StateStore::flush_changelog) and
//! decoded only at restore.
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
mod session;
mod window;

pub use kv::InMemoryKeyValueStore;
pub use session::InMemorySessionStore;
pub use window::InMemoryWindowStore;

use std::sync::Arc;

use crate::changelog::ChangelogEntry;
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

/// A codec shared by a store's clones of itself.
pub(crate) type SharedCodec<T> = Arc<dyn Codec<T>>;

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
