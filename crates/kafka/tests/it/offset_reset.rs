//! A position past a partition's end on Kafka, as on the embedded log
//! (`stoatflow-log`'s `offset_range` tests): the next fetch moves it by the
//! consumer's offset-reset policy, so no record is skipped under the
//! default (earliest: the partition is read again from its start), whether
//! the position came from a seek or from a committed offset.

use std::time::{Duration, Instant};

use stoatflow_kafka::KafkaLog;
use stoatflow_log::{
    Consumer, FetchedRecord, Log, LogError, Offset, OffsetAndMetadata, OffsetReset, Record, SeekTo,
    Timestamp, TopicPartition, TopicSpec, TransactionalProducer,
};

use crate::broker::TestBroker;

fn tp() -> TopicPartition {
    TopicPartition::new("t", 0)
}

/// Commits records with values `from..to`, in one transaction (whose
/// marker takes an offset: values are not offsets).
fn commit(log: &KafkaLog, from: u64, to: u64) {
    let mut p = log.transactional_producer("offset-reset-tx").unwrap();
    p.begin().unwrap();
    for n in from..to {
        p.send(
            &tp(),
            &Record::new(None, Some(&n.to_be_bytes()), Timestamp(1)),
        )
        .unwrap();
    }
    p.commit().unwrap();
}

/// The values of the records in `fetched`.
fn values(fetched: &[FetchedRecord]) -> Vec<u64> {
    fetched
        .iter()
        .map(|r| {
            let v = r.record.value.as_deref().expect("a value");
            u64::from_be_bytes(v.try_into().expect("8 bytes"))
        })
        .collect()
}

/// `got` and the values of the records `c` fetches after them, until the
/// value `last` is read (at most 30 s).
fn values_to<C: Consumer>(c: &mut C, mut got: Vec<u64>, last: u64) -> Vec<u64> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.last() != Some(&last) {
        assert!(Instant::now() < deadline, "read {got:?}, never {last}");
        got.extend(values(&c.fetch(Duration::from_millis(200)).unwrap()));
    }
    got
}

#[test]
fn a_seek_or_a_committed_offset_past_the_end_skips_no_record() {
    let broker = TestBroker::start("offset_reset::past_the_end");
    let log = broker.log();
    log.create_topic(&TopicSpec::new("t", 1)).unwrap();
    commit(&log, 0, 5);
    let mut sought = log.consumer("sought").unwrap();
    sought.assign(&[tp()]).unwrap();
    let end = sought.end_offset(&tp()).unwrap().0;
    let past = Offset(end + 3);
    sought.seek(&tp(), SeekTo::Offset(past)).unwrap();
    assert_eq!(sought.position(&tp()).unwrap(), past);
    // A group whose committed offset lies past the end (Kafka takes it).
    log.commit_offsets(
        "committed-past",
        &[(
            tp(),
            OffsetAndMetadata {
                offset: past,
                metadata: String::new(),
            },
        )],
    )
    .unwrap();
    let mut resumed = log.consumer("committed-past").unwrap();
    resumed.assign(&[tp()]).unwrap();
    assert_eq!(resumed.position(&tp()).unwrap(), past);
    // A fetch while the position is past the end...
    let sought_first = values(&sought.fetch(Duration::from_millis(500)).unwrap());
    let resumed_first = values(&resumed.fetch(Duration::from_millis(500)).unwrap());
    // ...then records arrive past the position: none between the old end
    // and it is skipped, both read the partition again from its start.
    commit(&log, 5, 15);
    let all: Vec<u64> = (0..15).collect();
    assert_eq!(
        values_to(&mut sought, sought_first, 14),
        all,
        "after a seek"
    );
    assert_eq!(
        values_to(&mut resumed, resumed_first, 14),
        all,
        "after a committed offset"
    );
}

#[test]
fn latest_moves_a_position_past_the_end_to_the_end_and_none_fails_the_fetch() {
    let broker = TestBroker::start("offset_reset::latest_and_none");
    let connect = |reset| KafkaLog::connect(broker.config().with_offset_reset(reset)).unwrap();
    let (latest, none) = (connect(OffsetReset::Latest), connect(OffsetReset::None));
    latest.create_topic(&TopicSpec::new("t", 1)).unwrap();
    commit(&latest, 0, 5);
    let mut at_end = latest.consumer("latest").unwrap();
    let mut refusing = none.consumer("none").unwrap();
    for c in [&mut at_end as &mut dyn Consumer, &mut refusing] {
        c.assign(&[tp()]).unwrap();
    }
    let end = at_end.end_offset(&tp()).unwrap().0;
    for c in [&mut at_end as &mut dyn Consumer, &mut refusing] {
        c.seek(&tp(), SeekTo::Offset(Offset(end + 3))).unwrap();
    }
    let err = refusing.fetch(Duration::ZERO).unwrap_err();
    assert!(
        matches!(err, LogError::OffsetOutOfRange { offset, start: Offset(0), end: e, .. } if offset.0 == end + 3 && e.0 == end),
        "{err:?}"
    );
    assert!(err.to_string().contains("\"t\" partition 0"), "{err}");
    let first = values(&at_end.fetch(Duration::from_millis(200)).unwrap());
    commit(&latest, 5, 15);
    assert_eq!(
        values_to(&mut at_end, first, 14),
        (5..15).collect::<Vec<u64>>(),
        "from the end on"
    );
}
