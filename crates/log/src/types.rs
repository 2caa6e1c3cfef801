//! The nouns of the log boundary: partitions, offsets, topics, records.
//!
//! Owns: the newtypes ([`Partition`], [`Offset`], [`Timestamp`]) and the plain
//! data carried across the boundary. Knows nothing of how a backend stores
//! or transports them, and nothing of event time: a [`Timestamp`] is the
//! record attribute Kafka calls `CreateTime`, not a watermark.

use std::fmt;

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
}

impl CleanupPolicy {
    /// Kafka's name for the policy.
    #[must_use]
    pub fn as_kafka_str(self) -> &'static str {
        match self {
            CleanupPolicy::Delete => "delete",
            CleanupPolicy::Compact => "compact",
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

/// Retention of a `Delete` topic. `None` keeps forever.
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
    /// Retention, applied to `Delete` topics (not checked by `ensure_topic`).
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

    /// The same topic with a retention limit.
    #[must_use]
    pub fn with_retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// Why this topic cannot exist, if it cannot: a name that is empty,
    /// longer than [`MAX_TOPIC_NAME`] bytes, starts with `.` (so neither `.`
    /// nor `..`), or holds `/`, `\\` or NUL (a topic name becomes a
    /// directory name); or no partitions. Checked at creation and again on
    /// every name read back from disk.
    pub(crate) fn invalid(&self) -> Option<&'static str> {
        let n = &self.name;
        if n.is_empty()
            || n.len() > MAX_TOPIC_NAME
            || n.starts_with('.')
            || n.contains(['/', '\\', '\0'])
        {
            Some(
                "topic names must be 1 to 249 bytes, not start with '.', and contain no '/', '\\' or NUL",
            )
        } else if self.shape.partitions == 0 {
            Some("a topic needs at least one partition")
        } else {
            None
        }
    }
}

/// The longest topic name, in bytes (Kafka's limit).
pub(crate) const MAX_TOPIC_NAME: usize = 249;

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
