//! A `Log` wrapper for fault injection: every call first asks a [`Hooks`]
//! whether the log is still reachable, and each operation that changes
//! durable state (creating a topic, taking a producer epoch, committing or
//! aborting a transaction, an at-least-once flush or offset commit) runs
//! through it, so a test can count them, fail them or "lose power" around
//! them; so does the log's upkeep, which a test can hold or fail.

use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::{
    Consumer, EmbeddedLog, FetchedRecord, GroupMember, Log, LogError, Offset, OffsetAndMetadata,
    Producer, Record, SeekTo, Timestamp, TopicPartition, TopicShape, TopicSpec,
    TransactionalProducer,
};

/// An operation that changes durable state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durable {
    CreateTopic,
    TakeProducerEpoch,
    Commit,
    Abort,
    /// An at-least-once producer's flush.
    Flush,
    /// Offsets committed outside a transaction.
    CommitOffsets,
}

/// What a test does around the wrapped log's calls.
pub trait Hooks: Send + Sync + std::fmt::Debug + 'static {
    /// Before every call: an error makes the call fail. By default the
    /// log is always reachable.
    fn alive(&self) -> Result<(), LogError> {
        Ok(())
    }

    /// Runs the durable operation `op` (by calling `run`, or not). By
    /// default it runs.
    fn durable<T>(
        &self,
        op: Durable,
        run: impl FnOnce() -> Result<T, LogError>,
    ) -> Result<T, LogError> {
        let _ = op;
        run()
    }

    /// Runs the log's upkeep (by calling `run`, or not). By default it runs.
    fn upkeep(&self, run: impl FnOnce() -> Result<(), LogError>) -> Result<(), LogError> {
        run()
    }

    /// A producer (either kind) was handed a record.
    fn sent(&self) {}

    /// An error a consumer's fetch on this thread fails with instead of
    /// fetching.
    fn fetch_fault(&self) -> Option<LogError> {
        None
    }

    /// Whether a consumer's fetch on this thread takes its records from the
    /// log and then fails with a timeout, handing out none of them (a
    /// client that loses a response it had read part of).
    fn swallow_fetch(&self) -> bool {
        false
    }

    /// Whether a consumer's fetch on this thread returns nothing after its
    /// full wait (a broker that delivers nothing).
    fn starve_fetch(&self) -> bool {
        false
    }

    /// The member `member` of `group` gets, if not the embedded log's own
    /// (which owns every partition).
    fn join_group(&self, group: &str, member: &str) -> Option<Box<dyn GroupMember>> {
        let _ = (group, member);
        None
    }
}

/// The embedded log behind `H`.
#[derive(Debug)]
pub struct HookedLog<H> {
    pub inner: Arc<EmbeddedLog>,
    pub hooks: Arc<H>,
}

#[derive(Debug)]
pub struct HookedConsumer<H> {
    inner: <EmbeddedLog as Log>::Consumer,
    hooks: Arc<H>,
}

#[derive(Debug)]
pub struct HookedProducer<H> {
    inner: <EmbeddedLog as Log>::Producer,
    hooks: Arc<H>,
}

#[derive(Debug)]
pub struct HookedPlainProducer<H> {
    inner: <EmbeddedLog as Log>::PlainProducer,
    hooks: Arc<H>,
}

impl<H: Hooks> Log for HookedLog<H> {
    type Consumer = HookedConsumer<H>;
    type Producer = HookedProducer<H>;
    type PlainProducer = HookedPlainProducer<H>;

    fn create_topic(&self, spec: &TopicSpec) -> Result<(), LogError> {
        self.hooks
            .durable(Durable::CreateTopic, || self.inner.create_topic(spec))
    }
    fn describe_topic(&self, topic: &str) -> Result<Option<TopicShape>, LogError> {
        self.hooks.alive()?;
        self.inner.describe_topic(topic)
    }
    fn consumer(&self, group: &str) -> Result<Self::Consumer, LogError> {
        self.hooks.alive()?;
        Ok(HookedConsumer {
            inner: self.inner.consumer(group)?,
            hooks: self.hooks.clone(),
        })
    }
    fn transactional_producer(&self, id: &str) -> Result<Self::Producer, LogError> {
        let inner = self.hooks.durable(Durable::TakeProducerEpoch, || {
            self.inner.transactional_producer(id)
        })?;
        Ok(HookedProducer {
            inner,
            hooks: self.hooks.clone(),
        })
    }
    fn producer(&self, client_id: &str) -> Result<Self::PlainProducer, LogError> {
        self.hooks.alive()?;
        Ok(HookedPlainProducer {
            inner: self.inner.producer(client_id)?,
            hooks: self.hooks.clone(),
        })
    }
    fn commit_offsets(
        &self,
        group: &str,
        offsets: &[(TopicPartition, OffsetAndMetadata)],
    ) -> Result<(), LogError> {
        self.hooks.durable(Durable::CommitOffsets, || {
            self.inner.commit_offsets(group, offsets)
        })
    }
    fn committed_offsets(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>, LogError> {
        self.hooks.alive()?;
        self.inner.committed_offsets(group, partitions)
    }
    fn purge_below(&self, partition: &TopicPartition, before: Offset) -> Result<(), LogError> {
        self.hooks.alive()?;
        self.inner.purge_below(partition, before)
    }
    fn join_group(
        &self,
        group: &str,
        member: &str,
        topics: &[String],
    ) -> Result<Box<dyn GroupMember>, LogError> {
        self.hooks.alive()?;
        match self.hooks.join_group(group, member) {
            Some(m) => Ok(m),
            None => self.inner.join_group(group, member, topics),
        }
    }
    fn upkeep(&self, now: Timestamp) -> Result<(), LogError> {
        self.hooks.alive()?;
        self.hooks.upkeep(|| self.inner.upkeep(now))
    }
}

impl<H: Hooks> Consumer for HookedConsumer<H> {
    fn assign(&mut self, partitions: &[TopicPartition]) -> Result<(), LogError> {
        self.hooks.alive()?;
        self.inner.assign(partitions)
    }
    fn seek(&mut self, partition: &TopicPartition, to: SeekTo) -> Result<(), LogError> {
        self.hooks.alive()?;
        self.inner.seek(partition, to)
    }
    fn position(&self, partition: &TopicPartition) -> Result<Offset, LogError> {
        self.hooks.alive()?;
        self.inner.position(partition)
    }
    fn fetch(&mut self, max_wait: Duration) -> Result<Vec<FetchedRecord>, LogError> {
        self.hooks.alive()?;
        if let Some(e) = self.hooks.fetch_fault() {
            return Err(e);
        }
        if self.hooks.swallow_fetch() {
            self.inner.fetch(max_wait)?;
            return Err(LogError::Timeout {
                op: "fetching (injected, after taking the records)".into(),
                after_ms: max_wait.as_millis() as u64,
            });
        }
        if self.hooks.starve_fetch() {
            std::thread::sleep(max_wait);
            return Ok(Vec::new());
        }
        self.inner.fetch(max_wait)
    }
    fn end_offset(&mut self, partition: &TopicPartition) -> Result<Offset, LogError> {
        self.hooks.alive()?;
        self.inner.end_offset(partition)
    }
    fn beginning_offset(&mut self, partition: &TopicPartition) -> Result<Offset, LogError> {
        self.hooks.alive()?;
        self.inner.beginning_offset(partition)
    }
}

impl<H: Hooks> TransactionalProducer for HookedProducer<H> {
    fn begin(&mut self) -> Result<(), LogError> {
        self.hooks.alive()?;
        self.inner.begin()
    }
    fn send(&mut self, partition: &TopicPartition, record: &Record) -> Result<(), LogError> {
        self.hooks.alive()?;
        self.hooks.sent();
        self.inner.send(partition, record)
    }
    fn send_offsets(
        &mut self,
        group: &str,
        offsets: &[(TopicPartition, OffsetAndMetadata)],
    ) -> Result<(), LogError> {
        self.hooks.alive()?;
        self.inner.send_offsets(group, offsets)
    }
    fn commit(&mut self) -> Result<(), LogError> {
        let inner = &mut self.inner;
        self.hooks.durable(Durable::Commit, || inner.commit())
    }
    fn abort(&mut self) -> Result<(), LogError> {
        let inner = &mut self.inner;
        self.hooks.durable(Durable::Abort, || inner.abort())
    }
}

impl<H: Hooks> Producer for HookedPlainProducer<H> {
    fn send(&mut self, partition: &TopicPartition, record: &Record) -> Result<(), LogError> {
        self.hooks.alive()?;
        self.hooks.sent();
        self.inner.send(partition, record)
    }
    fn flush(&mut self) -> Result<(), LogError> {
        let inner = &mut self.inner;
        self.hooks.durable(Durable::Flush, || inner.flush())
    }
}
