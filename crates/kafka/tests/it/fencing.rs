//! KIP-447 on the test broker: a producer adds offsets to its transaction
//! as its log's member of the consumer group (that member's generation and
//! member id). Kafka refuses such offsets once the group has moved past
//! that generation (the member stopped serving the group and was replaced),
//! and the producer's error then names the group (`errors.rs` unit-tests
//! that mapping). noida-db 0.2.3 does not: it accepts `TxnOffsetCommit`
//! from any generation and member id (a hand-made generation 12345 of a
//! member id it never assigned included), so there nothing fences an
//! instance that missed its revocation. The test pins down what the broker
//! does; when noida-db starts fencing, it fails here, and the expected
//! outcome becomes the fenced error.

use std::time::{Duration, Instant};

use stoatflow_kafka::KafkaLog;
use stoatflow_log::{
    GroupEvent, GroupMember, Log, Offset, OffsetAndMetadata, TopicPartition, TopicSpec,
    TransactionalProducer,
};

use crate::broker::TestBroker;

const GROUP: &str = "fence-app";
const TOPIC: &str = "fence-in";

/// A log whose members are dropped from the group 6 s after they stop
/// serving it (librdkafka's `max.poll.interval.ms`, and the session).
fn connect(broker: &TestBroker) -> KafkaLog {
    let config = broker
        .config()
        .with_static_membership(false)
        .with_property("session.timeout.ms", "6000")
        .and_then(|c| c.with_property("heartbeat.interval.ms", "1000"))
        .and_then(|c| c.with_property("max.poll.interval.ms", "6000"))
        .unwrap();
    KafkaLog::connect(config).unwrap()
}

/// Serves `member` until it is assigned `n` partitions (releasing any
/// revocation on the way).
fn until_assigned(member: &mut dyn GroupMember, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match member.poll(Duration::from_millis(100)).unwrap() {
            Some(GroupEvent::Assigned(p)) if p.len() == n => return,
            Some(GroupEvent::Revoked(_)) => member.release().unwrap(),
            _ => {}
        }
        assert!(Instant::now() < deadline, "never assigned {n} partitions");
    }
}

fn offset(o: u64) -> Vec<(TopicPartition, OffsetAndMetadata)> {
    vec![(
        TopicPartition::new(TOPIC, 0),
        OffsetAndMetadata {
            offset: Offset(o),
            metadata: String::new(),
        },
    )]
}

fn committed(log: &KafkaLog) -> Option<u64> {
    log.committed_offsets(GROUP, &[TopicPartition::new(TOPIC, 0)])
        .unwrap()
        .remove(0)
        .1
        .map(|om| om.offset.0)
}

/// Begins a transaction, adds `o` as the offset of partition 0, commits;
/// on a failure aborts and returns it.
fn commit_offset(
    p: &mut impl TransactionalProducer,
    o: u64,
) -> Result<(), stoatflow_log::LogError> {
    p.begin().unwrap();
    let r = p.send_offsets(GROUP, &offset(o)).and_then(|()| p.commit());
    if r.is_err() {
        let _ = p.abort();
    }
    r
}

#[test]
fn noida_db_accepts_offsets_of_a_member_of_a_stale_generation() {
    let broker = TestBroker::start("noida_db_accepts_offsets_of_a_member_of_a_stale_generation");
    let (log_a, log_b) = (connect(&broker), connect(&broker));
    log_a.create_topic(&TopicSpec::new(TOPIC, 2)).unwrap();

    // A is the group's only member; its producer commits as A.
    let mut a = log_a.join_group(GROUP, "a", &[TOPIC.to_owned()]).unwrap();
    until_assigned(&mut *a, 2);
    let mut producer_a = log_a.transactional_producer("fence-a").unwrap();
    commit_offset(&mut producer_a, 1).unwrap();
    assert_eq!(committed(&log_a), Some(1));

    // A stops serving the group (a stalled instance); B joins, and the group
    // goes on without A: B owns both partitions in a newer generation.
    let mut b = log_b.join_group(GROUP, "b", &[TOPIC.to_owned()]).unwrap();
    until_assigned(&mut *b, 2);

    // A's producer still holds A's generation. Kafka: "fenced by consumer
    // group" (an abort; nothing committed). noida-db: accepted.
    match commit_offset(&mut producer_a, 2) {
        Ok(()) => assert_eq!(committed(&log_b), Some(2)),
        Err(e) => panic!(
            "the broker now fences a stale generation ({e}): expect this error, \
             of kind {:?}, and update ARCHITECTURE.md (kafka, KIP-447)",
            e.kind()
        ),
    }

    // B, the current member, commits.
    let mut producer_b = log_b.transactional_producer("fence-b").unwrap();
    commit_offset(&mut producer_b, 3).unwrap();
    assert_eq!(committed(&log_b), Some(3));
    drop(a);
}

#[test]
fn a_member_reads_its_groups_committed_offsets_through_its_own_connection() {
    let broker =
        TestBroker::start("a_member_reads_its_groups_committed_offsets_through_its_own_connection");
    let log = connect(&broker);
    log.create_topic(&TopicSpec::new(TOPIC, 2)).unwrap();
    let mut member = log.join_group(GROUP, "a", &[TOPIC.to_owned()]).unwrap();
    until_assigned(&mut *member, 2);
    let partitions = [TopicPartition::new(TOPIC, 0), TopicPartition::new(TOPIC, 1)];
    let read = |member: &dyn GroupMember| {
        member
            .committed_offsets(&partitions)
            .expect("a Kafka member reads through its own connection")
            .unwrap()
    };
    assert!(read(&*member).iter().all(|(_, om)| om.is_none()));
    let mut producer = log.transactional_producer("member-offsets").unwrap();
    commit_offset(&mut producer, 7).unwrap();
    let through_member = read(&*member);
    assert_eq!(
        through_member,
        log.committed_offsets(GROUP, &partitions).unwrap()
    );
    assert_eq!(
        through_member[0].1.as_ref().map(|om| om.offset),
        Some(Offset(7))
    );
}
