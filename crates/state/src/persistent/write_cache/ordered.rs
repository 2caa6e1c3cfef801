//! The write-back cache of a key-value store, in the engine's key order, holding the task's
//! typed values.
//!
//! Owns [`WriteCache`]: an ordered map from the engine key to a [`Cached`] entry of the
//! store's value type, with what the entry weighs against the bound and when it was last
//! written (a clock of the cache's own, one tick per write); the keys it has let go of that
//! the changelog still owes; the byte bound. The engine key's bytes are the order the store
//! answers a range in (docs/state.md#key-order), so a range of the cache is a range of the
//! map, merged with the engine's without sorting anything.
//!
//! Why typed values: a stream task reads and rewrites the same keys many times an epoch (an
//! aggregate, a join's unmatched records); holding its values as the task made them saves a
//! decode and an encode per record, and the store encodes a value only when the changelog
//! or the engine needs its bytes (the barrier's flush, a write-back). What a value weighs
//! against the bound is what the store says when it first caches the entry (its encoded
//! size); a rewrite in place keeps that weight, so a value that grows in place is counted at
//! its first size until the entry is cached anew.
//!
//! Which entries a spill lets go of ([`WriteCache::cut_to`]): the least recently written,
//! down to the target. Only written keys are cached (a read from the engine fills nothing),
//! and a stream task reads a key just before it writes it (an aggregate, a join's lookup
//! before its put or delete), so the last write is the last use: the keys a task still
//! rewrites stay, and one written once and left (an emitted join record's tombstone, a key
//! not seen since) goes. Kafka Streams' record cache evicts the same way. Ordering by key or
//! by size would send hot keys to the engine for their next read.
//!
//! The contract of [`super`] holds: a key in the cache shadows the engine, and the dirty
//! and logged counts are kept as [`super::Counts`] says.
//!
//! This module never knows the engine, the codecs or the changelog.

use std::collections::{BTreeMap, btree_map};
use std::ops::Bound;

use super::{Cached, Counts, ENTRY_OVERHEAD};

/// A cached key: its entry, what its value weighs (0 for a deletion), and when it was last
/// written on the cache's clock.
#[derive(Debug)]
struct Slot<V> {
    entry: Cached<V>,
    weight: usize,
    written: u64,
}

/// What an entry of `key` whose value weighs `weight` costs the bound.
fn entry_cost(key: &[u8], weight: usize) -> usize {
    key.len() + weight + ENTRY_OVERHEAD
}

/// The cache of one key-value store (see the module docs): engine key → entry.
#[derive(Debug)]
pub(crate) struct WriteCache<V> {
    entries: BTreeMap<Box<[u8]>, Slot<V>>,
    counts: Counts,
    /// Keys written live since the last changelog flush whose entries the cache has let go
    /// of: their values are the engine's.
    spilled: BTreeMap<Box<[u8]>, i64>,
    bytes: usize,
    max_bytes: usize,
    /// The write clock: the last write's tick.
    clock: u64,
}

/// Which entries an eviction takes: those last written at or before a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    through: Option<u64>,
}

impl Cut {
    /// Every entry.
    pub(crate) const ALL: Cut = Cut {
        through: Some(u64::MAX),
    };

    /// Whether the cut takes an entry last written at `written`.
    fn covers(self, written: u64) -> bool {
        self.through.is_some_and(|t| written <= t)
    }
}

impl<V> WriteCache<V> {
    /// An empty cache bounded by `max_bytes`.
    pub(crate) fn new(max_bytes: usize) -> Self {
        Self {
            entries: BTreeMap::new(),
            counts: Counts::default(),
            spilled: BTreeMap::new(),
            bytes: 0,
            max_bytes,
            clock: 0,
        }
    }

    /// `Some(value or None if deleted)` if the cache knows `key`; `None` if the engine must
    /// be asked.
    pub(crate) fn get(&self, key: &[u8]) -> Option<Option<&V>> {
        self.entries.get(key).map(|s| s.entry.value.as_ref())
    }

    /// Writes `value` with its weight (`None`: a deletion) under `key`, dirty; `logged` is
    /// the timestamp of a live write the changelog must carry (`None` for a restored one).
    pub(crate) fn write(&mut self, key: &[u8], value: Option<(V, usize)>, logged: Option<i64>) {
        let (value, weight) = value.map_or((None, 0), |(v, w)| (Some(v), w));
        self.clock += 1;
        let slot = match self.entries.get_mut(key) {
            Some(slot) => {
                self.bytes -= entry_cost(key, slot.weight);
                slot.entry.value = value;
                slot.weight = weight;
                slot.written = self.clock;
                slot
            }
            None => self.entries.entry(key.into()).or_insert(Slot {
                entry: Cached {
                    value,
                    dirty: false,
                    logged: None,
                },
                weight,
                written: self.clock,
            }),
        };
        self.bytes += entry_cost(key, weight);
        if self.counts.written(&mut slot.entry, logged) && !self.spilled.is_empty() {
            // The entry carries the key to the changelog now.
            self.spilled.remove(key);
        }
    }

    /// Puts `value` under `key`, dirty, as a write at `logged`, in one search of the map
    /// for a cached key and two for a new one: a cached value is replaced in place, keeping
    /// its weight; a new entry, or a deletion replaced by a value, is weighed by `weigh`,
    /// whose error leaves the cache as it was.
    pub(crate) fn put<E>(
        &mut self,
        key: &[u8],
        value: V,
        logged: Option<i64>,
        weigh: impl FnOnce(&V) -> Result<usize, E>,
    ) -> Result<(), E> {
        let slot = match self.entries.get_mut(key) {
            Some(slot) => {
                let weight = match slot.weight {
                    0 => weigh(&value)?,
                    w => w,
                };
                self.bytes = self.bytes - entry_cost(key, slot.weight) + entry_cost(key, weight);
                slot.entry.value = Some(value);
                slot.weight = weight;
                slot
            }
            None => {
                let weight = weigh(&value)?;
                self.bytes += entry_cost(key, weight);
                let slot = Slot {
                    entry: Cached {
                        value: Some(value),
                        dirty: false,
                        logged: None,
                    },
                    weight,
                    written: 0,
                };
                match self.entries.entry(key.into()) {
                    btree_map::Entry::Vacant(vacant) => vacant.insert(slot),
                    btree_map::Entry::Occupied(_) => unreachable!("the key was not cached"),
                }
            }
        };
        self.clock += 1;
        slot.written = self.clock;
        if self.counts.written(&mut slot.entry, logged) && !self.spilled.is_empty() {
            self.spilled.remove(key);
        }
        Ok(())
    }

    /// Rewrites, in place, the value of `key` if the cache holds it (one lookup): `update`
    /// gets the value (`None` if deleted) and returns whether it wrote, which counts the
    /// entry as written at `logged`. `None` if the cache does not hold it (`update` is not
    /// called). A rewrite keeps the entry's weight (a deletion rewritten to a value weighs
    /// `fallback`, a value rewritten to a deletion nothing).
    pub(crate) fn rewrite(
        &mut self,
        key: &[u8],
        logged: Option<i64>,
        fallback: usize,
        update: impl FnOnce(&mut Option<V>) -> bool,
    ) -> Option<()> {
        let slot = self.entries.get_mut(key)?;
        if !update(&mut slot.entry.value) {
            return Some(());
        }
        let weight = match (&slot.entry.value, slot.weight) {
            (None, _) => 0,
            (Some(_), 0) => fallback,
            (Some(_), w) => w,
        };
        self.bytes = self.bytes - entry_cost(key, slot.weight) + entry_cost(key, weight);
        slot.weight = weight;
        self.clock += 1;
        slot.written = self.clock;
        if self.counts.written(&mut slot.entry, logged) && !self.spilled.is_empty() {
            self.spilled.remove(key);
        }
        Some(())
    }

    /// Whether the cache holds more than its bound.
    pub(crate) fn is_over(&self) -> bool {
        self.bytes > self.max_bytes
    }

    /// The bound.
    pub(crate) fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The least recently written entries whose eviction leaves at most `target` bytes
    /// (none if the cache holds no more already).
    pub(crate) fn cut_to(&self, target: usize) -> Cut {
        if self.bytes <= target {
            return Cut { through: None };
        }
        let mut by_age: Vec<(u64, usize)> = self
            .entries
            .iter()
            .map(|(k, s)| (s.written, entry_cost(k, s.weight)))
            .collect();
        by_age.sort_unstable_by_key(|(written, _)| *written);
        let mut bytes = self.bytes;
        let mut through = None;
        for (written, cost) in by_age {
            if bytes <= target {
                break;
            }
            bytes -= cost;
            through = Some(written);
        }
        Cut { through }
    }

    /// Lets go of the entries `cut` takes (the store has written their dirty ones back):
    /// what they owe the changelog stays owed.
    pub(crate) fn evict(&mut self, cut: Cut) {
        let mut owed: Vec<(Box<[u8]>, i64)> = Vec::new();
        self.entries.retain(|key, slot| {
            if !cut.covers(slot.written) {
                return true;
            }
            self.bytes -= entry_cost(key, slot.weight);
            self.counts.forget(&slot.entry);
            if let Some(ts) = slot.entry.logged {
                owed.push((key.clone(), ts));
            }
            false
        });
        self.spilled.extend(owed);
    }

    /// Entries the engine does not have yet.
    pub(crate) fn dirty_len(&self) -> usize {
        self.counts.dirty
    }

    /// Keys written live since the last changelog flush.
    pub(crate) fn logged_len(&self) -> usize {
        self.counts.logged + self.spilled.len()
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The dirty entries `cut` takes, in key order: (engine key, value or `None` if deleted).
    pub(crate) fn dirty_in(&self, cut: Cut) -> impl Iterator<Item = (&[u8], Option<&V>)> {
        self.entries
            .iter()
            .filter(move |(_, s)| s.entry.dirty && cut.covers(s.written))
            .map(|(k, s)| (&**k, s.entry.value.as_ref()))
    }

    /// Marks every entry clean (the engine has them all now).
    pub(crate) fn mark_clean(&mut self) {
        for slot in self.entries.values_mut() {
            slot.entry.dirty = false;
        }
        self.counts.dirty = 0;
    }

    /// The keys written live since the last changelog flush, with the last write's
    /// timestamp, in key order.
    pub(crate) fn logged_keys(&self) -> Vec<(&[u8], i64)> {
        let mut out = Vec::with_capacity(self.logged_len());
        if self.counts.logged > 0 {
            out.extend(
                self.entries
                    .iter()
                    .filter_map(|(k, s)| s.entry.logged.map(|ts| (&**k, ts))),
            );
        }
        if !self.spilled.is_empty() {
            out.extend(self.spilled.iter().map(|(k, ts)| (&**k, *ts)));
            out.sort_unstable_by(|a, b| a.0.cmp(b.0));
        }
        out
    }

    /// Forgets which keys the changelog must carry (it has them now).
    pub(crate) fn clear_logged(&mut self) {
        if self.counts.logged > 0 {
            for slot in self.entries.values_mut() {
                slot.entry.logged = None;
            }
        }
        self.counts.logged = 0;
        self.spilled.clear();
    }

    /// Forgets every entry (keeping which keys the changelog must carry). Call only when
    /// none is dirty.
    pub(crate) fn clear(&mut self) {
        debug_assert_eq!(self.counts.dirty, 0, "a dirty entry would be lost");
        self.evict(Cut::ALL);
    }

    /// The entries with keys within the bounds, in key order.
    pub(crate) fn range<'a>(
        &'a self,
        from: Bound<&'a [u8]>,
        to: Bound<&'a [u8]>,
    ) -> impl Iterator<Item = (&'a [u8], Option<&'a V>)> + 'a {
        let inverted = crate::store::bounds_empty(from, to);
        (!inverted)
            .then(|| self.entries.range::<[u8], _>((from, to)))
            .into_iter()
            .flatten()
            .map(|(k, s)| (&**k, s.entry.value.as_ref()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Seen, merge};
    use super::*;
    use crate::error::StateError;

    type Cache = WriteCache<&'static str>;

    fn engine(rows: &[(&str, &str)]) -> Vec<Result<(Vec<u8>, Vec<u8>), StateError>> {
        rows.iter()
            .map(|(k, v)| Ok((k.as_bytes().to_vec(), v.as_bytes().to_vec())))
            .collect()
    }

    fn merged(cache: &Cache, rows: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        merge(
            engine(rows).into_iter(),
            cache.range(Bound::Unbounded, Bound::Unbounded),
            |k, v| {
                let v = match v {
                    Seen::Engine(b) => String::from_utf8(b.to_vec()).unwrap(),
                    Seen::Cached(v) => (*v).to_string(),
                };
                out.push((String::from_utf8(k.to_vec()).unwrap(), v));
                Ok(())
            },
        )
        .unwrap();
        out
    }

    fn cached(cache: &Cache) -> Vec<&str> {
        cache
            .range(Bound::Unbounded, Bound::Unbounded)
            .map(|(k, _)| std::str::from_utf8(k).unwrap())
            .collect()
    }

    #[test]
    fn the_cache_shadows_the_engine_and_a_deletion_hides_its_key() {
        let mut cache = Cache::new(1 << 20);
        cache.write(b"b", Some(("cached", 6)), None);
        cache.write(b"c", None, None);
        cache.write(b"e", Some(("new", 3)), None);
        let got = merged(&cache, &[("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")]);
        let want = [("a", "1"), ("b", "cached"), ("d", "4"), ("e", "new")];
        assert_eq!(
            got,
            want.map(|(k, v)| (k.to_string(), v.to_string())).to_vec()
        );
    }

    #[test]
    fn an_engine_error_stops_the_merge() {
        let cache = Cache::new(1 << 20);
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
            cache.range(Bound::Unbounded, Bound::Unbounded),
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
    fn an_inverted_range_is_empty() {
        let mut cache = Cache::new(1 << 20);
        cache.write(b"a", Some(("1", 1)), None);
        let n = cache
            .range(Bound::Included(&b"b"[..]), Bound::Included(&b"a"[..]))
            .count();
        assert_eq!(n, 0);
    }

    #[test]
    fn bytes_dirt_and_logged_keys_are_counted_through_writes_rewrites_and_clears() {
        let mut cache = Cache::new(3 * entry_cost(b"a", 1));
        cache.write(b"a", Some(("1", 1)), Some(10));
        cache.write(b"a", Some(("2", 1)), Some(11));
        cache.write(b"b", None, None);
        assert_eq!(
            (cache.dirty_len(), cache.len(), cache.logged_len()),
            (2, 2, 1)
        );
        assert_eq!(cache.bytes, entry_cost(b"a", 1) + entry_cost(b"b", 0));
        let seen: Vec<_> = cache.dirty_in(Cut::ALL).collect();
        assert_eq!(seen, vec![(&b"a"[..], Some(&"2")), (&b"b"[..], None)]);
        cache.mark_clean();
        assert_eq!(cache.dirty_len(), 0);
        // In place: the weight stays; a deletion rewritten to a value weighs the fallback.
        let rewritten = cache.rewrite(b"a", Some(12), 7, |v| {
            assert_eq!(*v, Some("2"));
            *v = Some("222");
            true
        });
        assert_eq!(rewritten, Some(()));
        cache.rewrite(b"b", None, 7, |v| {
            *v = Some("x");
            true
        });
        assert_eq!(cache.bytes, entry_cost(b"a", 1) + entry_cost(b"b", 7));
        assert_eq!(cache.rewrite(b"z", None, 7, |_| true), None, "not cached");
        assert_eq!((cache.dirty_len(), cache.logged_len()), (2, 1));
        // A declined rewrite changes nothing.
        cache.mark_clean();
        cache.rewrite(b"a", Some(13), 7, |_| false);
        assert_eq!(
            (cache.dirty_len(), cache.logged_keys()),
            (0, vec![(&b"a"[..], 12)])
        );
        cache.clear();
        assert_eq!((cache.len(), cache.bytes, cache.logged_len()), (0, 0, 1));
        // A live write of a spilled key carries it again, owed once.
        cache.write(b"a", Some(("5", 1)), Some(14));
        cache.write(b"0", Some(("6", 1)), Some(15));
        assert_eq!(
            cache.logged_keys(),
            vec![(&b"0"[..], 15), (&b"a"[..], 14)],
            "in key order"
        );
        cache.clear_logged();
        assert_eq!(cache.logged_len(), 0);
    }

    #[test]
    fn a_put_weighs_a_new_entry_or_a_deletion_only_and_a_refused_one_changes_nothing() {
        let mut cache = Cache::new(1 << 20);
        let weighed = std::cell::Cell::new(0);
        let weigh = |v: &&str| -> Result<usize, String> {
            weighed.set(weighed.get() + 1);
            if v.is_empty() {
                return Err("empty".into());
            }
            Ok(v.len())
        };
        cache.put(b"a", "1", Some(1), weigh).unwrap();
        cache.put(b"a", "222", Some(2), weigh).unwrap();
        assert_eq!(weighed.get(), 1, "in place: not weighed again");
        assert_eq!(cache.bytes, entry_cost(b"a", 1), "and the weight kept");
        assert_eq!(cache.put(b"b", "", Some(3), weigh), Err("empty".into()));
        assert_eq!(
            (
                cache.len(),
                cache.bytes,
                cache.dirty_len(),
                cache.logged_len()
            ),
            (1, entry_cost(b"a", 1), 1, 1),
            "a refused put leaves the cache as it was"
        );
        cache.write(b"a", None, Some(4));
        cache.put(b"a", "4444", Some(5), weigh).unwrap();
        assert_eq!(
            cache.bytes,
            entry_cost(b"a", 4),
            "a deletion replaced: weighed"
        );
        assert_eq!(cache.get(b"a"), Some(Some(&"4444")));
        assert_eq!(cache.logged_keys(), vec![(&b"a"[..], 5)]);
    }

    #[test]
    fn a_spill_lets_go_of_the_least_recently_written_and_keeps_what_they_owe() {
        let one = entry_cost(b"k0", 1);
        let mut cache = Cache::new(6 * one);
        for (i, key) in [b"k0", b"k1", b"k2", b"k3", b"k4", b"k5"]
            .iter()
            .enumerate()
        {
            cache.write(*key, Some(("v", 1)), Some(i as i64));
        }
        // Rewritten since: the most recently written, whatever their key order.
        cache.rewrite(b"k0", None, 1, |v| {
            *v = Some("w");
            true
        });
        cache.write(b"k1", Some(("w", 1)), None);
        cache.mark_clean();
        cache.write(b"k6", Some(("v", 1)), Some(6));
        assert!(cache.is_over());
        // Down to three quarters: the four least recently written go (k2..k5).
        let cut = cache.cut_to(6 * one / 100 * 75);
        let taken: Vec<_> = cache.dirty_in(cut).map(|(k, _)| k).collect();
        assert!(taken.is_empty(), "clean already: nothing to write back");
        cache.evict(cut);
        assert_eq!(cached(&cache), vec!["k0", "k1", "k6"]);
        assert_eq!(cache.bytes, 3 * one);
        assert_eq!(cache.get(b"k0"), Some(Some(&"w")));
        assert_eq!(cache.get(b"k3"), None, "let go: the engine answers");
        assert_eq!(
            (cache.len(), cache.dirty_len(), cache.logged_len()),
            (3, 1, 7),
            "every key written live is still owed"
        );
        let owed: Vec<_> = cache.logged_keys().into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            owed,
            [b"k0", b"k1", b"k2", b"k3", b"k4", b"k5", b"k6"].map(|k| &k[..])
        );
        // A dirty entry the cut takes is listed for the write-back.
        let cut = cache.cut_to(0);
        let taken: Vec<_> = cache.dirty_in(cut).map(|(k, _)| k).collect();
        assert_eq!(taken, vec![&b"k6"[..]]);
        // Under the target already: nothing is taken.
        let cut = cache.cut_to(3 * one);
        cache.evict(cut);
        assert_eq!(cache.len(), 3);
    }
}
