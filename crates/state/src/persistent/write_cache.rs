//! The write-back cache in front of a persistent store's engine.
//!
//! Owns, per segment, the entries the store wrote since it was opened or the cache was last
//! emptied: each is a value or a deletion, dirty until the engine has it, and marked while
//! the changelog still owes it a record. Writes land here only; reads and scans look here
//! first. The engine gets the dirty entries in one batch only when the cache outgrows its
//! bound ([`WriteCache::is_over`]: the store then writes back and [`WriteCache::clear`]s)
//! and when the store closes, so that a window opened and expired within the bound never
//! reaches the engine at all.
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
//! This module never knows the engine, the codecs or the changelog.

use std::collections::BTreeMap;
use std::iter::Peekable;
use std::ops::Bound;

use crate::error::StateError;

/// What a cache entry costs beyond its key and value bytes (map node and bookkeeping), so
/// that many tiny entries still count.
const ENTRY_OVERHEAD: usize = 96;

/// The default bound of one store's cache (`PersistentConfig::with_cache_max_bytes`).
pub const DEFAULT_CACHE_MAX_BYTES: usize = 32 << 20;

/// The smallest bound `PersistentConfig::with_cache_max_bytes` takes: a spill is at least
/// this much, so the engine gets tables of a sensible size to compact.
pub const MIN_CACHE_MAX_BYTES: usize = 1 << 20;

/// One cached entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cached {
    /// The value, `None` if the key is deleted.
    pub(crate) value: Option<Vec<u8>>,
    /// Whether the engine does not have it yet.
    pub(crate) dirty: bool,
    /// Written live since the changelog was last flushed: the last such write's timestamp.
    pub(crate) logged: Option<i64>,
}

/// The cache of one store: segment → engine key → entry (a key-value store uses one segment).
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

/// What the cache owes the engine and the changelog.
#[derive(Debug)]
struct Tally<S> {
    /// Entries the engine does not have yet.
    dirty: usize,
    /// Entries the changelog owes a record.
    logged: usize,
    /// Keys written live since the last changelog flush whose entries the cache has let go
    /// of (emptied past its bound, or their segment dropped): their values are the engine's.
    spilled: BTreeMap<(S, Vec<u8>), i64>,
}

impl<S: Ord> Tally<S> {
    /// Counts `entry` of (`segment`, `key`) as just written: dirty, and owed to the changelog
    /// at `logged`'s timestamp if that is given.
    fn written(&mut self, entry: &mut Cached, segment: S, key: &[u8], logged: Option<i64>) {
        if !entry.dirty {
            entry.dirty = true;
            self.dirty += 1;
        }
        if let Some(ts) = logged {
            if entry.logged.is_none() {
                self.logged += 1;
                if !self.spilled.is_empty() {
                    // The entry carries the key to the changelog now.
                    self.spilled.remove(&(segment, key.to_vec()));
                }
            }
            entry.logged = Some(ts);
        }
    }
}

fn cost(key: &[u8], value: Option<&[u8]>) -> usize {
    key.len() + value.map_or(0, <[u8]>::len) + ENTRY_OVERHEAD
}

impl<S: Ord + Copy> WriteCache<S> {
    /// An empty cache bounded by `max_bytes`.
    pub(crate) fn new(max_bytes: usize) -> Self {
        Self {
            segments: BTreeMap::new(),
            tally: Tally {
                dirty: 0,
                logged: 0,
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

    /// Writes the value `encode` puts into an empty buffer under `key` in `segment`, as
    /// [`WriteCache::write`] does; if `encode` fails the cache is unchanged.
    pub(crate) fn write_encoded(
        &mut self,
        segment: S,
        key: &[u8],
        logged: Option<i64>,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<(), StateError>,
    ) -> Result<(), StateError> {
        self.scratch.clear();
        encode(&mut self.scratch)?;
        self.install(segment, key, true, logged);
        Ok(())
    }

    /// Replaces, in place, the value of `key` in `segment` if the cache holds it (one
    /// lookup): `encode` gets the current value (`None` if deleted) and an empty buffer, and
    /// returns whether to write what it put there. `None` if the cache does not hold the key
    /// (nothing is called); on an error the cache is unchanged.
    pub(crate) fn rewrite(
        &mut self,
        segment: S,
        key: &[u8],
        logged: Option<i64>,
        encode: impl FnOnce(Option<&[u8]>, &mut Vec<u8>) -> Result<bool, StateError>,
    ) -> Result<Option<()>, StateError> {
        let Some(entry) = self.segments.get_mut(&segment).and_then(|m| m.get_mut(key)) else {
            return Ok(None);
        };
        self.scratch.clear();
        if !encode(entry.value.as_deref(), &mut self.scratch)? {
            return Ok(Some(()));
        }
        self.bytes -= cost(key, entry.value.as_deref());
        match &mut entry.value {
            Some(old) => std::mem::swap(old, &mut self.scratch),
            slot => *slot = Some(std::mem::take(&mut self.scratch)),
        }
        self.bytes += cost(key, entry.value.as_deref());
        self.tally.written(entry, segment, key, logged);
        Ok(Some(()))
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

    /// Entries the engine does not have yet (written back with [`WriteCache::dirty_in`] per
    /// segment of [`WriteCache::segments_with_dirty`], then [`WriteCache::mark_clean`]).
    pub(crate) fn dirty_len(&self) -> usize {
        self.tally.dirty
    }

    /// Keys written live since the last changelog flush.
    pub(crate) fn logged_len(&self) -> usize {
        self.tally.logged + self.tally.spilled.len()
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.segments.values().map(BTreeMap::len).sum()
    }

    /// The segments holding a dirty value (a segment with only deletions needs nothing
    /// created in the engine).
    pub(crate) fn segments_with_dirty_values(&self) -> Vec<S> {
        self.segments
            .iter()
            .filter(|(_, m)| m.values().any(|c| c.dirty && c.value.is_some()))
            .map(|(s, _)| *s)
            .collect()
    }

    /// The segments the cache holds entries of, ascending.
    pub(crate) fn segment_ids(&self) -> impl Iterator<Item = S> + '_ {
        self.segments.keys().copied()
    }

    /// The segments holding a dirty entry, ascending.
    pub(crate) fn segments_with_dirty(&self) -> Vec<S> {
        self.segments
            .iter()
            .filter(|(_, m)| m.values().any(|c| c.dirty))
            .map(|(s, _)| *s)
            .collect()
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
        self.tally.dirty = 0;
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
        if self.tally.logged > 0 {
            for entry in self.segments.values_mut().flat_map(BTreeMap::values_mut) {
                entry.logged = None;
            }
        }
        self.tally.logged = 0;
        self.tally.spilled.clear();
    }

    /// Forgets every entry (keeping which keys the changelog must carry). Call only when
    /// none is dirty.
    pub(crate) fn clear(&mut self) {
        debug_assert_eq!(self.tally.dirty, 0, "a dirty entry would be lost");
        for (segment, map) in std::mem::take(&mut self.segments) {
            self.spill(segment, map);
        }
        self.bytes = 0;
        self.tally.logged = 0;
    }

    fn spill(&mut self, segment: S, map: BTreeMap<Vec<u8>, Cached>) {
        for (key, entry) in map {
            if let Some(ts) = entry.logged {
                self.tally.spilled.insert((segment, key), ts);
            }
        }
    }

    /// Forgets the segments below `first_live` (their keyspaces are dropped too); what they
    /// owe the changelog stays owed.
    pub(crate) fn drop_below(&mut self, first_live: S) {
        let live = self.segments.split_off(&first_live);
        let dropped = std::mem::replace(&mut self.segments, live);
        for (segment, map) in dropped {
            for (key, entry) in &map {
                self.bytes -= cost(key, entry.value.as_deref());
                self.tally.dirty -= usize::from(entry.dirty);
                self.tally.logged -= usize::from(entry.logged.is_some());
            }
            self.spill(segment, map);
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

    /// Whether `segment` holds a value (not only deletions).
    pub(crate) fn has_value_in(&self, segment: S) -> bool {
        self.segments
            .get(&segment)
            .is_some_and(|m| m.values().any(|c| c.value.is_some()))
    }
}

/// Visits, in key order, the union of `engine` (key order, as the engine reads it) and
/// `cache` (key order): a key in the cache shadows the engine's, and a deleted one is
/// skipped.
pub(crate) fn merge<'c, KE, VE>(
    engine: impl Iterator<Item = Result<(KE, VE), StateError>>,
    cache: impl Iterator<Item = (&'c [u8], Option<&'c [u8]>)>,
    mut visit: impl FnMut(&[u8], &[u8]) -> Result<(), StateError>,
) -> Result<(), StateError>
where
    KE: AsRef<[u8]>,
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
                let ord = ek.as_ref().cmp(ck);
                if ord == std::cmp::Ordering::Equal {
                    engine.next();
                }
                ord != std::cmp::Ordering::Less
            }
            (Some(Err(_)), _) => unreachable!("an engine error returned above"),
        };
        if take_cache {
            if let Some((key, Some(value))) = cache.next() {
                visit(key, value)?;
            }
        } else if let Some(Ok((key, value))) = engine.next() {
            visit(key.as_ref(), value.as_ref())?;
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
                    String::from_utf8(v.to_vec()).unwrap(),
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
    fn bytes_dirt_and_logged_keys_are_counted_through_rewrites_clears_and_drops() {
        let mut cache = WriteCache::new(3 * (ENTRY_OVERHEAD + 2));
        cache.write(1, b"a", Some(b"1"), Some(10));
        cache.write(1, b"a", Some(b"2"), Some(11));
        cache.write(2, b"b", None, None);
        assert_eq!(
            (cache.dirty_len(), cache.len(), cache.logged_len()),
            (2, 2, 1)
        );
        assert!(!cache.is_over());
        let seen: Vec<_> = cache
            .segments_with_dirty()
            .into_iter()
            .flat_map(|s| {
                cache
                    .dirty_in(s)
                    .map(move |(k, v)| (s, k.to_vec(), v.map(<[u8]>::to_vec)))
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (1, b"a".to_vec(), Some(b"2".to_vec())),
                (2, b"b".to_vec(), None)
            ]
        );
        cache.mark_clean();
        assert_eq!(cache.dirty_len(), 0);
        assert_eq!(cache.get(1, b"a"), Some(Some(&b"2"[..])));
        cache.write(3, b"cc", Some(b"33"), Some(12));
        cache
            .write_encoded(3, b"dd", None, |out| {
                out.extend_from_slice(b"44");
                Ok(())
            })
            .unwrap();
        assert!(cache.is_over());
        assert_eq!(cache.segments_with_dirty_values(), vec![3]);
        cache.drop_below(3);
        assert_eq!(cache.segment_ids().collect::<Vec<_>>(), vec![3]);
        assert_eq!((cache.dirty_len(), cache.len()), (2, 2));
        assert!(!cache.is_over());
        // The dropped segment's key is still owed to the changelog (it reads as gone now).
        assert_eq!(
            cache.logged_keys(),
            vec![(1, b"a".to_vec(), 11), (3, b"cc".to_vec(), 12)]
        );
        cache.mark_clean();
        cache.clear();
        assert_eq!((cache.len(), cache.logged_len()), (0, 2));
        cache.clear_logged();
        assert_eq!(cache.logged_len(), 0);
    }

    #[test]
    fn a_failed_encoding_leaves_the_entry_as_it_was() {
        let mut cache = WriteCache::new(1 << 20);
        cache.write((), b"k", Some(b"old"), Some(1));
        let err = cache.write_encoded((), b"k", Some(2), |out| {
            out.extend_from_slice(b"half");
            Err(StateError::Engine {
                store: "s".into(),
                detail: "cannot encode".into(),
            })
        });
        assert!(err.is_err());
        assert_eq!(cache.get((), b"k"), Some(Some(&b"old"[..])));
        assert_eq!(cache.logged_keys(), vec![((), b"k".to_vec(), 1)]);
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
