//! [`KafkaPlainProducer`]: the at-least-once producer (no transaction).
//!
//! Owns: an idempotent producer with `acks=all` (a retry inside librdkafka
//! never writes a record twice, and a delivered record is on every in-sync
//! replica), the delivery reports, and the flush that turns them into one
//! outcome: every record sent since the last flush delivered, or the first
//! failure, naming its partition. Knows nothing of offsets, groups or
//! streams.

use std::sync::Mutex;

use rdkafka::ClientContext;
use rdkafka::error::KafkaError;
use rdkafka::message::Message as _;
use rdkafka::producer::{BaseProducer, DeliveryResult, Producer as _, ProducerContext};
use stoatflow_log::{LogError, Producer, Record, RecordRef, TopicPartition};

use crate::config::KafkaConfig;
use crate::errors::map;
use crate::send::queue_record;

/// The first delivery that failed since the last flush, with its partition.
#[derive(Default)]
struct Deliveries {
    failed: Mutex<Option<(KafkaError, String)>>,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _opaque: ()) {
        if let Err((e, message)) = result {
            let mut failed = self
                .failed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if failed.is_none() {
                let at = format!("{}-{}", message.topic(), message.partition());
                *failed = Some((e.clone(), at));
            }
        }
    }
}

/// An at-least-once Kafka producer.
pub struct KafkaPlainProducer {
    producer: BaseProducer<Deliveries>,
    config: KafkaConfig,
    client_id: String,
}

impl std::fmt::Debug for KafkaPlainProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaPlainProducer")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl KafkaPlainProducer {
    pub(crate) fn new(config: &KafkaConfig, client_id: &str) -> Result<Self, LogError> {
        let producer: BaseProducer<Deliveries> = config
            .client_config(&format!("producer-{client_id}"))
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("linger.ms", "5")
            .create_with_context(Deliveries::default())
            .map_err(|e| map(&e, format!("creating producer {client_id:?}"), None))?;
        Ok(KafkaPlainProducer {
            producer,
            config: config.clone(),
            client_id: client_id.to_owned(),
        })
    }
}

impl Producer for KafkaPlainProducer {
    fn send(&mut self, tp: &TopicPartition, record: &Record) -> Result<(), LogError> {
        self.send_ref(tp, record.into())
    }

    fn send_ref(&mut self, tp: &TopicPartition, record: RecordRef<'_>) -> Result<(), LogError> {
        queue_record(&self.producer, &self.config, tp, record, |e, op| {
            map(e, op, None)
        })
    }

    fn flush(&mut self) -> Result<(), LogError> {
        let flushed = self.producer.flush(self.config.request_timeout);
        let failed = self
            .producer
            .context()
            .failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some((e, at)) = failed {
            return Err(map(&e, format!("delivering a record to {at}"), None));
        }
        flushed.map_err(|e| {
            map(
                &e,
                format!("flushing the records of producer {:?}", self.client_id),
                None,
            )
        })
    }
}
