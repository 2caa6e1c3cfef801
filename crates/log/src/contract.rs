//! The contract every [`Log`] backend must pass: one suite, run against the
//! in-memory embedded log, the on-disk embedded log and Kafka.
//!
//! Owns: the behavioural definition of the broker interface, as executable
//! checks. Each check creates its own topics under a caller-chosen prefix
//! (so several can share one broker) and **panics** with a message naming
//! the property that failed: call them from `#[test]` functions only.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::broker::{Consumer, Log, Producer, TransactionalProducer, restore};
use crate::error::{ErrorKind, LogError};
use crate::offset_metadata::{self, PartitionMetadata};
use crate::types::{
    CleanupPolicy, FetchedRecord, Offset, OffsetAndMetadata, Record, SeekTo, Timestamp,
    TopicPartition, TopicShape, TopicSpec,
};

/// How long a check waits for records it expects before failing.
pub const WAIT: Duration = Duration::from_secs(30);

/// Reads every committed record of `tps` up to their end offsets as of the call.
///
/// # Panics
/// If the end is not reached within [`WAIT`], or on a backend error.
pub fn read_to_end<C: Consumer>(consumer: &mut C, tps: &[TopicPartition]) -> Vec<FetchedRecord> {
    let ends: Vec<Offset> = tps
        .iter()
        .map(|tp| consumer.end_offset(tp).expect("end offset"))
        .collect();
    consumer.assign(tps).expect("assign");
    for tp in tps {
        consumer
            .seek(tp, SeekTo::Beginning)
            .expect("seek to beginning");
    }
    let deadline = Instant::now() + WAIT;
    let mut out = Vec::new();
    loop {
        let done = tps
            .iter()
            .zip(&ends)
            .all(|(tp, end)| consumer.position(tp).expect("position") >= *end);
        if done {
            return out;
        }
        assert!(
            Instant::now() < deadline,
            "did not reach end offsets {ends:?} of {tps:?} within {WAIT:?}; read {} records",
            out.len()
        );
        out.extend(consumer.fetch(Duration::from_millis(200)).expect("fetch"));
    }
}

fn values(records: &[FetchedRecord]) -> Vec<Vec<u8>> {
    records
        .iter()
        .map(|r| r.record.value.clone().unwrap_or_default())
        .collect()
}

fn v(s: &str) -> Record {
    Record::new(Some(s.as_bytes()), Some(s.as_bytes()), Timestamp(1_000))
}

/// Keys, values, headers and timestamps come back exactly, nulls included.
///
/// # Panics
/// When the property does not hold.
pub fn round_trip<L: Log>(log: &L, prefix: &str) {
    let topic = format!("{prefix}-roundtrip");
    log.ensure_topic(&TopicSpec::new(topic.clone(), 1))
        .expect("create topic");
    let tp = TopicPartition::new(topic, 0);
    let sent = vec![
        Record::new(Some(b"key"), Some(b"value"), Timestamp(1_700_000_000_123))
            .with_header("h1", Some(b"x"))
            .with_header("h1", Some(b"y"))
            .with_header("empty", Some(b""))
            .with_header("null", None),
        Record::new(None, Some(b"no key"), Timestamp(1)),
        Record::new(Some(b"tombstone"), None, Timestamp(2)),
        Record::new(None, None, Timestamp(3)),
        Record::new(Some(b""), Some(b""), Timestamp(4)),
        Record::new(
            Some(&[0, 255, 7]),
            Some(&vec![9u8; 100_000]),
            Timestamp(i64::from(i32::MAX) * 1000),
        ),
    ];
    let mut p = log
        .transactional_producer(&format!("{prefix}-roundtrip-tx"))
        .expect("producer");
    p.begin().expect("begin");
    for r in &sent {
        p.send(&tp, r).expect("send");
    }
    p.commit().expect("commit");
    let mut c = log
        .consumer(&format!("{prefix}-roundtrip-g"))
        .expect("consumer");
    let got = read_to_end(&mut c, std::slice::from_ref(&tp));
    let got_records: Vec<Record> = got.iter().map(|r| r.record.clone()).collect();
    assert_eq!(got_records, sent, "records must round-trip exactly");
    for w in got.windows(2) {
        assert!(w[0].offset < w[1].offset, "offsets must increase");
    }
    assert!(
        got.iter().all(|r| r.partition == tp),
        "records name their partition"
    );
}

/// Records of one key (one partition) are read in the order they were sent,
/// within and across transactions.
///
/// # Panics
/// When the property does not hold.
pub fn per_key_ordering<L: Log>(log: &L, prefix: &str) {
    let topic = format!("{prefix}-ordering");
    log.ensure_topic(&TopicSpec::new(topic.clone(), 3))
        .expect("create topic");
    let tps: Vec<TopicPartition> = (0..3)
        .map(|p| TopicPartition::new(topic.clone(), p))
        .collect();
    let mut p = log
        .transactional_producer(&format!("{prefix}-ordering-tx"))
        .expect("producer");
    let mut expected: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for epoch in 0..3u32 {
        p.begin().expect("begin");
        for i in 0..200u32 {
            let key = format!("k{}", i % 7);
            let seq = epoch * 1000 + i;
            let part = (i % 7) as usize % 3;
            let rec = Record::new(
                Some(key.as_bytes()),
                Some(&seq.to_be_bytes()),
                Timestamp(i64::from(seq)),
            );
            p.send(&tps[part], &rec).expect("send");
            expected.entry(key).or_default().push(seq);
        }
        p.commit().expect("commit");
    }
    let mut c = log
        .consumer(&format!("{prefix}-ordering-g"))
        .expect("consumer");
    let got = read_to_end(&mut c, &tps);
    let mut seen: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let mut last_offset: HashMap<TopicPartition, Offset> = HashMap::new();
    for r in &got {
        if let Some(prev) = last_offset.insert(r.partition.clone(), r.offset) {
            assert!(prev < r.offset, "offsets of {} must increase", r.partition);
        }
        let key = String::from_utf8(r.record.key.clone().expect("key")).expect("utf-8");
        let val = r.record.value.as_deref().expect("value");
        seen.entry(key)
            .or_default()
            .push(u32::from_be_bytes(val.try_into().expect("4 bytes")));
    }
    assert_eq!(seen, expected, "per-key order must be the send order");
}

/// An aborted epoch's records are invisible to read-committed readers and
/// its offsets are not applied; epochs around it are unaffected.
///
/// # Panics
/// When the property does not hold.
pub fn aborted_epoch_invisible<L: Log>(log: &L, prefix: &str) {
    let topic = format!("{prefix}-abort");
    log.ensure_topic(&TopicSpec::new(topic.clone(), 1))
        .expect("create topic");
    let tp = TopicPartition::new(topic, 0);
    let src = TopicPartition::new(format!("{prefix}-abort-src"), 0);
    log.ensure_topic(&TopicSpec::new(src.topic.clone(), 1))
        .expect("create topic");
    let group = format!("{prefix}-abort-app");
    let om = |o: u64| OffsetAndMetadata {
        offset: Offset(o),
        metadata: offset_metadata::encode(&PartitionMetadata::with_partition_time(o as i64)),
    };
    let mut p = log
        .transactional_producer(&format!("{prefix}-abort-tx"))
        .expect("producer");
    p.begin().expect("begin");
    p.send(&tp, &v("a1")).expect("send");
    // The source holds the records the offsets below point into (the
    // embedded log refuses an offset past a partition's end).
    for i in 0..20 {
        p.send(&src, &v(&format!("s{i}"))).expect("send");
    }
    p.send_offsets(&group, &[(src.clone(), om(10))])
        .expect("offsets");
    p.commit().expect("commit");

    p.begin().expect("begin");
    p.send(&tp, &v("aborted1")).expect("send");
    p.send(&tp, &v("aborted2")).expect("send");
    p.send_offsets(&group, &[(src.clone(), om(20))])
        .expect("offsets");
    p.abort().expect("abort");

    let committed = log
        .committed_offsets(&group, std::slice::from_ref(&src))
        .expect("committed");
    assert_eq!(
        committed[0].1,
        Some(om(10)),
        "an aborted epoch's offsets must not apply"
    );

    p.begin().expect("begin");
    p.send(&tp, &v("a2")).expect("send");
    p.commit().expect("commit");

    let mut c = log
        .consumer(&format!("{prefix}-abort-g"))
        .expect("consumer");
    let got = read_to_end(&mut c, std::slice::from_ref(&tp));
    assert_eq!(
        values(&got),
        vec![b"a1".to_vec(), b"a2".to_vec()],
        "aborted records must be invisible"
    );
    let committed = log
        .committed_offsets(&group, std::slice::from_ref(&src))
        .expect("committed");
    assert_eq!(
        committed[0].1,
        Some(om(10)),
        "offsets stay those of the last commit"
    );
}

/// A committed epoch is visible whole: records on several topics and
/// partitions, and offsets with their metadata.
///
/// # Panics
/// When the property does not hold.
pub fn committed_epoch_visible<L: Log>(log: &L, prefix: &str) {
    let out = format!("{prefix}-commit-out");
    let changelog = format!("{prefix}-commit-changelog");
    log.ensure_topic(&TopicSpec::new(out.clone(), 2))
        .expect("create topic");
    log.ensure_topic(&TopicSpec::new(changelog.clone(), 1).compacted())
        .expect("create topic");
    let src: Vec<TopicPartition> = (0..2)
        .map(|p| TopicPartition::new(format!("{prefix}-commit-src"), p))
        .collect();
    log.ensure_topic(&TopicSpec::new(src[0].topic.clone(), 2))
        .expect("create topic");
    let group = format!("{prefix}-commit-app");
    let before = log.committed_offsets(&group, &src).expect("committed");
    assert!(
        before.iter().all(|(_, o)| o.is_none()),
        "a fresh group has no offsets"
    );

    let targets = [
        TopicPartition::new(out.clone(), 0),
        TopicPartition::new(out.clone(), 1),
        TopicPartition::new(changelog.clone(), 0),
    ];
    let mut p = log
        .transactional_producer(&format!("{prefix}-commit-tx"))
        .expect("producer");
    p.begin().expect("begin");
    for i in 0..30 {
        p.send(&targets[i % 3], &v(&format!("r{i}"))).expect("send");
    }
    // The records the offsets below point into (the embedded log refuses
    // an offset past a partition's end).
    for (tp, n) in src.iter().zip([20, 5]) {
        for i in 0..n {
            p.send(tp, &v(&format!("s{i}"))).expect("send");
        }
    }
    let (meta0, offsets) = epoch_offsets(&src);
    p.send_offsets(&group, &offsets).expect("offsets");
    p.commit().expect("commit");

    let mut c = log
        .consumer(&format!("{prefix}-commit-g"))
        .expect("consumer");
    let got = read_to_end(&mut c, &targets);
    assert_eq!(
        got.len(),
        30,
        "every record of a committed epoch must be visible"
    );
    let committed = log.committed_offsets(&group, &src).expect("committed");
    let as_map: HashMap<_, _> = committed.into_iter().collect();
    assert_eq!(
        as_map[&src[0]].as_ref(),
        Some(&offsets[0].1),
        "offset and metadata must be committed"
    );
    assert_eq!(
        as_map[&src[1]].as_ref(),
        Some(&offsets[1].1),
        "offset and metadata must be committed"
    );
    let decoded = offset_metadata::decode(&as_map[&src[0]].as_ref().expect("offset").metadata)
        .expect("decode");
    assert_eq!(decoded, meta0, "partition time survives the broker");

    // A consumer of the group starts at the committed offsets.
    let mut g = log.consumer(&group).expect("consumer");
    g.assign(&src).expect("assign");
    assert_eq!(g.position(&src[0]).expect("position"), Offset(17));
}

/// The offsets [`committed_epoch_visible`] commits for `src`'s two
/// partitions: 17 with a partition time, 3 with a partition time and a
/// processor's entry; and the first one's metadata.
fn epoch_offsets(
    src: &[TopicPartition],
) -> (PartitionMetadata, Vec<(TopicPartition, OffsetAndMetadata)>) {
    let meta0 = PartitionMetadata::with_partition_time(1_700_000_000_000);
    let meta1 = PartitionMetadata {
        partition_time: Some(5),
        processor: vec![("emit".into(), 3)],
    };
    let offsets = vec![
        (
            src[0].clone(),
            OffsetAndMetadata {
                offset: Offset(17),
                metadata: offset_metadata::encode(&meta0),
            },
        ),
        (
            src[1].clone(),
            OffsetAndMetadata {
                offset: Offset(3),
                metadata: offset_metadata::encode(&meta1),
            },
        ),
    ];
    (meta0, offsets)
}

/// A producer with the same transactional id fences the older one: the
/// zombie's open transaction never becomes visible and its commit fails fatally.
///
/// # Panics
/// When the property does not hold.
pub fn zombie_fenced<L: Log>(log: &L, prefix: &str) {
    let topic = format!("{prefix}-fence");
    log.ensure_topic(&TopicSpec::new(topic.clone(), 1))
        .expect("create topic");
    let tp = TopicPartition::new(topic, 0);
    let tid = format!("{prefix}-fence-tx");
    let mut zombie = log.transactional_producer(&tid).expect("producer");
    zombie.begin().expect("begin");
    zombie.send(&tp, &v("zombie")).expect("send before fencing");

    let mut fresh = log.transactional_producer(&tid).expect("second producer");
    let res = zombie
        .send(&tp, &v("zombie2"))
        .and_then(|()| zombie.commit());
    let err: LogError = res.expect_err("a fenced producer must not commit");
    assert_eq!(err.kind(), ErrorKind::Fatal, "fencing is fatal: {err}");
    assert!(
        matches!(err, LogError::Fenced { .. }),
        "expected Fenced, got {err:?}"
    );

    fresh.begin().expect("begin");
    fresh.send(&tp, &v("fresh")).expect("send");
    fresh.commit().expect("commit");
    let begin_again = zombie
        .begin()
        .and_then(|()| zombie.send(&tp, &v("late")))
        .and_then(|()| zombie.commit());
    assert!(begin_again.is_err(), "a fenced producer stays fenced");

    let mut c = log
        .consumer(&format!("{prefix}-fence-g"))
        .expect("consumer");
    let got = read_to_end(&mut c, std::slice::from_ref(&tp));
    assert_eq!(
        values(&got),
        vec![b"fresh".to_vec()],
        "only the new producer's epoch is visible"
    );
}

/// Restoring a compacted topic from beginning to end offset yields the
/// latest value of every key (tombstones delete).
///
/// # Panics
/// When the property does not hold.
pub fn restore_compacted<L: Log>(log: &L, prefix: &str) {
    let topic = format!("{prefix}-changelog");
    log.ensure_topic(&TopicSpec::new(topic.clone(), 1).compacted())
        .expect("create topic");
    let tp = TopicPartition::new(topic, 0);
    let mut p = log
        .transactional_producer(&format!("{prefix}-changelog-tx"))
        .expect("producer");
    let mut expected: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for epoch in 0..5u32 {
        p.begin().expect("begin");
        for i in 0..100u32 {
            let key = format!("key-{}", (i * 7 + epoch) % 37).into_bytes();
            if (i + epoch) % 11 == 0 {
                p.send(&tp, &Record::new(Some(&key), None, Timestamp(1)))
                    .expect("send");
                expected.remove(&key);
            } else {
                let val = format!("{epoch}-{i}").into_bytes();
                p.send(&tp, &Record::new(Some(&key), Some(&val), Timestamp(1)))
                    .expect("send");
                expected.insert(key, val);
            }
        }
        if epoch == 2 {
            p.abort().expect("abort");
            // Replay what the aborted epoch would have changed is not needed:
            // rebuild the expectation from committed epochs only.
            expected.clear();
            for e in [0u32, 1] {
                for i in 0..100u32 {
                    let key = format!("key-{}", (i * 7 + e) % 37).into_bytes();
                    if (i + e) % 11 == 0 {
                        expected.remove(&key);
                    } else {
                        expected.insert(key, format!("{e}-{i}").into_bytes());
                    }
                }
            }
        } else {
            p.commit().expect("commit");
        }
    }
    let mut c = log
        .consumer(&format!("{prefix}-changelog-restore"))
        .expect("consumer");
    let end = c.end_offset(&tp).expect("end offset");
    let mut state: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let summary = restore(&mut c, &tp, WAIT, |r| {
        let key = r.record.key.expect("changelog records have keys");
        match r.record.value {
            Some(v) => state.insert(key, v),
            None => state.remove(&key),
        };
    })
    .expect("restore");
    assert_eq!(summary.end, end, "restore reads up to the end offset");
    assert_eq!(
        state, expected,
        "restore yields the latest committed value of every key"
    );
    assert!(summary.records >= expected.len() as u64);
}

/// `ensure_topic` accepts the same shape and refuses another partition count
/// or cleanup policy, naming both.
///
/// # Panics
/// When the property does not hold.
pub fn ensure_topic_checks_shape<L: Log>(log: &L, prefix: &str) {
    let name = format!("{prefix}-shape");
    log.ensure_topic(&TopicSpec::new(name.clone(), 2))
        .expect("create");
    log.ensure_topic(&TopicSpec::new(name.clone(), 2))
        .expect("same shape is fine");
    assert_eq!(
        log.describe_topic(&name).expect("describe"),
        Some(TopicShape::new(2, CleanupPolicy::Delete))
    );
    let err = log
        .ensure_topic(&TopicSpec::new(name.clone(), 3))
        .expect_err("partition count differs");
    assert!(
        matches!(err, LogError::TopicShapeMismatch { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains(&name) && err.to_string().contains("3 partitions"),
        "{err}"
    );
    let err = log
        .ensure_topic(&TopicSpec::new(name.clone(), 2).compacted())
        .expect_err("policy differs");
    assert!(err.to_string().contains("compact"), "{err}");
    assert!(matches!(
        log.create_topic(&TopicSpec::new(name, 2)),
        Err(LogError::TopicExists { .. })
    ));
    assert_eq!(
        log.describe_topic(&format!("{prefix}-missing"))
            .expect("describe"),
        None
    );
}

/// A record over the size limit is refused with an abort-the-transaction error.
///
/// # Panics
/// When the property does not hold.
pub fn oversized_record_refused<L: Log>(log: &L, prefix: &str, limit: usize) {
    let topic = format!("{prefix}-big");
    log.ensure_topic(&TopicSpec::new(topic.clone(), 1))
        .expect("create topic");
    let tp = TopicPartition::new(topic, 0);
    let mut p = log
        .transactional_producer(&format!("{prefix}-big-tx"))
        .expect("producer");
    p.begin().expect("begin");
    let big = Record::new(Some(b"k"), Some(&vec![1u8; limit + 1]), Timestamp(1));
    let err = p
        .send(&tp, &big)
        .and_then(|()| p.commit())
        .expect_err("oversized record");
    assert_eq!(err.kind(), ErrorKind::AbortTransaction, "{err}");
    assert!(
        err.to_string().contains(&tp.topic),
        "error names the topic: {err}"
    );
}

/// [`Consumer::fetch_batches`] hands out what [`Consumer::fetch`] does:
/// each batch one partition's records in offset order, exactly as sent
/// (nulls and headers included), every record once.
///
/// # Panics
/// When the property does not hold.
pub fn batched_fetch<L: Log>(log: &L, prefix: &str) {
    let topic = format!("{prefix}-batched");
    log.ensure_topic(&TopicSpec::new(topic.clone(), 2))
        .expect("create topic");
    let tps: Vec<TopicPartition> = (0..2)
        .map(|p| TopicPartition::new(topic.clone(), p))
        .collect();
    let mut p = log
        .transactional_producer(&format!("{prefix}-batched-tx"))
        .expect("producer");
    let mut sent: Vec<Vec<Record>> = vec![Vec::new(), Vec::new()];
    for epoch in 0..3i64 {
        p.begin().expect("begin");
        for i in 0..500i64 {
            let n = epoch * 1000 + i;
            let r = shaped_record(n);
            let part = (n % 2) as usize;
            p.send(&tps[part], &r).expect("send");
            sent[part].push(r);
        }
        p.commit().expect("commit");
    }
    let ends: Vec<Offset> = tps.iter().map(|tp| p_end(log, prefix, tp)).collect();
    let mut c = log
        .consumer(&format!("{prefix}-batched-g"))
        .expect("consumer");
    c.assign(&tps).expect("assign");
    let deadline = Instant::now() + WAIT;
    let mut got: Vec<Vec<Record>> = vec![Vec::new(), Vec::new()];
    let mut last: HashMap<TopicPartition, Offset> = HashMap::new();
    while tps
        .iter()
        .zip(&ends)
        .any(|(tp, end)| c.position(tp).expect("position") < *end)
    {
        assert!(
            Instant::now() < deadline,
            "batched fetch did not reach {ends:?}"
        );
        for batch in c.fetch_batches(Duration::from_millis(200)).expect("fetch") {
            assert!(!batch.is_empty(), "a batch holds records");
            assert_eq!(
                batch.to_records().len(),
                batch.len(),
                "to_records keeps every record"
            );
            let part = tps
                .iter()
                .position(|tp| tp == batch.partition())
                .expect("a batch names an assigned partition");
            for (view, owned) in batch.iter().zip(batch.to_records()) {
                if let Some(prev) = last.insert(batch.partition().clone(), view.offset) {
                    assert!(
                        prev < view.offset,
                        "offsets of {} must increase",
                        batch.partition()
                    );
                }
                assert_eq!(
                    owned.record,
                    view.to_record(),
                    "views and owned records agree"
                );
                got[part].push(view.to_record());
            }
        }
    }
    assert_eq!(
        got, sent,
        "batches hand out each partition's records as sent, once"
    );
}

/// Record `n` of [`batched_fetch`]: every fifth with a null key, every
/// fifth with a null value, every seventh with headers (one of them null).
fn shaped_record(n: i64) -> Record {
    // Timestamps from 1: a producer may read 0 as "now".
    let ts = Timestamp(n + 1);
    let r = match n % 5 {
        0 => Record::new(None, Some(&n.to_be_bytes()), ts),
        1 => Record::new(Some(&n.to_be_bytes()), None, ts),
        _ => Record::new(Some(&n.to_be_bytes()), Some(&[7u8; 3]), ts),
    };
    if n % 7 == 0 {
        r.with_header("h", Some(b"x")).with_header("null", None)
    } else {
        r
    }
}

fn p_end<L: Log>(log: &L, prefix: &str, tp: &TopicPartition) -> Offset {
    log.consumer(&format!("{prefix}-batched-ends"))
        .expect("consumer")
        .end_offset(tp)
        .expect("end offset")
}

/// `purge_below` never loses a record at or past the offset it is given,
/// moves the beginning no further than that offset, and refuses an offset
/// past the end naming the partition.
///
/// # Panics
/// When the property does not hold.
pub fn purge_keeps_what_is_at_or_past_it<L: Log>(log: &L, prefix: &str) {
    let topic = format!("{prefix}-purge");
    log.ensure_topic(&TopicSpec::new(topic.clone(), 1))
        .expect("create topic");
    let tp = TopicPartition::new(topic.clone(), 0);
    let mut producer = log
        .transactional_producer(&format!("{prefix}-purge-tx"))
        .expect("producer");
    for epoch in 0..3 {
        producer.begin().expect("begin");
        for i in 0..10 {
            producer
                .send(&tp, &v(&format!("r{}", epoch * 10 + i)))
                .expect("send");
        }
        producer.commit().expect("commit");
    }
    let mut consumer = log
        .consumer(&format!("{prefix}-purge-reader"))
        .expect("consumer");
    let all = read_to_end(&mut consumer, std::slice::from_ref(&tp));
    assert_eq!(all.len(), 30, "records before the purge");
    let before = all[15].offset;
    log.purge_below(&tp, before).expect("purge");
    let mut consumer = log
        .consumer(&format!("{prefix}-purge-reader-2"))
        .expect("consumer");
    let start = consumer.beginning_offset(&tp).expect("beginning");
    assert!(
        start <= before,
        "the beginning {start:?} moved past {before:?}"
    );
    let kept = read_to_end(&mut consumer, std::slice::from_ref(&tp));
    let at_or_past: Vec<_> = kept.iter().filter(|r| r.offset >= before).collect();
    assert_eq!(
        values(&at_or_past.into_iter().cloned().collect::<Vec<_>>()),
        values(&all[15..]),
        "records at or past the purge offset"
    );
    let end = p_end(log, prefix, &tp);
    let err = log
        .purge_below(&tp, Offset(end.0 + 100))
        .expect_err("purging past the end");
    assert!(
        matches!(err, LogError::OffsetOutOfRange { .. }) && err.to_string().contains(&topic),
        "{err}"
    );
}

/// The at-least-once producer: its records are readable (read committed)
/// once flushed, whether or not transactions run beside it, and neither it
/// nor a transactional producer fences the other; offsets committed with
/// [`Log::commit_offsets`] are the group's committed offsets, metadata
/// included, where its consumers start.
///
/// # Panics
/// When the property does not hold.
pub fn at_least_once_producer<L: Log>(log: &L, prefix: &str) {
    let topic = format!("{prefix}-alos");
    log.ensure_topic(&TopicSpec::new(topic.clone(), 2))
        .expect("create topic");
    let (p0, p1) = (
        TopicPartition::new(topic.clone(), 0),
        TopicPartition::new(topic, 1),
    );
    let mut plain = log
        .producer(&format!("{prefix}-alos-client"))
        .expect("producer");
    plain.send(&p0, &v("a")).expect("send");
    plain.send(&p0, &v("b")).expect("send");
    plain.send(&p1, &v("c")).expect("send");
    plain.flush().expect("flush");
    plain
        .flush()
        .expect("a flush with nothing sent since the last one");

    let mut tx = log
        .transactional_producer(&format!("{prefix}-alos-tx"))
        .expect("transactional producer");
    tx.begin().expect("begin");
    tx.send(&p0, &v("t")).expect("send");
    tx.commit().expect("commit");
    plain
        .send(&p0, &v("d"))
        .and_then(|()| plain.flush())
        .expect("a transactional producer fences no at-least-once producer");
    tx.begin().expect("begin");
    tx.send(&p1, &v("u")).expect("send");
    tx.commit()
        .expect("an at-least-once producer fences no transactional producer");

    let mut c = log
        .consumer(&format!("{prefix}-alos-reader"))
        .expect("consumer");
    let got = read_to_end(&mut c, &[p0.clone(), p1.clone()]);
    let of = |tp: &TopicPartition| {
        let mine: Vec<FetchedRecord> = got.iter().filter(|r| r.partition == *tp).cloned().collect();
        values(&mine)
    };
    assert_eq!(
        of(&p0),
        ["a", "b", "t", "d"].map(|s| s.as_bytes().to_vec()),
        "flushed records are readable, in the order sent"
    );
    assert_eq!(of(&p1), ["c", "u"].map(|s| s.as_bytes().to_vec()));
    offsets_committed_outside_a_transaction(log, prefix, &p0, &p1);
}

/// Offsets committed with [`Log::commit_offsets`] (at the ends of `p0` and
/// `p1`) are the group's committed offsets, metadata included, where its
/// consumers start.
fn offsets_committed_outside_a_transaction<L: Log>(
    log: &L,
    prefix: &str,
    p0: &TopicPartition,
    p1: &TopicPartition,
) {
    let group = format!("{prefix}-alos-g");
    let ends = [
        (p0.clone(), p_end(log, prefix, p0)),
        (p1.clone(), p_end(log, prefix, p1)),
    ];
    let offsets: Vec<(TopicPartition, OffsetAndMetadata)> = ends
        .iter()
        .zip(["partition time 7", ""])
        .map(|((tp, end), metadata)| {
            (
                tp.clone(),
                OffsetAndMetadata {
                    offset: *end,
                    metadata: metadata.into(),
                },
            )
        })
        .collect();
    log.commit_offsets(&group, &offsets)
        .expect("commit offsets");
    let committed = log
        .committed_offsets(&group, &[p0.clone(), p1.clone()])
        .expect("committed offsets");
    let committed: Vec<(TopicPartition, OffsetAndMetadata)> = committed
        .into_iter()
        .map(|(tp, om)| (tp, om.expect("committed")))
        .collect();
    assert_eq!(committed, offsets, "committed offsets and metadata");
    let mut member = log.consumer(&group).expect("consumer");
    member.assign(std::slice::from_ref(p0)).expect("assign");
    assert_eq!(
        member.position(p0).expect("position"),
        ends[0].1,
        "the group's consumer starts at its committed offset"
    );
}

/// Every check above, in order.
///
/// # Panics
/// When a property does not hold.
pub fn all<L: Log>(log: &L, prefix: &str) {
    round_trip(log, prefix);
    per_key_ordering(log, prefix);
    aborted_epoch_invisible(log, prefix);
    committed_epoch_visible(log, prefix);
    zombie_fenced(log, prefix);
    restore_compacted(log, prefix);
    ensure_topic_checks_shape(log, prefix);
    batched_fetch(log, prefix);
    purge_keeps_what_is_at_or_past_it(log, prefix);
    at_least_once_producer(log, prefix);
}
