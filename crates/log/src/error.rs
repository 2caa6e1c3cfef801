//! The one error type of the log boundary, and its classification.
//!
//! Owns: [`LogError`] and [`ErrorKind`]. Every backend maps its failures onto
//! these variants, so the engine branches on [`LogError::kind`] alone and
//! never on a backend's own codes. Messages are lowercase and name the
//! topic, partition, offset or file concerned; they never carry configuration
//! values (secrets live there).

use std::path::PathBuf;

use crate::types::{Offset, Partition, TopicShape};

/// How the engine must react to a [`LogError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Transient: the same call may succeed if repeated (after a backoff).
    Retriable,
    /// The open transaction cannot commit: abort it and reprocess the epoch.
    AbortTransaction,
    /// The producer, consumer or log is unusable (fenced, corrupt, misconfigured):
    /// stop, or rebuild it from scratch.
    Fatal,
}

/// A failure at the log boundary. See [`LogError::kind`] for what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// The topic does not exist.
    #[error("topic {topic:?} does not exist")]
    UnknownTopic {
        /// The topic asked for.
        topic: String,
    },
    /// The partition is outside the topic's partition count.
    #[error(
        "partition {partition} of topic {topic:?} does not exist (topic has {partitions} partitions)"
    )]
    UnknownPartition {
        /// The topic.
        topic: String,
        /// The partition asked for.
        partition: Partition,
        /// How many partitions the topic has.
        partitions: u32,
    },
    /// A topic name that breaks Kafka's naming rules.
    #[error("topic name {topic:?} is refused: {rule}")]
    InvalidTopicName {
        /// The name asked for.
        topic: String,
        /// The rule it breaks.
        rule: String,
    },
    /// A request beyond one of the log's bounds (a setting of the log).
    #[error("{what} exceeds {setting} = {limit}")]
    LimitExceeded {
        /// What was asked for, naming the topic (and the file it was read
        /// from, on open).
        what: String,
        /// The setting that bounds it.
        setting: &'static str,
        /// The setting's value.
        limit: u64,
    },
    /// `create_topic` on a topic that already exists.
    #[error("topic {topic:?} already exists")]
    TopicExists {
        /// The topic.
        topic: String,
    },
    /// The topic exists with another partition count or cleanup policy.
    #[error("topic {topic:?} exists as {actual} but {expected} is required")]
    TopicShapeMismatch {
        /// The topic.
        topic: String,
        /// The shape the caller requires.
        expected: TopicShape,
        /// The shape the topic has.
        actual: TopicShape,
    },
    /// A record larger than the log accepts.
    #[error(
        "record of {size} bytes for topic {topic:?} partition {partition} exceeds the maximum of {max} bytes"
    )]
    RecordTooLarge {
        /// The topic.
        topic: String,
        /// The partition.
        partition: Partition,
        /// Encoded size of the record.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// Another producer with the same transactional id has started since this one.
    #[error(
        "producer for transactional id {transactional_id:?} was fenced by a newer instance (epoch {epoch})"
    )]
    Fenced {
        /// The transactional id.
        transactional_id: String,
        /// This (stale) producer's epoch.
        epoch: u32,
    },
    /// A transactional call made in the wrong state (e.g. `send` before `begin`).
    #[error("invalid transaction state for transactional id {transactional_id:?}: {reason}")]
    TransactionState {
        /// The transactional id.
        transactional_id: String,
        /// What was wrong.
        reason: &'static str,
    },
    /// The data directory is held by another process (or another open log).
    #[error("data directory {} is locked by another process", dir.display())]
    Locked {
        /// The data directory.
        dir: PathBuf,
    },
    /// Stored data failed validation. Never skipped silently.
    #[error("corrupt log file {} at byte {position}: {reason}", file.display())]
    Corrupt {
        /// The file.
        file: PathBuf,
        /// Byte position in the file.
        position: u64,
        /// What failed.
        reason: String,
    },
    /// An I/O operation on a log file failed.
    #[error("i/o error while {op} {}: {source}", file.display())]
    Io {
        /// What was being done ("writing", "syncing", ...).
        op: &'static str,
        /// The file or directory.
        file: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An offset outside the partition's readable range was asked for.
    #[error(
        "offset {offset} is out of range for topic {topic:?} partition {partition} (valid {start}..={end})"
    )]
    OffsetOutOfRange {
        /// The topic.
        topic: String,
        /// The partition.
        partition: Partition,
        /// The offset asked for.
        offset: Offset,
        /// The first readable offset.
        start: Offset,
        /// The end offset.
        end: Offset,
    },
    /// The partition is not assigned to this consumer.
    #[error("topic {topic:?} partition {partition} is not assigned to this consumer")]
    NotAssigned {
        /// The topic.
        topic: String,
        /// The partition.
        partition: Partition,
    },
    /// The broker could not be reached.
    #[error("broker at {bootstrap} is unreachable: {reason}")]
    Unreachable {
        /// The bootstrap addresses (never credentials).
        bootstrap: String,
        /// What failed.
        reason: String,
    },
    /// An operation did not finish in time.
    #[error("timed out after {after_ms} ms while {op}")]
    Timeout {
        /// What was being done.
        op: String,
        /// The bound that elapsed.
        after_ms: u64,
    },
    /// Invalid configuration, detected at start.
    #[error("invalid configuration key {key:?}: {reason}")]
    Config {
        /// The offending key (never its value).
        key: String,
        /// Why it is refused.
        reason: String,
    },
    /// A broker-reported failure, already classified by the backend.
    #[error("broker error while {op}: {message}")]
    Broker {
        /// What was being done, naming the topic/partition where there is one.
        op: String,
        /// The broker's or client's message.
        message: String,
        /// The backend's classification.
        kind: ErrorKind,
    },
}

impl LogError {
    /// How the engine must react.
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        match self {
            LogError::RecordTooLarge { .. } => ErrorKind::AbortTransaction,
            LogError::Unreachable { .. } | LogError::Timeout { .. } => ErrorKind::Retriable,
            LogError::Broker { kind, .. } => *kind,
            LogError::UnknownTopic { .. }
            | LogError::UnknownPartition { .. }
            | LogError::TopicExists { .. }
            | LogError::InvalidTopicName { .. }
            | LogError::LimitExceeded { .. }
            | LogError::TopicShapeMismatch { .. }
            | LogError::Fenced { .. }
            | LogError::TransactionState { .. }
            | LogError::Locked { .. }
            | LogError::Corrupt { .. }
            | LogError::Io { .. }
            | LogError::OffsetOutOfRange { .. }
            | LogError::NotAssigned { .. }
            | LogError::Config { .. } => ErrorKind::Fatal,
        }
    }

    pub(crate) fn io(op: &'static str, file: impl Into<PathBuf>, source: std::io::Error) -> Self {
        LogError::Io {
            op,
            file: file.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::CleanupPolicy;

    #[test]
    fn messages_are_lowercase_and_name_the_topic() {
        let e = LogError::TopicShapeMismatch {
            topic: "orders".into(),
            expected: TopicShape::new(4, CleanupPolicy::Delete),
            actual: TopicShape::new(2, CleanupPolicy::Compact),
        };
        let m = e.to_string();
        assert!(m.starts_with("topic \"orders\""), "{m}");
        assert!(m.contains("4 partitions") && m.contains("compact"), "{m}");
        assert_eq!(e.kind(), ErrorKind::Fatal);
    }

    #[test]
    fn errors_are_send_sync_static() {
        fn check<T: Send + Sync + 'static>() {}
        check::<LogError>();
    }
}
