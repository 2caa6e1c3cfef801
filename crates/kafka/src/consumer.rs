//! [`KafkaConsumer`]: a read-committed consumer of assigned partitions.
//!
//! Owns: positions, tracked here as the last delivered offset + 1 and, when
//! librdkafka reports the end of a partition, advanced to librdkafka's
//! application position, which has moved past the transaction markers
//! (and so past aborted records) that read-committed consumption skips. A
//! position set by an assignment or a seek is checked against its
//! partition's range at the next fetch and moved by the offset-reset
//! policy ([`crate::offset_reset`]), as the embedded log does.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset as KOffset, TopicPartitionList};
use stoatflow_log::{
    Consumer, FetchedRecord, Header, LogError, Offset, OffsetReset, Record, SeekTo, Timestamp,
    TopicPartition,
};

use crate::committed::committed;
use crate::config::KafkaConfig;
use crate::errors::map;
use crate::offset_reset;
use crate::reaper::Reaped;

/// Records drained per fetch.
const MAX_BATCH: usize = 10_000;

/// A read-committed Kafka consumer. Never commits offsets by itself.
/// Dropping it returns at once: librdkafka's destruction runs on a thread
/// of its own.
pub struct KafkaConsumer {
    consumer: Reaped<BaseConsumer>,
    group: String,
    timeout: Duration,
    /// Assigned partitions, in order, with tracked positions.
    positions: Vec<(TopicPartition, u64)>,
    /// Partitions whose position was set by an assignment or a seek and
    /// not yet checked against their range.
    unchecked: Vec<TopicPartition>,
    reset: OffsetReset,
}

impl std::fmt::Debug for KafkaConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaConsumer")
            .field("group", &self.group)
            .field("positions", &self.positions)
            .finish_non_exhaustive()
    }
}

impl KafkaConsumer {
    pub(crate) fn new(config: &KafkaConfig, group: &str) -> Result<Self, LogError> {
        let consumer: BaseConsumer = config
            .client_config("consumer")
            .set("group.id", group)
            .set("isolation.level", "read_committed")
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("enable.partition.eof", "true")
            .set(
                "auto.offset.reset",
                offset_reset::librdkafka_value(config.offset_reset),
            )
            .create()
            .map_err(|e| map(&e, format!("creating a consumer for group {group:?}"), None))?;
        Ok(KafkaConsumer {
            consumer: Reaped::new(consumer),
            group: group.to_owned(),
            timeout: config.request_timeout,
            positions: Vec::new(),
            unchecked: Vec::new(),
            reset: config.offset_reset,
        })
    }

    fn watermarks(&self, tp: &TopicPartition) -> Result<(u64, u64), LogError> {
        let (lo, hi) = self
            .consumer
            .fetch_watermarks(&tp.topic, tp.partition.0 as i32, self.timeout)
            .map_err(|e| map(&e, format!("fetching end offsets of {tp}"), None))?;
        Ok((lo.max(0) as u64, hi.max(0) as u64))
    }

    /// Hands the current positions to librdkafka.
    fn reassign(&mut self) -> Result<(), LogError> {
        let mut tpl = TopicPartitionList::new();
        for (tp, pos) in &self.positions {
            tpl.add_partition_offset(
                &tp.topic,
                tp.partition.0 as i32,
                KOffset::Offset(*pos as i64),
            )
            .map_err(|e| map(&e, format!("assigning {tp}"), None))?;
        }
        self.consumer
            .assign(&tpl)
            .map_err(|e| map(&e, "assigning partitions", None))?;
        Ok(())
    }

    fn slot(&mut self, tp: &TopicPartition) -> Result<&mut u64, LogError> {
        self.positions
            .iter_mut()
            .find(|(t, _)| t == tp)
            .map(|(_, p)| p)
            .ok_or_else(|| LogError::NotAssigned {
                topic: tp.topic.clone(),
                partition: tp.partition,
            })
    }

    /// Moves each position set since the last fetch that lies outside its
    /// partition's range by the offset-reset policy (or fails naming it).
    /// librdkafka would reset it by itself, but to an offset below the
    /// position tracked here, and `fetch` drops records below that as
    /// fetched before a seek: the records past the old end were skipped.
    fn check_positions(&mut self) -> Result<(), LogError> {
        let mut moved = false;
        while let Some(tp) = self.unchecked.last().cloned() {
            if let Some(i) = self.positions.iter().position(|(t, _)| *t == tp) {
                let range = self.watermarks(&tp)?;
                let pos = self.reset.place(&tp, self.positions[i].1, range)?;
                moved |= pos != self.positions[i].1;
                self.positions[i].1 = pos;
            }
            self.unchecked.pop();
        }
        if moved {
            self.reassign()?;
        }
        Ok(())
    }

    /// At the end of a partition, adopts librdkafka's application position,
    /// which (unlike our count of delivered records) has moved past the
    /// transaction markers it consumed.
    fn on_eof(&mut self) -> Result<(), LogError> {
        let tpl = self
            .consumer
            .position()
            .map_err(|e| map(&e, "reading consumer positions", None))?;
        for (tp, pos) in &mut self.positions {
            if let Some(e) = tpl.find_partition(&tp.topic, tp.partition.0 as i32)
                && let KOffset::Offset(o) = e.offset()
                && o >= 0
            {
                *pos = (*pos).max(o as u64);
            }
        }
        Ok(())
    }
}

fn to_record(m: &rdkafka::message::BorrowedMessage<'_>) -> Record {
    let headers = m
        .headers()
        .map(|hs| {
            hs.iter()
                .map(|h| Header {
                    key: h.key.to_owned(),
                    value: h.value.map(<[u8]>::to_vec),
                })
                .collect()
        })
        .unwrap_or_default();
    Record {
        key: m.key().map(<[u8]>::to_vec),
        value: m.payload().map(<[u8]>::to_vec),
        headers,
        timestamp: Timestamp(m.timestamp().to_millis().unwrap_or(-1)),
    }
}

impl Consumer for KafkaConsumer {
    fn assign(&mut self, partitions: &[TopicPartition]) -> Result<(), LogError> {
        let committed = committed(&self.consumer, partitions, self.timeout, &self.group)?;
        let mut positions = Vec::with_capacity(partitions.len());
        let mut unchecked = Vec::new();
        for (tp, om) in committed {
            let pos = match om {
                // A committed offset may lie past the end (Kafka takes it).
                Some(om) => {
                    unchecked.push(tp.clone());
                    om.offset.0
                }
                None => self.watermarks(&tp)?.0,
            };
            positions.push((tp, pos));
        }
        self.positions = positions;
        self.unchecked = unchecked;
        self.reassign()
    }

    fn assign_at(&mut self, partitions: &[(TopicPartition, Offset)]) -> Result<(), LogError> {
        self.positions = partitions
            .iter()
            .map(|(tp, at)| (tp.clone(), at.0))
            .collect();
        self.unchecked = partitions.iter().map(|(tp, _)| tp.clone()).collect();
        self.reassign()
    }

    fn seek(&mut self, tp: &TopicPartition, to: SeekTo) -> Result<(), LogError> {
        self.slot(tp)?;
        let target = match to {
            SeekTo::Beginning => self.watermarks(tp)?.0,
            SeekTo::End => self.end_offset(tp)?.0,
            SeekTo::Offset(o) => o.0,
        };
        if matches!(to, SeekTo::Offset(_)) && !self.unchecked.contains(tp) {
            self.unchecked.push(tp.clone());
        }
        let slot = self.slot(tp)?;
        if *slot == target {
            // Already there: a reassignment would change nothing, and
            // librdkafka can abort on an assertion when a consumer is
            // reassigned in quick succession (assign, then seek).
            return Ok(());
        }
        *slot = target;
        self.reassign()
    }

    fn position(&self, tp: &TopicPartition) -> Result<Offset, LogError> {
        self.positions
            .iter()
            .find(|(t, _)| t == tp)
            .map(|(_, p)| Offset(*p))
            .ok_or_else(|| LogError::NotAssigned {
                topic: tp.topic.clone(),
                partition: tp.partition,
            })
    }

    fn fetch(&mut self, max_wait: Duration) -> Result<Vec<FetchedRecord>, LogError> {
        let deadline = Instant::now() + max_wait;
        self.check_positions()?;
        let mut out = Vec::new();
        let mut index: HashMap<(String, i32), usize> = HashMap::new();
        loop {
            let wait = if out.is_empty() {
                deadline.saturating_duration_since(Instant::now())
            } else {
                Duration::ZERO
            };
            let Some(next) = self.consumer.poll(wait) else {
                return Ok(out);
            };
            match next {
                Ok(m) => {
                    let key = (m.topic().to_owned(), m.partition());
                    let slot = match index.get(&key) {
                        Some(i) => Some(*i),
                        None => {
                            let i = self.positions.iter().position(|(tp, _)| {
                                tp.topic == key.0 && tp.partition.0 as i32 == key.1
                            });
                            if let Some(i) = i {
                                index.insert(key, i);
                            }
                            i
                        }
                    };
                    let Some(i) = slot else { continue };
                    let offset = m.offset().max(0) as u64;
                    if offset < self.positions[i].1 {
                        continue; // fetched before a seek
                    }
                    self.positions[i].1 = offset + 1;
                    out.push(FetchedRecord {
                        partition: self.positions[i].0.clone(),
                        offset: Offset(offset),
                        record: to_record(&m),
                    });
                    if out.len() >= MAX_BATCH {
                        return Ok(out);
                    }
                }
                Err(KafkaError::PartitionEOF(p)) => {
                    let _ = p; // rdkafka reports the partition number only
                    self.on_eof()?;
                    // Reaching the end is progress for a restore loop.
                    return Ok(out);
                }
                Err(e) => {
                    return Err(map(
                        &e,
                        format!("fetching for group {:?}", self.group),
                        None,
                    ));
                }
            }
            if Instant::now() >= deadline && !out.is_empty() {
                return Ok(out);
            }
        }
    }

    fn end_offset(&mut self, tp: &TopicPartition) -> Result<Offset, LogError> {
        Ok(Offset(self.watermarks(tp)?.1))
    }

    fn beginning_offset(&mut self, tp: &TopicPartition) -> Result<Offset, LogError> {
        Ok(Offset(self.watermarks(tp)?.0))
    }
}
