//! stoatflow-log: the engine's view of a partitioned, transactional log, and
//! the embedded log, the default backend.
//!
//! A tour of the principal types:
//!
//! - [`Log`], [`Consumer`], [`TransactionalProducer`]: the broker interface.
//!   Topics with a [`TopicShape`] (partitions, [`CleanupPolicy`]);
//!   read-committed fetch of [`FetchedRecord`]s, or of [`FetchedBatch`]es
//!   that share one buffer per batch (the poll loop's path); one transaction per epoch
//!   carrying records *and* consumer-group offsets ([`OffsetAndMetadata`]);
//!   fencing of zombie producers by transactional id. [`Producer`] is
//!   at-least-once's: no transaction, records durable at a flush, offsets
//!   committed after them with [`Log::commit_offsets`]. [`restore`] reads a
//!   partition from its beginning to its end (changelog restore).
//! - [`GroupMember`]: consumer-group membership ([`Log::join_group`]):
//!   which partitions this member owns, and [`GroupEvent`]s when a
//!   rebalance changes that; [`SoleMember`] owns everything (the embedded log).
//! - [`LogError`] and [`ErrorKind`]: every failure, classified as retriable,
//!   abort-the-transaction or fatal.
//! - [`check_topic_name`]: Kafka's topic-name rules, which the embedded
//!   log holds a new topic to, as a Kafka broker does.
//! - [`EmbeddedLog`]: segment files under a data directory, atomic and
//!   durable commits, checksums, torn-tail recovery, compaction, retention, a
//!   directory lock, and an in-memory mode.
//! - [`offset_metadata`]: Kafka Streams' committed-offset metadata format,
//!   which carries a partition's time with its offset.
//!
//! The Kafka backend lives in `stoatflow-kafka`. This crate knows nothing of
//! streams, windows or watermarks, and nothing of rdkafka.
//!
//! ```
//! use std::time::Duration;
//! use stoatflow_log::{Consumer, EmbeddedLog, Log, OffsetAndMetadata, Offset};
//! use stoatflow_log::{Record, Timestamp, TopicPartition, TopicSpec, TransactionalProducer};
//!
//! let log = EmbeddedLog::in_memory();
//! log.ensure_topic(&TopicSpec::new("out", 1))?;
//! log.ensure_topic(&TopicSpec::new("in", 1))?;
//! let (out, input) = (TopicPartition::new("out", 0), TopicPartition::new("in", 0));
//!
//! let mut upstream = log.transactional_producer("upstream")?;
//! upstream.begin()?;
//! upstream.send(&input, &Record::new(Some(b"key"), Some(b"event"), Timestamp(1_000)))?;
//! upstream.commit()?;
//!
//! // The application read offset 0 of `in`: it writes its result and
//! // commits the offset past it, in one transaction.
//! let mut producer = log.transactional_producer("app-task-0")?;
//! producer.begin()?;
//! producer.send(&out, &Record::new(Some(b"key"), Some(b"result"), Timestamp(1_000)))?;
//! producer.send_offsets("app", &[(input.clone(), OffsetAndMetadata { offset: Offset(1), metadata: String::new() })])?;
//! producer.commit()?;   // the record and the offset become visible together
//!
//! let committed = log.committed_offsets("app", &[input])?;
//! assert_eq!(committed[0].1.as_ref().map(|o| o.offset), Some(Offset(1)));
//! let mut consumer = log.consumer("reader")?;
//! consumer.assign(&[out])?;
//! assert_eq!(consumer.fetch(Duration::from_millis(100))?.len(), 1);
//! # Ok::<(), stoatflow_log::LogError>(())
//! ```

mod broker;
#[cfg(any(test, feature = "contract-kit"))]
pub mod contract;
mod embedded;
mod error;
#[cfg(test)]
mod fuzz;
mod membership;
pub mod offset_metadata;
mod offset_reset;
mod topic_name;
mod types;

/// Proptest case counts for the decoders fed arbitrary bytes: bounded in
/// the short form, many more under `STOATFLOW_HEAVY_TESTS`.
#[cfg(test)]
fn fuzz_cases() -> u32 {
    if std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some() {
        20_000
    } else {
        256
    }
}

pub use broker::{Consumer, Log, Producer, RestoreSummary, TransactionalProducer, restore};
pub use embedded::{
    EmbeddedConfig, EmbeddedConsumer, EmbeddedLog, EmbeddedPlainProducer, EmbeddedProducer,
    MaintenanceReport,
};
pub use error::{ErrorKind, LogError};
pub use membership::{GroupEvent, GroupMember, MemberAssignment, SoleMember};
pub use topic_name::check_topic_name;
pub use types::MAX_TOPIC_NAME_LEN;
pub use types::{
    CleanupPolicy, FetchedBatch, FetchedRecord, Header, Offset, OffsetAndMetadata, OffsetReset,
    Partition, Record, RecordRef, RecordView, Retention, SeekTo, Timestamp, TopicPartition,
    TopicShape, TopicSpec,
};
