//! [`LogAccess`]: what the log routes (`/log/topics`, `/log/records`) ask
//! of the application's log, in plain types: list the topics with their
//! offsets, append records in one transaction, read committed records from
//! an offset. A leaf beside [`crate::Endpoints`]: the routes render and
//! parse HTTP and JSON around it; the application (the facade, over its
//! embedded log) implements it. Knows no HTTP and no log crate.

/// A record to append. Without a partition, a keyed record goes where the
/// key hashes (Kafka's partitioner) and a record without a key round-robin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewRecord {
    /// The partition, if the client chose it.
    pub partition: Option<u32>,
    /// The key bytes (`None`: a null key).
    pub key: Option<Vec<u8>>,
    /// The value bytes (`None`: a null value, a tombstone).
    pub value: Option<Vec<u8>>,
    /// The record timestamp in ms (`None`: the wall clock at the append).
    pub timestamp: Option<i64>,
}

/// A committed record read back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredRecord {
    /// Its partition.
    pub partition: u32,
    /// Its offset.
    pub offset: u64,
    /// Its timestamp (ms).
    pub timestamp: i64,
    /// The key bytes, if any.
    pub key: Option<Vec<u8>>,
    /// The value bytes, if any.
    pub value: Option<Vec<u8>>,
    /// Its headers, in order.
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

/// One partition's committed offsets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartitionOffsets {
    /// The partition.
    pub partition: u32,
    /// The first readable offset.
    pub beginning: u64,
    /// The read-committed end: the offset the next committed record gets.
    pub end: u64,
}

/// A topic, its shape as text, and its partitions' offsets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicInfo {
    /// The name.
    pub name: String,
    /// Partitions, cleanup policy and retention, as the log prints them.
    pub shape: String,
    /// Every partition, in order.
    pub partitions: Vec<PartitionOffsets>,
}

/// What a read returned: records in offset order, where the next read
/// starts, and the partition's offsets at the read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadBatch {
    /// The records, committed only.
    pub records: Vec<StoredRecord>,
    /// The offset to read from next.
    pub next_offset: u64,
    /// The partition's offsets when it was read.
    pub offsets: PartitionOffsets,
}

/// Why a log route could not be served. Each names what it is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LogAccessError {
    /// No such topic.
    #[error("topic {topic} does not exist")]
    NoTopic {
        /// The topic.
        topic: String,
    },
    /// No such partition.
    #[error("topic {topic} has {partitions} partitions; there is no partition {partition}")]
    NoPartition {
        /// The topic.
        topic: String,
        /// The partition asked for.
        partition: u32,
        /// How many the topic has.
        partitions: u32,
    },
    /// A read from past the partition's committed end.
    #[error("offset {offset} is past the committed end {end} of {topic}-{partition}")]
    OffsetPastEnd {
        /// The topic.
        topic: String,
        /// The partition.
        partition: u32,
        /// The offset asked for.
        offset: u64,
        /// The committed end.
        end: u64,
    },
    /// An append the application refuses (its own internal topics).
    #[error("{reason}")]
    Refused {
        /// Why, naming the topic.
        reason: String,
    },
    /// A record the log cannot take (too large, for instance).
    #[error("record {index}: {reason}")]
    BadRecord {
        /// Its index in the request.
        index: usize,
        /// Why.
        reason: String,
    },
    /// The log failed; nothing was appended.
    #[error("the log failed: {reason}")]
    Log {
        /// The log's error.
        reason: String,
    },
}

/// The application's log, as the log routes use it. Every call is
/// synchronous and bounded by its arguments.
pub trait LogAccess: Send + Sync + 'static {
    /// Every topic with its partitions' offsets, by name.
    ///
    /// # Errors
    /// [`LogAccessError::Log`].
    fn topics(&self) -> Result<Vec<TopicInfo>, LogAccessError>;

    /// Appends `records` to `topic` in one transaction, committed (durable
    /// and visible) before it returns; how many were appended.
    ///
    /// # Errors
    /// A missing topic or partition, a refused topic or record, or the
    /// log's failure: then nothing was appended.
    fn append(&self, topic: &str, records: Vec<NewRecord>) -> Result<usize, LogAccessError>;

    /// Committed records of `topic`'s `partition` from `offset` (from the
    /// beginning when `offset` is below it), at most `max_records` and
    /// about `max_bytes` of keys and values (at least one record when one
    /// is there).
    ///
    /// # Errors
    /// A missing topic or partition, an offset past the committed end, or
    /// the log's failure.
    fn read(
        &self,
        topic: &str,
        partition: u32,
        offset: u64,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<ReadBatch, LogAccessError>;
}
