//! Bad input gives a clear error: a locked directory, a topic of another
//! shape, unknown topics and partitions, misuse of transactions.

use stoatflow_log::{
    Consumer, EmbeddedLog, ErrorKind, Log, LogError, Record, Timestamp, TopicPartition, TopicSpec,
    TransactionalProducer,
};

#[test]
fn data_dir_locked_by_another_open_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = EmbeddedLog::open(dir.path()).expect("open");
    let err = EmbeddedLog::open(dir.path()).expect_err("second open must fail");
    assert!(matches!(err, LogError::Locked { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&dir.path().display().to_string()),
        "{err}"
    );
    assert!(err.to_string().contains("locked"), "{err}");
    drop(first);
    // Another test of this binary may be spawning a child at this instant;
    // until it execs, the child shares our lock's file description. Bounded retry.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match EmbeddedLog::open(dir.path()) {
            Ok(_) => break,
            Err(LogError::Locked { .. }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("open after release: {e}"),
        }
    }
}

#[test]
fn data_dir_locked_by_another_process() {
    // flock(2) is per open file description, so a lock held by a child
    // process conflicts exactly like one held here. Take it with flock(1).
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("LOCK"), b"").expect("lock file");
    let Ok(mut child) = std::process::Command::new("flock")
        .arg(dir.path().join("LOCK"))
        .args(["sleep", "30"])
        .spawn()
    else {
        // No flock(1): the in-process test above covers the same lock.
        eprintln!("flock(1) not found; cross-process lock test not run");
        return;
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let result = loop {
        match EmbeddedLog::open(dir.path()) {
            Err(e) => break Err(e),
            Ok(log) if std::time::Instant::now() > deadline => break Ok(log),
            Ok(log) => {
                drop(log);
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    let err = result.expect_err("the child holds the lock");
    assert!(matches!(err, LogError::Locked { .. }), "{err:?}");
}

#[test]
fn unknown_topic_and_partition_are_named() {
    let log = EmbeddedLog::in_memory();
    log.create_topic(&TopicSpec::new("t", 2)).expect("create");
    let mut c = log.consumer("g").expect("consumer");
    let err = c
        .assign(&[TopicPartition::new("nope", 0)])
        .expect_err("unknown topic");
    assert_eq!(err.to_string(), "topic \"nope\" does not exist");
    let err = c
        .assign(&[TopicPartition::new("t", 5)])
        .expect_err("unknown partition");
    assert!(
        err.to_string().contains("partition 5 of topic \"t\""),
        "{err}"
    );
    let mut p = log.transactional_producer("tx").expect("producer");
    p.begin().expect("begin");
    let err = p
        .send(
            &TopicPartition::new("t", 2),
            &Record::new(None, None, Timestamp(0)),
        )
        .expect_err("unknown partition");
    assert!(
        matches!(err, LogError::UnknownPartition { partitions: 2, .. }),
        "{err:?}"
    );
}

#[test]
fn transaction_misuse_is_a_state_error() {
    let log = EmbeddedLog::in_memory();
    log.create_topic(&TopicSpec::new("t", 1)).expect("create");
    let tp = TopicPartition::new("t", 0);
    let mut p = log.transactional_producer("tx").expect("producer");
    let err = p
        .send(&tp, &Record::new(None, None, Timestamp(0)))
        .expect_err("send before begin");
    assert!(matches!(err, LogError::TransactionState { .. }), "{err:?}");
    assert!(p.commit().is_err());
    p.begin().expect("begin");
    assert!(p.begin().is_err(), "nested begin");
    p.commit().expect("empty commit is fine");
}

#[test]
fn zero_partitions_and_bad_names_are_refused() {
    let log = EmbeddedLog::in_memory();
    let err = log
        .create_topic(&TopicSpec::new("t", 0))
        .expect_err("zero partitions");
    assert_eq!(err.kind(), ErrorKind::Fatal);
    assert!(log.create_topic(&TopicSpec::new("../escape", 1)).is_err());
    assert!(log.create_topic(&TopicSpec::new("", 1)).is_err());
}

#[test]
fn seek_on_an_unassigned_partition_is_refused() {
    let log = EmbeddedLog::in_memory();
    log.create_topic(&TopicSpec::new("t", 1)).expect("create");
    let mut c = log.consumer("g").expect("consumer");
    let err = c
        .seek(
            &TopicPartition::new("t", 0),
            stoatflow_log::SeekTo::Beginning,
        )
        .expect_err("not assigned");
    assert!(matches!(err, LogError::NotAssigned { .. }), "{err:?}");
}
