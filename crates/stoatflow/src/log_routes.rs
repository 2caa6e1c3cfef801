//! [`EmbeddedLogAccess`]: the server's [`LogAccess`] over the application's
//! own embedded log, so that another process (the command line's `log`
//! commands) reads and feeds a running application through its endpoints
//! instead of opening the directory the application holds
//! (docs/operating.md#log-routes).
//!
//! Owns the rules of an append from outside: the application's internal
//! topics (named `<application.id>-...`: changelogs, repartition topics,
//! the watermark store's changelog) are refused, every record's partition
//! is checked before anything is sent, and the whole request is one
//! transaction of the log, committed before the answer, as durable and as
//! atomic as the application's own epochs. A read is read committed: the
//! embedded log shows a record only once its transaction is durable. Knows
//! no HTTP and no JSON (the server's); the log's commit protocol is the
//! log's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use stoatflow_log::{
    Consumer, EmbeddedLog, EmbeddedProducer, FetchedRecord, Log, LogError, Offset, Record, SeekTo,
    Timestamp, TopicPartition, TransactionalProducer,
};
use stoatflow_runtime::partition_for_key;
use stoatflow_server::{
    LogAccess, LogAccessError, NewRecord, PartitionOffsets, ReadBatch, StoredRecord, TopicInfo,
};
use stoatflow_time::{Clock, SystemClock};

/// The file, in the embedded log's directory beside its `LOCK`, where an
/// application serving its endpoints writes their URL (`http://address`,
/// one line) while it holds the directory: how the command line's `log`
/// commands find the application that holds it.
pub const ENDPOINT_FILE: &str = "ENDPOINT";

/// The transactional id of the appends from outside.
const PRODUCER_ID: &str = "stoatflow-log-routes";
/// The consumer group named by reads (no offset is ever committed for it).
const READER_GROUP: &str = "stoatflow-log-routes";

/// The application's embedded log as the log routes see it.
#[derive(Debug)]
pub(crate) struct EmbeddedLogAccess {
    log: Arc<EmbeddedLog>,
    /// Topics named `<application.id>-...` are the application's own.
    internal_prefix: String,
    /// One producer for every append, made at the first (making one is a
    /// write to the log); dropped after a failed commit.
    producer: Mutex<Option<EmbeddedProducer>>,
    /// Round-robin for records with neither key nor partition.
    next: AtomicU64,
}

/// A fetched record of `partition` as the log routes answer it.
fn stored(partition: u32, fetched: FetchedRecord) -> StoredRecord {
    let r = fetched.record;
    StoredRecord {
        partition,
        offset: fetched.offset.0,
        timestamp: r.timestamp.0,
        key: r.key,
        value: r.value,
        headers: r.headers.into_iter().map(|h| (h.key, h.value)).collect(),
    }
}

fn log_failure(e: &LogError) -> LogAccessError {
    LogAccessError::Log {
        reason: e.to_string(),
    }
}

impl EmbeddedLogAccess {
    pub(crate) fn new(log: Arc<EmbeddedLog>, application_id: &str) -> Self {
        EmbeddedLogAccess {
            log,
            internal_prefix: format!("{application_id}-"),
            producer: Mutex::new(None),
            next: AtomicU64::new(0),
        }
    }

    /// `topic`'s partition count.
    fn partitions(&self, topic: &str) -> Result<u32, LogAccessError> {
        match self.log.describe_topic(topic) {
            Ok(Some(shape)) => Ok(shape.partitions),
            Ok(None) => Err(LogAccessError::NoTopic {
                topic: topic.into(),
            }),
            Err(e) => Err(log_failure(&e)),
        }
    }

    fn check_partition(
        topic: &str,
        partition: u32,
        partitions: u32,
    ) -> Result<TopicPartition, LogAccessError> {
        if partition >= partitions {
            return Err(LogAccessError::NoPartition {
                topic: topic.into(),
                partition,
                partitions,
            });
        }
        Ok(TopicPartition::new(topic, partition))
    }

    fn producer(&self) -> MutexGuard<'_, Option<EmbeddedProducer>> {
        self.producer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends every record and commits, or aborts.
    fn transact(
        producer: &mut EmbeddedProducer,
        targets: &[(TopicPartition, Record)],
    ) -> Result<(), LogAccessError> {
        producer.begin().map_err(|e| log_failure(&e))?;
        for (index, (tp, record)) in targets.iter().enumerate() {
            if let Err(e) = producer.send(tp, record) {
                let _ = producer.abort();
                return Err(LogAccessError::BadRecord {
                    index,
                    reason: e.to_string(),
                });
            }
        }
        producer.commit().map_err(|e| log_failure(&e))
    }
}

impl LogAccess for EmbeddedLogAccess {
    fn topics(&self) -> Result<Vec<TopicInfo>, LogAccessError> {
        let mut consumer = self
            .log
            .consumer(READER_GROUP)
            .map_err(|e| log_failure(&e))?;
        let mut out = Vec::new();
        for spec in self.log.topics() {
            let mut partitions = Vec::new();
            for p in 0..spec.shape.partitions {
                let tp = TopicPartition::new(spec.name.clone(), p);
                consumer
                    .assign(std::slice::from_ref(&tp))
                    .map_err(|e| log_failure(&e))?;
                partitions.push(PartitionOffsets {
                    partition: p,
                    beginning: consumer
                        .beginning_offset(&tp)
                        .map_err(|e| log_failure(&e))?
                        .0,
                    end: consumer.end_offset(&tp).map_err(|e| log_failure(&e))?.0,
                });
            }
            out.push(TopicInfo {
                shape: spec.shape.to_string(),
                name: spec.name,
                partitions,
            });
        }
        Ok(out)
    }

    fn append(&self, topic: &str, records: Vec<NewRecord>) -> Result<usize, LogAccessError> {
        if topic.starts_with(&self.internal_prefix) {
            return Err(LogAccessError::Refused {
                reason: format!(
                    "topic {topic} is one of the application's internal topics (named {}...); only the application writes them",
                    self.internal_prefix
                ),
            });
        }
        let partitions = self.partitions(topic)?;
        let now = SystemClock.now().as_millis();
        let targets = records
            .into_iter()
            .map(|r| {
                let partition = match (r.partition, &r.key) {
                    (Some(p), _) => p,
                    (None, Some(key)) => partition_for_key(key, partitions),
                    (None, None) => {
                        (self.next.fetch_add(1, Ordering::Relaxed) % u64::from(partitions)) as u32
                    }
                };
                let tp = Self::check_partition(topic, partition, partitions)?;
                let mut record = Record::new(None, None, Timestamp(r.timestamp.unwrap_or(now)));
                record.key = r.key;
                record.value = r.value;
                Ok((tp, record))
            })
            .collect::<Result<Vec<_>, LogAccessError>>()?;
        if targets.is_empty() {
            return Ok(0);
        }
        let mut slot = self.producer();
        if slot.is_none() {
            *slot = Some(
                self.log
                    .transactional_producer(PRODUCER_ID)
                    .map_err(|e| log_failure(&e))?,
            );
        }
        let producer = slot.as_mut().expect("made above");
        let done = Self::transact(producer, &targets);
        if matches!(done, Err(LogAccessError::Log { .. })) {
            // A failed commit leaves the producer in no state to reuse.
            *slot = None;
        }
        done.map(|()| targets.len())
    }

    fn read(
        &self,
        topic: &str,
        partition: u32,
        offset: u64,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<ReadBatch, LogAccessError> {
        let partitions = self.partitions(topic)?;
        let tp = Self::check_partition(topic, partition, partitions)?;
        let mut consumer = self
            .log
            .consumer(READER_GROUP)
            .map_err(|e| log_failure(&e))?;
        consumer
            .assign(std::slice::from_ref(&tp))
            .map_err(|e| log_failure(&e))?;
        let beginning = consumer
            .beginning_offset(&tp)
            .map_err(|e| log_failure(&e))?
            .0;
        let end = consumer.end_offset(&tp).map_err(|e| log_failure(&e))?.0;
        if offset > end {
            return Err(LogAccessError::OffsetPastEnd {
                topic: topic.into(),
                partition,
                offset,
                end,
            });
        }
        let mut next = offset.max(beginning);
        consumer
            .seek(&tp, SeekTo::Offset(Offset(next)))
            .map_err(|e| log_failure(&e))?;
        let (mut records, mut bytes) = (Vec::new(), 0usize);
        'fetch: while next < end && records.len() < max_records && bytes < max_bytes {
            let fetched = consumer
                .fetch(Duration::ZERO)
                .map_err(|e| log_failure(&e))?;
            if fetched.is_empty() {
                break;
            }
            for r in fetched {
                if r.offset.0 >= end || records.len() == max_records || bytes >= max_bytes {
                    break 'fetch;
                }
                bytes += r.record.key.as_ref().map_or(0, Vec::len)
                    + r.record.value.as_ref().map_or(0, Vec::len);
                next = r.offset.0 + 1;
                records.push(stored(partition, r));
            }
            next = next.max(
                consumer
                    .position(&tp)
                    .map_err(|e| log_failure(&e))?
                    .0
                    .min(end),
            );
        }
        Ok(ReadBatch {
            records,
            next_offset: next,
            offsets: PartitionOffsets {
                partition,
                beginning,
                end,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use stoatflow_log::TopicSpec;

    use super::*;

    fn access() -> (Arc<EmbeddedLog>, EmbeddedLogAccess) {
        let log = Arc::new(EmbeddedLog::in_memory());
        log.create_topic(&TopicSpec::new("clicks", 2)).unwrap();
        log.create_topic(&TopicSpec::new("app-counts-changelog", 2))
            .unwrap();
        (log.clone(), EmbeddedLogAccess::new(log, "app"))
    }

    fn value(v: &str, partition: Option<u32>) -> NewRecord {
        NewRecord {
            partition,
            value: Some(v.as_bytes().to_vec()),
            ..NewRecord::default()
        }
    }

    fn ends(a: &EmbeddedLogAccess) -> Vec<u64> {
        a.topics()
            .unwrap()
            .into_iter()
            .find(|t| t.name == "clicks")
            .unwrap()
            .partitions
            .iter()
            .map(|p| p.end)
            .collect()
    }

    #[test]
    fn an_append_is_one_committed_transaction_and_a_read_sees_committed_records_only() {
        let (log, a) = access();
        let keyed = NewRecord {
            key: Some(b"alice".to_vec()),
            timestamp: Some(5),
            ..value("1", None)
        };
        let n = a
            .append(
                "clicks",
                vec![keyed, value("2", Some(1)), value("3", Some(1))],
            )
            .unwrap();
        assert_eq!(n, 3);
        let alice = partition_for_key(b"alice", 2);
        let mut want = [0, 2];
        want[alice as usize] += 1;
        assert_eq!(ends(&a), want);
        // A transaction still open elsewhere is not read.
        let mut open = log.transactional_producer("elsewhere").unwrap();
        open.begin().unwrap();
        open.send(
            &TopicPartition::new("clicks", 1),
            &Record::new(None, Some(b"pending"), Timestamp(1)),
        )
        .unwrap();
        let read = a.read("clicks", 1, 0, 10, 1 << 20).unwrap();
        let values: Vec<_> = read.records.iter().map(|r| r.value.clone()).collect();
        let start = usize::from(alice == 1);
        assert_eq!(values[start..], [Some(b"2".to_vec()), Some(b"3".to_vec())]);
        assert_eq!(read.next_offset, read.offsets.end);
        let one = a.read("clicks", 1, 0, 1, 1 << 20).unwrap();
        assert_eq!((one.records.len(), one.next_offset), (1, 1));
        let keyed = a.read("clicks", alice, 0, 10, 1 << 20).unwrap();
        assert_eq!(keyed.records[0].key.as_deref(), Some(&b"alice"[..]));
        assert_eq!(keyed.records[0].timestamp, 5);
        open.abort().unwrap();
    }

    #[test]
    fn a_refused_append_appends_nothing_and_names_why() {
        let (_log, a) = access();
        let internal = a
            .append("app-counts-changelog", vec![value("x", Some(0))])
            .unwrap_err();
        assert!(
            internal.to_string().contains("internal topics"),
            "{internal}"
        );
        let missing = a.append("nope", vec![value("x", None)]).unwrap_err();
        assert_eq!(
            missing,
            LogAccessError::NoTopic {
                topic: "nope".into()
            }
        );
        let beyond = a
            .append("clicks", vec![value("ok", Some(0)), value("x", Some(7))])
            .unwrap_err();
        assert!(
            beyond.to_string().contains("there is no partition 7"),
            "{beyond}"
        );
        assert_eq!(ends(&a), [0, 0], "nothing of a refused request");
        let past = a.read("clicks", 0, 3, 10, 1 << 20).unwrap_err();
        assert!(
            past.to_string()
                .contains("offset 3 is past the committed end 0 of clicks-0"),
            "{past}"
        );
    }
}
