//! A run of committed changelog records of one store, held in one buffer.
//!
//! Owns [`RestoreBatch`]: the records in offset order with no allocation per record, each
//! value already turned from the changelog's layout into the store's, which a store takes
//! whole ([`StateStore::apply_changelog_batch`](crate::StateStore::apply_changelog_batch):
//! the persistent engine sorts it and writes it to its engine as one table per segment).
//!
//! This module never knows the stores, nor how the records were read.

use crate::changelog::{ChangelogEntry, ChangelogOffset, ChangelogPartition};
use crate::error::StateError;
use crate::value_layout::ChangelogValueLayout;

/// A batch is applied once its buffer holds this many bytes of keys and values (what a
/// caller filling a [`RestoreBatch`] from its reads should use too): large enough that a
/// persistent store writes few, large tables, each sorted once.
pub const RESTORE_BATCH_BYTES: usize = 64 << 20;

/// Where one record of a [`RestoreBatch`] lies in its buffer.
#[derive(Debug, Clone, Copy)]
struct Slot {
    partition: ChangelogPartition,
    offset: ChangelogOffset,
    timestamp: i64,
    key: (u32, u32),
    /// `None`: a tombstone.
    value: Option<(u32, u32)>,
}

/// Committed changelog records of one store, in offset order, in one buffer, each value
/// already turned from the changelog's layout into the store's.
#[derive(Debug, Clone, Default)]
pub struct RestoreBatch {
    layout: ChangelogValueLayout,
    data: Vec<u8>,
    slots: Vec<Slot>,
}

/// One record of a [`RestoreBatch`], borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestoreRecord<'a> {
    /// The partition it was read from.
    pub partition: ChangelogPartition,
    /// Its offset there.
    pub offset: ChangelogOffset,
    /// The record key.
    pub key: &'a [u8],
    /// The value in the store's layout, `None` for a tombstone.
    pub value: Option<&'a [u8]>,
    /// The record timestamp.
    pub timestamp: i64,
}

impl RestoreRecord<'_> {
    /// The record, owned.
    pub fn to_entry(&self) -> ChangelogEntry {
        ChangelogEntry {
            partition: self.partition,
            offset: self.offset,
            key: self.key.to_vec(),
            value: self.value.map(<[u8]>::to_vec),
            timestamp: self.timestamp,
        }
    }

    /// A corrupt-record error for this record in `store`.
    pub fn corrupt(&self, store: &str, reason: impl Into<String>) -> StateError {
        StateError::CorruptChangelogRecord {
            store: store.to_string(),
            partition: self.partition,
            offset: self.offset,
            reason: reason.into(),
        }
    }
}

impl RestoreBatch {
    /// An empty batch for a store whose changelog lays values out as `layout`.
    pub fn new(layout: ChangelogValueLayout) -> Self {
        Self {
            layout,
            data: Vec::new(),
            slots: Vec::new(),
        }
    }

    /// Adds the record read at `partition`/`offset`, its value turned into the store's
    /// layout (as [`ChangelogValueLayout::from_changelog`] does).
    ///
    /// # Panics
    /// If the buffer would pass 4 GiB (a caller applies a batch long before).
    pub fn push(
        &mut self,
        partition: ChangelogPartition,
        offset: ChangelogOffset,
        key: &[u8],
        value: Option<&[u8]>,
        timestamp: i64,
    ) {
        let key_span = self.put(&[], key);
        let value_span = value.map(|v| match self.layout {
            ChangelogValueLayout::TimestampInRecord => self.put(&timestamp.to_be_bytes(), v),
            _ => self.put(&[], v),
        });
        self.slots.push(Slot {
            partition,
            offset,
            timestamp,
            key: key_span,
            value: value_span,
        });
    }

    /// Adds an owned entry, as [`RestoreBatch::push`] does.
    pub fn push_entry(&mut self, entry: &ChangelogEntry) {
        self.push(
            entry.partition,
            entry.offset,
            &entry.key,
            entry.value.as_deref(),
            entry.timestamp,
        );
    }

    fn put(&mut self, head: &[u8], tail: &[u8]) -> (u32, u32) {
        let at = self.data.len();
        self.data.extend_from_slice(head);
        self.data.extend_from_slice(tail);
        let narrow = |n: usize| u32::try_from(n).expect("a restore batch is below 4 GiB");
        (narrow(at), narrow(head.len() + tail.len()))
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether it holds no record.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Bytes of keys and values held.
    pub fn bytes(&self) -> usize {
        self.data.len()
    }

    /// Forgets every record, keeping the buffers.
    pub fn clear(&mut self) {
        self.data.clear();
        self.slots.clear();
    }

    /// The `i`th record.
    ///
    /// # Panics
    /// If `i` is not below [`RestoreBatch::len`].
    pub fn get(&self, i: usize) -> RestoreRecord<'_> {
        let s = &self.slots[i];
        let span = |(at, len): (u32, u32)| &self.data[at as usize..(at + len) as usize];
        RestoreRecord {
            partition: s.partition,
            offset: s.offset,
            key: span(s.key),
            value: s.value.map(span),
            timestamp: s.timestamp,
        }
    }

    /// The records, in the order they were added.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = RestoreRecord<'_>> + '_ {
        (0..self.slots.len()).map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_turns_values_into_the_store_layout_and_gives_records_back_in_order() {
        let mut batch = RestoreBatch::new(ChangelogValueLayout::TimestampInRecord);
        batch.push(
            ChangelogPartition(3),
            ChangelogOffset(7),
            b"k",
            Some(b"v"),
            0x0102,
        );
        batch.push(ChangelogPartition(3), ChangelogOffset(9), b"", None, 5);
        let mut stored = 0x0102i64.to_be_bytes().to_vec();
        stored.push(b'v');
        let got: Vec<ChangelogEntry> = batch.iter().map(|r| r.to_entry()).collect();
        assert_eq!(
            got,
            vec![
                ChangelogEntry {
                    partition: ChangelogPartition(3),
                    offset: ChangelogOffset(7),
                    key: b"k".to_vec(),
                    value: Some(stored),
                    timestamp: 0x0102,
                },
                ChangelogEntry {
                    partition: ChangelogPartition(3),
                    offset: ChangelogOffset(9),
                    key: Vec::new(),
                    value: None,
                    timestamp: 5,
                },
            ]
        );
        assert_eq!((batch.len(), batch.bytes()), (2, 10));
        batch.clear();
        assert!(batch.is_empty());
        let mut plain = RestoreBatch::default();
        plain.push(
            ChangelogPartition(0),
            ChangelogOffset(0),
            b"k",
            Some(b"v"),
            9,
        );
        assert_eq!(plain.get(0).value, Some(&b"v"[..]));
    }
}
