//! A small on-disk log to damage: four topics (five partitions, one of
//! them compacted, one with a size retention), tiny segments so partitions
//! span several files, several commits of records and group offsets with
//! compaction and retention run between them, and optionally a rotated
//! transaction log.

use stoatflow_log::{
    EmbeddedConfig, EmbeddedLog, Log, Offset, OffsetAndMetadata, Record, Retention, Timestamp,
    TopicPartition, TopicSpec, TransactionalProducer,
};

use crate::files::{Files, snapshot};
use crate::observe::{Observed, Unreadable, observe};

pub const TOPICS: [&str; 5] = ["a", "b", "c", "r", "src"];
pub const GROUP: &str = "app";

pub fn partitions() -> Vec<TopicPartition> {
    vec![
        TopicPartition::new("a", 0),
        TopicPartition::new("a", 1),
        TopicPartition::new("b", 0),
        TopicPartition::new("c", 0),
        TopicPartition::new("r", 0),
    ]
}

pub fn source() -> TopicPartition {
    TopicPartition::new("src", 0)
}

pub fn config(rotate: bool) -> EmbeddedConfig {
    EmbeddedConfig {
        segment_bytes: 160,
        txlog_rotate_bytes: if rotate { 600 } else { u64::MAX },
        // Fewer open files than segments: the pool closes and reopens.
        max_open_segments: 3,
        ..EmbeddedConfig::default()
    }
}

/// The files after every commit and what a reader saw after each:
/// `observed[k]` is the state after `k` commits.
pub struct Built {
    pub files: Files,
    /// The files before the last commit.
    pub before_last: Files,
    pub observed: Vec<Observed>,
    pub config: EmbeddedConfig,
}

pub fn read(log: &EmbeddedLog) -> Result<Observed, Unreadable> {
    observe(log, &TOPICS, &partitions(), GROUP, &[source()])
}

/// Commit `n` (counted from 1) touches `records` partitions round-robin,
/// one small record each, adds one record to the source and commits the
/// source offset `n` (its end, once every earlier commit was made).
pub fn commit(p: &mut impl TransactionalProducer, n: u64, records: usize) {
    p.begin().expect("begin");
    for (i, tp) in partitions()
        .iter()
        .cycle()
        .skip(n as usize)
        .take(records)
        .enumerate()
    {
        let key = format!("k{}", (n as usize + i) % 3);
        let value = format!("c{n}-{i}");
        let r = Record::new(
            Some(key.as_bytes()),
            Some(value.as_bytes()),
            Timestamp(n as i64),
        );
        p.send(tp, &r).expect("send");
    }
    let s = format!("s{n}");
    p.send(
        &source(),
        &Record::new(None, Some(s.as_bytes()), Timestamp(n as i64)),
    )
    .expect("send");
    p.send_offsets(
        GROUP,
        &[(
            source(),
            OffsetAndMetadata {
                offset: Offset(n),
                metadata: format!("m{n}"),
            },
        )],
    )
    .expect("offsets");
    p.commit().expect("commit");
}

/// The topics of [`TOPICS`].
pub fn create_topics(log: &EmbeddedLog) {
    log.create_topic(&TopicSpec::new("a", 2)).expect("create");
    log.create_topic(&TopicSpec::new("b", 1)).expect("create");
    log.create_topic(&TopicSpec::new("c", 1).compacted())
        .expect("create");
    log.create_topic(&TopicSpec::new("r", 1).with_retention(Retention {
        bytes: Some(250),
        time: None,
    }))
    .expect("create");
    log.create_topic(&TopicSpec::new("src", 1)).expect("create");
}

pub fn build(rotate: bool, commits: u64) -> Built {
    let config = config(rotate);
    let dir = tempfile::tempdir().expect("tempdir");
    let log = EmbeddedLog::open_with(dir.path(), config.clone()).expect("open");
    create_topics(&log);
    let mut p = log.transactional_producer("tx").expect("producer");
    let mut observed = vec![read(&log).expect("read")];
    let mut before_last = Files::new();
    for n in 1..=commits {
        if n == commits {
            before_last = snapshot(dir.path());
        }
        commit(&mut p, n, 3 + (n as usize % 4));
        if n < commits {
            log.maintain(Timestamp(0)).expect("maintain");
        }
        observed.push(read(&log).expect("read"));
    }
    drop(p);
    drop(log);
    Built {
        files: snapshot(dir.path()),
        before_last,
        observed,
        config,
    }
}
