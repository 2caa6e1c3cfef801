//! A consumer position that passes what is not a record, in a fetch that
//! returns no record, is committed: the committed offset reaches the end.
//!
//! On Kafka every transaction ends with a commit marker that takes an offset
//! and is never delivered. A read-committed consumer moves past it when its
//! fetch reaches it, and that can be a fetch of its own, after the one that
//! returned the transaction's last records (a fetch response cut before the
//! marker; an engine replaced after a broker restart, resuming on a marker).
//! A position adopted only after fetches that return records stops one
//! short of the end: the app stays RUNNING and `wait_until_caught_up` never
//! returns (what stalled the Kafka broker stop/start test).
//!
//! [`MarkerLog`] is the embedded log whose input partitions each end with
//! such a marker: a record of its own (so that it takes an offset, and a
//! position past it is a real offset of the log), never delivered, and
//! passed only by a fetch that finds nothing else.

use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::{
    Consumer, EmbeddedLog, FetchedBatch, FetchedRecord, Log, LogError, Offset, OffsetAndMetadata,
    Record, SeekTo, Timestamp, TopicPartition, TopicShape, TopicSpec, TransactionalProducer,
};
use stoatflow_runtime::{StreamsApp, partition_for_key};

use crate::support::*;

/// The header that makes a record a simulated marker.
const MARKER: &str = "__test.marker";

/// The embedded log; each partition of [`INPUT`] ends with a marker
/// ([`MarkerLog::add_markers`]).
#[derive(Debug)]
struct MarkerLog {
    inner: EmbeddedLog,
}

impl MarkerLog {
    /// Ends every input partition with a marker: written after the input,
    /// before the app starts.
    fn add_markers(&self) {
        let mut p = self.inner.transactional_producer("markers").unwrap();
        p.begin().unwrap();
        for partition in 0..PARTITIONS {
            let marker = Record::new(None, None, Timestamp(0)).with_header(MARKER, None);
            p.send(&TopicPartition::new(INPUT, partition), &marker)
                .unwrap();
        }
        p.commit().unwrap();
    }
}

#[derive(Debug)]
struct MarkerConsumer {
    inner: <EmbeddedLog as Log>::Consumer,
    /// Assigned partitions: the offset of an input partition's marker, and
    /// whether it was passed.
    slots: Vec<Slot>,
}

#[derive(Debug)]
struct Slot {
    tp: TopicPartition,
    marker: Option<u64>,
    passed: bool,
}

fn is_marker(r: &FetchedRecord) -> bool {
    r.record.headers.iter().any(|h| h.key == MARKER)
}

impl MarkerConsumer {
    /// A fetch that found nothing: every partition read to its end moves
    /// past its marker.
    fn pass_markers(&mut self) -> Result<(), LogError> {
        for slot in &mut self.slots {
            if let Some(at) = slot.marker
                && self.inner.position(&slot.tp)?.0 > at
            {
                slot.passed = true;
            }
        }
        Ok(())
    }

    /// `records` without the markers; a fetch left with nothing passes them.
    fn deliver(&mut self, records: Vec<FetchedRecord>) -> Result<Vec<FetchedRecord>, LogError> {
        let records: Vec<FetchedRecord> = records.into_iter().filter(|r| !is_marker(r)).collect();
        if records.is_empty() {
            self.pass_markers()?;
        }
        Ok(records)
    }
}

impl Log for MarkerLog {
    type Consumer = MarkerConsumer;
    type Producer = <EmbeddedLog as Log>::Producer;
    type PlainProducer = <EmbeddedLog as Log>::PlainProducer;

    fn create_topic(&self, spec: &TopicSpec) -> Result<(), LogError> {
        self.inner.create_topic(spec)
    }
    fn describe_topic(&self, topic: &str) -> Result<Option<TopicShape>, LogError> {
        self.inner.describe_topic(topic)
    }
    fn consumer(&self, group: &str) -> Result<Self::Consumer, LogError> {
        Ok(MarkerConsumer {
            inner: self.inner.consumer(group)?,
            slots: Vec::new(),
        })
    }
    fn transactional_producer(&self, id: &str) -> Result<Self::Producer, LogError> {
        self.inner.transactional_producer(id)
    }
    fn producer(&self, client_id: &str) -> Result<Self::PlainProducer, LogError> {
        self.inner.producer(client_id)
    }
    fn commit_offsets(
        &self,
        group: &str,
        offsets: &[(TopicPartition, OffsetAndMetadata)],
    ) -> Result<(), LogError> {
        self.inner.commit_offsets(group, offsets)
    }
    fn committed_offsets(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>, LogError> {
        self.inner.committed_offsets(group, partitions)
    }
    fn purge_below(&self, tp: &TopicPartition, before: Offset) -> Result<(), LogError> {
        self.inner.purge_below(tp, before)
    }
    fn upkeep(&self, now: Timestamp) -> Result<(), LogError> {
        self.inner.upkeep(now)
    }
}

impl Consumer for MarkerConsumer {
    fn assign(&mut self, partitions: &[TopicPartition]) -> Result<(), LogError> {
        self.inner.assign(partitions)?;
        let mut slots = Vec::new();
        for tp in partitions {
            // The input is whole before the app starts: its last offset is
            // the marker.
            let marker = match tp.topic == INPUT {
                true => self.inner.end_offset(tp)?.0.checked_sub(1),
                false => None,
            };
            slots.push(Slot {
                tp: tp.clone(),
                marker,
                passed: false,
            });
        }
        self.slots = slots;
        Ok(())
    }
    fn seek(&mut self, tp: &TopicPartition, to: SeekTo) -> Result<(), LogError> {
        assert!(
            !matches!(to, SeekTo::End) || tp.topic != INPUT,
            "not simulated: a seek to the end of {tp}"
        );
        for slot in &mut self.slots {
            if slot.tp == *tp {
                slot.passed = false;
            }
        }
        self.inner.seek(tp, to)
    }
    /// Short of an unpassed marker: a fetch that returned the records
    /// before it has not passed it.
    fn position(&self, tp: &TopicPartition) -> Result<Offset, LogError> {
        let at = self.inner.position(tp)?;
        let held = self
            .slots
            .iter()
            .find(|s| s.tp == *tp && !s.passed)
            .and_then(|s| s.marker)
            .filter(|marker| at.0 > *marker);
        Ok(held.map_or(at, Offset))
    }
    fn fetch(&mut self, max_wait: Duration) -> Result<Vec<FetchedRecord>, LogError> {
        let records = self.inner.fetch(max_wait)?;
        self.deliver(records)
    }
    fn fetch_batches(&mut self, max_wait: Duration) -> Result<Vec<FetchedBatch>, LogError> {
        let records = self.inner.fetch_batches(max_wait)?;
        let records = records.iter().flat_map(FetchedBatch::to_records).collect();
        Ok(FetchedBatch::from_records(self.deliver(records)?))
    }
    fn end_offset(&mut self, tp: &TopicPartition) -> Result<Offset, LogError> {
        self.inner.end_offset(tp)
    }
    fn beginning_offset(&mut self, tp: &TopicPartition) -> Result<Offset, LogError> {
        self.inner.beginning_offset(tp)
    }
}

/// Runs the app on `log` until it has caught up (a stall fails here), then
/// checks that the committed offset of every input partition that has
/// anything, a marker included, is its end.
fn run_to_the_markers(log: &Arc<MarkerLog>, app_id: &str) {
    let mut app = StreamsApp::with_log(tumbling_count(), config(app_id, 2), log.clone()).unwrap();
    // Stalls, RUNNING with no error, if the position past a marker is not committed.
    start_and_finish(&mut app);
    let tps: Vec<_> = (0..PARTITIONS)
        .map(|p| TopicPartition::new(INPUT, p))
        .collect();
    let mut probe = log.consumer("probe").unwrap();
    let mut ended = 0;
    for (tp, om) in log.committed_offsets(app_id, &tps).unwrap() {
        let end = probe.end_offset(&tp).unwrap();
        if end.0 > 0 {
            ended += 1;
            assert_eq!(
                om.map(|om| om.offset),
                Some(end),
                "{tp}: committed short of the end past its marker"
            );
        }
    }
    assert_eq!(ended, PARTITIONS, "an input partition is empty");
}

#[test]
fn a_marker_passed_in_a_fetch_without_records_is_committed_and_the_app_catches_up() {
    let log = Arc::new(MarkerLog {
        inner: EmbeddedLog::in_memory(),
    });
    create_topics(&*log);
    let records = input(300, 5, 7);
    produce(&*log, &records, 100);
    log.add_markers();
    run_to_the_markers(&log, "trailing-markers");
    let engine = regular(read_output(&log.inner));
    assert_each_once(&read_output(&log.inner));
    assert_eq!(engine, regular(driver_finals(tumbling_count(), &records)));
}

#[test]
fn a_partition_holding_only_a_marker_is_committed_to_its_end() {
    let log = Arc::new(MarkerLog {
        inner: EmbeddedLog::in_memory(),
    });
    create_topics(&*log);
    let mut records = input(300, 5, 7);
    // Partition 1 holds nothing but its marker (an aborted transaction's
    // records are never delivered either).
    records.retain(|r| partition_for_key(r.key.as_bytes(), PARTITIONS) != 1);
    produce(&*log, &records, 100);
    log.add_markers();
    run_to_the_markers(&log, "bare-marker");
}
