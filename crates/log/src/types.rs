//! The nouns of the log boundary: partitions, offsets, topics, records.
//!
//! Owns: the newtypes ([`Partition`], [`Offset`], [`Timestamp`]) and the plain
//! data carried across the boundary. Knows nothing of how a backend stores
//! or transports them, and nothing of event time: a [`Timestamp`] is the
//! record attribute Kafka calls `CreateTime`, not a watermark.

use std::fmt;

/// The longest topic name, in characters (Kafka's limit).
pub const MAX_TOPIC_NAME_LEN: usize = 249;

/// A partition number within a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Partition(pub u32);

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A position in a partition: the offset of a record, or (as an end or a
/// committed offset) the offset of the next record to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Offset(pub u64);

impl Offset {
    /// The offset after this one.
    #[must_use]
    pub fn next(self) -> Offset {
        Offset(self.0 + 1)
    }
}

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A record's timestamp in milliseconds since the Unix epoch, as the producer
/// set it (Kafka's `CreateTime`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

/// A topic and one of its partitions.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// The topic name.
    pub topic: String,
    /// The partition.
    pub partition: Partition,
}

impl TopicPartition {
    /// `topic`/`partition`.
    #[must_use]
    pub fn new(topic: impl Into<String>, partition: u32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition: Partition(partition),
        }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// What the log does with old records of a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CleanupPolicy {
    /// Delete whole segments past retention (Kafka `cleanup.policy=delete`).
    Delete,
    /// Keep the latest record per key (Kafka `cleanup.policy=compact`).
    Compact,
    /// Both (Kafka `cleanup.policy=compact,delete`): the latest record per
    /// key is kept, and whole closed segments past the retention go, latest
    /// records or not. Windowed and session changelogs, whose entries the
    /// store expires without writing tombstones.
    CompactDelete,
}

impl CleanupPolicy {
    /// Kafka's name for the policy.
    #[must_use]
    pub fn as_kafka_str(self) -> &'static str {
        match self {
            CleanupPolicy::Delete => "delete",
            CleanupPolicy::Compact => "compact",
            CleanupPolicy::CompactDelete => "compact,delete",
        }
    }

    /// The policy a Kafka `cleanup.policy` value names: a comma-separated
    /// list in any order; `delete` when it names neither (Kafka's default).
    #[must_use]
    pub fn from_kafka_str(value: &str) -> Self {
        let named = |p: &str| value.split(',').any(|v| v.trim() == p);
        match (named("compact"), named("delete")) {
            (true, true) => CleanupPolicy::CompactDelete,
            (true, false) => CleanupPolicy::Compact,
            (false, _) => CleanupPolicy::Delete,
        }
    }
}

/// The part of a topic's configuration the engine depends on, and checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TopicShape {
    /// Number of partitions.
    pub partitions: u32,
    /// Cleanup policy.
    pub cleanup: CleanupPolicy,
}

impl TopicShape {
    /// A shape.
    #[must_use]
    pub fn new(partitions: u32, cleanup: CleanupPolicy) -> Self {
        TopicShape {
            partitions,
            cleanup,
        }
    }
}

impl fmt::Display for TopicShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} partitions, cleanup.policy={}",
            self.partitions,
            self.cleanup.as_kafka_str()
        )
    }
}

/// Retention of a `Delete` or `CompactDelete` topic. `None` keeps forever.
/// (The embedded log judges a `CompactDelete` topic's time limit against
/// its partition's newest record, a `Delete` topic's against the wall
/// clock; a Kafka broker judges both against the wall clock.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Retention {
    /// Drop the oldest closed segments while a partition is larger than this.
    pub bytes: Option<u64>,
    /// Drop closed segments whose newest record is older than this.
    pub time: Option<std::time::Duration>,
}

/// A topic to create or to check.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopicSpec {
    /// The topic name.
    pub name: String,
    /// Partitions and cleanup policy (what `ensure_topic` checks).
    pub shape: TopicShape,
    /// Retention, applied to `Delete` and `CompactDelete` topics (not
    /// checked by `ensure_topic`).
    pub retention: Retention,
}

impl TopicSpec {
    /// A topic with `Delete` cleanup and no retention limit.
    #[must_use]
    pub fn new(name: impl Into<String>, partitions: u32) -> Self {
        TopicSpec {
            name: name.into(),
            shape: TopicShape::new(partitions, CleanupPolicy::Delete),
            retention: Retention::default(),
        }
    }

    /// The same topic, compacted (a changelog).
    #[must_use]
    pub fn compacted(mut self) -> Self {
        self.shape.cleanup = CleanupPolicy::Compact;
        self
    }

    /// The same topic, compacted and with whole segments older than
    /// `retention` deleted (a windowed or session changelog).
    #[must_use]
    pub fn compacted_with_retention(mut self, retention: std::time::Duration) -> Self {
        self.shape.cleanup = CleanupPolicy::CompactDelete;
        self.retention.time = Some(retention);
        self
    }

    /// The same topic with a retention limit.
    #[must_use]
    pub fn with_retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// Why this topic cannot exist on disk, if it cannot: a name that is
    /// empty, longer than [`MAX_TOPIC_NAME_LEN`] bytes, `.` or `..`, or
    /// holds `/`, `\\` or NUL (a topic name becomes a directory name); or no
    /// partitions. The looser rule names read back from disk are held to;
    /// a new topic's name must also pass [`crate::check_topic_name`].
    pub(crate) fn invalid(&self) -> Option<&'static str> {
        let n = &self.name;
        if n.is_empty()
            || n.len() > MAX_TOPIC_NAME_LEN
            || n == "."
            || n == ".."
            || n.contains(['/', '\\', '\0'])
        {
            Some(
                "topic names must be 1 to 249 bytes, not \".\" or \"..\", and contain no '/', '\\' or NUL",
            )
        } else if self.shape.partitions == 0 {
            Some("a topic needs at least one partition")
        } else {
            None
        }
    }
}

/// One record header. Kafka allows repeated keys and null values.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Header {
    /// Header key.
    pub key: String,
    /// Header value; `None` is a null value.
    pub value: Option<Vec<u8>>,
}

/// A record as produced: key, value, headers and timestamp. `None` key or
/// value is Kafka's null (a `None` value on a compacted topic is a tombstone).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Record {
    /// The key.
    pub key: Option<Vec<u8>>,
    /// The value.
    pub value: Option<Vec<u8>>,
    /// The headers, in order.
    pub headers: Vec<Header>,
    /// The record timestamp.
    pub timestamp: Timestamp,
}

impl Record {
    /// A record with a key and value and no headers.
    #[must_use]
    pub fn new(key: Option<&[u8]>, value: Option<&[u8]>, timestamp: Timestamp) -> Self {
        Record {
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            headers: Vec::new(),
            timestamp,
        }
    }

    /// The same record with one more header.
    #[must_use]
    pub fn with_header(mut self, key: impl Into<String>, value: Option<&[u8]>) -> Self {
        self.headers.push(Header {
            key: key.into(),
            value: value.map(<[u8]>::to_vec),
        });
        self
    }
}

/// A record to produce, borrowed: what [`TransactionalProducer::send_ref`]
/// takes, so a caller holding keys and values elsewhere need not copy them
/// into a [`Record`] first.
///
/// [`TransactionalProducer::send_ref`]: crate::TransactionalProducer::send_ref
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// The key; `None` is null.
    pub key: Option<&'a [u8]>,
    /// The value; `None` is null.
    pub value: Option<&'a [u8]>,
    /// The headers, in order.
    pub headers: &'a [Header],
    /// The record timestamp.
    pub timestamp: Timestamp,
}

impl RecordRef<'_> {
    /// The record, owned.
    #[must_use]
    pub fn to_record(&self) -> Record {
        Record {
            key: self.key.map(<[u8]>::to_vec),
            value: self.value.map(<[u8]>::to_vec),
            headers: self.headers.to_vec(),
            timestamp: self.timestamp,
        }
    }
}

impl<'a> From<&'a Record> for RecordRef<'a> {
    fn from(r: &'a Record) -> Self {
        RecordRef {
            key: r.key.as_deref(),
            value: r.value.as_deref(),
            headers: &r.headers,
            timestamp: r.timestamp,
        }
    }
}

/// A record as fetched: where it is, and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FetchedRecord {
    /// Topic and partition.
    pub partition: TopicPartition,
    /// The record's offset.
    pub offset: Offset,
    /// Key, value, headers and timestamp.
    pub record: Record,
}

/// Records fetched from one partition in one read, sharing one buffer: the
/// partition is named once per batch and keys and values are slices of the
/// buffer, so a fetch allocates per batch, not per record (the poll loop's
/// path; [`FetchedRecord`] is the owned, per-record form).
#[derive(Clone, PartialEq, Eq)]
pub struct FetchedBatch {
    partition: TopicPartition,
    data: Vec<u8>,
    spans: BatchSpans,
}

/// Where each record of a [`FetchedBatch`] lies in its buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BatchSpans {
    records: Vec<RecordSpan>,
    /// The headers of every record, in order (most records have none).
    headers: Vec<Header>,
}

/// (start, length) of a key or value in a batch's buffer; `None` is null.
pub(crate) type Span = Option<(u32, u32)>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RecordSpan {
    offset: u64,
    timestamp: i64,
    key: Span,
    value: Span,
    /// The record's headers: `headers[headers_from..headers_to]`.
    headers_from: u32,
    headers_to: u32,
}

impl BatchSpans {
    /// Adds a record whose key and value are `(start, len)` in the buffer.
    pub(crate) fn push(
        &mut self,
        offset: u64,
        timestamp: i64,
        key: Option<(usize, usize)>,
        value: Option<(usize, usize)>,
        headers: Vec<Header>,
    ) {
        let narrow = |s: Option<(usize, usize)>| {
            s.map(|(at, len)| {
                (
                    u32::try_from(at).expect("a fetch buffer is below 4 GiB"),
                    u32::try_from(len).expect("a record is below 4 GiB"),
                )
            })
        };
        self.push_spans(offset, timestamp, narrow(key), narrow(value), headers);
    }

    /// Adds a record whose key and value spans are already narrowed (the
    /// caller knows its buffer is below 4 GiB).
    #[inline]
    pub(crate) fn push_spans(
        &mut self,
        offset: u64,
        timestamp: i64,
        key: Span,
        value: Span,
        headers: Vec<Header>,
    ) {
        let headers_from = self.headers.len() as u32;
        if !headers.is_empty() {
            self.headers.extend(headers);
        }
        self.records.push(RecordSpan {
            offset,
            timestamp,
            key,
            value,
            headers_from,
            headers_to: self.headers.len() as u32,
        });
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Room for `n` more records.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.records.reserve(n);
    }
}

/// One record of a [`FetchedBatch`], borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordView<'a> {
    /// The record's offset.
    pub offset: Offset,
    /// The record timestamp.
    pub timestamp: Timestamp,
    /// The key; `None` is null.
    pub key: Option<&'a [u8]>,
    /// The value; `None` is null.
    pub value: Option<&'a [u8]>,
    /// The headers, in order.
    pub headers: &'a [Header],
}

impl<'a> RecordView<'a> {
    /// The record without its offset, borrowed.
    #[must_use]
    pub fn as_ref(&self) -> RecordRef<'a> {
        RecordRef {
            key: self.key,
            value: self.value,
            headers: self.headers,
            timestamp: self.timestamp,
        }
    }

    /// The record, owned.
    #[must_use]
    pub fn to_record(&self) -> Record {
        self.as_ref().to_record()
    }
}

impl FetchedBatch {
    /// A batch of `partition`'s records held in `data` at `spans`.
    pub(crate) fn from_spans(partition: TopicPartition, data: Vec<u8>, spans: BatchSpans) -> Self {
        FetchedBatch {
            partition,
            data,
            spans,
        }
    }

    /// Groups owned records into batches, one per run of records of the
    /// same partition, copying each run's keys and values into one buffer
    /// (for backends that fetch record by record).
    #[must_use]
    pub fn from_records(records: Vec<FetchedRecord>) -> Vec<FetchedBatch> {
        let mut out: Vec<FetchedBatch> = Vec::new();
        for r in records {
            let batch = match out.last_mut() {
                Some(b) if b.partition == r.partition => b,
                _ => {
                    out.push(FetchedBatch {
                        partition: r.partition,
                        data: Vec::new(),
                        spans: BatchSpans::default(),
                    });
                    out.last_mut().expect("pushed above")
                }
            };
            let data = &mut batch.data;
            let mut put = |bytes: Option<Vec<u8>>| {
                bytes.map(|b| {
                    let at = data.len();
                    data.extend_from_slice(&b);
                    (at, b.len())
                })
            };
            let key = put(r.record.key);
            let value = put(r.record.value);
            batch.spans.push(
                r.offset.0,
                r.record.timestamp.0,
                key,
                value,
                r.record.headers,
            );
        }
        out
    }

    /// The records as owned [`FetchedRecord`]s.
    #[must_use]
    pub fn to_records(&self) -> Vec<FetchedRecord> {
        self.iter()
            .map(|r| FetchedRecord {
                partition: self.partition.clone(),
                offset: r.offset,
                record: r.to_record(),
            })
            .collect()
    }

    /// The partition every record of the batch comes from.
    #[must_use]
    pub fn partition(&self) -> &TopicPartition {
        &self.partition
    }

    /// Records in the batch.
    #[must_use]
    #[inline]
    pub fn len(&self) -> usize {
        self.spans.records.len()
    }

    /// True when the batch holds no record.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.spans.records.is_empty()
    }

    /// Bytes of the shared buffer.
    #[must_use]
    pub fn buffer_len(&self) -> usize {
        self.data.len()
    }

    /// Record `i`, in offset order.
    ///
    /// # Panics
    /// If `i >= len()`.
    #[must_use]
    #[inline]
    pub fn get(&self, i: usize) -> RecordView<'_> {
        let r = &self.spans.records[i];
        let slice = |s: Span| s.map(|(at, len)| &self.data[at as usize..(at + len) as usize]);
        RecordView {
            offset: Offset(r.offset),
            timestamp: Timestamp(r.timestamp),
            key: slice(r.key),
            value: slice(r.value),
            headers: &self.spans.headers[r.headers_from as usize..r.headers_to as usize],
        }
    }

    /// The records, in offset order.
    #[inline]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = RecordView<'_>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

impl fmt::Debug for FetchedBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchedBatch")
            .field("partition", &self.partition)
            .field("records", &self.len())
            .field("buffer_bytes", &self.data.len())
            .finish()
    }
}

/// A committed consumer-group offset and the metadata string committed with it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OffsetAndMetadata {
    /// The next offset to read.
    pub offset: Offset,
    /// Opaque metadata (stoatflow writes Kafka Streams' format, see [`crate::offset_metadata`]).
    pub metadata: String,
}

/// Where to move a consumer's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeekTo {
    /// The first readable offset.
    Beginning,
    /// The read-committed end.
    End,
    /// A given offset.
    Offset(Offset),
}

/// What a consumer does when its position in a partition lies outside the
/// partition's readable range (past its end, or below its log start after
/// retention or a purge): Kafka's `auto.offset.reset`. The position is
/// checked when the consumer fetches, as Kafka's is; a seek alone is not
/// an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OffsetReset {
    /// Move to the partition's first readable offset (the default, as
    /// Kafka Streams sets it for its consumers: records may be read again,
    /// none is skipped).
    #[default]
    Earliest,
    /// Move to the partition's end (the plain Kafka consumer's default):
    /// records between the two positions are skipped.
    Latest,
    /// Fail the fetch with [`crate::LogError::OffsetOutOfRange`] naming the
    /// partition, the position and the readable range.
    None,
}

#[cfg(test)]
mod tests {
    use super::CleanupPolicy;

    #[test]
    fn a_kafka_cleanup_policy_reads_back_whatever_its_order() {
        for p in [
            CleanupPolicy::Delete,
            CleanupPolicy::Compact,
            CleanupPolicy::CompactDelete,
        ] {
            assert_eq!(CleanupPolicy::from_kafka_str(p.as_kafka_str()), p);
        }
        assert_eq!(
            CleanupPolicy::from_kafka_str("delete, compact"),
            CleanupPolicy::CompactDelete
        );
        assert_eq!(CleanupPolicy::from_kafka_str(""), CleanupPolicy::Delete);
    }
}
