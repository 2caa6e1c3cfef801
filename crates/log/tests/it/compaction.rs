//! When compaction runs: only on a partition dirty enough, reading nothing
//! otherwise; and its settings are checked.

use stoatflow_log::{
    EmbeddedConfig, EmbeddedLog, Log, LogError, MaintenanceReport, Record, Timestamp,
    TopicPartition, TopicSpec, TransactionalProducer,
};

fn commit_rounds(log: &EmbeddedLog, tp: &TopicPartition, keys: u32, rounds: u32) {
    let mut p = log.transactional_producer("tx").expect("producer");
    for r in 0..rounds {
        p.begin().expect("begin");
        for k in 0..keys {
            let key = format!("k{k}");
            let value = [r as u8; 40];
            p.send(
                tp,
                &Record::new(Some(key.as_bytes()), Some(&value), Timestamp(1)),
            )
            .expect("send");
        }
        p.commit().expect("commit");
    }
}

#[test]
fn a_partition_that_did_not_change_enough_is_not_read_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = EmbeddedConfig {
        segment_bytes: 1_000,
        ..EmbeddedConfig::default()
    };
    let log = EmbeddedLog::open_with(dir.path(), config).expect("open");
    let tp = TopicPartition::new("cl", 0);
    log.create_topic(&TopicSpec::new("cl", 1).compacted())
        .expect("create");
    log.create_topic(&TopicSpec::new("plain", 1))
        .expect("create");
    commit_rounds(&log, &tp, 50, 10);
    let first = log.maintain(Timestamp(0)).expect("maintain");
    assert_eq!(first.compacted_partitions, 1, "{first:?}");
    assert!(
        first.compaction_read_bytes > 0 && first.compacted_records > 0,
        "{first:?}"
    );
    // Nothing changed: nothing read.
    assert_eq!(
        log.maintain(Timestamp(0)).expect("maintain"),
        MaintenanceReport::default()
    );
    // A little more, closing a segment, but well below half the closed
    // bytes: still nothing.
    let segments = || {
        std::fs::read_dir(dir.path().join("topics/cl/0"))
            .expect("partition dir")
            .count()
    };
    let before = segments();
    commit_rounds(&log, &tp, 50, 1);
    assert!(segments() > before, "a segment was closed");
    assert_eq!(
        log.maintain(Timestamp(0)).expect("maintain"),
        MaintenanceReport::default()
    );
    // Much more: compacted again.
    commit_rounds(&log, &tp, 50, 10);
    let again = log.maintain(Timestamp(0)).expect("maintain");
    assert_eq!(again.compacted_partitions, 1, "{again:?}");
    assert!(again.compacted_records > 0, "{again:?}");
}

#[test]
fn a_dirty_ratio_outside_zero_to_one_is_refused() {
    for ratio in [-0.1, 1.5, f64::NAN] {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = EmbeddedConfig {
            min_cleanable_dirty_ratio: ratio,
            ..EmbeddedConfig::default()
        };
        match EmbeddedLog::open_with(dir.path(), config) {
            Err(LogError::Config { key, .. }) => assert_eq!(key, "min_cleanable_dirty_ratio"),
            other => panic!("ratio {ratio}: {other:?}"),
        }
    }
}
