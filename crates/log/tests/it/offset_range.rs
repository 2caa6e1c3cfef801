//! Offsets outside a partition's readable range, in memory and on disk: a
//! position there is moved by the consumer's offset-reset policy at the
//! next fetch (or fails it), and a committed offset past the end is
//! refused.

use std::time::Duration;

use stoatflow_log::{
    Consumer, EmbeddedConfig, EmbeddedConsumer, EmbeddedLog, Log, LogError, Offset,
    OffsetAndMetadata, OffsetReset, Record, SeekTo, Timestamp, TopicPartition, TopicSpec,
    TransactionalProducer,
};

fn logs(config: &EmbeddedConfig) -> Vec<(&'static str, EmbeddedLog, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let disk = EmbeddedLog::open_with(dir.path(), config.clone()).expect("open");
    vec![
        ("memory", EmbeddedLog::in_memory_with(config.clone()), None),
        ("disk", disk, Some(dir)),
    ]
}

fn tp() -> TopicPartition {
    TopicPartition::new("t", 0)
}

/// Commits records `from..to` (their values are their offsets).
fn commit(log: &EmbeddedLog, from: u64, to: u64) {
    let mut p = log.transactional_producer("tx").expect("producer");
    p.begin().expect("begin");
    for n in from..to {
        p.send(
            &tp(),
            &Record::new(None, Some(&n.to_be_bytes()), Timestamp(1)),
        )
        .expect("send");
    }
    p.commit().expect("commit");
}

/// Fetches until the consumer's position reaches `end`; the offsets read.
fn offsets_to(c: &mut EmbeddedConsumer, end: u64) -> Vec<u64> {
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while c.position(&tp()).expect("position").0 < end {
        assert!(std::time::Instant::now() < deadline, "read {got:?}");
        got.extend(
            c.fetch(Duration::from_millis(50))
                .expect("fetch")
                .into_iter()
                .map(|r| r.offset.0),
        );
    }
    got
}

fn log_of_five(
    config: &EmbeddedConfig,
) -> Vec<(&'static str, EmbeddedLog, Option<tempfile::TempDir>)> {
    let logs = logs(config);
    for (_, log, _) in &logs {
        log.create_topic(&TopicSpec::new("t", 1)).expect("create");
        commit(log, 0, 5);
    }
    logs
}

#[test]
fn a_seek_past_the_end_is_reset_by_the_policy_at_the_next_fetch() {
    for reset in [OffsetReset::Earliest, OffsetReset::Latest] {
        let config = EmbeddedConfig {
            auto_offset_reset: reset,
            ..EmbeddedConfig::default()
        };
        for (mode, log, _dir) in log_of_five(&config) {
            let mut c = log.consumer("g").expect("consumer");
            c.assign(&[tp()]).expect("assign");
            c.seek(&tp(), SeekTo::Offset(Offset(8)))
                .expect("a seek alone is no error");
            assert_eq!(c.position(&tp()).expect("position"), Offset(8));
            let first = c.fetch(Duration::ZERO).expect("fetch");
            commit(&log, 5, 15);
            let mut got: Vec<u64> = first.iter().map(|r| r.offset.0).collect();
            got.extend(offsets_to(&mut c, 15));
            let want: Vec<u64> = match reset {
                OffsetReset::Earliest => (0..15).collect(),
                _ => (5..15).collect(),
            };
            assert_eq!(got, want, "{mode} {reset:?}: offsets 5 to 7 are delivered");
        }
    }
}

#[test]
fn with_none_the_fetch_fails_naming_the_partition_and_offsets() {
    for (mode, log, _dir) in log_of_five(&EmbeddedConfig::default()) {
        let mut c = log
            .consumer("g")
            .expect("consumer")
            .with_offset_reset(OffsetReset::None);
        c.assign(&[tp()]).expect("assign");
        c.seek(&tp(), SeekTo::Offset(Offset(8))).expect("seek");
        let err = c.fetch(Duration::ZERO).expect_err("out of range");
        assert!(
            matches!(
                err,
                LogError::OffsetOutOfRange {
                    offset: Offset(8),
                    start: Offset(0),
                    end: Offset(5),
                    ..
                }
            ),
            "{mode}: {err:?}"
        );
        assert!(
            err.to_string().contains("\"t\" partition 0"),
            "{mode}: {err}"
        );
        c.seek(&tp(), SeekTo::Offset(Offset(5)))
            .expect("seek to the end");
        assert!(c.fetch(Duration::ZERO).expect("in range").is_empty());
    }
}

/// Below the log start (after a purge) the policy applies too.
#[test]
fn a_position_below_the_log_start_is_reset_or_refused() {
    let config = EmbeddedConfig {
        segment_bytes: 1,
        ..EmbeddedConfig::default()
    };
    for (mode, log, _dir) in logs(&config) {
        log.create_topic(&TopicSpec::new("t", 1)).expect("create");
        for n in 0..5 {
            commit(&log, n, n + 1);
        }
        log.purge_below(&tp(), Offset(3)).expect("purge");
        let mut c = log
            .consumer("g")
            .expect("consumer")
            .with_offset_reset(OffsetReset::None);
        c.assign(&[tp()]).expect("assign");
        c.seek(&tp(), SeekTo::Offset(Offset(1))).expect("seek");
        let err = c.fetch(Duration::ZERO).expect_err("below the start");
        assert!(
            matches!(
                err,
                LogError::OffsetOutOfRange {
                    offset: Offset(1),
                    start: Offset(3),
                    ..
                }
            ),
            "{mode}: {err:?}"
        );
        let mut c = log.consumer("g").expect("consumer");
        c.assign(&[tp()]).expect("assign");
        c.seek(&tp(), SeekTo::Offset(Offset(1))).expect("seek");
        assert_eq!(offsets_to(&mut c, 5), vec![3, 4], "{mode}: earliest");
    }
}

#[test]
fn a_committed_offset_past_the_end_is_refused() {
    for (mode, log, _dir) in log_of_five(&EmbeddedConfig::default()) {
        let om = |o: u64| OffsetAndMetadata {
            offset: Offset(o),
            metadata: String::new(),
        };
        let mut p = log.transactional_producer("offsets").expect("producer");
        p.begin().expect("begin");
        let err = p
            .send_offsets("app", &[(tp(), om(u64::MAX))])
            .expect_err("past the end");
        let msg = err.to_string();
        assert!(
            msg.contains(&u64::MAX.to_string())
                && msg.contains("\"t\" partition 0")
                && msg.contains("..=5"),
            "{mode}: {msg}"
        );
        // The records of the transaction itself count: 5 + 2.
        p.send(&tp(), &Record::new(None, Some(b"a"), Timestamp(1)))
            .expect("send");
        p.send(&tp(), &Record::new(None, Some(b"b"), Timestamp(1)))
            .expect("send");
        let err = p
            .send_offsets("app", &[(tp(), om(8))])
            .expect_err("past the end after this transaction");
        assert!(err.to_string().contains("..=7"), "{mode}: {err}");
        p.send_offsets("app", &[(tp(), om(7))])
            .expect("at the end after this transaction");
        p.commit().expect("commit");
        let committed = log.committed_offsets("app", &[tp()]).expect("committed");
        assert_eq!(committed[0].1.as_ref().map(|o| o.offset), Some(Offset(7)));

        let err = log
            .commit_offsets("app", &[(tp(), om(8))])
            .expect_err("past the end");
        assert!(
            matches!(
                err,
                LogError::OffsetOutOfRange {
                    offset: Offset(8),
                    end: Offset(7),
                    ..
                }
            ),
            "{mode}: {err:?}"
        );
        log.commit_offsets("app", &[(tp(), om(7))])
            .expect("at the end");
        let committed = log.committed_offsets("app", &[tp()]).expect("committed");
        assert_eq!(committed[0].1.as_ref().map(|o| o.offset), Some(Offset(7)));
    }
}
