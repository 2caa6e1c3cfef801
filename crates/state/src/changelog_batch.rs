//! [`ChangelogBatch`]: the changelog records of one barrier flush, every key and value in
//! one byte buffer, read as borrowed [`ChangelogRecordRef`]s.
//!
//! A flush writes one record per dirty key. Owning a key and a value vector per record cost
//! two allocations and two frees per record (a sliding count flushes nearly every live
//! window at each barrier); a batch appends each record's key and value to one shared
//! buffer and keeps their ranges, so a flush allocates only as the buffer grows. The
//! records are read in place until the epoch's transaction has taken them;
//! [`ChangelogRecordRef::to_record`] makes an owned [`ChangelogRecord`] where one must
//! outlive the batch (the test driver's committed changelog).
//!
//! This module owns the buffer layout and nothing else: it never knows stores, codecs or
//! how records reach a log.

use std::fmt;
use std::ops::Range;

use crate::changelog::ChangelogRecord;

/// Where one record's key and value lie in the batch's buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Span {
    key: Range<usize>,
    /// `None` is a tombstone.
    value: Option<Range<usize>>,
    timestamp: i64,
}

/// The changelog records of one flush, in order, their keys and values in one buffer.
#[derive(Clone, Default)]
pub struct ChangelogBatch {
    bytes: Vec<u8>,
    spans: Vec<Span>,
}

/// One record of a [`ChangelogBatch`], borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangelogRecordRef<'a> {
    /// The record key (for windowed stores, in Kafka Streams' windowed layout).
    pub key: &'a [u8],
    /// The encoded value, or `None` for a tombstone.
    pub value: Option<&'a [u8]>,
    /// The timestamp of the last write of this key in the epoch (epoch milliseconds).
    pub timestamp: i64,
}

impl ChangelogRecordRef<'_> {
    /// The record, owned.
    pub fn to_record(&self) -> ChangelogRecord {
        ChangelogRecord {
            key: self.key.to_vec(),
            value: self.value.map(<[u8]>::to_vec),
            timestamp: self.timestamp,
        }
    }
}

impl ChangelogBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Record `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<ChangelogRecordRef<'_>> {
        self.spans.get(i).map(|s| self.view(s))
    }

    /// The records, in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            batch: self,
            spans: self.spans.iter(),
        }
    }

    /// The records, owned, in order.
    pub fn to_records(&self) -> Vec<ChangelogRecord> {
        self.iter().map(|r| r.to_record()).collect()
    }

    /// Appends a record, copying its key and value.
    pub fn push(&mut self, key: &[u8], value: Option<&[u8]>, timestamp: i64) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        let value = value.map(|v| {
            self.bytes.extend_from_slice(v);
            key_end..self.bytes.len()
        });
        self.spans.push(Span {
            key: start..key_end,
            value,
            timestamp,
        });
    }

    /// Removes every record, keeping the buffers' capacity.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }

    fn view(&self, s: &Span) -> ChangelogRecordRef<'_> {
        ChangelogRecordRef {
            key: &self.bytes[s.key.clone()],
            value: s.value.clone().map(|v| &self.bytes[v]),
            timestamp: s.timestamp,
        }
    }

    /// Room for `records` more records.
    pub(crate) fn reserve(&mut self, records: usize) {
        self.spans.reserve(records);
    }

    /// Reserves buffer room for `records` more records of the last record's size (nothing
    /// if there is none).
    pub(crate) fn reserve_like_last(&mut self, records: usize) {
        if let Some(last) = self.spans.last() {
            let size = self.bytes.len() - last.key.start;
            self.bytes.reserve(size.saturating_mul(records));
        }
    }

    /// The buffer a record is encoded into in place: a writer appends the record's key and
    /// value, then names them with [`ChangelogBatch::push_encoded`], or truncates the buffer
    /// back to where it started if encoding failed. Bytes past the last record's are not
    /// part of any record.
    pub(crate) fn bytes_mut(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    /// Appends a record whose key and value were written to [`ChangelogBatch::bytes_mut`] at
    /// `key` and `value` (after every earlier record's bytes).
    pub(crate) fn push_encoded(
        &mut self,
        key: Range<usize>,
        value: Option<Range<usize>>,
        timestamp: i64,
    ) {
        debug_assert!(value.as_ref().is_none_or(|v| v.end <= self.bytes.len()));
        debug_assert!(key.end <= self.bytes.len());
        self.spans.push(Span {
            key,
            value,
            timestamp,
        });
    }

    /// Keeps the first `records` records (and their bytes) and drops the rest.
    pub(crate) fn truncate(&mut self, records: usize) {
        if let Some(first_dropped) = self.spans.get(records) {
            self.bytes.truncate(first_dropped.key.start);
        }
        self.spans.truncate(records);
    }

    /// Lets `f` rewrite each record's timestamp from its value and drop a prefix of the
    /// value: `f(value, timestamp)` returns how many leading bytes of the value to drop (at
    /// most its length). Tombstones are left as they are.
    pub(crate) fn trim_values(&mut self, mut f: impl FnMut(&[u8], &mut i64) -> usize) {
        for span in &mut self.spans {
            if let Some(value) = &mut span.value {
                let drop = f(&self.bytes[value.clone()], &mut span.timestamp);
                value.start += drop.min(value.len());
            }
        }
    }
}

/// Batches are equal when they hold the same records in the same order, however their
/// buffers are laid out.
impl PartialEq for ChangelogBatch {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for ChangelogBatch {}

impl fmt::Debug for ChangelogBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The records of a [`ChangelogBatch`], in order ([`ChangelogBatch::iter`]).
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    batch: &'a ChangelogBatch,
    spans: std::slice::Iter<'a, Span>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = ChangelogRecordRef<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        self.spans.next().map(|s| self.batch.view(s))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.spans.size_hint()
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a ChangelogBatch {
    type Item = ChangelogRecordRef<'a>;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl FromIterator<ChangelogRecord> for ChangelogBatch {
    fn from_iter<T: IntoIterator<Item = ChangelogRecord>>(records: T) -> Self {
        let mut batch = ChangelogBatch::new();
        for r in records {
            batch.push(&r.key, r.value.as_deref(), r.timestamp);
        }
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(key: &[u8], value: Option<&[u8]>, timestamp: i64) -> ChangelogRecord {
        ChangelogRecord {
            key: key.to_vec(),
            value: value.map(<[u8]>::to_vec),
            timestamp,
        }
    }

    #[test]
    fn records_read_back_in_order_with_tombstones_and_empty_parts() {
        let mut batch = ChangelogBatch::new();
        batch.push(b"a", Some(&b"1"[..]), 5);
        batch.push(b"bb", None, 6);
        batch.push(b"", Some(&b""[..]), 7);
        assert_eq!(batch.len(), 3);
        assert_eq!(
            batch.to_records(),
            vec![
                record(b"a", Some(&b"1"[..]), 5),
                record(b"bb", None, 6),
                record(b"", Some(&b""[..]), 7)
            ]
        );
        assert_eq!(batch.get(1).map(|r| r.value), Some(None));
        assert_eq!(batch.get(3), None);
    }

    #[test]
    fn truncate_drops_later_records_and_their_bytes() {
        let mut batch = ChangelogBatch::new();
        batch.push(b"a", Some(&b"1"[..]), 1);
        batch.push(b"b", Some(&b"2"[..]), 2);
        batch.push(b"c", None, 3);
        batch.truncate(1);
        assert_eq!(batch.to_records(), vec![record(b"a", Some(&b"1"[..]), 1)]);
        // The next record starts where the kept ones end.
        batch.push(b"d", Some(&b"4"[..]), 4);
        assert_eq!(batch.bytes_mut().len(), 4);
        assert_eq!(
            batch.get(1).map(|r| r.to_record()),
            Some(record(b"d", Some(&b"4"[..]), 4))
        );
        batch.truncate(5);
        assert_eq!(batch.len(), 2);
    }

    #[test]
    fn room_is_reserved_at_the_last_records_size() {
        let mut batch = ChangelogBatch::new();
        batch.reserve_like_last(100);
        assert_eq!(batch.bytes_mut().capacity(), 0, "no record to size by");
        batch.push(b"key", Some(&b"vv"[..]), 1);
        batch.reserve_like_last(10);
        assert!(batch.bytes_mut().capacity() >= 5 + 10 * 5);
    }

    #[test]
    fn records_encoded_in_place_ignore_discarded_bytes() {
        let mut batch = ChangelogBatch::new();
        batch.push(b"k", Some(&b"v"[..]), 1);
        let bytes = batch.bytes_mut();
        let start = bytes.len();
        bytes.extend_from_slice(b"partial");
        bytes.truncate(start);
        bytes.extend_from_slice(b"key");
        let key_end = bytes.len();
        bytes.extend_from_slice(b"value");
        let end = bytes.len();
        batch.push_encoded(start..key_end, Some(key_end..end), 2);
        assert_eq!(
            batch.to_records(),
            vec![
                record(b"k", Some(&b"v"[..]), 1),
                record(b"key", Some(&b"value"[..]), 2)
            ]
        );
    }

    #[test]
    fn trimmed_values_lose_their_prefix_and_may_set_the_timestamp() {
        let mut batch = ChangelogBatch::new();
        batch.push(b"a", Some(&b"xyvalue"[..]), 1);
        batch.push(b"b", None, 2);
        batch.push(b"c", Some(&b"x"[..]), 3);
        batch.trim_values(|value, ts| {
            *ts += 10;
            // More than the value holds is clamped to the value.
            if value.len() > 1 { 2 } else { 5 }
        });
        assert_eq!(
            batch.to_records(),
            vec![
                record(b"a", Some(&b"value"[..]), 11),
                record(b"b", None, 2),
                record(b"c", Some(&b""[..]), 13)
            ]
        );
    }

    #[test]
    fn equal_batches_hold_equal_records_whatever_their_layout() {
        let mut trimmed = ChangelogBatch::new();
        trimmed.push(b"k", Some(&b"__v"[..]), 1);
        trimmed.trim_values(|_, _| 2);
        let plain: ChangelogBatch = vec![record(b"k", Some(&b"v"[..]), 1)].into_iter().collect();
        assert_eq!(trimmed, plain);
        assert_ne!(plain, ChangelogBatch::new());
        assert_eq!(format!("{plain:?}").matches("timestamp: 1").count(), 1);
    }
}
