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
//! such a marker, passed only by a fetch that finds nothing else.

use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::{
    Consumer, EmbeddedLog, FetchedBatch, FetchedRecord, Log, LogError, Offset, OffsetAndMetadata,
    SeekTo, Timestamp, TopicPartition, TopicShape, TopicSpec,
};
use stoatflow_runtime::{StreamsApp, partition_for_key};

use crate::support::*;

/// The embedded log; each non-empty partition of [`INPUT`] ends with a
/// marker one offset long, and so does the `bare` one, which holds nothing
/// else (an aborted transaction's records are never delivered either).
#[derive(Debug)]
struct MarkerLog {
    inner: EmbeddedLog,
    bare: Option<u32>,
}

#[derive(Debug)]
struct MarkerConsumer {
    inner: <EmbeddedLog as Log>::Consumer,
    bare: Option<u32>,
    /// Assigned input partitions, with whether the trailing marker was passed.
    passed: Vec<(TopicPartition, bool)>,
}

impl MarkerConsumer {
    fn has_marker(&mut self, tp: &TopicPartition) -> Result<bool, LogError> {
        Ok(tp.topic == INPUT
            && (self.inner.end_offset(tp)?.0 > 0 || self.bare == Some(tp.partition.0)))
    }

    fn passed(&self, tp: &TopicPartition) -> bool {
        self.passed.iter().any(|(t, p)| t == tp && *p)
    }

    /// A fetch that found nothing: every partition read to its last record
    /// moves past its marker.
    fn pass_markers(&mut self) -> Result<(), LogError> {
        for i in 0..self.passed.len() {
            let tp = self.passed[i].0.clone();
            if self.has_marker(&tp)? && self.inner.position(&tp)? == self.inner.end_offset(&tp)? {
                self.passed[i].1 = true;
            }
        }
        Ok(())
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
            bare: self.bare,
            passed: Vec::new(),
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
        self.passed = partitions.iter().map(|tp| (tp.clone(), false)).collect();
        Ok(())
    }
    fn seek(&mut self, tp: &TopicPartition, to: SeekTo) -> Result<(), LogError> {
        assert!(
            !matches!(to, SeekTo::End) || tp.topic != INPUT,
            "not simulated: a seek to the end of {tp}"
        );
        for (t, passed) in &mut self.passed {
            if t == tp {
                *passed = false;
            }
        }
        self.inner.seek(tp, to)
    }
    fn position(&self, tp: &TopicPartition) -> Result<Offset, LogError> {
        let at = self.inner.position(tp)?;
        Ok(Offset(at.0 + u64::from(self.passed(tp))))
    }
    fn fetch(&mut self, max_wait: Duration) -> Result<Vec<FetchedRecord>, LogError> {
        let records = self.inner.fetch(max_wait)?;
        if records.is_empty() {
            self.pass_markers()?;
        }
        Ok(records)
    }
    fn fetch_batches(&mut self, max_wait: Duration) -> Result<Vec<FetchedBatch>, LogError> {
        let batches = self.inner.fetch_batches(max_wait)?;
        if batches.is_empty() {
            self.pass_markers()?;
        }
        Ok(batches)
    }
    fn end_offset(&mut self, tp: &TopicPartition) -> Result<Offset, LogError> {
        let end = self.inner.end_offset(tp)?;
        Ok(Offset(end.0 + u64::from(self.has_marker(tp)?)))
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
        bare: None,
    });
    create_topics(&*log);
    let records = input(300, 5, 7);
    produce(&*log, &records, 100);
    run_to_the_markers(&log, "trailing-markers");
    let engine = regular(read_output(&log.inner));
    assert_each_once(&read_output(&log.inner));
    assert_eq!(engine, regular(driver_finals(tumbling_count(), &records)));
}

#[test]
fn a_partition_holding_only_a_marker_is_committed_to_its_end() {
    let log = Arc::new(MarkerLog {
        inner: EmbeddedLog::in_memory(),
        bare: Some(1),
    });
    create_topics(&*log);
    let mut records = input(300, 5, 7);
    records.retain(|r| partition_for_key(r.key.as_bytes(), PARTITIONS) != 1);
    produce(&*log, &records, 100);
    run_to_the_markers(&log, "bare-marker");
}
