//! The cleaner's key → latest offset map, in memory bounded by a byte
//! budget (Kafka's dedupe buffer).
//!
//! Owns: [`OffsetMap`]. Keys are not stored: each entry is a 128-bit digest
//! of the key and an offset, 24 bytes, in one table allocated up front
//! (open addressing, linear probing, filled to three quarters at most). When
//! the table is that full, a new key is refused and the caller stops there.
//!
//! # Collisions
//!
//! Two keys with one digest would share an entry, and a record of one could
//! then be dropped for a later record of the other: the latest record of a
//! key lost. The digest makes that negligible, not impossible, so here is
//! the argument. The digest of `key` is the pair `(H(0, key), H(1, key))`
//! where `H` is the standard library's keyed SipHash with a secret key
//! drawn at random per process (`RandomState`); the two inputs differ, so
//! for a pseudorandom function the halves are independent 64-bit values and
//! a given pair of distinct keys collides with probability 2⁻¹²⁸. A false
//! drop needs a record read during the rewrite whose key collides with one
//! of the map's keys: with R records read and M keys in the map, the
//! probability is at most R·M / 2¹²⁸. For a pass over 10¹⁰ records with 10⁸
//! keys in the map that is below 2⁻⁶⁰, far below the chance of damage that
//! slips past the frames' CRC-32. The key is secret, so keys chosen by an
//! adversary do not change these odds.

use std::hash::{BuildHasher, RandomState};

/// Bytes of one entry.
pub(crate) const ENTRY_BYTES: usize = std::mem::size_of::<Entry>();
/// The table never has fewer entries than this, whatever the budget, so
/// that every pass makes progress.
pub(crate) const MIN_ENTRIES: usize = 16;

/// An offset no record has (a record's offset plus one fits in a `u64`).
const EMPTY: u64 = u64::MAX;

#[derive(Debug, Clone, Copy)]
struct Entry {
    digest: [u64; 2],
    offset: u64,
}

/// Key digest → the latest offset inserted for it.
#[derive(Debug)]
pub(crate) struct OffsetMap {
    table: Vec<Entry>,
    used: usize,
    /// Entries in use at most (three quarters of the table).
    max_used: usize,
    hasher: RandomState,
}

impl OffsetMap {
    /// A map in at most `budget` bytes (but at least [`MIN_ENTRIES`]
    /// entries), and no larger than `max_keys` keys need.
    pub(crate) fn new(budget: usize, max_keys: u64) -> Self {
        let by_budget = budget / ENTRY_BYTES;
        let by_keys = usize::try_from(max_keys)
            .unwrap_or(usize::MAX)
            .saturating_mul(4)
            / 3
            + 1;
        let entries = by_budget.min(by_keys).max(MIN_ENTRIES);
        OffsetMap {
            table: vec![
                Entry {
                    digest: [0; 2],
                    offset: EMPTY,
                };
                entries
            ],
            used: 0,
            max_used: entries * 3 / 4,
            hasher: RandomState::new(),
        }
    }

    /// Bytes the map holds.
    pub(crate) fn bytes(&self) -> usize {
        self.table.capacity() * ENTRY_BYTES
    }

    fn digest(&self, key: &[u8]) -> [u64; 2] {
        [
            self.hasher.hash_one((0u8, key)),
            self.hasher.hash_one((1u8, key)),
        ]
    }

    /// Where `digest` is, or the empty slot where it would go.
    fn slot(&self, digest: [u64; 2]) -> usize {
        let n = self.table.len();
        // The high bits of the product spread the digest over 0..n.
        let mut i = ((u128::from(digest[0]) * n as u128) >> 64) as usize;
        loop {
            let e = &self.table[i];
            if e.offset == EMPTY || e.digest == digest {
                return i;
            }
            i = if i + 1 == n { 0 } else { i + 1 };
        }
    }

    /// Records `offset` as the latest of `key`. Returns `false`, changing
    /// nothing, when `key` is new and the map is full.
    pub(crate) fn insert(&mut self, key: &[u8], offset: u64) -> bool {
        let digest = self.digest(key);
        let i = self.slot(digest);
        let e = &mut self.table[i];
        if e.offset == EMPTY {
            if self.used >= self.max_used {
                return false;
            }
            self.used += 1;
            e.digest = digest;
        }
        e.offset = offset;
        true
    }

    /// The latest offset inserted for `key`.
    pub(crate) fn get(&self, key: &[u8]) -> Option<u64> {
        let e = &self.table[self.slot(self.digest(key))];
        (e.offset != EMPTY).then_some(e.offset)
    }

    /// Keys held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_fits_the_budget_and_refuses_new_keys_when_full() {
        let budget = 100 * ENTRY_BYTES;
        let mut m = OffsetMap::new(budget, u64::MAX);
        assert!(m.bytes() <= budget, "{} > {budget}", m.bytes());
        let mut n = 0u64;
        while m.insert(&n.to_be_bytes(), n) {
            n += 1;
        }
        assert_eq!(n, 75, "three quarters of 100 entries");
        assert_eq!(m.len(), 75);
        // A known key still takes a later offset; a new one is refused.
        assert!(m.insert(&3u64.to_be_bytes(), 1_000));
        assert!(!m.insert(&n.to_be_bytes(), 1_001));
        assert_eq!(m.get(&3u64.to_be_bytes()), Some(1_000));
        assert_eq!(m.get(&n.to_be_bytes()), None);
        for k in (0..75u64).filter(|k| *k != 3) {
            assert_eq!(m.get(&k.to_be_bytes()), Some(k));
        }
    }

    #[test]
    fn a_small_partition_gets_a_small_table_and_a_tiny_budget_a_minimum() {
        assert_eq!(OffsetMap::new(1 << 30, 30).bytes(), 41 * ENTRY_BYTES);
        assert_eq!(OffsetMap::new(0, 1_000).bytes(), MIN_ENTRIES * ENTRY_BYTES);
    }

    #[test]
    fn keys_that_differ_by_length_or_a_byte_are_told_apart() {
        let mut m = OffsetMap::new(1 << 16, 1_000);
        let keys: [&[u8]; 5] = [b"", b"\0", b"\0\0", b"a", b"b"];
        for (i, k) in keys.iter().enumerate() {
            assert!(m.insert(k, i as u64));
        }
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(m.get(k), Some(i as u64));
        }
    }
}
