//! [`KafkaProducer`]: a transactional producer (one Kafka transaction per epoch).
//!
//! Owns: the transaction lifecycle over librdkafka's transactional API and
//! the choice of consumer-group metadata with which offsets are added to a
//! transaction: that of the log's member of the group when there is one
//! (its current generation and member id, so the group fences a zombie of
//! an older generation: KIP-447), else that of a client outside the group
//! (generation -1: the broker checks nothing). Creating one calls
//! `init_transactions`, which fences older producers with the same
//! transactional id.

use std::collections::HashMap;
use std::sync::Arc;

use rdkafka::consumer::{BaseConsumer, Consumer as _, ConsumerGroupMetadata};
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseProducer, Producer as _};
use rdkafka::{Offset as KOffset, TopicPartitionList};
use stoatflow_log::{
    LogError, OffsetAndMetadata, Record, RecordRef, TopicPartition, TransactionalProducer,
};

use crate::config::KafkaConfig;
use crate::errors::{map, map_with_group};
use crate::generation::Generations;
use crate::send::queue_record;

/// A transactional Kafka producer.
pub struct KafkaProducer {
    producer: BaseProducer,
    config: KafkaConfig,
    tid: String,
    /// librdkafka does not expose the epoch; this counts our own instances.
    epoch: u32,
    /// Per group, the metadata of a client outside the group: used when
    /// the log has no member of it.
    groups: HashMap<String, (BaseConsumer, Arc<ConsumerGroupMetadata>)>,
    /// The generations of the log's members.
    generations: Generations,
    /// The group whose offsets the open transaction carries.
    offsets_of: Option<String>,
    open: bool,
}

impl std::fmt::Debug for KafkaProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaProducer")
            .field("transactional_id", &self.tid)
            .field("open", &self.open)
            .finish_non_exhaustive()
    }
}

impl KafkaProducer {
    pub(crate) fn new(
        config: &KafkaConfig,
        tid: &str,
        generations: Generations,
    ) -> Result<Self, LogError> {
        let producer: BaseProducer = config
            .client_config("producer")
            .set("transactional.id", tid)
            .set("enable.idempotence", "true")
            .set(
                "transaction.timeout.ms",
                config.transaction_timeout.as_millis().to_string(),
            )
            .set("linger.ms", "5")
            .create()
            .map_err(|e| map(&e, format!("creating producer {tid:?}"), None))?;
        producer
            .init_transactions(config.request_timeout)
            .map_err(|e| {
                map(
                    &e,
                    format!("initializing transactions of {tid:?}"),
                    Some((tid, 0)),
                )
            })?;
        Ok(KafkaProducer {
            producer,
            config: config.clone(),
            tid: tid.to_owned(),
            epoch: 0,
            groups: HashMap::new(),
            generations,
            offsets_of: None,
            open: false,
        })
    }

    fn err(&self, e: &KafkaError, op: String) -> LogError {
        map(e, op, Some((&self.tid, self.epoch)))
    }

    fn state_error(&self, reason: &'static str) -> LogError {
        LogError::TransactionState {
            transactional_id: self.tid.clone(),
            reason,
        }
    }

    /// The metadata to send `group`'s offsets with: the log's member's,
    /// else a non-member client's.
    fn group_metadata(&mut self, group: &str) -> Result<Arc<ConsumerGroupMetadata>, LogError> {
        if let Some(member) = self.generations.current(group) {
            return Ok(member);
        }
        if !self.groups.contains_key(group) {
            let c: BaseConsumer = self
                .config
                .client_config("group-metadata")
                .set("group.id", group)
                .set("enable.auto.commit", "false")
                .create()
                .map_err(|e| self.err(&e, format!("creating a client for group {group:?}")))?;
            let md = c.group_metadata().ok_or_else(|| LogError::Broker {
                op: format!("reading the metadata of group {group:?}"),
                message: "no group metadata".into(),
                kind: stoatflow_log::ErrorKind::Fatal,
            })?;
            self.groups.insert(group.to_owned(), (c, Arc::new(md)));
        }
        Ok(self.groups[group].1.clone())
    }

    /// Maps a failure of the open transaction, which carries offsets of
    /// [`Self::offsets_of`] if any.
    fn txn_err(&self, e: &KafkaError, op: String) -> LogError {
        match &self.offsets_of {
            Some(group) => map_with_group(e, op, (&self.tid, self.epoch), group),
            None => self.err(e, op),
        }
    }
}

impl TransactionalProducer for KafkaProducer {
    fn begin(&mut self) -> Result<(), LogError> {
        if self.open {
            return Err(self.state_error("a transaction is already open"));
        }
        self.producer
            .begin_transaction()
            .map_err(|e| self.err(&e, format!("beginning a transaction of {:?}", self.tid)))?;
        self.open = true;
        self.offsets_of = None;
        Ok(())
    }

    fn send(&mut self, tp: &TopicPartition, record: &Record) -> Result<(), LogError> {
        self.send_ref(tp, record.into())
    }

    fn send_ref(&mut self, tp: &TopicPartition, record: RecordRef<'_>) -> Result<(), LogError> {
        if !self.open {
            return Err(self.state_error("send outside a transaction"));
        }
        queue_record(&self.producer, &self.config, tp, record, |e, op| {
            self.err(e, op)
        })
    }

    fn send_offsets(
        &mut self,
        group: &str,
        offsets: &[(TopicPartition, OffsetAndMetadata)],
    ) -> Result<(), LogError> {
        if !self.open {
            return Err(self.state_error("send_offsets outside a transaction"));
        }
        let mut tpl = TopicPartitionList::new();
        for (tp, om) in offsets {
            let mut e = tpl.add_partition(&tp.topic, tp.partition.0 as i32);
            e.set_offset(KOffset::Offset(om.offset.0 as i64))
                .map_err(|err| self.err(&err, format!("adding the offset of {tp}")))?;
            e.set_metadata(om.metadata.clone());
        }
        let cgm = self.group_metadata(group)?;
        self.offsets_of = Some(group.to_owned());
        self.producer
            .send_offsets_to_transaction(&tpl, &cgm, self.config.request_timeout)
            .map_err(|e| {
                self.txn_err(
                    &e,
                    format!(
                        "adding offsets of group {group:?} to the transaction of {:?}",
                        self.tid
                    ),
                )
            })
    }

    fn commit(&mut self) -> Result<(), LogError> {
        if !self.open {
            return Err(self.state_error("commit outside a transaction"));
        }
        let r = self
            .producer
            .commit_transaction(self.config.request_timeout);
        match r {
            Ok(()) => {
                self.open = false;
                Ok(())
            }
            Err(e) => {
                let err = self.txn_err(&e, format!("committing the transaction of {:?}", self.tid));
                if err.kind() != stoatflow_log::ErrorKind::Retriable {
                    // Not retriable: the caller aborts (or the producer is dead).
                    self.open = err.kind() == stoatflow_log::ErrorKind::AbortTransaction;
                }
                Err(err)
            }
        }
    }

    fn abort(&mut self) -> Result<(), LogError> {
        // librdkafka's abort needs the delivery reports served first; their
        // outcome does not matter, the records are being discarded.
        let _ = self.producer.flush(self.config.request_timeout);
        let r = self.producer.abort_transaction(self.config.request_timeout);
        self.open = false;
        r.map_err(|e| self.err(&e, format!("aborting the transaction of {:?}", self.tid)))
    }
}
