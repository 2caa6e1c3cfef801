//! The embedded log: the default backend, in-process and durable, with an
//! in-memory mode for tests.
//!
//! Owns: [`EmbeddedLog`], its [`EmbeddedConsumer`] and
//! [`EmbeddedProducer`], and the on-disk format. Must never know streams,
//! windows or watermarks, nor anything of Kafka beyond the broker interface.
//!
//! # Layout
//!
//! ```text
//! <data dir>/LOCK                              exclusive advisory lock (flock)
//! <data dir>/txn-<generation:020>.log          the transaction log
//! <data dir>/topics/<topic>/<partition>/<base offset:020>.seg   segments
//! ```
//!
//! Byte layouts of frames, batches and transaction-log entries are in
//! `format.rs` and `txlog.rs`; every frame carries a CRC-32 of its length and
//! body.
//!
//! # Commit protocol (why a crash at any byte is all-or-nothing)
//!
//! A transaction's records stay in the producer's memory until `commit`
//! (an aborted epoch never touches disk). `commit`, under the log's lock:
//!
//! 1. appends one or more batch frames to each touched partition's active
//!    segment, at offsets starting at the partition's committed end;
//! 2. `fdatasync`s every touched segment (and the partition directory when a
//!    segment was rolled);
//! 3. appends one `Commit` frame to the transaction log, naming every
//!    partition's new `[base, end)` and every group offset with its metadata;
//! 4. `fdatasync`s the transaction log. **This is the commit point.**
//!
//! On open, the transaction log is replayed: a torn last frame (short, or a
//! bad checksum at the very end) is truncated; a bad checksum with data
//! after it is corruption, reported with file and position. Each partition's
//! committed end is the one the last `Commit` gave it. Segments are scanned:
//! anything at or beyond the committed end (steps 1–2 of a commit whose
//! step 4 never finished) is truncated. If a partition holds *less* than its
//! committed end and only the last commit's records are missing (the file
//! was cut inside the last transaction), that last `Commit` frame is rolled
//! back as well: the state is exactly "before". Anything else missing or
//! damaged inside the committed range is [`LogError::Corrupt`], never skipped.
//!
//! The transaction log is rotated past a size: the whole state is written
//! as a `Checkpoint` frame to a new generation file (temp file, fsync,
//! rename, directory fsync), and older generations are deleted.
//!
//! Compaction and retention run in [`EmbeddedLog::maintain`], on closed
//! segments only; a compacted segment is written beside the old one and
//! renamed over it, so a crash leaves one or the other.

mod consumer;
mod format;
mod partition;
mod producer;
mod storage;
mod txlog;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

pub use consumer::EmbeddedConsumer;
pub use producer::EmbeddedProducer;

use self::format::FrameAt;
use self::partition::PartitionLog;
use self::storage::Store;
use self::txlog::{Entry, Meta};
use crate::broker::Log;
use crate::error::LogError;
use crate::types::{
    CleanupPolicy, OffsetAndMetadata, Timestamp, TopicPartition, TopicShape, TopicSpec,
};

/// Tuning of the embedded log.
#[derive(Debug, Clone)]
pub struct EmbeddedConfig {
    /// Roll the active segment of a partition past this size (default 64 MiB).
    pub segment_bytes: u64,
    /// Refuse records whose encoded size exceeds this (default 1 MiB, Kafka's default).
    pub max_record_bytes: usize,
    /// Checkpoint the transaction log past this size (default 16 MiB).
    pub txlog_rotate_bytes: u64,
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        EmbeddedConfig {
            segment_bytes: 64 << 20,
            max_record_bytes: 1 << 20,
            txlog_rotate_bytes: 16 << 20,
        }
    }
}

/// What [`EmbeddedLog::maintain`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaintenanceReport {
    /// Records removed by compaction.
    pub compacted_records: u64,
    /// Segments deleted by retention.
    pub deleted_segments: u64,
}

/// The embedded log. Cheap to clone; clones share one log.
///
/// ```
/// use stoatflow_log::{EmbeddedLog, Log, Consumer, TransactionalProducer};
/// use stoatflow_log::{Record, Timestamp, TopicPartition, TopicSpec};
/// let log = EmbeddedLog::in_memory();
/// log.create_topic(&TopicSpec::new("events", 1))?;
/// let tp = TopicPartition::new("events", 0);
/// let mut producer = log.transactional_producer("app-0")?;
/// producer.begin()?;
/// producer.send(&tp, &Record::new(Some(b"k"), Some(b"v"), Timestamp(1)))?;
/// producer.commit()?;
/// let mut consumer = log.consumer("group")?;
/// consumer.assign(&[tp])?;
/// let records = consumer.fetch(std::time::Duration::from_secs(1))?;
/// assert_eq!(records[0].record.value.as_deref(), Some(&b"v"[..]));
/// # Ok::<(), stoatflow_log::LogError>(())
/// ```
#[derive(Debug, Clone)]
pub struct EmbeddedLog {
    shared: Arc<Shared>,
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    /// Signalled after every commit.
    pub(crate) committed: Condvar,
    pub(crate) config: EmbeddedConfig,
    /// Held for the log's lifetime; dropping it releases the directory.
    _lock: Option<File>,
}

#[derive(Debug)]
pub(crate) struct State {
    pub(crate) meta: Meta,
    pub(crate) partitions: HashMap<TopicPartition, PartitionLog>,
    pub(crate) txlog: TxLog,
    pub(crate) root: Option<PathBuf>,
    pub(crate) read_buf: Vec<u8>,
}

#[derive(Debug)]
pub(crate) struct TxLog {
    pub(crate) path: PathBuf,
    pub(crate) store: Store,
    pub(crate) size: u64,
    pub(crate) generation: u64,
}

impl TxLog {
    pub(crate) fn append(&mut self, entry: &Entry) -> Result<(), LogError> {
        let mut frame = Vec::new();
        format::push_frame(&mut frame, &entry.encode());
        self.store.write_at(self.size, &frame, &self.path)?;
        self.store.sync(&self.path)?;
        self.size += frame.len() as u64;
        Ok(())
    }
}

fn txlog_name(generation: u64) -> String {
    format!("txn-{generation:020}.log")
}

impl EmbeddedLog {
    /// A log held in memory only (tests, examples). Same format and code as on disk.
    #[must_use]
    pub fn in_memory() -> Self {
        Self::in_memory_with(EmbeddedConfig::default())
    }

    /// An in-memory log with a given configuration.
    #[must_use]
    pub fn in_memory_with(config: EmbeddedConfig) -> Self {
        let txlog = TxLog {
            path: PathBuf::from(format!("memory:{}", txlog_name(0))),
            store: Store::Mem(Vec::new()),
            size: 0,
            generation: 0,
        };
        Self::from_state(
            State {
                meta: Meta::default(),
                partitions: HashMap::new(),
                txlog,
                root: None,
                read_buf: Vec::new(),
            },
            config,
            None,
        )
    }

    fn from_state(state: State, config: EmbeddedConfig, lock: Option<File>) -> Self {
        EmbeddedLog {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                committed: Condvar::new(),
                config,
                _lock: lock,
            }),
        }
    }

    /// Opens (creating if needed) a log in `dir` with the default configuration.
    ///
    /// # Errors
    /// [`LogError::Locked`] if another process (or another open log) holds the
    /// directory, [`LogError::Corrupt`] for damage that is not a torn tail,
    /// [`LogError::Io`].
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, LogError> {
        Self::open_with(dir, EmbeddedConfig::default())
    }

    /// Opens a log in `dir` with a given configuration. See [`EmbeddedLog::open`].
    ///
    /// # Errors
    /// As [`EmbeddedLog::open`].
    pub fn open_with(dir: impl AsRef<Path>, config: EmbeddedConfig) -> Result<Self, LogError> {
        let root = dir.as_ref().to_path_buf();
        storage::create_dir_all(&root)?;
        let lock_path = root.join("LOCK");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| LogError::io("opening", &lock_path, e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(LogError::Locked { dir: root }),
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(LogError::io("locking", &lock_path, e));
            }
        }
        let state = recover(&root)?;
        Ok(Self::from_state(state, config, Some(lock)))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.lock_state()
    }

    /// Compacts compacted topics and applies retention to the others, on
    /// closed segments. `now` is the wall-clock time retention is judged at.
    ///
    /// # Errors
    /// [`LogError::Io`], [`LogError::Corrupt`].
    pub fn maintain(&self, now: Timestamp) -> Result<MaintenanceReport, LogError> {
        let mut st = self.lock();
        let mut report = MaintenanceReport::default();
        let specs: Vec<TopicSpec> = st.meta.topics.values().cloned().collect();
        for spec in specs {
            for p in 0..spec.shape.partitions {
                let tp = TopicPartition::new(spec.name.clone(), p);
                let Some(part) = st.partitions.get_mut(&tp) else {
                    continue;
                };
                match spec.shape.cleanup {
                    CleanupPolicy::Compact => {
                        report.compacted_records += part.compact(CleanupPolicy::Compact)?;
                    }
                    CleanupPolicy::Delete => {
                        let cutoff = spec.retention.time.map(|d| {
                            now.0
                                .saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
                        });
                        report.deleted_segments +=
                            part.enforce_retention(spec.retention.bytes, cutoff)?;
                    }
                }
            }
        }
        Ok(report)
    }

    /// Where the log lives, `None` in memory.
    #[must_use]
    pub fn dir(&self) -> Option<PathBuf> {
        self.lock().root.clone()
    }
}

impl Shared {
    pub(crate) fn lock_state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-applied commit
        // visible: meta is updated only after the commit point.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl State {
    pub(crate) fn partition(&self, tp: &TopicPartition) -> Result<&PartitionLog, LogError> {
        self.partitions.get(tp).ok_or_else(|| self.unknown(tp))
    }

    pub(crate) fn unknown(&self, tp: &TopicPartition) -> LogError {
        match self.meta.topics.get(&tp.topic) {
            None => LogError::UnknownTopic {
                topic: tp.topic.clone(),
            },
            Some(spec) => LogError::UnknownPartition {
                topic: tp.topic.clone(),
                partition: tp.partition,
                partitions: spec.shape.partitions,
            },
        }
    }

    pub(crate) fn end(&self, tp: &TopicPartition) -> Result<u64, LogError> {
        self.meta
            .ends
            .get(tp)
            .copied()
            .ok_or_else(|| self.unknown(tp))
    }

    fn partition_dir(&self, tp: &TopicPartition) -> Option<PathBuf> {
        self.root.as_ref().map(|r| {
            r.join("topics")
                .join(&tp.topic)
                .join(tp.partition.0.to_string())
        })
    }

    /// Writes a checkpoint to a new transaction-log generation.
    pub(crate) fn rotate_txlog(&mut self) -> Result<(), LogError> {
        let generation = self.txlog.generation + 1;
        let mut frame = Vec::new();
        format::push_frame(&mut frame, &Entry::Checkpoint(self.meta.clone()).encode());
        match &self.root {
            None => {
                self.txlog = TxLog {
                    path: PathBuf::from(format!("memory:{}", txlog_name(generation))),
                    size: frame.len() as u64,
                    store: Store::Mem(frame),
                    generation,
                };
            }
            Some(root) => {
                let path = root.join(txlog_name(generation));
                let tmp = root.join(format!("{}.tmp", txlog_name(generation)));
                let mut store = Store::create_disk(&tmp)?;
                store.truncate(0, &tmp)?;
                store.write_at(0, &frame, &tmp)?;
                store.sync(&tmp)?;
                std::fs::rename(&tmp, &path).map_err(|e| LogError::io("renaming", &tmp, e))?;
                storage::sync_dir(root)?;
                let old = std::mem::replace(
                    &mut self.txlog,
                    TxLog {
                        path,
                        store,
                        size: frame.len() as u64,
                        generation,
                    },
                );
                storage::remove_file(&old.path)?;
                storage::sync_dir(root)?;
            }
        }
        Ok(())
    }
}

/// Opens the transaction log and segments in `root`, recovering as the
/// module documentation describes.
fn recover(root: &Path) -> Result<State, LogError> {
    // 1. The newest transaction-log generation.
    let mut generations = Vec::new();
    for (name, path) in storage::list_dir(root)? {
        if name.starts_with("txn-") && name.ends_with(".log.tmp") {
            storage::remove_file(&path)?;
        } else if let Some(g) = name
            .strip_prefix("txn-")
            .and_then(|n| n.strip_suffix(".log"))
            .and_then(|n| n.parse::<u64>().ok())
        {
            generations.push((g, path));
        }
    }
    generations.sort();
    let (generation, path) = generations
        .last()
        .cloned()
        .unwrap_or_else(|| (0, root.join(txlog_name(0))));
    for (_, old) in &generations[..generations.len().saturating_sub(1)] {
        storage::remove_file(old)?;
    }
    let mut store = Store::create_disk(&path)?;
    storage::sync_dir(root)?;
    let data = store.read_all(&path)?;
    let mut entries: Vec<(u64, Entry)> = Vec::new();
    let mut pos = 0usize;
    loop {
        match format::frame_at(&data, pos) {
            FrameAt::End => break,
            FrameAt::Valid { body, next } => {
                let e = Entry::decode(body).map_err(|m| LogError::Corrupt {
                    file: path.clone(),
                    position: pos as u64,
                    reason: m.0.to_owned(),
                })?;
                entries.push((pos as u64, e));
                pos = next;
            }
            FrameAt::Torn => {
                tracing::warn!(file = %path.display(), position = pos, "truncating torn transaction-log tail");
                store.truncate(pos as u64, &path)?;
                break;
            }
            FrameAt::Corrupt { reason } => {
                return Err(LogError::Corrupt {
                    file: path,
                    position: pos as u64,
                    reason,
                });
            }
        }
    }
    if generation > 0 && !matches!(entries.first(), Some((_, Entry::Checkpoint(_)))) {
        return Err(LogError::Corrupt {
            file: path,
            position: 0,
            reason: "a rotated transaction log must start with a checkpoint".into(),
        });
    }
    let mut meta_prev = Meta::default();
    for (_, e) in entries.iter().take(entries.len().saturating_sub(1)) {
        meta_prev.apply(e);
    }
    let mut meta = meta_prev.clone();
    if let Some((_, last)) = entries.last() {
        meta.apply(last);
    }

    // 2. Partitions.
    let mut partitions = HashMap::new();
    let mut short = Vec::new();
    for spec in meta.topics.values() {
        for p in 0..spec.shape.partitions {
            let tp = TopicPartition::new(spec.name.clone(), p);
            let dir = root.join("topics").join(&spec.name).join(p.to_string());
            let end = meta.ends.get(&tp).copied().unwrap_or(0);
            let (part, scan) = PartitionLog::open(tp.clone(), dir, end)?;
            if scan.data_end < end {
                short.push((tp.clone(), scan.data_end));
            }
            partitions.insert(tp, part);
        }
    }

    // 3. Roll back a last commit whose records were cut off.
    if !short.is_empty() {
        let rollback = match entries.last() {
            Some((at, Entry::Commit { parts, .. })) => short
                .iter()
                .all(|(tp, data_end)| {
                    parts
                        .iter()
                        .any(|part| &part.tp == tp && *data_end >= part.base)
                })
                .then_some(*at),
            _ => None,
        };
        match rollback {
            Some(at) => {
                tracing::warn!(file = %path.display(), position = at, "rolling back the last commit: its records were cut off");
                store.truncate(at, &path)?;
                meta = meta_prev;
            }
            None => {
                let (tp, data_end) = &short[0];
                let part = &partitions[tp];
                let seg = part.segments.last().expect("a partition has a segment");
                return Err(LogError::Corrupt {
                    file: seg.path.clone(),
                    position: seg.size,
                    reason: format!(
                        "partition {tp} holds records up to offset {data_end} but offset {} is committed",
                        meta.ends[tp]
                    ),
                });
            }
        }
    }
    for (tp, part) in &mut partitions {
        part.truncate_to(meta.ends.get(tp).copied().unwrap_or(0))?;
    }
    let size = store.len(&path)?;
    Ok(State {
        meta,
        partitions,
        txlog: TxLog {
            path,
            store,
            size,
            generation,
        },
        root: Some(root.to_path_buf()),
        read_buf: Vec::new(),
    })
}

impl Log for EmbeddedLog {
    type Consumer = EmbeddedConsumer;
    type Producer = EmbeddedProducer;

    fn create_topic(&self, spec: &TopicSpec) -> Result<(), LogError> {
        if spec.shape.partitions == 0 {
            return Err(LogError::Config {
                key: format!("topic {:?} partitions", spec.name),
                reason: "a topic needs at least one partition".into(),
            });
        }
        if spec.name.is_empty()
            || spec.name.contains(['/', '\\', '\0'])
            || spec.name.starts_with('.')
        {
            return Err(LogError::Config {
                key: format!("topic {:?}", spec.name),
                reason: "topic names must be non-empty, not start with '.', and contain no path separators".into(),
            });
        }
        let mut st = self.lock();
        if st.meta.topics.contains_key(&spec.name) {
            return Err(LogError::TopicExists {
                topic: spec.name.clone(),
            });
        }
        let entry = Entry::TopicCreated(spec.clone());
        st.txlog.append(&entry)?;
        st.meta.apply(&entry);
        for p in 0..spec.shape.partitions {
            let tp = TopicPartition::new(spec.name.clone(), p);
            let dir = st.partition_dir(&tp);
            let part = PartitionLog::create(tp.clone(), dir)?;
            st.partitions.insert(tp, part);
        }
        Ok(())
    }

    fn describe_topic(&self, topic: &str) -> Result<Option<TopicShape>, LogError> {
        Ok(self.lock().meta.topics.get(topic).map(|s| s.shape))
    }

    fn consumer(&self, group: &str) -> Result<EmbeddedConsumer, LogError> {
        Ok(EmbeddedConsumer::new(Arc::clone(&self.shared), group))
    }

    fn transactional_producer(&self, transactional_id: &str) -> Result<EmbeddedProducer, LogError> {
        let mut st = self.lock();
        let epoch = st
            .meta
            .producers
            .get(transactional_id)
            .map_or(0, |e| e.wrapping_add(1));
        let entry = Entry::ProducerInit {
            tid: transactional_id.to_owned(),
            epoch,
        };
        st.txlog.append(&entry)?;
        st.meta.apply(&entry);
        Ok(EmbeddedProducer::new(
            Arc::clone(&self.shared),
            transactional_id,
            epoch,
        ))
    }

    fn committed_offsets(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>, LogError> {
        let st = self.lock();
        Ok(partitions
            .iter()
            .map(|tp| {
                let om = st
                    .meta
                    .offsets
                    .get(&(group.to_owned(), tp.clone()))
                    .cloned();
                (tp.clone(), om)
            })
            .collect())
    }
}
