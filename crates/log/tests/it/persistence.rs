//! What survives a reopen, compaction and retention.

use std::time::Duration;

use stoatflow_log::contract::read_to_end;
use stoatflow_log::{
    Consumer, EmbeddedConfig, EmbeddedLog, Log, Offset, OffsetAndMetadata, Record, Retention,
    Timestamp, TopicPartition, TopicSpec, TransactionalProducer,
};

fn commit(log: &EmbeddedLog, tid: &str, tp: &TopicPartition, records: &[Record]) {
    let mut p = log.transactional_producer(tid).expect("producer");
    p.begin().expect("begin");
    for r in records {
        p.send(tp, r).expect("send");
    }
    p.commit().expect("commit");
}

#[test]
fn records_offsets_and_epochs_survive_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tp = TopicPartition::new("t", 0);
    let src = TopicPartition::new("src", 0);
    {
        let log = EmbeddedLog::open(dir.path()).expect("open");
        log.create_topic(&TopicSpec::new("t", 1)).expect("create");
        log.create_topic(&TopicSpec::new("src", 1)).expect("create");
        let mut p = log.transactional_producer("tx").expect("producer");
        p.begin().expect("begin");
        p.send(&tp, &Record::new(Some(b"k"), Some(b"v"), Timestamp(5)))
            .expect("send");
        for _ in 0..9 {
            p.send(&src, &Record::new(None, Some(b"s"), Timestamp(5)))
                .expect("send");
        }
        p.send_offsets(
            "app",
            &[(
                src.clone(),
                OffsetAndMetadata {
                    offset: Offset(9),
                    metadata: "m".into(),
                },
            )],
        )
        .expect("offsets");
        p.commit().expect("commit");
        // An uncommitted epoch at "crash" time.
        p.begin().expect("begin");
        p.send(&tp, &Record::new(Some(b"k"), Some(b"lost"), Timestamp(6)))
            .expect("send");
    }
    let log = EmbeddedLog::open(dir.path()).expect("reopen");
    let mut c = log.consumer("reader").expect("consumer");
    let got = read_to_end(&mut c, std::slice::from_ref(&tp));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].record.value.as_deref(), Some(&b"v"[..]));
    let committed = log.committed_offsets("app", &[src]).expect("committed");
    assert_eq!(
        committed[0]
            .1
            .as_ref()
            .map(|o| (o.offset, o.metadata.as_str())),
        Some((Offset(9), "m"))
    );
    // Epochs are durable: a producer from before the reopen is fenced by a new one,
    // and the new one's epoch is past the old.
    let p = log.transactional_producer("tx").expect("producer");
    assert_eq!(p.epoch(), 1);
}

#[test]
fn compaction_keeps_the_latest_value_of_each_key_and_offsets() {
    let config = EmbeddedConfig {
        segment_bytes: 256,
        ..EmbeddedConfig::default()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let tp = TopicPartition::new("cl", 0);
    let log = EmbeddedLog::open_with(dir.path(), config.clone()).expect("open");
    log.create_topic(&TopicSpec::new("cl", 1).compacted())
        .expect("create");
    for round in 0..20u32 {
        let recs: Vec<Record> = (0..5u32)
            .map(|k| {
                Record::new(
                    Some(format!("k{k}").as_bytes()),
                    Some(&round.to_be_bytes()),
                    Timestamp(1),
                )
            })
            .collect();
        commit(&log, "tx", &tp, &recs);
    }
    let mut c = log.consumer("r").expect("consumer");
    let before = read_to_end(&mut c, std::slice::from_ref(&tp));
    assert_eq!(before.len(), 100);
    let report = log.maintain(Timestamp(0)).expect("maintain");
    assert!(report.compacted_records > 50, "{report:?}");
    let after = read_to_end(&mut c, std::slice::from_ref(&tp));
    assert!(after.len() < before.len());
    // The latest record of each key is still there, at its original offset.
    for k in 0..5u32 {
        let key = format!("k{k}").into_bytes();
        let last_before = before
            .iter()
            .rev()
            .find(|r| r.record.key.as_ref() == Some(&key))
            .expect("key");
        let last_after = after
            .iter()
            .rev()
            .find(|r| r.record.key.as_ref() == Some(&key))
            .expect("key");
        assert_eq!(last_before, last_after);
    }
    drop(c);
    drop(log);
    let log = EmbeddedLog::open_with(dir.path(), config).expect("reopen after compaction");
    let mut c = log.consumer("r").expect("consumer");
    assert_eq!(read_to_end(&mut c, std::slice::from_ref(&tp)), after);
}

#[test]
fn retention_by_size_and_time_drops_closed_segments() {
    let config = EmbeddedConfig {
        segment_bytes: 200,
        ..EmbeddedConfig::default()
    };
    let log = EmbeddedLog::in_memory_with(config);
    let sized = TopicPartition::new("sized", 0);
    let timed = TopicPartition::new("timed", 0);
    log.create_topic(&TopicSpec::new("sized", 1).with_retention(Retention {
        bytes: Some(1000),
        time: None,
    }))
    .expect("create");
    log.create_topic(&TopicSpec::new("timed", 1).with_retention(Retention {
        bytes: None,
        time: Some(Duration::from_secs(10)),
    }))
    .expect("create");
    for i in 0..50i64 {
        let r = Record::new(Some(b"k"), Some(&[0u8; 50]), Timestamp(i * 1000));
        commit(&log, "tx", &sized, std::slice::from_ref(&r));
        commit(&log, "tx", &timed, std::slice::from_ref(&r));
    }
    let report = log.maintain(Timestamp(50_000)).expect("maintain");
    assert!(report.deleted_segments > 0, "{report:?}");
    let mut c = log.consumer("r").expect("consumer");
    let sized_left = read_to_end(&mut c, std::slice::from_ref(&sized));
    assert!(sized_left.len() < 50 && !sized_left.is_empty());
    assert_eq!(
        sized_left.last().map(|r| r.offset),
        Some(Offset(49)),
        "the newest records stay"
    );
    let timed_left = read_to_end(&mut c, std::slice::from_ref(&timed));
    assert!(
        timed_left.iter().all(|r| r.record.timestamp.0 >= 35_000),
        "older segments dropped"
    );
    assert!(timed_left.len() >= 10);
}

#[test]
fn a_purge_frees_the_segments_below_its_offset_and_survives_a_reopen() {
    let config = EmbeddedConfig {
        segment_bytes: 200,
        ..EmbeddedConfig::default()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let tp = TopicPartition::new("repartition", 0);
    {
        let log = EmbeddedLog::open_with(dir.path(), config.clone()).expect("open");
        log.create_topic(&TopicSpec::new("repartition", 1))
            .expect("create");
        for i in 0..30i64 {
            let r = Record::new(Some(b"k"), Some(&[2u8; 50]), Timestamp(i));
            commit(&log, "tx", &tp, std::slice::from_ref(&r));
        }
        log.purge_below(&tp, Offset(20)).expect("purge");
        let mut c = log.consumer("r").expect("consumer");
        let start = c.beginning_offset(&tp).expect("beginning");
        assert!(start > Offset(0) && start <= Offset(20), "start {start:?}");
        // Unlimited retention: upkeep keeps everything the purge kept.
        log.upkeep(Timestamp(i64::MAX)).expect("upkeep");
        assert_eq!(c.beginning_offset(&tp).expect("beginning"), start);
    }
    let log = EmbeddedLog::open_with(dir.path(), config).expect("reopen");
    let mut c = log.consumer("r").expect("consumer");
    let kept = read_to_end(&mut c, std::slice::from_ref(&tp));
    assert!(kept[0].offset > Offset(0) && kept[0].offset <= Offset(20));
    assert_eq!(kept.last().map(|r| r.offset), Some(Offset(29)));
    let offsets: Vec<u64> = kept.iter().map(|r| r.offset.0).collect();
    let expected: Vec<u64> = (offsets[0]..30).collect();
    assert_eq!(offsets, expected, "nothing past the new start is lost");
    // A reader that has consumed everything: the purge at the end frees
    // the active segment too, and the partition goes on from there.
    log.purge_below(&tp, Offset(30)).expect("purge to the end");
    assert_eq!(c.beginning_offset(&tp).expect("beginning"), Offset(30));
    drop(c);
    drop(log);
    let config = EmbeddedConfig {
        segment_bytes: 200,
        ..EmbeddedConfig::default()
    };
    let log = EmbeddedLog::open_with(dir.path(), config).expect("reopen after a purge to the end");
    let mut c = log.consumer("r2").expect("consumer");
    assert_eq!(c.beginning_offset(&tp).expect("beginning"), Offset(30));
    let r = Record::new(Some(b"k"), Some(&[3u8; 50]), Timestamp(31));
    commit(&log, "tx", &tp, std::slice::from_ref(&r));
    let after = read_to_end(&mut c, std::slice::from_ref(&tp));
    assert_eq!(
        after.iter().map(|r| r.offset.0).collect::<Vec<_>>(),
        vec![30]
    );
}

#[test]
fn retention_records_the_log_start_so_a_lost_first_segment_is_not_retention() {
    use crate::files::{materialize, segments, snapshot};
    let config = EmbeddedConfig {
        segment_bytes: 200,
        ..EmbeddedConfig::default()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let tp = TopicPartition::new("sized", 0);
    let before_retention;
    {
        let log = EmbeddedLog::open_with(dir.path(), config.clone()).expect("open");
        log.create_topic(&TopicSpec::new("sized", 1).with_retention(Retention {
            bytes: Some(600),
            time: None,
        }))
        .expect("create");
        for i in 0..30i64 {
            let r = Record::new(Some(b"k"), Some(&[1u8; 50]), Timestamp(i));
            commit(&log, "tx", &tp, std::slice::from_ref(&r));
        }
        before_retention = snapshot(dir.path());
        let report = log.maintain(Timestamp(0)).expect("maintain");
        assert!(report.deleted_segments > 0, "{report:?}");
    }
    let after = snapshot(dir.path());
    let read = |files: &crate::files::Files| {
        let d = materialize(files);
        let log = EmbeddedLog::open_with(d.path(), config.clone())?;
        let mut c = log.consumer("r")?;
        Ok::<_, stoatflow_log::LogError>(read_to_end(&mut c, std::slice::from_ref(&tp)))
    };
    let kept = read(&after).expect("opens after retention");
    assert!(!kept.is_empty() && kept[0].offset > Offset(0));
    assert_eq!(kept.last().map(|r| r.offset), Some(Offset(29)));
    // The process stopped after recording the new start, before deleting
    // the files: the next open finishes the job.
    let mut interrupted = before_retention.clone();
    let txlog = crate::files::txlog(&after);
    interrupted.insert(txlog.clone(), after[&txlog].clone());
    assert_eq!(read(&interrupted).expect("opens"), kept);
    // The first kept segment lost: records the log still holds are missing.
    let mut lost = after.clone();
    lost.remove(&segments(&after, "sized", 0)[0]);
    let err = read(&lost).expect_err("a lost first segment is not retention");
    assert!(err.to_string().contains("sized-0"), "{err}");
}

/// Compaction used to drop the last record of a closed segment when a later
/// one superseded it; a reader then stopped at that segment's end without
/// an error. Each closed segment now keeps its last record.
#[test]
fn a_reader_of_a_compacted_topic_does_not_stall_at_a_compacted_segment_end() {
    let config = EmbeddedConfig {
        segment_bytes: 100,
        ..EmbeddedConfig::default()
    };
    let log = EmbeddedLog::in_memory_with(config);
    let tp = TopicPartition::new("cl", 0);
    log.create_topic(&TopicSpec::new("cl", 1).compacted())
        .expect("create");
    // Two records per segment; the second segment's first record (key a)
    // stays the newest of its key, its last (key 0) is superseded.
    for (i, key) in [b"k0", b"k1", b"ka", b"k0", b"k1", b"k0"]
        .iter()
        .enumerate()
    {
        let value = [i as u8];
        commit(
            &log,
            "tx",
            &tp,
            &[Record::new(Some(*key), Some(&value), Timestamp(1))],
        );
    }
    let report = log.maintain(Timestamp(0)).expect("maintain");
    assert!(report.compacted_records > 0, "{report:?}");
    let seen = crate::observe::observe(&log, &["cl"], std::slice::from_ref(&tp), "g", &[])
        .unwrap_or_else(|e| panic!("reading the compacted topic: {e:?}"));
    let offsets: Vec<u64> = seen.records.iter().map(|r| r.2).collect();
    for newest in [2, 4, 5] {
        assert!(offsets.contains(&newest), "{offsets:?}");
    }
}

/// A fetch that fills its byte budget just after crossing into a new
/// segment (the first frame of the next segment read whole past the
/// budget) resumes inside that segment: no record of it is skipped. Before
/// the fix the position jumped to the segment's end, losing the rest of it
/// (found by the end-to-end tumbling count on 20 M events, which lost the
/// whole last segment of each partition).
#[test]
fn a_fetch_ending_mid_segment_after_a_segment_boundary_skips_nothing() {
    let config = EmbeddedConfig {
        // Segments of ten 103 KB frames (1 028 KB): a fetch (1 MiB per
        // partition) reads one whole, has 20 KB of budget left, and reads
        // the next segment's first frame whole past it.
        segment_bytes: 1_000_000,
        ..EmbeddedConfig::default()
    };
    let tp = TopicPartition::new("t", 0);
    let dir = tempfile::tempdir().expect("tempdir");
    for log in [
        EmbeddedLog::in_memory_with(config.clone()),
        EmbeddedLog::open_with(dir.path(), config.clone()).expect("open"),
    ] {
        log.create_topic(&TopicSpec::new("t", 1)).expect("create");
        let value = vec![7u8; 1_000];
        let mut n = 0u32;
        for _ in 0..40 {
            let recs: Vec<Record> = (0..100)
                .map(|_| {
                    n += 1;
                    Record::new(Some(&n.to_be_bytes()), Some(&value), Timestamp(1))
                })
                .collect();
            commit(&log, "tx", &tp, &recs);
        }
        let mut c = log.consumer("r").expect("consumer");
        let got = read_to_end(&mut c, std::slice::from_ref(&tp));
        let keys: Vec<u32> = got
            .iter()
            .map(|r| u32::from_be_bytes(r.record.key.as_deref().unwrap().try_into().unwrap()))
            .collect();
        assert_eq!(
            keys,
            (1..=4_000).collect::<Vec<u32>>(),
            "every record, once, in order"
        );
    }
}
