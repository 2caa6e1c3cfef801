//! Reading a group's committed offsets through an rdkafka consumer.
//!
//! Owns: [`committed`], shared by `KafkaLog::committed_offsets`,
//! `KafkaConsumer`'s positions at assignment and `KafkaMember`'s own read,
//! so none of those modules imports another. Knows nothing of streams, windows or watermarks.

use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer as _, ConsumerContext};
use rdkafka::{Offset as KOffset, TopicPartitionList};
use stoatflow_log::{LogError, Offset, OffsetAndMetadata, TopicPartition};

use crate::errors::map;

/// The committed offsets of `group` for `partitions`, through `consumer`.
pub(crate) fn committed<C: ConsumerContext>(
    consumer: &BaseConsumer<C>,
    partitions: &[TopicPartition],
    timeout: Duration,
    group: &str,
) -> Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>, LogError> {
    let mut tpl = TopicPartitionList::new();
    for tp in partitions {
        tpl.add_partition(&tp.topic, tp.partition.0 as i32);
    }
    let got = consumer.committed_offsets(tpl, timeout).map_err(|e| {
        map(
            &e,
            format!("fetching committed offsets of group {group:?}"),
            None,
        )
    })?;
    Ok(partitions
        .iter()
        .map(|tp| {
            let om = got
                .find_partition(&tp.topic, tp.partition.0 as i32)
                .and_then(|e| match e.offset() {
                    KOffset::Offset(o) if o >= 0 => Some(OffsetAndMetadata {
                        offset: Offset(o as u64),
                        metadata: e.metadata().to_owned(),
                    }),
                    _ => None,
                });
            (tp.clone(), om)
        })
        .collect())
}
