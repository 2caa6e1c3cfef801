//! The store traits every engine implements.
//!
//! Owns [`StateStore`] (name, changelog flush, restore of one record or a batch, size), the
//! typed [`KeyValueStore`], [`TimestampedKeyValueStore`], [`WindowStore`] and
//! [`SessionStore`] traits, and [`StoreConfig`].
//!
//! Design: stores are typed. The in-memory engine holds `K` and `V` as they are (no
//! serialization on the hot path); the persistent engine encodes them with a
//! [`Codec`](crate::Codec). Both serialize a dirty key once per epoch for the changelog.
//! Reads return owned values (`V: Clone`) and ranges return vectors (a window store can also
//! lend one key's windows to a visitor, `for_each_in_key_range`), so every trait is
//! dyn-compatible and both engines fit behind `Box<dyn KeyValueStore<K, V>>`.
//!
//! Times are plain epoch milliseconds (`i64`). Every write takes the timestamp of the
//! record that caused it: it becomes the changelog record's timestamp.
//!
//! Key order is `K: Ord`'s wherever an answer or a flush is ordered by key, and a range's
//! bounds are compared by it, whatever the key codec, so both engines answer alike
//! (docs/state.md#key-order). The persistent engine uses its stored bytes' order for a key
//! codec that preserves order ([`Codec::preserves_order`](crate::Codec::preserves_order))
//! or names a sortable form ([`Codec::sortable_form`](crate::Codec::sortable_form), Kafka's
//! `i64` and `i32`); for any other it decodes, bounds and sorts keys.
//!
//! This module never knows about Kafka, threads, the DSL or how watermarks are generated; a
//! windowed store only receives the committed frontier as a number, in `expire`.

use std::ops::{Bound, ControlFlow};

use crate::changelog::ChangelogEntry;
use crate::changelog_batch::ChangelogBatch;
use crate::codec::ValueAndTimestamp;
use crate::error::StateError;
use crate::restore_batch::RestoreBatch;

/// Whether a range is empty by its bounds alone (an inverted range is empty, not a panic).
pub(crate) fn bounds_empty<T: Ord + ?Sized>(from: Bound<&T>, to: Bound<&T>) -> bool {
    match (from, to) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            a >= b
        }
        _ => false,
    }
}

/// Name and changelog setting of one store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreConfig {
    name: String,
    changelog_enabled: bool,
}

impl StoreConfig {
    /// A changelogged store called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            changelog_enabled: true,
        }
    }

    /// Turns changelogging on or off (`stoatflow.changelog.enabled`). Without it the store
    /// tracks no dirty keys and flushes nothing.
    #[must_use]
    pub fn with_changelog_enabled(mut self, enabled: bool) -> Self {
        self.changelog_enabled = enabled;
        self
    }

    /// The store name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether writes are changelogged.
    pub fn changelog_enabled(&self) -> bool {
        self.changelog_enabled
    }
}

/// What every store can do, whatever its shape.
pub trait StateStore: std::fmt::Debug {
    /// The store name (its changelog is `<application.id>-<name>-changelog`).
    fn name(&self) -> &str;

    /// Whether writes are changelogged.
    fn changelog_enabled(&self) -> bool;

    /// Appends one changelog record per key written since the last flush (its current value,
    /// or a tombstone if it is gone) to `out` and forgets those keys. Called at the barrier; the
    /// records belong to the epoch's transaction. Does nothing if changelogging is off. The
    /// records come in key order (`K: Ord`; window stores by start, then key; session stores
    /// by key, end, start), on both engines whatever the key codec.
    ///
    /// # Errors
    /// [`StateError::Engine`] if the persistent engine cannot read a dirty key back.
    fn flush_changelog(&mut self, out: &mut ChangelogBatch) -> Result<(), StateError>;

    /// Number of keys written since the last flush: zero exactly when the next flush writes
    /// nothing. The persistent engine counts each key once; the in-memory engine may count
    /// a key more than once (deleted, then written or deleted again, in one epoch).
    fn dirty_keys(&self) -> usize;

    /// Applies one committed changelog record (upsert or delete) without marking it dirty.
    ///
    /// # Errors
    /// [`StateError::CorruptChangelogRecord`] naming the store, partition and offset if the
    /// key or value does not decode.
    fn apply_changelog(&mut self, entry: &ChangelogEntry) -> Result<(), StateError>;

    /// Applies a batch of committed changelog records in order, as
    /// [`StateStore::apply_changelog`] on each in turn would (the persistent engine writes
    /// the batch to its engine in bulk).
    ///
    /// # Errors
    /// As [`StateStore::apply_changelog`]; the store then holds every record before the
    /// failing one.
    fn apply_changelog_batch(&mut self, batch: &RestoreBatch) -> Result<(), StateError> {
        for record in batch.iter() {
            self.apply_changelog(&record.to_entry())?;
        }
        Ok(())
    }

    /// Approximate number of entries (exact for the in-memory engine).
    fn approximate_num_entries(&self) -> u64;

    /// Live segments of a segmented store (the `store.segments` gauge), `None`
    /// for a store that is not segmented.
    fn live_segments(&self) -> Option<usize> {
        None
    }
}

/// A key-value store.
pub trait KeyValueStore<K, V>: StateStore {
    /// Writes `value` under `key`; `timestamp` is the writing record's time.
    ///
    /// # Errors
    /// [`StateError::Engine`] on a persistent-engine failure.
    fn put(&mut self, key: K, value: V, timestamp: i64) -> Result<(), StateError>;

    /// The value under `key`.
    ///
    /// # Errors
    /// [`StateError::Engine`] or [`StateError::Decode`] on a persistent-engine failure.
    fn get(&self, key: &K) -> Result<Option<V>, StateError>;

    /// Removes `key`, returning the old value.
    ///
    /// # Errors
    /// As [`KeyValueStore::put`].
    fn delete(&mut self, key: &K, timestamp: i64) -> Result<Option<V>, StateError>;

    /// Entries with keys within the bounds, in key order. Bounds and order are `K: Ord`'s,
    /// on both engines whatever the key codec. The persistent engine answers from its byte
    /// order for a codec that preserves order, and otherwise reads the entries the codec's
    /// covering range names (every entry by default) and bounds and sorts their decoded keys.
    ///
    /// # Errors
    /// As [`KeyValueStore::get`].
    fn range(&self, from: Bound<&K>, to: Bound<&K>) -> Result<Vec<(K, V)>, StateError>;

    /// Every entry, in key order.
    ///
    /// # Errors
    /// As [`KeyValueStore::get`].
    fn all(&self) -> Result<Vec<(K, V)>, StateError> {
        self.range(Bound::Unbounded, Bound::Unbounded)
    }
}

/// A key-value store whose values carry the timestamp of their last write (Kafka Streams'
/// `TimestampedKeyValueStore`; changelog values are `[timestamp i64 BE][value]`).
pub trait TimestampedKeyValueStore<K, V>: KeyValueStore<K, ValueAndTimestamp<V>> {
    /// Writes `value` stamped with `timestamp` (which is also the changelog timestamp).
    ///
    /// # Errors
    /// As [`KeyValueStore::put`].
    fn put_timestamped(&mut self, key: K, value: V, timestamp: i64) -> Result<(), StateError> {
        self.put(key, ValueAndTimestamp::new(value, timestamp), timestamp)
    }
}

impl<K, V, S: KeyValueStore<K, ValueAndTimestamp<V>> + ?Sized> TimestampedKeyValueStore<K, V>
    for S
{
}

/// Retention shared by the segmented (window and session) stores.
pub trait Segmented: StateStore {
    /// Drops every segment whose entries have all expired at `committed_frontier`: an entry
    /// expires when its time (window start, session end) plus the retention is strictly
    /// below the frontier. Returns the number of segments dropped. Later writes to expired
    /// times are ignored. Pass only the committed frontier, never a raw watermark.
    ///
    /// # Errors
    /// [`StateError::Engine`] on a persistent-engine failure.
    fn expire(&mut self, committed_frontier: i64) -> Result<usize, StateError>;

    /// Number of live segments (the `store.segments` gauge).
    fn segments(&self) -> usize;

    /// Writes ignored because their time had already expired.
    fn expired_writes(&self) -> u64;

    /// The earliest time not expired at the frontier the store was last expired to
    /// (`frontier - retention`; `i64::MIN` before the first expiry): an entry of an earlier
    /// time has expired, though it stays readable until its whole segment is dropped.
    fn first_live_time(&self) -> i64;
}

/// Implements [`StateStore`] and [`Segmented`] for a window or session store by handing each
/// call to its field `core`, an engine's segmented core (both cores have these methods).
/// Usage: `delegate_to_segmented_core!(Store where K: Ord, V: Clone);` for `Store<K, V>`;
/// `delegate_to_segmented_core!(bulk Store where K: Ord);` also hands over
/// `apply_changelog_batch`.
macro_rules! delegate_to_segmented_core {
    (bulk $store:ident $(where $($bound:tt)+)?) => {
        delegate_to_segmented_core!(@impl $store [
            fn apply_changelog_batch(
                &mut self,
                batch: &$crate::RestoreBatch,
            ) -> Result<(), $crate::error::StateError> {
                self.core.apply_changelog_batch(batch)
            }
        ] $(where $($bound)+)?);
    };
    ($store:ident $(where $($bound:tt)+)?) => {
        delegate_to_segmented_core!(@impl $store [] $(where $($bound)+)?);
    };
    (@impl $store:ident [$($batch:tt)*] $(where $($bound:tt)+)?) => {
        impl<K, V> $crate::store::StateStore for $store<K, V> $(where $($bound)+)? {
            $($batch)*

            fn flush_changelog(
                &mut self,
                out: &mut $crate::ChangelogBatch,
            ) -> Result<(), $crate::error::StateError> {
                self.core.flush_changelog(out)
            }

            fn name(&self) -> &str {
                self.core.name()
            }

            fn changelog_enabled(&self) -> bool {
                self.core.changelog_enabled()
            }

            fn dirty_keys(&self) -> usize {
                self.core.dirty_keys()
            }

            fn apply_changelog(
                &mut self,
                entry: &$crate::changelog::ChangelogEntry,
            ) -> Result<(), $crate::error::StateError> {
                self.core.apply_changelog(entry)
            }

            fn approximate_num_entries(&self) -> u64 {
                self.core.approximate_num_entries()
            }

            fn live_segments(&self) -> Option<usize> {
                Some(self.core.segments())
            }
        }

        impl<K, V> $crate::store::Segmented for $store<K, V> $(where $($bound)+)? {
            fn expire(&mut self, committed_frontier: i64) -> Result<usize, $crate::error::StateError> {
                self.core.expire(committed_frontier)
            }

            fn segments(&self) -> usize {
                self.core.segments()
            }

            fn expired_writes(&self) -> u64 {
                self.core.expired_writes()
            }

            fn first_live_time(&self) -> i64 {
                self.core.first_live_time()
            }
        }

        impl<K, V> std::fmt::Debug for $store<K, V> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.core.fmt_as(stringify!($store), f)
            }
        }
    };
}
pub(crate) use delegate_to_segmented_core;

/// A store of time windows, keyed by (key, window start).
pub trait WindowStore<K, V>: Segmented {
    /// Writes the window of `key` starting at `window_start`.
    ///
    /// # Errors
    /// As [`KeyValueStore::put`].
    fn put(
        &mut self,
        key: K,
        window_start: i64,
        value: V,
        timestamp: i64,
    ) -> Result<(), StateError>;

    /// Replaces the window of `key` starting at `window_start` with `f(current)` (`None` if
    /// there is none); `timestamp` is the writing record's time. As [`WindowStore::put`], the
    /// write is ignored if the window has expired (`f` is still called). The default is a
    /// fetch then a put; the in-memory engine does it in one traversal, hands `f` the stored
    /// value without cloning it, and clones `key` only when the entry is new.
    ///
    /// # Errors
    /// As [`KeyValueStore::put`].
    fn update(
        &mut self,
        key: &K,
        window_start: i64,
        timestamp: i64,
        f: &mut dyn FnMut(Option<V>) -> V,
    ) -> Result<(), StateError>
    where
        K: Clone,
    {
        let value = f(self.fetch(key, window_start)?);
        self.put(key.clone(), window_start, value, timestamp)
    }

    /// Replaces the windows of `key` starting at each of `starts` (ascending) with
    /// `f(start, current)`, each as [`WindowStore::update`] does (an expired start: `f` sees
    /// the current value, the write is ignored). The default is one `update` per start; the
    /// in-memory engine finds the key once per segment (a hopping window's record updates
    /// size / advance windows of its key).
    ///
    /// # Errors
    /// As [`KeyValueStore::put`].
    fn update_windows(
        &mut self,
        key: &K,
        starts: &[i64],
        timestamp: i64,
        f: &mut dyn FnMut(i64, Option<V>) -> V,
    ) -> Result<(), StateError>
    where
        K: Clone,
    {
        for &start in starts {
            self.update(key, start, timestamp, &mut |old| f(start, old))?;
        }
        Ok(())
    }

    /// Replaces every existing window of `key` with start in `time_from..=time_to` with `f(start, value)`,
    /// by start, without cloning the values; each is a write at `timestamp`, changelogged as
    /// [`WindowStore::put`], and, as there, a window whose time has expired is left as it is
    /// (counted in [`Segmented::expired_writes`], `f` not called). Creates no window. The
    /// default is a [`WindowStore::fetch_key_range`] then one put per window (an expired
    /// window's value goes back unchanged, a write the store ignores and counts); the
    /// in-memory engine folds the key's windows in place in one traversal (the sliding
    /// aggregation adds each record to every window of its key that contains it).
    ///
    /// # Errors
    /// As [`KeyValueStore::put`].
    fn update_key_range(
        &mut self,
        key: &K,
        time_from: i64,
        time_to: i64,
        timestamp: i64,
        f: &mut dyn FnMut(i64, V) -> V,
    ) -> Result<(), StateError>
    where
        K: Clone,
    {
        let first_live = self.first_live_time();
        for (start, value) in self.fetch_key_range(key, time_from, time_to)? {
            let value = if start < first_live {
                value
            } else {
                f(start, value)
            };
            self.put(key.clone(), start, value, timestamp)?;
        }
        Ok(())
    }

    /// The window of `key` starting at `window_start`.
    ///
    /// # Errors
    /// As [`KeyValueStore::get`].
    fn fetch(&self, key: &K, window_start: i64) -> Result<Option<V>, StateError>;

    /// The windows of `key` with start in `time_from..=time_to`, by start.
    ///
    /// # Errors
    /// As [`KeyValueStore::get`].
    fn fetch_key_range(
        &self,
        key: &K,
        time_from: i64,
        time_to: i64,
    ) -> Result<Vec<(i64, V)>, StateError>;

    /// Calls `f(start, &value)` for each window of `key` with start in `time_from..=time_to`,
    /// by start: [`WindowStore::fetch_key_range`] without cloning the values (the
    /// stream-stream join's probe). The default visits the result of `fetch_key_range`; the
    /// in-memory engine visits its stored values in place.
    ///
    /// # Errors
    /// As [`KeyValueStore::get`].
    fn for_each_in_key_range(
        &self,
        key: &K,
        time_from: i64,
        time_to: i64,
        f: &mut dyn FnMut(i64, &V),
    ) -> Result<(), StateError> {
        for (start, value) in self.fetch_key_range(key, time_from, time_to)? {
            f(start, &value);
        }
        Ok(())
    }

    /// Calls `f(start, &value)` for the windows of `key` with start in
    /// `time_from..=time_to`, newest first (Kafka Streams' `backwardFetch`), until `f` breaks:
    /// a caller wanting the newest few windows of a long range reads only those (the sliding
    /// aggregation's window set: the windows holding a record, then the newest one before
    /// them). The default visits the result of `fetch_key_range` backwards; the in-memory
    /// engine visits its stored values in place from the newest.
    ///
    /// # Errors
    /// As [`KeyValueStore::get`].
    fn for_each_in_key_range_backward(
        &self,
        key: &K,
        time_from: i64,
        time_to: i64,
        f: &mut dyn FnMut(i64, &V) -> ControlFlow<()>,
    ) -> Result<(), StateError> {
        for (start, value) in self.fetch_key_range(key, time_from, time_to)?.iter().rev() {
            if f(*start, value).is_break() {
                break;
            }
        }
        Ok(())
    }

    /// Every window with start in `time_from..=time_to`, as (start, key, value), ordered by
    /// start, then key.
    ///
    /// # Errors
    /// As [`KeyValueStore::get`].
    fn fetch_all(&self, time_from: i64, time_to: i64) -> Result<Vec<(i64, K, V)>, StateError>;

    /// Every window, as (start, key, value), ordered by start, then key.
    ///
    /// # Errors
    /// As [`KeyValueStore::get`].
    fn all(&self) -> Result<Vec<(i64, K, V)>, StateError> {
        self.fetch_all(i64::MIN, i64::MAX)
    }

    /// Removes the window of `key` starting at `window_start`.
    ///
    /// # Errors
    /// As [`KeyValueStore::put`].
    fn delete(&mut self, key: &K, window_start: i64, timestamp: i64) -> Result<(), StateError>;
}

/// A session's bounds, both inclusive (Kafka Streams' `SessionWindow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionWindow {
    /// Time of the session's first record.
    pub start: i64,
    /// Time of the session's last record.
    pub end: i64,
}

impl SessionWindow {
    /// A session from `start` to `end`.
    pub fn new(start: i64, end: i64) -> Self {
        Self { start, end }
    }
}

/// A store of sessions, keyed by (key, start, end); segmented by session end.
pub trait SessionStore<K, V>: Segmented {
    /// Writes the session.
    ///
    /// # Errors
    /// As [`KeyValueStore::put`].
    fn put(
        &mut self,
        key: K,
        window: SessionWindow,
        value: V,
        timestamp: i64,
    ) -> Result<(), StateError>;

    /// The value of exactly this session.
    ///
    /// # Errors
    /// As [`KeyValueStore::get`].
    fn fetch(&self, key: &K, window: SessionWindow) -> Result<Option<V>, StateError>;

    /// Sessions of `key` with `end >= earliest_end` and `start <= latest_start`, ordered by
    /// end, then start (the merge scan).
    ///
    /// # Errors
    /// As [`KeyValueStore::get`].
    fn find_sessions(
        &self,
        key: &K,
        earliest_end: i64,
        latest_start: i64,
    ) -> Result<Vec<(SessionWindow, V)>, StateError>;

    /// Every session with end in `end_from..=end_to`, ordered by end, then key, then start
    /// (the emission pass).
    ///
    /// # Errors
    /// As [`KeyValueStore::get`].
    fn fetch_all_by_end(
        &self,
        end_from: i64,
        end_to: i64,
    ) -> Result<Vec<(SessionWindow, K, V)>, StateError>;

    /// Every session, ordered by end, then key, then start.
    ///
    /// # Errors
    /// As [`KeyValueStore::get`].
    fn all(&self) -> Result<Vec<(SessionWindow, K, V)>, StateError> {
        self.fetch_all_by_end(i64::MIN, i64::MAX)
    }

    /// Removes the session.
    ///
    /// # Errors
    /// As [`KeyValueStore::put`].
    fn remove(&mut self, key: &K, window: SessionWindow, timestamp: i64) -> Result<(), StateError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_bounds() {
        use Bound::*;
        assert!(bounds_empty(Included("b"), Included("a")));
        assert!(!bounds_empty(Included("a"), Included("a")));
        assert!(bounds_empty(Included("a"), Excluded("a")));
        assert!(!bounds_empty(Unbounded, Excluded("a")));
    }
}
