//! The write-back cache in front of a persistent store's engine.
//!
//! Owns the contract both layouts keep and what they share: per entry a typed value or a
//! deletion ([`Cached`]), dirty until the engine has it, and marked while the changelog
//! still owes it a record; the dirty and logged counts ([`Counts`]); the byte bound and how
//! far a spill goes ([`SPILL_TO_PERCENT`]); the merge of a cache over the engine ([`merge`]).
//! Writes land in the cache only; reads and scans look there first. The engine gets dirty
//! entries in one batch only when the cache outgrows its bound, and when the store closes,
//! so that a key or window written and gone within the bound never reaches the engine.
//! Past its bound a cache writes back and lets go of a slice of its entries only, down to
//! [`SPILL_TO_PERCENT`] of the bound (the key-value store's least recently written,
//! [`WriteCache::cut_to`]; a window or session store's oldest windows,
//! [`WindowCache::cut_to`]), keeping what they owe the changelog owed: a spill of the whole
//! cache stalled the task and sent every hot entry to the engine for its next read.
//!
//! Both layouts hold the task's typed values: the store encodes a value only for the
//! changelog's flush and a write-back, and weighs it by its encoding when it first caches
//! it (which refuses, at the write, a value that does not encode).
//!
//! Why that is safe: a store is durable through its changelog (flushed at every barrier
//! from what this cache and the engine hold) and, across a clean close, through the
//! checkpoint written after the close has written the cache back. After a crash the local
//! files are never trusted without a checkpoint, so nothing depends on when the engine got
//! an entry. Why it is fast: the engine pays per write (a journal append, a memtable version,
//! a keyspace per new segment) and per read (a search through every version), while a
//! stream task rewrites the same keys many times an epoch.
//!
//! Invariant: a key in the cache shadows the engine (its value, or its absence if deleted);
//! a key not in the cache is as the engine has it.
//!
//! The two layouts: [`WriteCache`] in [`ordered`], one ordered map of engine keys (the
//! key-value store, whose range queries cross keys in byte order), and [`WindowCache`] in
//! [`windows`], per segment a hash map from the encoded key to that key's windows (the
//! window and session stores, whose hot path is one key's windows).
//!
//! This module never knows the engine, the codecs or the changelog.

mod ordered;
mod windows;

pub(crate) use ordered::{Cut, WriteCache};
pub(crate) use windows::WindowCache;

use std::borrow::Borrow;
use std::iter::Peekable;

use crate::error::StateError;

/// What a spill leaves in a cache, in percent of its bound: a quarter of the bound is
/// written back and let go at a time, so that a spill costs a slice of the cache and the
/// entries a task still writes stay in it.
pub(crate) const SPILL_TO_PERCENT: usize = 75;

/// What a cache entry costs beyond its key and value bytes (map node and bookkeeping), so
/// that many tiny entries still count.
pub(crate) const ENTRY_OVERHEAD: usize = 96;

/// The default bound of one store's cache (`PersistentConfig::with_cache_max_bytes`).
pub const DEFAULT_CACHE_MAX_BYTES: usize = 32 << 20;

/// The smallest bound `PersistentConfig::with_cache_max_bytes` takes: a spill is at least
/// this much, so the engine gets tables of a sensible size to compact.
pub const MIN_CACHE_MAX_BYTES: usize = 1 << 20;

/// One cached entry, of the store's value type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cached<T> {
    /// The value, `None` if the key is deleted.
    pub(crate) value: Option<T>,
    /// Whether the engine does not have it yet.
    pub(crate) dirty: bool,
    /// Written live since the changelog was last flushed: the last such write's timestamp.
    pub(crate) logged: Option<i64>,
}

/// How many cached entries the engine and the changelog are owed.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    /// Entries the engine does not have yet.
    pub(crate) dirty: usize,
    /// Entries the changelog owes a record.
    pub(crate) logged: usize,
}

impl Counts {
    /// Counts `entry` as just written: dirty, and owed to the changelog at `logged`'s
    /// timestamp if that is given. Returns whether the changelog newly owes it (the caller
    /// then forgets the key among those it had spilled: the entry carries it now).
    pub(crate) fn written<T>(&mut self, entry: &mut Cached<T>, logged: Option<i64>) -> bool {
        if !entry.dirty {
            entry.dirty = true;
            self.dirty += 1;
        }
        let Some(ts) = logged else {
            return false;
        };
        let newly = entry.logged.is_none();
        self.logged += usize::from(newly);
        entry.logged = Some(ts);
        newly
    }

    /// Forgets `entry`, which the cache lets go of.
    pub(crate) fn forget<T>(&mut self, entry: &Cached<T>) {
        self.dirty -= usize::from(entry.dirty);
        self.logged -= usize::from(entry.logged.is_some());
    }
}

/// A value a merge visits: the engine's bytes, or the cache's value (bytes or typed).
#[derive(Debug)]
pub(crate) enum Seen<'e, C> {
    /// Read from the engine.
    Engine(&'e [u8]),
    /// Held by the cache.
    Cached(C),
}

/// Visits, in key order, the union of `engine` (key order, as the engine reads it) and
/// `cache` (key order): a key in the cache shadows the engine's, and a deleted one is
/// skipped. Keys compare as `Q`: engine key bytes, or one key's windows.
pub(crate) fn merge<'c, Q, KE, KC, VE, C>(
    engine: impl Iterator<Item = Result<(KE, VE), StateError>>,
    cache: impl Iterator<Item = (&'c KC, Option<C>)>,
    mut visit: impl FnMut(&Q, Seen<'_, C>) -> Result<(), StateError>,
) -> Result<(), StateError>
where
    Q: Ord + ?Sized,
    KE: Borrow<Q>,
    KC: Borrow<Q> + ?Sized + 'c,
    VE: AsRef<[u8]>,
{
    let mut engine: Peekable<_> = engine.peekable();
    let mut cache = cache.peekable();
    loop {
        if let Some(Err(_)) = engine.peek() {
            return engine.next().map_or(Ok(()), |r| r.map(|_| ()));
        }
        let take_cache = match (engine.peek(), cache.peek()) {
            (None, None) => return Ok(()),
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (Some(Ok((ek, _))), Some((ck, _))) => {
                let ord = ek.borrow().cmp((*ck).borrow());
                if ord == std::cmp::Ordering::Equal {
                    engine.next();
                }
                ord != std::cmp::Ordering::Less
            }
            (Some(Err(_)), _) => unreachable!("an engine error returned above"),
        };
        if take_cache {
            if let Some((key, Some(value))) = cache.next() {
                visit(key.borrow(), Seen::Cached(value))?;
            }
        } else if let Some(Ok((key, value))) = engine.next() {
            visit(key.borrow(), Seen::Engine(value.as_ref()))?;
        }
    }
}
