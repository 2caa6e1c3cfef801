//! The broker interface: the engine's whole view of a partitioned,
//! transactional log.
//!
//! Owns: the traits [`Log`] (topics, clients, committed offsets),
//! [`Consumer`] (read-committed fetch, seek, end offsets),
//! [`TransactionalProducer`] (one atomic unit per epoch) and [`Producer`]
//! (at-least-once: records made durable by a flush, offsets committed on
//! their own with [`Log::commit_offsets`]), and
//! [`Log::join_group`] (consumer-group membership). Both backends, the
//! embedded log and Kafka, implement them and pass one contract test suite,
//! so nothing above this layer can tell them apart. Must never know streams,
//! windows, watermarks, or which backend is behind it.

use std::fmt::Debug;
use std::time::Duration;

use crate::error::LogError;
use crate::membership::{GroupMember, SoleMember};
use crate::types::{
    FetchedBatch, FetchedRecord, Offset, OffsetAndMetadata, Record, RecordRef, SeekTo, Timestamp,
    TopicPartition, TopicShape, TopicSpec,
};

/// A partitioned, transactional log: a Kafka cluster or the embedded log.
pub trait Log: Send + Sync + Debug {
    /// The consumer this log hands out.
    type Consumer: Consumer;
    /// The transactional producer this log hands out.
    type Producer: TransactionalProducer;
    /// The at-least-once (non-transactional) producer this log hands out.
    type PlainProducer: Producer;

    /// Creates a topic.
    ///
    /// # Errors
    /// [`LogError::TopicExists`] if it exists (whatever its shape).
    fn create_topic(&self, spec: &TopicSpec) -> Result<(), LogError>;

    /// The topic's shape, or `None` if it does not exist.
    ///
    /// # Errors
    /// Backend failures.
    fn describe_topic(&self, topic: &str) -> Result<Option<TopicShape>, LogError>;

    /// Creates the topic if it is missing; fails if it exists with another shape.
    ///
    /// # Errors
    /// [`LogError::TopicShapeMismatch`] naming both shapes, or backend failures.
    fn ensure_topic(&self, spec: &TopicSpec) -> Result<(), LogError> {
        let actual = match self.describe_topic(&spec.name)? {
            Some(shape) => shape,
            None => match self.create_topic(spec) {
                Ok(()) => return Ok(()),
                // Lost a race with another creator: check what it made.
                Err(LogError::TopicExists { .. }) => {
                    self.describe_topic(&spec.name)?
                        .ok_or_else(|| LogError::UnknownTopic {
                            topic: spec.name.clone(),
                        })?
                }
                Err(e) => return Err(e),
            },
        };
        if actual == spec.shape {
            Ok(())
        } else {
            Err(LogError::TopicShapeMismatch {
                topic: spec.name.clone(),
                expected: spec.shape,
                actual,
            })
        }
    }

    /// A read-committed consumer in consumer group `group` (whose committed
    /// offsets seed the positions of the partitions it is assigned).
    ///
    /// # Errors
    /// Backend failures.
    fn consumer(&self, group: &str) -> Result<Self::Consumer, LogError>;

    /// Joins consumer group `group`, subscribed to `topics`, as member
    /// `member` (a stable id: a member restarted under the same id takes
    /// its predecessor's place, Kafka's static membership), owning a share
    /// of their partitions and hearing when that changes.
    /// The default is a log without group coordination: the member owns
    /// every partition ([`SoleMember`]); the embedded log keeps it, since one
    /// process owns its directory.
    ///
    /// # Errors
    /// [`LogError::UnknownTopic`], backend failures.
    fn join_group(
        &self,
        group: &str,
        member: &str,
        topics: &[String],
    ) -> Result<Box<dyn GroupMember>, LogError> {
        let _ = (group, member);
        let mut all = Vec::new();
        for topic in topics {
            let shape = self
                .describe_topic(topic)?
                .ok_or_else(|| LogError::UnknownTopic {
                    topic: topic.clone(),
                })?;
            all.extend((0..shape.partitions).map(|p| TopicPartition::new(topic.as_str(), p)));
        }
        Ok(Box::new(SoleMember::owning(all)))
    }

    /// A transactional producer for `transactional_id`. Creating it fences
    /// every earlier producer with the same id: their next transactional call
    /// fails with [`LogError::Fenced`], and their open transaction never commits.
    ///
    /// # Errors
    /// Backend failures.
    fn transactional_producer(&self, transactional_id: &str) -> Result<Self::Producer, LogError>;

    /// An at-least-once producer: no transaction, no fencing. `client_id`
    /// names it in the backend's logs and metrics only.
    ///
    /// # Errors
    /// Backend failures.
    fn producer(&self, client_id: &str) -> Result<Self::PlainProducer, LogError>;

    /// Commits `group`'s offsets (with metadata) outside any transaction:
    /// at-least-once's commit, made after the records they cover are
    /// flushed. Where this log has a member of `group` (from
    /// [`Log::join_group`]), the offsets are committed as that member, so
    /// the group refuses them once it has moved past the member's
    /// generation; otherwise as a client outside the group.
    ///
    /// The embedded log refuses an offset past its partition's end.
    ///
    /// # Errors
    /// Unknown topic or partition, [`LogError::OffsetOutOfRange`] naming
    /// the partition, the offset and the end, the group's refusal (an
    /// [`ErrorKind::AbortTransaction`](crate::ErrorKind): the member must
    /// rejoin and read its partitions again from their last commit), backend failures.
    fn commit_offsets(
        &self,
        group: &str,
        offsets: &[(TopicPartition, OffsetAndMetadata)],
    ) -> Result<(), LogError>;

    /// The offsets (and metadata) group `group` has committed, `None` where
    /// it has committed none.
    ///
    /// # Errors
    /// Backend failures.
    fn committed_offsets(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>, LogError>;

    /// Lets the log reclaim the records of `partition` below `before`
    /// (Kafka's `DeleteRecords`): what an application does to a repartition
    /// topic once its consumer has committed past them. Records at or past
    /// `before` are never touched; a log may keep more than asked (the
    /// embedded log frees whole segments only). `before` past the end is
    /// an error naming the partition.
    ///
    /// # Errors
    /// Unknown topic or partition, an offset past the end, backend failures.
    fn purge_below(&self, partition: &TopicPartition, before: Offset) -> Result<(), LogError>;

    /// The log's own upkeep, where its user must ask for it: compaction of
    /// compacted topics and retention of the others, judged at `now`. The
    /// embedded log does it here; a Kafka cluster does it by itself, so
    /// there it does nothing.
    ///
    /// # Errors
    /// Backend failures.
    fn upkeep(&self, now: Timestamp) -> Result<(), LogError>;
}

/// A read-committed consumer of explicitly assigned partitions. It never
/// commits offsets itself: offsets commit only inside a transaction.
pub trait Consumer: Send + Debug {
    /// Replaces the assignment. Each partition starts at the group's
    /// committed offset, or at the beginning if there is none.
    ///
    /// # Errors
    /// [`LogError::UnknownTopic`]/[`LogError::UnknownPartition`], backend failures.
    fn assign(&mut self, partitions: &[TopicPartition]) -> Result<(), LogError>;

    /// Replaces the assignment, each partition starting at the offset paired
    /// with it, in one step (a Kafka consumer is reassigned once, not once
    /// per sought partition).
    ///
    /// # Errors
    /// As [`Consumer::assign`] and [`Consumer::seek`].
    fn assign_at(&mut self, partitions: &[(TopicPartition, Offset)]) -> Result<(), LogError> {
        let tps: Vec<TopicPartition> = partitions.iter().map(|(tp, _)| tp.clone()).collect();
        self.assign(&tps)?;
        for (tp, at) in partitions {
            if self.position(tp)? != *at {
                self.seek(tp, SeekTo::Offset(*at))?;
            }
        }
        Ok(())
    }

    /// Moves the position of an assigned partition. A position outside the
    /// partition's readable range is no error here: the next fetch moves
    /// it by the consumer's offset-reset policy (Kafka's
    /// `auto.offset.reset`, [`crate::OffsetReset`]) or fails with
    /// [`LogError::OffsetOutOfRange`].
    ///
    /// # Errors
    /// [`LogError::NotAssigned`], backend failures.
    fn seek(&mut self, partition: &TopicPartition, to: SeekTo) -> Result<(), LogError>;

    /// The offset the next fetched record of `partition` will have at least
    /// (past records, aborted data and transaction markers already passed).
    ///
    /// # Errors
    /// [`LogError::NotAssigned`].
    fn position(&self, partition: &TopicPartition) -> Result<Offset, LogError>;

    /// The next committed records of the assigned partitions, waiting at most
    /// `max_wait` for some to arrive. Records of one partition come in
    /// offset order. An empty batch means nothing arrived in time.
    ///
    /// # Errors
    /// Backend failures.
    fn fetch(&mut self, max_wait: Duration) -> Result<Vec<FetchedRecord>, LogError>;

    /// What [`Consumer::fetch`] returns, as batches: each holds a run of
    /// one partition's records in offset order, names the partition once
    /// and keeps keys and values in one shared buffer (the poll loop's
    /// path, which must not allocate per record). The default groups
    /// [`Consumer::fetch`]'s records; a backend that reads whole batches
    /// hands them out as they are.
    ///
    /// # Errors
    /// As [`Consumer::fetch`].
    fn fetch_batches(&mut self, max_wait: Duration) -> Result<Vec<FetchedBatch>, LogError> {
        self.fetch(max_wait).map(FetchedBatch::from_records)
    }

    /// The read-committed end of `partition`: one past the last committed
    /// record (Kafka's last stable offset).
    ///
    /// # Errors
    /// Unknown topic or partition, backend failures.
    fn end_offset(&mut self, partition: &TopicPartition) -> Result<Offset, LogError>;

    /// The first readable offset of `partition` (after retention).
    ///
    /// # Errors
    /// Unknown topic or partition, backend failures.
    fn beginning_offset(&mut self, partition: &TopicPartition) -> Result<Offset, LogError>;
}

/// A transactional producer: per epoch, `begin`, any number of `send` and
/// `send_offsets`, then `commit` or `abort`, which apply all of it or none.
pub trait TransactionalProducer: Send + Debug {
    /// Starts a transaction.
    ///
    /// # Errors
    /// [`LogError::Fenced`], [`LogError::TransactionState`] if one is open.
    fn begin(&mut self) -> Result<(), LogError>;

    /// Adds a record for `partition` to the open transaction.
    ///
    /// # Errors
    /// [`LogError::RecordTooLarge`] (abort), unknown topic/partition,
    /// [`LogError::Fenced`], [`LogError::TransactionState`].
    fn send(&mut self, partition: &TopicPartition, record: &Record) -> Result<(), LogError>;

    /// [`TransactionalProducer::send`] of a borrowed record (the commit
    /// path's: no copy of keys and values into a [`Record`] first). The
    /// default copies it into one.
    ///
    /// # Errors
    /// As [`TransactionalProducer::send`].
    fn send_ref(
        &mut self,
        partition: &TopicPartition,
        record: RecordRef<'_>,
    ) -> Result<(), LogError> {
        self.send(partition, &record.to_record())
    }

    /// Adds consumer-group offsets (with metadata) to the open transaction.
    /// The embedded log refuses an offset past the end its partition will
    /// have once the transaction commits (a Kafka broker takes it, and the
    /// group's consumer is then reset by its offset-reset policy).
    ///
    /// # Errors
    /// [`LogError::Fenced`], [`LogError::TransactionState`],
    /// [`LogError::OffsetOutOfRange`] naming the partition, the offset and
    /// the end, backend failures.
    fn send_offsets(
        &mut self,
        group: &str,
        offsets: &[(TopicPartition, OffsetAndMetadata)],
    ) -> Result<(), LogError>;

    /// Makes the transaction's records and offsets visible, all at once and durably.
    ///
    /// # Errors
    /// On error the transaction did not commit; [`LogError::kind`] says
    /// whether to retry the commit, abort, or give up.
    fn commit(&mut self) -> Result<(), LogError>;

    /// Discards the transaction's records and offsets.
    ///
    /// # Errors
    /// [`LogError::Fenced`], backend failures.
    fn abort(&mut self) -> Result<(), LogError>;
}

/// An at-least-once producer: records are sent without a transaction and
/// become durable by [`Producer::flush`]. A record may be readable before
/// the flush that covers it; a failed flush leaves some of the records sent
/// since the last one written and some not, so its caller goes back to its
/// last committed offsets and sends them again (duplicates, never a loss).
pub trait Producer: Send + Debug {
    /// Sends a record to `partition`.
    ///
    /// # Errors
    /// [`LogError::RecordTooLarge`], unknown topic/partition, backend failures.
    fn send(&mut self, partition: &TopicPartition, record: &Record) -> Result<(), LogError>;

    /// [`Producer::send`] of a borrowed record. The default copies it.
    ///
    /// # Errors
    /// As [`Producer::send`].
    fn send_ref(
        &mut self,
        partition: &TopicPartition,
        record: RecordRef<'_>,
    ) -> Result<(), LogError> {
        self.send(partition, &record.to_record())
    }

    /// Returns once every record sent before it is durable and readable,
    /// or fails if any of them could not be written.
    ///
    /// # Errors
    /// Backend failures: not every record since the last flush is durable.
    fn flush(&mut self) -> Result<(), LogError>;
}

/// What [`restore`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestoreSummary {
    /// Records delivered.
    pub records: u64,
    /// The end offset restored up to (exclusive).
    pub end: Offset,
}

/// Reads `partition` from its beginning to its read-committed end offset as of
/// the call (a changelog restore), handing each record to `apply`. The
/// consumer is reassigned to `partition` alone.
///
/// # Errors
/// Backend failures, or [`LogError::Timeout`] if no progress is made for `stall_timeout`.
pub fn restore<C: Consumer + ?Sized>(
    consumer: &mut C,
    partition: &TopicPartition,
    stall_timeout: Duration,
    mut apply: impl FnMut(FetchedRecord),
) -> Result<RestoreSummary, LogError> {
    let end = consumer.end_offset(partition)?;
    consumer.assign(std::slice::from_ref(partition))?;
    consumer.seek(partition, SeekTo::Beginning)?;
    let mut records = 0u64;
    let mut last_progress = std::time::Instant::now();
    while consumer.position(partition)? < end {
        let batch = consumer.fetch(Duration::from_millis(100))?;
        if batch.is_empty() {
            if last_progress.elapsed() > stall_timeout {
                return Err(LogError::Timeout {
                    op: format!("restoring {partition} to offset {end}"),
                    after_ms: u64::try_from(stall_timeout.as_millis()).unwrap_or(u64::MAX),
                });
            }
            continue;
        }
        last_progress = std::time::Instant::now();
        for r in batch {
            if r.offset < end {
                records += 1;
                apply(r);
            }
        }
    }
    Ok(RestoreSummary { records, end })
}
