//! The write-back cache in front of a persistent store's engine.
//!
//! Owns, per segment, the entries the store wrote since it was opened or the cache was last
//! emptied: each is a value or a deletion, dirty until the engine has it, and marked while
//! the changelog still owes it a record. Writes land here only; reads and scans look here
//! first. The engine gets dirty entries in one batch only when the cache outgrows its
//! bound (the key-value store then writes back and [`WriteCache::clear`]s; a window or
//! session store writes back and lets go of its oldest windows only, down to three
//! quarters of the bound, [`WindowCache::cut_to`]) and when the store closes, so that a
//! window opened and expired within the bound never reaches the engine at all.
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
//! Two layouts share that contract and its accounting ([`Counts`], the byte bound):
//! [`WriteCache`] here, one ordered map of engine keys (the key-value store, whose range
//! queries cross keys in byte order), and [`WindowCache`] in [`windows`], per segment a hash
//! map from the encoded key to that key's windows (the window and session stores, whose hot
//! path is one key's windows).
//!
//! This module never knows the engine, the codecs or the changelog.

mod windows;

pub(crate) use windows::WindowCache;

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::iter::Peekable;
use std::ops::Bound;

use crate::error::StateError;

/// What a cache entry costs beyond its key and value bytes (map node and bookkeeping), so
/// that many tiny entries still count.
pub(crate) const ENTRY_OVERHEAD: usize = 96;

/// The default bound of one store's cache (`PersistentConfig::with_cache_max_bytes`).
pub const DEFAULT_CACHE_MAX_BYTES: usize = 32 << 20;

/// The smallest bound `PersistentConfig::with_cache_max_bytes` takes: a spill is at least
/// this much, so the engine gets tables of a sensible size to compact.
pub const MIN_CACHE_MAX_BYTES: usize = 1 << 20;

/// One cached entry: of encoded bytes in the key-value store's cache, of typed values in
/// the window and session stores'.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cached<T = Vec<u8>> {
    /// The value, `None` if the key is deleted.
    pub(crate) value: Option<T>,
    /// Whether the engine does not have it yet.
    pub(crate) dirty: bool,
    /// Written live since the changelog was last flushed: the last such write's timestamp.
    pub(crate) logged: Option<i64>,
}

/// The cache of a key-value store, ordered as the engine is: segment → engine key → entry
/// (the store uses one segment).
#[derive(Debug)]
pub(crate) struct WriteCache<S> {
    segments: BTreeMap<S, BTreeMap<Vec<u8>, Cached>>,
    tally: Tally<S>,
    bytes: usize,
    max_bytes: usize,
    /// A buffer values are encoded into before they replace an entry's (so a failed encoding
    /// leaves the entry as it was); it keeps the replaced value's allocation for the next.
    scratch: Vec<u8>,
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

/// What the cache owes the engine and the changelog.
#[derive(Debug)]
struct Tally<S> {
    counts: Counts,
    /// Keys written live since the last changelog flush whose entries the cache has let go
    /// of (emptied past its bound, or their segment dropped): their values are the engine's.
    spilled: BTreeMap<(S, Vec<u8>), i64>,
}

impl<S: Ord> Tally<S> {
    /// Counts `entry` of (`segment`, `key`) as just written: dirty, and owed to the changelog
    /// at `logged`'s timestamp if that is given.
    fn written(&mut self, entry: &mut Cached, segment: S, key: &[u8], logged: Option<i64>) {
        if self.counts.written(entry, logged) && !self.spilled.is_empty() {
            // The entry carries the key to the changelog now.
            self.spilled.remove(&(segment, key.to_vec()));
        }
    }
}

pub(crate) fn cost(key: &[u8], value: Option<&[u8]>) -> usize {
    key.len() + value.map_or(0, <[u8]>::len) + ENTRY_OVERHEAD
}

impl<S: Ord + Copy> WriteCache<S> {
    /// An empty cache bounded by `max_bytes`.
    pub(crate) fn new(max_bytes: usize) -> Self {
        Self {
            segments: BTreeMap::new(),
            tally: Tally {
                counts: Counts::default(),
                spilled: BTreeMap::new(),
            },
            bytes: 0,
            max_bytes,
            scratch: Vec::new(),
        }
    }

    /// `Some(value or None if deleted)` if the cache knows `key` in `segment`; `None` if the
    /// engine must be asked.
    pub(crate) fn get(&self, segment: S, key: &[u8]) -> Option<Option<&[u8]>> {
        self.segments
            .get(&segment)?
            .get(key)
            .map(|c| c.value.as_deref())
    }

    /// Writes `value` (`None`: a deletion) under `key` in `segment`, dirty; `logged` is the
    /// timestamp of a live write the changelog must carry (`None` for a restored one).
    pub(crate) fn write(
        &mut self,
        segment: S,
        key: &[u8],
        value: Option<&[u8]>,
        logged: Option<i64>,
    ) {
        self.scratch.clear();
        if let Some(v) = value {
            self.scratch.extend_from_slice(v);
        }
        self.install(segment, key, value.is_some(), logged);
    }

    /// Puts the scratch buffer (if `present`) or a deletion under `key`.
    fn install(&mut self, segment: S, key: &[u8], present: bool, logged: Option<i64>) {
        let map = self.segments.entry(segment).or_default();
        let added = key.len() + if present { self.scratch.len() } else { 0 } + ENTRY_OVERHEAD;
        let entry = match map.get_mut(key) {
            Some(entry) => {
                self.bytes -= cost(key, entry.value.as_deref());
                match (&mut entry.value, present) {
                    (Some(old), true) => std::mem::swap(old, &mut self.scratch),
                    (slot, true) => *slot = Some(std::mem::take(&mut self.scratch)),
                    (slot, false) => *slot = None,
                }
                entry
            }
            None => {
                let value = present.then(|| std::mem::take(&mut self.scratch));
                map.entry(key.to_vec()).or_insert(Cached {
                    value,
                    dirty: false,
                    logged: None,
                })
            }
        };
        self.tally.written(entry, segment, key, logged);
        self.bytes += added;
    }

    /// Whether the cache holds more than its bound.
    pub(crate) fn is_over(&self) -> bool {
        self.bytes > self.max_bytes
    }

    /// Entries the engine does not have yet (written back with [`WriteCache::dirty_in`],
    /// then [`WriteCache::mark_clean`]).
    pub(crate) fn dirty_len(&self) -> usize {
        self.tally.counts.dirty
    }

    /// Keys written live since the last changelog flush.
    pub(crate) fn logged_len(&self) -> usize {
        self.tally.counts.logged + self.tally.spilled.len()
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.segments.values().map(BTreeMap::len).sum()
    }

    /// The dirty entries of `segment`, in key order.
    pub(crate) fn dirty_in(&self, segment: S) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> {
        self.segments
            .get(&segment)
            .into_iter()
            .flat_map(|m| m.iter())
            .filter(|(_, c)| c.dirty)
            .map(|(k, c)| (k.as_slice(), c.value.as_deref()))
    }

    /// Marks every entry clean (the engine has them all now).
    pub(crate) fn mark_clean(&mut self) {
        for entry in self.segments.values_mut().flat_map(BTreeMap::values_mut) {
            entry.dirty = false;
        }
        self.tally.counts.dirty = 0;
    }

    /// The keys written live since the last changelog flush, with the last write's
    /// timestamp, in (segment, key) order.
    pub(crate) fn logged_keys(&self) -> Vec<(S, Vec<u8>, i64)> {
        let mut out: Vec<(S, Vec<u8>, i64)> = Vec::with_capacity(self.logged_len());
        for (segment, map) in &self.segments {
            for (key, entry) in map {
                if let Some(ts) = entry.logged {
                    out.push((*segment, key.clone(), ts));
                }
            }
        }
        if !self.tally.spilled.is_empty() {
            out.extend(
                self.tally
                    .spilled
                    .iter()
                    .map(|((s, k), ts)| (*s, k.clone(), *ts)),
            );
            out.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        }
        out
    }

    /// Forgets which keys the changelog must carry (it has them now).
    pub(crate) fn clear_logged(&mut self) {
        if self.tally.counts.logged > 0 {
            for entry in self.segments.values_mut().flat_map(BTreeMap::values_mut) {
                entry.logged = None;
            }
        }
        self.tally.counts.logged = 0;
        self.tally.spilled.clear();
    }

    /// Forgets every entry (keeping which keys the changelog must carry). Call only when
    /// none is dirty.
    pub(crate) fn clear(&mut self) {
        debug_assert_eq!(self.tally.counts.dirty, 0, "a dirty entry would be lost");
        for (segment, map) in std::mem::take(&mut self.segments) {
            self.spill(segment, map);
        }
        self.bytes = 0;
        self.tally.counts.logged = 0;
    }

    fn spill(&mut self, segment: S, map: BTreeMap<Vec<u8>, Cached>) {
        for (key, entry) in map {
            if let Some(ts) = entry.logged {
                self.tally.spilled.insert((segment, key), ts);
            }
        }
    }

    /// The entries of `segment` with keys within the bounds, in key order.
    pub(crate) fn range<'a>(
        &'a self,
        segment: S,
        from: Bound<&'a [u8]>,
        to: Bound<&'a [u8]>,
    ) -> impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)> + 'a {
        let inverted = crate::store::bounds_empty(from, to);
        self.segments
            .get(&segment)
            .filter(|_| !inverted)
            .into_iter()
            .flat_map(move |m| m.range::<[u8], _>((from, to)))
            .map(|(k, c)| (k.as_slice(), c.value.as_deref()))
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

impl<'e> Seen<'e, &'e [u8]> {
    /// The bytes, wherever they come from (a cache of bytes).
    pub(crate) fn bytes(self) -> &'e [u8] {
        match self {
            Seen::Engine(b) | Seen::Cached(b) => b,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(rows: &[(&str, &str)]) -> Vec<Result<(Vec<u8>, Vec<u8>), StateError>> {
        rows.iter()
            .map(|(k, v)| Ok((k.as_bytes().to_vec(), v.as_bytes().to_vec())))
            .collect()
    }

    fn merged(cache: &WriteCache<()>, rows: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        merge(
            engine(rows).into_iter(),
            cache.range((), Bound::Unbounded, Bound::Unbounded),
            |k, v| {
                out.push((
                    String::from_utf8(k.to_vec()).unwrap(),
                    String::from_utf8(v.bytes().to_vec()).unwrap(),
                ));
                Ok(())
            },
        )
        .unwrap();
        out
    }

    #[test]
    fn the_cache_shadows_the_engine_and_a_deletion_hides_its_key() {
        let mut cache = WriteCache::new(1 << 20);
        cache.write((), b"b", Some(b"cached"), None);
        cache.write((), b"c", None, None);
        cache.write((), b"e", Some(b"new"), None);
        let got = merged(&cache, &[("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")]);
        let want = [("a", "1"), ("b", "cached"), ("d", "4"), ("e", "new")];
        assert_eq!(
            got,
            want.map(|(k, v)| (k.to_string(), v.to_string())).to_vec()
        );
    }

    #[test]
    fn an_engine_error_stops_the_merge() {
        let cache = WriteCache::<()>::new(1 << 20);
        let rows: Vec<Result<(Vec<u8>, Vec<u8>), StateError>> = vec![
            Ok((b"a".to_vec(), b"1".to_vec())),
            Err(StateError::Engine {
                store: "s".into(),
                detail: "broken".into(),
            }),
        ];
        let mut seen = 0;
        let err = merge(
            rows.into_iter(),
            cache.range((), Bound::Unbounded, Bound::Unbounded),
            |_, _| {
                seen += 1;
                Ok(())
            },
        )
        .unwrap_err();
        assert_eq!(seen, 1);
        assert!(err.to_string().contains("broken"));
    }

    #[test]
    fn bytes_dirt_and_logged_keys_are_counted_through_writes_and_clears() {
        let mut cache = WriteCache::new(3 * (ENTRY_OVERHEAD + 2));
        cache.write((), b"a", Some(b"1"), Some(10));
        cache.write((), b"a", Some(b"2"), Some(11));
        cache.write((), b"b", None, None);
        assert_eq!(
            (cache.dirty_len(), cache.len(), cache.logged_len()),
            (2, 2, 1)
        );
        assert!(!cache.is_over());
        let seen: Vec<_> = cache
            .dirty_in(())
            .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
            .collect();
        assert_eq!(
            seen,
            vec![(b"a".to_vec(), Some(b"2".to_vec())), (b"b".to_vec(), None)]
        );
        cache.mark_clean();
        assert_eq!(cache.dirty_len(), 0);
        assert_eq!(cache.get((), b"a"), Some(Some(&b"2"[..])));
        cache.write((), b"cc", Some(b"33"), Some(12));
        cache.write((), b"dd", Some(b"44"), None);
        assert!(cache.is_over());
        cache.mark_clean();
        cache.clear();
        assert_eq!((cache.len(), cache.logged_len()), (0, 2));
        // A live write of a spilled key carries it again, owed once.
        cache.write((), b"a", Some(b"5"), Some(13));
        assert_eq!(
            cache.logged_keys(),
            vec![((), b"a".to_vec(), 13), ((), b"cc".to_vec(), 12)]
        );
        cache.clear_logged();
        assert_eq!(cache.logged_len(), 0);
    }

    #[test]
    fn an_inverted_range_is_empty() {
        let mut cache = WriteCache::new(1 << 20);
        cache.write((), b"a", Some(b"1"), None);
        let n = cache
            .range((), Bound::Included(&b"b"[..]), Bound::Included(&b"a"[..]))
            .count();
        assert_eq!(n, 0);
    }
}
