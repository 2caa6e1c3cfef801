//! A log that loses power at a chosen durable operation: a wrapper over the
//! in-memory embedded log counting every operation that changes durable
//! state — creating a topic, taking a producer epoch, committing or aborting
//! a transaction (sends and offsets are buffered in the producer until the
//! commit, so a crash between them is a crash before the commit). At
//! operation k the power goes, before or after it: that operation and every
//! later call fail. It knows nothing of topologies or of what is checked.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use stoatflow_log::{
    Consumer, EmbeddedLog, ErrorKind, FetchedRecord, Log, LogError, Offset, OffsetAndMetadata,
    Record, SeekTo, TopicPartition, TopicShape, TopicSpec, TransactionalProducer,
};

/// When the power goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// Operation k does not happen.
    Before,
    /// Operation k happens; the process dies before it learns so.
    After,
}

#[derive(Debug, Default)]
pub(crate) struct Power {
    pub(crate) ops: AtomicU64,
    pub(crate) cut: Option<(u64, Cut)>,
    pub(crate) dead: AtomicBool,
}

fn lost() -> LogError {
    LogError::Broker {
        op: "anything".into(),
        message: "power lost (injected)".into(),
        kind: ErrorKind::Fatal,
    }
}

impl Power {
    /// Whether the power has gone.
    pub(crate) fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    pub(crate) fn alive(&self) -> Result<(), LogError> {
        if self.dead.load(Ordering::Acquire) {
            Err(lost())
        } else {
            Ok(())
        }
    }

    /// A durable operation: counted, and the power may go around it.
    pub(crate) fn durable<T>(
        &self,
        op: impl FnOnce() -> Result<T, LogError>,
    ) -> Result<T, LogError> {
        self.alive()?;
        let k = self.ops.fetch_add(1, Ordering::AcqRel) + 1;
        match self.cut {
            Some((at, cut)) if at == k => {
                self.dead.store(true, Ordering::Release);
                if cut == Cut::After {
                    let _ = op();
                }
                Err(lost())
            }
            _ => op(),
        }
    }
}

#[derive(Debug)]
pub(crate) struct FaultyLog {
    pub(crate) inner: Arc<EmbeddedLog>,
    pub(crate) power: Arc<Power>,
}

#[derive(Debug)]
pub(crate) struct FaultyConsumer {
    inner: <EmbeddedLog as Log>::Consumer,
    power: Arc<Power>,
}

#[derive(Debug)]
pub(crate) struct FaultyProducer {
    inner: <EmbeddedLog as Log>::Producer,
    power: Arc<Power>,
}

impl Log for FaultyLog {
    type Consumer = FaultyConsumer;
    type Producer = FaultyProducer;

    fn create_topic(&self, spec: &TopicSpec) -> Result<(), LogError> {
        self.power.durable(|| self.inner.create_topic(spec))
    }
    fn describe_topic(&self, topic: &str) -> Result<Option<TopicShape>, LogError> {
        self.power.alive()?;
        self.inner.describe_topic(topic)
    }
    fn consumer(&self, group: &str) -> Result<Self::Consumer, LogError> {
        self.power.alive()?;
        Ok(FaultyConsumer {
            inner: self.inner.consumer(group)?,
            power: self.power.clone(),
        })
    }
    fn transactional_producer(&self, id: &str) -> Result<Self::Producer, LogError> {
        let inner = self
            .power
            .durable(|| self.inner.transactional_producer(id))?;
        Ok(FaultyProducer {
            inner,
            power: self.power.clone(),
        })
    }
    fn committed_offsets(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>, LogError> {
        self.power.alive()?;
        self.inner.committed_offsets(group, partitions)
    }
}

impl Consumer for FaultyConsumer {
    fn assign(&mut self, partitions: &[TopicPartition]) -> Result<(), LogError> {
        self.power.alive()?;
        self.inner.assign(partitions)
    }
    fn seek(&mut self, partition: &TopicPartition, to: SeekTo) -> Result<(), LogError> {
        self.power.alive()?;
        self.inner.seek(partition, to)
    }
    fn position(&self, partition: &TopicPartition) -> Result<Offset, LogError> {
        self.power.alive()?;
        self.inner.position(partition)
    }
    fn fetch(&mut self, max_wait: Duration) -> Result<Vec<FetchedRecord>, LogError> {
        self.power.alive()?;
        self.inner.fetch(max_wait)
    }
    fn end_offset(&mut self, partition: &TopicPartition) -> Result<Offset, LogError> {
        self.power.alive()?;
        self.inner.end_offset(partition)
    }
    fn beginning_offset(&mut self, partition: &TopicPartition) -> Result<Offset, LogError> {
        self.power.alive()?;
        self.inner.beginning_offset(partition)
    }
}

impl TransactionalProducer for FaultyProducer {
    fn begin(&mut self) -> Result<(), LogError> {
        self.power.alive()?;
        self.inner.begin()
    }
    fn send(&mut self, partition: &TopicPartition, record: &Record) -> Result<(), LogError> {
        self.power.alive()?;
        self.inner.send(partition, record)
    }
    fn send_offsets(
        &mut self,
        group: &str,
        offsets: &[(TopicPartition, OffsetAndMetadata)],
    ) -> Result<(), LogError> {
        self.power.alive()?;
        self.inner.send_offsets(group, offsets)
    }
    fn commit(&mut self) -> Result<(), LogError> {
        let inner = &mut self.inner;
        self.power.durable(|| inner.commit())
    }
    fn abort(&mut self) -> Result<(), LogError> {
        let inner = &mut self.inner;
        self.power.durable(|| inner.abort())
    }
}
