//! Handing one record to librdkafka's queue: shared by the transactional
//! and the at-least-once producer.
//!
//! Owns: the size check against `max_record_bytes`, the headers, the wait
//! on a full queue (bounded by the request timeout) and the mapping of a
//! record librdkafka refuses as too large. Knows nothing of transactions,
//! flushes or offsets.

use std::time::{Duration, Instant};

use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header as KHeader, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, ProducerContext};
use stoatflow_log::{LogError, RecordRef, TopicPartition};

use crate::config::KafkaConfig;

/// Queues `record` for `tp`. `err` maps any other refusal, given what was
/// being done.
pub(crate) fn queue_record<C: ProducerContext<DeliveryOpaque = ()>>(
    producer: &BaseProducer<C>,
    config: &KafkaConfig,
    tp: &TopicPartition,
    record: RecordRef<'_>,
    err: impl Fn(&KafkaError, String) -> LogError,
) -> Result<(), LogError> {
    let size = record.key.map_or(0, <[u8]>::len)
        + record.value.map_or(0, <[u8]>::len)
        + record
            .headers
            .iter()
            .map(|h| h.key.len() + h.value.as_ref().map_or(0, Vec::len))
            .sum::<usize>();
    let too_large = || LogError::RecordTooLarge {
        topic: tp.topic.clone(),
        partition: tp.partition,
        size,
        max: config.max_record_bytes,
    };
    if size > config.max_record_bytes {
        return Err(too_large());
    }
    let mut rec: BaseRecord<'_, [u8], [u8]> = BaseRecord::to(&tp.topic)
        .partition(tp.partition.0 as i32)
        .timestamp(record.timestamp.0);
    if !record.headers.is_empty() {
        let mut headers = OwnedHeaders::new_with_capacity(record.headers.len());
        for h in record.headers {
            headers = headers.insert(KHeader {
                key: &h.key,
                value: h.value.as_deref(),
            });
        }
        rec = rec.headers(headers);
    }
    if let Some(k) = record.key {
        rec = rec.key(k);
    }
    if let Some(v) = record.value {
        rec = rec.payload(v);
    }
    let deadline = Instant::now() + config.request_timeout;
    loop {
        match producer.send(rec) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back))
                if Instant::now() < deadline =>
            {
                producer.poll(Duration::from_millis(10));
                rec = back;
            }
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge), _)) => {
                return Err(too_large());
            }
            Err((e, _)) => return Err(err(&e, format!("sending to {tp}"))),
        }
    }
}
