//! At start, the app fences older producers of its transactional id before it
//! reads anything the previous instance wrote.
//!
//! Creating the transactional producer completes the transaction a killed
//! instance left open (Kafka's `InitProducerId` aborts it). Read before that,
//! the stamps and changelogs stop at the open transaction (the last stable
//! offset cannot pass it), the committed offsets are unstable until it ends,
//! and on Kafka it ends only when `transaction.timeout.ms` runs out: a
//! restart would wait for a minute, or, on a broker that shows pending
//! transactional offsets to an offset fetch, start past input whose output is
//! then aborted.

use std::sync::{Arc, Mutex};

use stoatflow_log::{
    EmbeddedLog, Log, LogError, Offset, OffsetAndMetadata, Timestamp, TopicPartition, TopicShape,
    TopicSpec,
};
use stoatflow_runtime::StreamsApp;

use crate::support::*;

/// The embedded log, recording which reads and fences the app makes, in order.
#[derive(Debug)]
struct Recorded {
    inner: EmbeddedLog,
    calls: Mutex<Vec<String>>,
}

impl Recorded {
    fn note(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }
}

impl Log for Recorded {
    type Consumer = <EmbeddedLog as Log>::Consumer;
    type Producer = <EmbeddedLog as Log>::Producer;
    type PlainProducer = <EmbeddedLog as Log>::PlainProducer;

    fn create_topic(&self, spec: &TopicSpec) -> Result<(), LogError> {
        self.inner.create_topic(spec)
    }
    fn describe_topic(&self, topic: &str) -> Result<Option<TopicShape>, LogError> {
        self.inner.describe_topic(topic)
    }
    fn consumer(&self, group: &str) -> Result<Self::Consumer, LogError> {
        self.note(format!("consumer {group}"));
        self.inner.consumer(group)
    }
    fn transactional_producer(&self, id: &str) -> Result<Self::Producer, LogError> {
        self.note(format!("producer {id}"));
        self.inner.transactional_producer(id)
    }
    fn producer(&self, client_id: &str) -> Result<Self::PlainProducer, LogError> {
        self.note(format!("plain producer {client_id}"));
        self.inner.producer(client_id)
    }
    fn commit_offsets(
        &self,
        group: &str,
        offsets: &[(TopicPartition, OffsetAndMetadata)],
    ) -> Result<(), LogError> {
        self.note(format!("commit offsets of {group}"));
        self.inner.commit_offsets(group, offsets)
    }
    fn committed_offsets(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>, LogError> {
        self.note(format!("committed offsets of {group}"));
        self.inner.committed_offsets(group, partitions)
    }
    fn purge_below(&self, partition: &TopicPartition, before: Offset) -> Result<(), LogError> {
        self.inner.purge_below(partition, before)
    }
    fn upkeep(&self, now: Timestamp) -> Result<(), LogError> {
        self.inner.upkeep(now)
    }
}

#[test]
fn the_producer_is_created_before_any_offset_stamp_or_changelog_is_read() {
    let log = Arc::new(Recorded {
        inner: EmbeddedLog::in_memory(),
        calls: Mutex::new(Vec::new()),
    });
    create_topics(&*log);
    let records = input(200, 5, 3);
    produce(&*log, &records, 50);
    log.calls.lock().unwrap().clear();
    // A first run commits offsets, stamps and changelogs; the second reads them.
    for _ in 0..2 {
        let mut app =
            StreamsApp::with_log(tumbling_count(), config("fence-first", 2), log.clone()).unwrap();
        start_and_finish(&mut app);
        let calls = std::mem::take(&mut *log.calls.lock().unwrap());
        // `wait_until_caught_up` reads end offsets on a consumer of its own,
        // concurrently with the start; it reads nothing the old instance wrote.
        let fence = calls
            .iter()
            .position(|c| c.starts_with("producer "))
            .unwrap_or_else(|| panic!("no producer was created: {calls:?}"));
        let early: Vec<_> = calls[..fence]
            .iter()
            .filter(|c| !c.ends_with("-caught-up"))
            .collect();
        assert!(
            early.is_empty(),
            "read before older producers were fenced: {early:?}; all: {calls:?}"
        );
        assert!(
            calls.iter().any(|c| c.starts_with("committed offsets")),
            "the app read no committed offsets: {calls:?}"
        );
    }
    assert_each_once(&read_output(&*log));
}
