//! How a store's values sit in its changelog: Kafka Streams' layout, so that a
//! changelog written by a Kafka Streams application restores here and ours
//! restores there.
//!
//! Owns [`ChangelogValueLayout`] and the two conversions between a store's own
//! value bytes and the changelog's. A timestamped store (Kafka Streams'
//! `TimestampedKeyValueStore` and `TimestampedWindowStore`, our
//! [`ValueAndTimestampCodec`](crate::ValueAndTimestampCodec) values) holds
//! `[timestamp i64 BE][value]`, but Kafka Streams' changelog carries only
//! `[value]`, with the timestamp as the record's timestamp
//! (`ChangeLoggingTimestamped*BytesStore`). Every other store's value bytes
//! are the changelog's as they are. Keys never change (see `changelog`).
//!
//! Knows nothing of stores, codecs' types or the log: bytes in, bytes out.

use crate::changelog::ChangelogEntry;
use crate::changelog_batch::ChangelogBatch;

const TIMESTAMP_SIZE: usize = 8;

/// Where a store's value timestamp goes in its changelog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ChangelogValueLayout {
    /// The store's value bytes are the changelog value.
    #[default]
    Plain,
    /// The store's value is `[timestamp i64 BE][value]`; the changelog value is
    /// `[value]` and the record timestamp is the timestamp.
    TimestampInRecord,
}

impl ChangelogValueLayout {
    /// Turns records as the store flushed them into the changelog's layout. A
    /// timestamped value shorter than its timestamp is left as it is (a
    /// timestamped codec never writes one).
    pub fn to_changelog(self, records: &mut ChangelogBatch) {
        if self != ChangelogValueLayout::TimestampInRecord {
            return;
        }
        records.trim_values(
            |value, timestamp| match value.first_chunk::<TIMESTAMP_SIZE>() {
                Some(ts) => {
                    *timestamp = i64::from_be_bytes(*ts);
                    TIMESTAMP_SIZE
                }
                None => 0,
            },
        );
    }

    /// Turns a record read back from the changelog into the store's layout
    /// (the inverse of [`ChangelogValueLayout::to_changelog`]).
    pub fn from_changelog(self, entry: &mut ChangelogEntry) {
        if self != ChangelogValueLayout::TimestampInRecord {
            return;
        }
        if let Some(value) = &mut entry.value {
            value.splice(0..0, entry.timestamp.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changelog::{ChangelogOffset, ChangelogPartition};

    fn entry(value: Option<Vec<u8>>, timestamp: i64) -> ChangelogEntry {
        ChangelogEntry {
            partition: ChangelogPartition(0),
            offset: ChangelogOffset(0),
            key: b"k".to_vec(),
            value,
            timestamp,
        }
    }

    #[test]
    fn a_timestamped_value_leaves_its_timestamp_in_the_record() {
        let mut stored = 1_000i64.to_be_bytes().to_vec();
        stored.extend_from_slice(&7i64.to_be_bytes());
        let mut records = ChangelogBatch::new();
        records.push(b"k", Some(&stored), 5);
        // Too short to hold a timestamp: left as it is.
        records.push(b"s", Some(b"1234567"), 6);
        ChangelogValueLayout::TimestampInRecord.to_changelog(&mut records);
        let short = records.get(1).unwrap();
        assert_eq!((short.value, short.timestamp), (Some(&b"1234567"[..]), 6));
        let record = records.get(0).unwrap().to_record();
        assert_eq!(record.value.as_deref(), Some(&7i64.to_be_bytes()[..]));
        assert_eq!(record.timestamp, 1_000);
        let mut back = entry(record.value, record.timestamp);
        ChangelogValueLayout::TimestampInRecord.from_changelog(&mut back);
        assert_eq!(back.value, Some(stored));
    }

    #[test]
    fn tombstones_and_plain_values_pass_unchanged() {
        let mut tombstone = ChangelogBatch::new();
        tombstone.push(b"k", None, 9);
        ChangelogValueLayout::TimestampInRecord.to_changelog(&mut tombstone);
        let t = tombstone.get(0).unwrap();
        assert_eq!((t.value, t.timestamp), (None, 9));
        let mut plain_batch = ChangelogBatch::new();
        plain_batch.push(b"k", Some(&1i64.to_be_bytes()), 9);
        ChangelogValueLayout::Plain.to_changelog(&mut plain_batch);
        assert_eq!(
            plain_batch.get(0).unwrap().value,
            Some(&1i64.to_be_bytes()[..])
        );
        let mut e = entry(None, 9);
        ChangelogValueLayout::TimestampInRecord.from_changelog(&mut e);
        assert_eq!(e.value, None);
        let mut plain = entry(Some(b"v".to_vec()), 9);
        ChangelogValueLayout::Plain.from_changelog(&mut plain);
        assert_eq!(plain.value.as_deref(), Some(&b"v"[..]));
    }
}
