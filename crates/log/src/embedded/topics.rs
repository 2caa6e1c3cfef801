//! Creating a topic of the embedded log: the checks before anything is
//! written, and the order of writes that makes a creation all-or-nothing.
//!
//! Owns: [`Limits`] (the log's bounds on topics and partitions, checked at
//! creation and again on every topic a replayed transaction log names),
//! [`create`], and what a creation that never reached its commit point
//! leaves on disk ([`leftover`]).
//!
//! A creation writes every partition's directory and first segment file,
//! syncs the directories, and only then appends the topic's frame to the
//! transaction log: that frame is the commit point. A failure before it
//! removes what was written; a crash before it leaves a topic directory the
//! transaction log does not name, holding nothing but empty segment files,
//! which the next open (or the next creation of that name) removes. A
//! directory the transaction log does not name but that holds anything
//! else is still refused as damage.

use std::path::{Path, PathBuf};

use super::partition::{PartitionLog, SEGMENT_SUFFIX};
use super::storage;
use super::txlog::{Entry, Meta};
use super::{EmbeddedConfig, State};
use crate::error::LogError;
use crate::topic_name::check_topic_name;
use crate::types::{TopicPartition, TopicSpec};

/// The default of [`EmbeddedConfig::max_topics`].
pub(crate) const DEFAULT_MAX_TOPICS: usize = 10_000;
/// The default of [`EmbeddedConfig::max_partitions_per_topic`].
pub(crate) const DEFAULT_MAX_PARTITIONS_PER_TOPIC: u32 = 10_000;
/// The default of [`EmbeddedConfig::max_partitions`].
pub(crate) const DEFAULT_MAX_PARTITIONS: u64 = 100_000;

/// The log's bounds on topics and partitions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    topics: usize,
    per_topic: u32,
    total: u64,
}

impl Limits {
    pub(crate) fn of(config: &EmbeddedConfig) -> Self {
        Limits {
            topics: config.max_topics,
            per_topic: config.max_partitions_per_topic,
            total: config.max_partitions,
        }
    }

    /// Whether `spec` may join the topics of `meta`. `source` names the
    /// file the topic was read from, on open.
    pub(crate) fn admit(
        &self,
        meta: &Meta,
        spec: &TopicSpec,
        source: Option<&Path>,
    ) -> Result<(), LogError> {
        let from = source.map_or_else(String::new, |p| format!(" in {}", p.display()));
        let n = spec.shape.partitions;
        if n > self.per_topic {
            return Err(LogError::LimitExceeded {
                what: format!("topic {:?}{from} with {n} partitions", spec.name),
                setting: "max_partitions_per_topic",
                limit: u64::from(self.per_topic),
            });
        }
        if meta.topics.len() >= self.topics {
            return Err(LogError::LimitExceeded {
                what: format!(
                    "topic {:?}{from}, one more than the {} topics the log holds,",
                    spec.name,
                    meta.topics.len()
                ),
                setting: "max_topics",
                limit: self.topics as u64,
            });
        }
        let held: u64 = meta
            .topics
            .values()
            .map(|s| u64::from(s.shape.partitions))
            .sum();
        if held + u64::from(n) > self.total {
            return Err(LogError::LimitExceeded {
                what: format!(
                    "topic {:?}{from} with {n} partitions, beside the {held} partitions the log holds,",
                    spec.name
                ),
                setting: "max_partitions",
                limit: self.total,
            });
        }
        Ok(())
    }

    /// Whether every topic of a checkpoint lies within the bounds.
    pub(crate) fn admit_all(&self, topics: &Meta, source: &Path) -> Result<(), LogError> {
        let mut admitted = Meta::default();
        for spec in topics.topics.values() {
            self.admit(&admitted, spec, Some(source))?;
            admitted.topics.insert(spec.name.clone(), spec.clone());
        }
        Ok(())
    }
}

/// Creates topic `spec` in `st` (see the module documentation).
pub(crate) fn create(
    st: &mut State,
    spec: &TopicSpec,
    config: &EmbeddedConfig,
) -> Result<(), LogError> {
    check_topic_name(&spec.name)?;
    if let Some(reason) = spec.invalid() {
        return Err(LogError::Config {
            key: format!("topic {:?}", spec.name),
            reason: reason.into(),
        });
    }
    if st.meta.topics.contains_key(&spec.name) {
        return Err(LogError::TopicExists {
            topic: spec.name.clone(),
        });
    }
    Limits::of(config).admit(&st.meta, spec, None)?;
    let dir = st.root.as_ref().map(|r| r.join("topics").join(&spec.name));
    if let Some(d) = &dir
        && d.exists()
    {
        let leftover = leftover(d)?;
        tracing::warn!(dir = %leftover.display(), "removing the files of an unfinished creation of this topic");
        remove_leftover(&leftover)?;
    }
    let entry = Entry::TopicCreated(spec.clone());
    let written = partitions(st, spec, dir.as_deref()).and_then(|parts| {
        st.txlog.append(&entry)?;
        Ok(parts)
    });
    match written {
        Ok(parts) => {
            st.meta.apply(&entry);
            st.partitions.extend(parts);
            Ok(())
        }
        Err(e) => {
            if let Some(d) = &dir
                && let Err(undo) = remove_leftover(d)
            {
                tracing::warn!(dir = %d.display(), error = %undo, "could not remove the files of a failed topic creation; the next open or creation of the topic removes them");
            }
            Err(e)
        }
    }
}

/// Every partition of `spec`, its files written and their directories
/// synced (under `dir`, `None` in memory).
fn partitions(
    st: &State,
    spec: &TopicSpec,
    dir: Option<&Path>,
) -> Result<Vec<(TopicPartition, PartitionLog)>, LogError> {
    let mut parts = Vec::with_capacity(spec.shape.partitions as usize);
    for p in 0..spec.shape.partitions {
        let tp = TopicPartition::new(spec.name.clone(), p);
        let part_dir = st.partition_dir(&tp);
        parts.push((
            tp.clone(),
            PartitionLog::create(tp, part_dir, st.pool.clone())?,
        ));
    }
    if let Some(d) = dir {
        storage::sync_dir(d)?;
        if let Some(topics) = d.parent() {
            storage::sync_dir(topics)?;
            if let Some(root) = topics.parent() {
                storage::sync_dir(root)?;
            }
        }
    }
    Ok(parts)
}

/// Checks that the topic directory `dir`, which the transaction log does
/// not name, holds only what an unfinished creation writes (partition
/// directories of empty segment files) and returns it, or refuses it as
/// damage: the transaction log lost the frame of a topic that has records.
pub(crate) fn leftover(dir: &Path) -> Result<PathBuf, LogError> {
    let stranger = |file: PathBuf, what: &str| LogError::Corrupt {
        file,
        position: 0,
        reason: format!(
            "a topic directory the transaction log does not hold has {what}: the transaction log lost durable frames"
        ),
    };
    if !dir.is_dir() {
        return Err(stranger(dir.to_path_buf(), "a file in its place"));
    }
    for (name, part) in storage::list_dir(dir)? {
        if name.parse::<u32>().is_err() || !part.is_dir() {
            return Err(stranger(part, "an entry that is no partition directory"));
        }
        for (file, path) in storage::list_dir(&part)? {
            let empty = std::fs::symlink_metadata(&path)
                .map_err(|e| LogError::io("reading the size of", &path, e))?;
            if !file.ends_with(SEGMENT_SUFFIX) || !empty.is_file() || empty.len() > 0 {
                return Err(stranger(path, "records or other files"));
            }
        }
    }
    Ok(dir.to_path_buf())
}

/// Removes an unfinished creation's directory (checked by [`leftover`])
/// and makes the removal durable.
pub(crate) fn remove_leftover(dir: &Path) -> Result<(), LogError> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(LogError::io("removing", dir, e)),
    }
    match dir.parent() {
        Some(parent) => storage::sync_dir(parent),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::format;
    use super::super::storage::{Op, faults};
    use super::super::txlog::Entry;
    use crate::broker::Log;
    use crate::embedded::{EmbeddedLog, txlog_name};
    use crate::error::LogError;
    use crate::types::TopicSpec;

    fn topic_dir(root: &Path, topic: &str) -> std::path::PathBuf {
        root.join("topics").join(topic)
    }

    /// A creation that fails part-way (a partition directory, a segment
    /// file, a directory sync, the transaction-log frame) leaves no topic,
    /// no files, and a directory that reopens without it; the same name
    /// can then be created with another shape.
    #[test]
    fn a_creation_failing_part_way_leaves_nothing_a_reopen_sees() {
        for (op, name) in [
            (Op::Create, "3"),
            (Op::Create, ".seg"),
            (Op::SyncDir, "2"),
            (Op::SyncDir, "t"),
            (Op::Write, "txn-"),
        ] {
            let dir = tempfile::tempdir().expect("tempdir");
            let log = EmbeddedLog::open(dir.path()).expect("open");
            faults::fail_next(op, name);
            let err = log
                .create_topic(&TopicSpec::new("t", 5))
                .expect_err(&format!("{op:?} {name}: the injected failure"));
            assert!(matches!(err, LogError::Io { .. }), "{op:?} {name}: {err:?}");
            assert_eq!(log.describe_topic("t").expect("describe"), None);
            assert!(
                !topic_dir(dir.path(), "t").exists(),
                "{op:?} {name}: the partial topic's files are removed"
            );
            drop(log);
            let log = EmbeddedLog::open(dir.path()).expect("reopen");
            assert_eq!(log.describe_topic("t").expect("describe"), None);
            log.create_topic(&TopicSpec::new("t", 2))
                .expect("the name is free again");
            drop(log);
            let log = EmbeddedLog::open(dir.path()).expect("reopen after creation");
            assert_eq!(
                log.describe_topic("t")
                    .expect("describe")
                    .map(|s| s.partitions),
                Some(2)
            );
        }
    }

    /// What a crash in the middle of a creation leaves (partition
    /// directories of empty segments, no frame) is removed at open, and a
    /// creation of the same name over it starts from nothing.
    #[test]
    fn a_crashed_creation_is_removed_at_open_and_at_the_next_creation() {
        let dir = tempfile::tempdir().expect("tempdir");
        let leave_half_a_topic = |topic: &str, partitions: u32| {
            for p in 0..partitions {
                let d = topic_dir(dir.path(), topic).join(p.to_string());
                std::fs::create_dir_all(&d).expect("mkdir");
                std::fs::write(d.join(format!("{:020}.seg", 0)), b"").expect("segment");
            }
        };
        drop(EmbeddedLog::open(dir.path()).expect("open"));
        leave_half_a_topic("half", 3);
        let log = EmbeddedLog::open(dir.path()).expect("a leftover does not stop the open");
        assert!(!topic_dir(dir.path(), "half").exists(), "removed at open");
        assert_eq!(log.describe_topic("half").expect("describe"), None);

        leave_half_a_topic("again", 4);
        log.create_topic(&TopicSpec::new("again", 2))
            .expect("create over a leftover");
        let parts = std::fs::read_dir(topic_dir(dir.path(), "again"))
            .expect("list")
            .count();
        assert_eq!(parts, 2, "the leftover's extra partitions are gone");
        drop(log);
        EmbeddedLog::open(dir.path()).expect("reopen");
    }

    /// A topic directory the transaction log does not name that holds
    /// records is damage, refused by name, never removed.
    #[test]
    fn a_stranger_directory_holding_records_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(EmbeddedLog::open(dir.path()).expect("open"));
        let part = topic_dir(dir.path(), "lost").join("0");
        std::fs::create_dir_all(&part).expect("mkdir");
        let seg = part.join(format!("{:020}.seg", 0));
        std::fs::write(&seg, b"records").expect("segment");
        let Err(err) = EmbeddedLog::open(dir.path()) else {
            panic!("damage");
        };
        assert!(
            err.to_string().contains(&seg.display().to_string()),
            "{err}"
        );
        assert!(err.to_string().contains("lost durable frames"), "{err}");
        assert!(seg.exists(), "nothing is removed");
    }

    /// A transaction log naming a topic of `u32::MAX` partitions is refused
    /// by name at open, at once, without allocating for its partitions.
    #[test]
    fn an_open_refuses_a_topic_beyond_the_bound_by_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut bytes = Vec::new();
        format::push_frame(
            &mut bytes,
            &Entry::TopicCreated(TopicSpec::new("huge", u32::MAX)).encode(),
        );
        std::fs::write(dir.path().join(txlog_name(0)), &bytes).expect("transaction log");
        let started = std::time::Instant::now();
        let Err(err) = EmbeddedLog::open(dir.path()) else {
            panic!("beyond the bound");
        };
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "refused without allocating"
        );
        assert!(matches!(err, LogError::LimitExceeded { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains("\"huge\"") && msg.contains("4294967295"),
            "{msg}"
        );
        assert!(msg.contains("max_partitions_per_topic = 10000"), "{msg}");
        assert!(msg.contains(&txlog_name(0)), "names the file: {msg}");
    }
}
