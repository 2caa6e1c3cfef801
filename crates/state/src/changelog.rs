//! Changelog records and windowed key layouts.
//!
//! Owns one changelog record, owned ([`ChangelogRecord`]; a flush writes a whole
//! [`ChangelogBatch`](crate::ChangelogBatch) of them in one buffer), what restoration reads
//! back ([`ChangelogEntry`], with the partition and offset it came from), the changelog topic
//! name ([`changelog_topic`]) and the byte layouts of windowed and session changelog keys.
//! The restore loop is in `restore`, the corrupt-record error in `error`: this module sits
//! below both and imports neither.
//!
//! Compacted semantics: a store tracks the keys written in the current epoch and serializes
//! each once, with its latest value or a tombstone, when the epoch's barrier calls
//! [`StateStore::flush_changelog`](crate::StateStore::flush_changelog). Applying a record is
//! an upsert or a delete of one key, so applying a stream twice, or a prefix and then the
//! whole stream, yields the same store.
//!
//! This module never knows the store traits, nor how records reach a broker or how they are read back: it does not
//! know Kafka, transactions or consumers. The caller hands it only committed records.

use std::fmt;

/// A changelog partition number (a store instance restores from exactly one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChangelogPartition(pub u32);

impl fmt::Display for ChangelogPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// An offset within a changelog partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChangelogOffset(pub u64);

impl fmt::Display for ChangelogOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The changelog topic of a store: `<application.id>-<store>-changelog`.
pub fn changelog_topic(application_id: &str, store: &str) -> String {
    format!("{application_id}-{store}-changelog")
}

/// One record a store wants written to its changelog, owned (a flush writes them as a
/// [`ChangelogBatch`](crate::ChangelogBatch); [`ChangelogRecordRef::to_record`](crate::ChangelogRecordRef::to_record)
/// makes one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangelogRecord {
    /// The record key (for windowed stores, in Kafka Streams' windowed layout).
    pub key: Vec<u8>,
    /// The encoded value, or `None` for a tombstone.
    pub value: Option<Vec<u8>>,
    /// The timestamp of the last write of this key in the epoch (epoch milliseconds).
    pub timestamp: i64,
}

/// One committed changelog record read back for restoration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangelogEntry {
    /// The partition it was read from.
    pub partition: ChangelogPartition,
    /// Its offset in that partition.
    pub offset: ChangelogOffset,
    /// The record key.
    pub key: Vec<u8>,
    /// The value, or `None` for a tombstone.
    pub value: Option<Vec<u8>>,
    /// The record timestamp.
    pub timestamp: i64,
}

impl ChangelogEntry {
    /// The entry for `record` read back at `partition`/`offset`.
    pub fn from_record(
        record: ChangelogRecord,
        partition: ChangelogPartition,
        offset: ChangelogOffset,
    ) -> Self {
        Self {
            partition,
            offset,
            key: record.key,
            value: record.value,
            timestamp: record.timestamp,
        }
    }
}

const TIMESTAMP_SIZE: usize = 8;
const SEQNUM_SIZE: usize = 4;

/// Kafka Streams' time-window changelog key (`WindowKeySchema` store-key layout):
/// `[key bytes][window start i64 big-endian][sequence number i32 big-endian]`.
/// Stores that do not retain duplicates always use sequence number 0.
pub fn encode_window_key(key: &[u8], window_start: i64, seqnum: i32, out: &mut Vec<u8>) {
    out.reserve(key.len() + TIMESTAMP_SIZE + SEQNUM_SIZE);
    out.extend_from_slice(key);
    push_window_key_suffix(window_start, seqnum, out);
}

/// Appends the suffix of a time-window changelog key to key bytes already in `out`
/// (see [`encode_window_key`]).
pub(crate) fn push_window_key_suffix(window_start: i64, seqnum: i32, out: &mut Vec<u8>) {
    out.extend_from_slice(&window_start.to_be_bytes());
    out.extend_from_slice(&seqnum.to_be_bytes());
}

/// Splits a time-window changelog key into (key bytes, window start, sequence number);
/// `None` when it is shorter than the 12-byte suffix.
pub fn decode_window_key(bytes: &[u8]) -> Option<(&[u8], i64, i32)> {
    let key_len = bytes.len().checked_sub(TIMESTAMP_SIZE + SEQNUM_SIZE)?;
    let (key, suffix) = bytes.split_at(key_len);
    let (ts, seq) = suffix.split_at(TIMESTAMP_SIZE);
    Some((
        key,
        i64::from_be_bytes(ts.try_into().ok()?),
        i32::from_be_bytes(seq.try_into().ok()?),
    ))
}

/// Kafka Streams' session changelog key (`SessionKeySchema` layout):
/// `[key bytes][session end i64 big-endian][session start i64 big-endian]`.
pub fn encode_session_key(key: &[u8], start: i64, end: i64, out: &mut Vec<u8>) {
    out.reserve(key.len() + 2 * TIMESTAMP_SIZE);
    out.extend_from_slice(key);
    push_session_key_suffix(start, end, out);
}

/// Appends the suffix of a session changelog key to key bytes already in `out` (see
/// [`encode_session_key`]).
pub(crate) fn push_session_key_suffix(start: i64, end: i64, out: &mut Vec<u8>) {
    out.extend_from_slice(&end.to_be_bytes());
    out.extend_from_slice(&start.to_be_bytes());
}

/// Splits a session changelog key into (key bytes, start, end); `None` when it is shorter
/// than the 16-byte suffix.
pub fn decode_session_key(bytes: &[u8]) -> Option<(&[u8], i64, i64)> {
    let key_len = bytes.len().checked_sub(2 * TIMESTAMP_SIZE)?;
    let (key, suffix) = bytes.split_at(key_len);
    let (end, start) = suffix.split_at(TIMESTAMP_SIZE);
    Some((
        key,
        i64::from_be_bytes(start.try_into().ok()?),
        i64::from_be_bytes(end.try_into().ok()?),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_name_follows_kafka_streams() {
        assert_eq!(changelog_topic("app", "counts"), "app-counts-changelog");
        assert_eq!(
            changelog_topic("app", "stoatflow-watermark"),
            "app-stoatflow-watermark-changelog"
        );
    }

    #[test]
    fn window_key_layout_is_key_start_seqnum() {
        let mut out = Vec::new();
        encode_window_key(b"ab", 0x0102, 0, &mut out);
        assert_eq!(out, vec![b'a', b'b', 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0]);
        assert_eq!(decode_window_key(&out), Some((&b"ab"[..], 0x0102, 0)));
        assert_eq!(decode_window_key(&out[..11]), None);
        // An empty key is legal: only the suffix is required.
        assert_eq!(decode_window_key(&out[2..]), Some((&b""[..], 0x0102, 0)));
    }

    #[test]
    fn session_key_layout_is_key_end_start() {
        let mut out = Vec::new();
        encode_session_key(b"k", 5, 9, &mut out);
        assert_eq!(&out[1..9], &9i64.to_be_bytes());
        assert_eq!(&out[9..], &5i64.to_be_bytes());
        assert_eq!(decode_session_key(&out), Some((&b"k"[..], 5, 9)));
        assert_eq!(decode_session_key(&out[..15]), None);
    }

    #[test]
    fn negative_times_round_trip() {
        let mut out = Vec::new();
        encode_window_key(b"x", -1, 7, &mut out);
        assert_eq!(decode_window_key(&out), Some((&b"x"[..], -1, 7)));
    }
}
