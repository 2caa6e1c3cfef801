//! A restore batch made ready for the engine's ingestion: every entry's engine key in one
//! buffer, sorted once by (segment, engine key), the last write of each key kept.
//!
//! Owns [`SortedLoad`]: a restore appends to it (no map insert per record), sorts it once and
//! hands it to the engine as one sorted run per segment. Restored entries never pass through
//! the write-back cache: the store empties the cache into the engine first, so nothing cached
//! shadows what the load writes.
//!
//! This module never knows the engine, the codecs, the changelog or the store layouts.

use std::cmp::Ordering;
use std::ops::Range;

/// One entry of the load.
#[derive(Debug, Clone, Copy)]
struct Slot<'v, S> {
    segment: S,
    /// The engine key's first 8 bytes, big-endian, zero-padded: most comparisons end here.
    prefix: u64,
    key_at: u32,
    key_len: u32,
    /// The value, `None` for a deletion.
    value: Option<&'v [u8]>,
}

/// Entries to ingest, sorted by (segment, engine key) once [`SortedLoad::sort`] has run.
#[derive(Debug)]
pub(crate) struct SortedLoad<'v, S> {
    keys: Vec<u8>,
    slots: Vec<Slot<'v, S>>,
}

impl<'v, S: Ord + Copy> SortedLoad<'v, S> {
    /// An empty load with room for `n` entries.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self {
            keys: Vec::with_capacity(n * 24),
            slots: Vec::with_capacity(n),
        }
    }

    /// Appends an entry of `segment` whose engine key `key` writes into the buffer it is
    /// given; a later entry of the same key wins.
    pub(crate) fn push(
        &mut self,
        segment: S,
        key: impl FnOnce(&mut Vec<u8>),
        value: Option<&'v [u8]>,
    ) {
        let at = self.keys.len();
        key(&mut self.keys);
        let len = self.keys.len() - at;
        let mut prefix = [0u8; 8];
        let n = len.min(8);
        prefix[..n].copy_from_slice(&self.keys[at..at + n]);
        let narrow = |n: usize| u32::try_from(n).expect("a restore batch is below 4 GiB");
        self.slots.push(Slot {
            segment,
            prefix: u64::from_be_bytes(prefix),
            key_at: narrow(at),
            key_len: narrow(len),
            value,
        });
    }

    fn key(&self, slot: &Slot<'v, S>) -> &[u8] {
        &self.keys[slot.key_at as usize..(slot.key_at + slot.key_len) as usize]
    }

    /// Sorts by (segment, key) and keeps only the last entry pushed of each key.
    pub(crate) fn sort(&mut self) {
        let keys = &self.keys;
        let key = |s: &Slot<'v, S>| &keys[s.key_at as usize..(s.key_at + s.key_len) as usize];
        // Stable: entries of one key stay in the order they were pushed.
        self.slots.sort_by(|a, b| {
            a.segment
                .cmp(&b.segment)
                .then(a.prefix.cmp(&b.prefix))
                .then_with(|| key(a).cmp(key(b)))
        });
        let mut kept = 0;
        for i in 0..self.slots.len() {
            let last_of_key = self.slots.get(i + 1).is_none_or(|next| {
                let here = &self.slots[i];
                here.segment != next.segment
                    || here.prefix != next.prefix
                    || key(here).cmp(key(next)) != Ordering::Equal
            });
            if last_of_key {
                self.slots[kept] = self.slots[i];
                kept += 1;
            }
        }
        self.slots.truncate(kept);
    }

    /// The segments of the load with the range of entries each holds, ascending.
    pub(crate) fn segments(&self) -> Vec<(S, Range<usize>)> {
        let mut out: Vec<(S, Range<usize>)> = Vec::new();
        for (i, slot) in self.slots.iter().enumerate() {
            match out.last_mut() {
                Some((segment, range)) if *segment == slot.segment => range.end = i + 1,
                _ => out.push((slot.segment, i..i + 1)),
            }
        }
        out
    }

    /// Whether `range` holds a value (not only deletions).
    pub(crate) fn has_value(&self, range: Range<usize>) -> bool {
        self.slots[range].iter().any(|s| s.value.is_some())
    }

    /// The entries in `range`, in key order.
    pub(crate) fn entries(
        &self,
        range: Range<usize>,
    ) -> impl Iterator<Item = (&[u8], Option<&'v [u8]>)> + '_ {
        self.slots[range].iter().map(|s| (self.key(s), s.value))
    }

    /// Entries held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_sorted_per_segment_with_the_last_write_of_each_key() {
        let mut load = SortedLoad::with_capacity(8);
        let writes: [(i64, &[u8], Option<&[u8]>); 8] = [
            (2, b"b", Some(b"1")),
            (1, b"longer-than-eight-2", Some(b"2")),
            (1, b"longer-than-eight-1", Some(b"3")),
            (2, b"b", None),
            (1, b"a", Some(b"4")),
            (1, b"a\0", Some(b"5")),
            (1, b"a", Some(b"6")),
            (2, b"", Some(b"7")),
        ];
        for (segment, key, value) in writes {
            load.push(segment, |out| out.extend_from_slice(key), value);
        }
        load.sort();
        assert_eq!(load.len(), 6);
        let got: Vec<(i64, Vec<u8>, Option<Vec<u8>>)> = load
            .segments()
            .into_iter()
            .flat_map(|(segment, range)| {
                load.entries(range)
                    .map(move |(k, v)| (segment, k.to_vec(), v.map(<[u8]>::to_vec)))
                    .collect::<Vec<_>>()
            })
            .collect();
        let want: Vec<(i64, &[u8], Option<&[u8]>)> = vec![
            (1, b"a", Some(b"6")),
            (1, b"a\0", Some(b"5")),
            (1, b"longer-than-eight-1", Some(b"3")),
            (1, b"longer-than-eight-2", Some(b"2")),
            (2, b"", Some(b"7")),
            (2, b"b", None),
        ];
        let want: Vec<(i64, Vec<u8>, Option<Vec<u8>>)> = want
            .into_iter()
            .map(|(s, k, v)| (s, k.to_vec(), v.map(<[u8]>::to_vec)))
            .collect();
        assert_eq!(got, want);
        let segments = load.segments();
        assert_eq!(segments, vec![(1, 0..4), (2, 4..6)]);
        assert!(load.has_value(4..6));
        assert!(!load.has_value(5..6));
    }
}
