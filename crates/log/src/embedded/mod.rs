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
//! body. Segment files are held open through a bounded pool
//! (`file_pool.rs`, [`EmbeddedConfig::max_open_segments`]), so the number of
//! segments is not bounded by the process's limit on open files, and the
//! descriptors a log holds stay flat however long it runs.
//!
//! # Commit protocol (why a crash at any byte is all-or-nothing)
//!
//! A transaction's records stay in the producer's memory until `commit`
//! (an aborted epoch never touches disk). Commits run one at a time (the
//! commit order lock, taken before the log's lock). `commit`:
//!
//! 1. under the log's lock, appends one or more batch frames to each touched
//!    partition's active segment, at offsets starting at the partition's
//!    committed end (readers stop at the committed end, so they see none of
//!    it);
//! 2. *without* the log's lock, `fdatasync`s every touched segment (the
//!    partition directory is synced when a segment is rolled, in step 1):
//!    fetches, sends and upkeep go on while the disk works;
//! 3. under the log's lock again, checks the producer is still the newest
//!    of its id (a fence may have come during step 2) and appends one
//!    `Commit` frame to the transaction log, naming every partition's new
//!    `[base, end)` and every group offset with its metadata;
//! 4. `fdatasync`s the transaction log. **This is the commit point.** Only
//!    then do the committed ends move.
//!
//! A failure in any step truncates what step 1 wrote; the ends never moved.
//!
//! On open, recovery first reads and checks everything, then repairs; a
//! failed open changes no file. The transaction log is replayed, each
//! entry checked against the state it follows; its tail is dropped only if
//! it is what a crash can leave of one unsynced append (a prefix, sectors
//! of zeros, no valid frame after it: `format::is_torn_append`), anything
//! else is [`LogError::Corrupt`] with file and position. A rotated
//! generation's checkpoint must be whole. Segments are scanned: every one
//! but the last must be whole and begin where the previous one ends (the
//! first at the recorded log start), so a gap or a cut closed segment is
//! `Corrupt`. In the last segment, bytes after the committed records
//! (steps 1–2 of a commit whose step 4 never finished) are truncated; a
//! valid batch there must belong to the next transaction. If a partition
//! holds *less* than its committed end, and exactly the last commit's
//! records are missing, that last `Commit` frame is rolled back as well:
//! the state is exactly "before". Anything else missing or damaged inside
//! the committed range is `Corrupt`, never skipped.
//!
//! The transaction log is rotated past a size, after a commit: the whole
//! state is written as a `Checkpoint` frame to a new generation file (temp
//! file, fsync, rename, directory fsync), and the older generation is
//! deleted once the rename is durable. A failed rotation is logged and
//! retried; it never fails the commit that triggered it.
//!
//! Compaction and retention run in [`EmbeddedLog::maintain`], on closed
//! segments only. Retention records the new log start durably, then
//! removes files, under the lock. Compaction (`cleaner/`) runs a
//! partition only when enough of it changed since its last pass, builds
//! its key map in bounded memory, and reads and writes without the lock:
//! it takes it only to decide, to take read handles, and to swap a
//! rewritten segment in. A compacted segment is written beside the old one
//! (`<base>.seg.cleaned`, synced) and renamed over it, so a crash leaves
//! one or the other, and the next open removes a leftover copy. Every
//! closed segment keeps its last record, so it still ends where the next
//! begins.

mod cleaner;
mod consumer;
mod file_pool;
mod format;
mod partition;
mod producer;
mod record_time;
mod recovery;
mod storage;
mod topics;
mod txlog;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

pub use consumer::EmbeddedConsumer;
pub use producer::{EmbeddedPlainProducer, EmbeddedProducer};

use self::partition::PartitionLog;
use self::storage::Store;
use self::txlog::{Entry, Meta};
use crate::broker::Log;
use crate::error::LogError;
use crate::types::{
    CleanupPolicy, Offset, OffsetAndMetadata, OffsetReset, Timestamp, TopicPartition, TopicShape,
    TopicSpec,
};

/// Tuning of the embedded log.
#[derive(Debug, Clone)]
pub struct EmbeddedConfig {
    /// Roll the active segment of a partition past this size (default 64 MiB).
    pub segment_bytes: u64,
    /// Refuse records whose encoded size exceeds this (default 1 MiB, Kafka's default).
    /// At most 1 GiB: [`EmbeddedLog::open_with`] refuses more (in memory, more is taken
    /// as 1 GiB).
    pub max_record_bytes: usize,
    /// Checkpoint the transaction log past this size (default 16 MiB).
    pub txlog_rotate_bytes: u64,
    /// Compact a partition of a compacted topic only when at least this
    /// share of its closed segments' bytes was written since its last
    /// compaction (Kafka's `min.cleanable.dirty.ratio`; default 0.5). 0
    /// compacts whenever anything new is closed. Must lie in 0..=1:
    /// [`EmbeddedLog::open_with`] refuses other values (in memory they are
    /// taken as the nearest bound, NaN as the default).
    pub min_cleanable_dirty_ratio: f64,
    /// Bytes of the key → offset map one compaction builds (Kafka's
    /// `log.cleaner.dedupe.buffer.size`; default 32 MiB): 24 bytes a key,
    /// filled to three quarters, and never fewer than 16 keys. A partition
    /// with more distinct keys in its new records is compacted over several
    /// passes.
    pub compaction_map_bytes: usize,
    /// Most topics the log holds (default 10 000). Kafka has no hard cap;
    /// this one keeps the log's bookkeeping, which is in memory, bounded.
    /// A creation past it, or an open of a directory that names more, is
    /// refused with an error naming this setting.
    pub max_topics: usize,
    /// Most partitions one topic may have (default 10 000). The log keeps
    /// a few hundred bytes in memory per partition and one directory and
    /// one segment file on disk, each created and synced when the topic is:
    /// 10 000 is a few megabytes and seconds, far past what one process
    /// consumes, and a mistyped count (`u32::MAX`) is refused before
    /// anything is written instead of exhausting memory. An open of a
    /// directory whose transaction log names a larger topic refuses it by
    /// name.
    pub max_partitions_per_topic: u32,
    /// Most partitions over all topics (default 100 000): with
    /// `max_topics`, what bounds the log's memory (tens of megabytes).
    pub max_partitions: u64,
    /// What a consumer does at a fetch when its position lies outside its
    /// partition's readable range (Kafka's `auto.offset.reset`; default
    /// [`OffsetReset::Earliest`], as Kafka Streams and this project's
    /// Kafka consumer set it). A consumer may override it
    /// ([`EmbeddedConsumer::with_offset_reset`]).
    pub auto_offset_reset: OffsetReset,
    /// Most segment files held open at once (default 64). Each segment is
    /// a file; a segment closes its file when it rolls, and past this many
    /// open the least recently used is closed (synced first if written);
    /// either opens again when next used. So a log of any number of
    /// segments opens, appends and serves fetches within the process's
    /// limit on open files, and a long run holds the active segments and
    /// those read lately, not every segment it ever wrote. Must be at
    /// least 1.
    pub max_open_segments: usize,
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        EmbeddedConfig {
            segment_bytes: 64 << 20,
            max_record_bytes: 1 << 20,
            txlog_rotate_bytes: 16 << 20,
            min_cleanable_dirty_ratio: cleaner::DEFAULT_MIN_DIRTY_RATIO,
            compaction_map_bytes: 32 << 20,
            max_topics: topics::DEFAULT_MAX_TOPICS,
            max_partitions_per_topic: topics::DEFAULT_MAX_PARTITIONS_PER_TOPIC,
            max_partitions: topics::DEFAULT_MAX_PARTITIONS,
            auto_offset_reset: OffsetReset::default(),
            max_open_segments: file_pool::DEFAULT_MAX_OPEN,
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
    /// Partitions compaction ran on (dirty enough).
    pub compacted_partitions: u64,
    /// Bytes of segment files compaction read.
    pub compaction_read_bytes: u64,
    /// Bytes of compacted segments written.
    pub compaction_written_bytes: u64,
    /// The largest key map a compaction built, in bytes.
    pub compaction_map_bytes: u64,
    /// Compacted segments thrown away because the segment was dropped
    /// (retention, a purge) while they were written.
    pub compaction_discarded_segments: u64,
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
    /// Taken by a commit for its whole length, before `state`: commits run
    /// one at a time, so a commit's offsets stay its own while it syncs its
    /// records without `state`.
    pub(crate) commits: Mutex<()>,
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
    /// The open segment files (`None` in memory).
    pub(crate) pool: Option<Arc<file_pool::FilePool>>,
}

#[derive(Debug)]
pub(crate) struct TxLog {
    pub(crate) path: PathBuf,
    pub(crate) store: Store,
    pub(crate) size: u64,
    pub(crate) generation: u64,
    /// This generation was renamed into place but the directory sync that
    /// makes the rename durable failed: the next append syncs it first.
    pub(crate) dir_pending: bool,
}

impl TxLog {
    pub(crate) fn new(path: PathBuf, store: Store, size: u64, generation: u64) -> Self {
        TxLog {
            path,
            store,
            size,
            generation,
            dir_pending: false,
        }
    }

    /// Appends `entry` and makes it durable. On an error nothing was
    /// appended: a frame written but not synced is cut off again, so that a
    /// failed call can never turn into a commit later.
    pub(crate) fn append(&mut self, entry: &Entry) -> Result<(), LogError> {
        if self.dir_pending
            && let Some(dir) = self.path.parent()
        {
            storage::sync_dir(dir)?;
            self.dir_pending = false;
        }
        let mut frame = Vec::new();
        format::push_frame(&mut frame, &entry.encode());
        let mut written = self.store.write_at(self.size, &frame, &self.path);
        if written.is_ok() {
            written = self.store.sync(&self.path);
        }
        if let Err(e) = written {
            if let Err(undo) = self.store.truncate(self.size, &self.path) {
                tracing::error!(file = %self.path.display(), error = %undo, "could not cut off a failed transaction-log append");
            }
            return Err(e);
        }
        self.size += frame.len() as u64;
        Ok(())
    }
}

pub(crate) fn txlog_name(generation: u64) -> String {
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
        let txlog = TxLog::new(
            PathBuf::from(format!("memory:{}", txlog_name(0))),
            Store::mem(Vec::new()),
            0,
            0,
        );
        Self::from_state(
            State {
                meta: Meta::default(),
                partitions: HashMap::new(),
                txlog,
                root: None,
                pool: None,
            },
            config,
            None,
        )
    }

    fn from_state(state: State, config: EmbeddedConfig, lock: Option<File>) -> Self {
        EmbeddedLog {
            shared: Arc::new(Shared {
                commits: Mutex::new(()),
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
        let ratio = config.min_cleanable_dirty_ratio;
        if !(0.0..=1.0).contains(&ratio) {
            return Err(LogError::Config {
                key: "min_cleanable_dirty_ratio".into(),
                reason: format!("must lie between 0 and 1, not {ratio}"),
            });
        }
        if config.max_open_segments == 0 {
            return Err(LogError::Config {
                key: "max_open_segments".into(),
                reason: "must be at least 1".into(),
            });
        }
        if config.max_record_bytes > format::MAX_RECORD_BYTES_LIMIT {
            return Err(LogError::Config {
                key: "max_record_bytes".into(),
                reason: format!(
                    "must be at most {} (1 GiB), not {}",
                    format::MAX_RECORD_BYTES_LIMIT,
                    config.max_record_bytes
                ),
            });
        }
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
        let state = recovery::recover(&root, &config)?;
        Ok(Self::from_state(state, config, Some(lock)))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.lock_state()
    }

    /// Compacts compacted topics and applies retention to the others, on
    /// closed segments; a `compact,delete` topic gets both, its retention
    /// judged against its partition's newest record (`record_time`). `now`
    /// is the wall-clock time a `delete` topic's retention is judged at.
    /// Compaction reads and writes without the log's lock, so commits and
    /// fetches go on meanwhile (see the module documentation).
    ///
    /// # Errors
    /// [`LogError::Io`], [`LogError::Corrupt`].
    pub fn maintain(&self, now: Timestamp) -> Result<MaintenanceReport, LogError> {
        let mut report = MaintenanceReport::default();
        for (tp, spec) in self.partitions_and_specs() {
            match spec.shape.cleanup {
                CleanupPolicy::Compact => cleaner::compact(&self.shared, &tp, &mut report)?,
                CleanupPolicy::CompactDelete => {
                    cleaner::compact(&self.shared, &tp, &mut report)?;
                    record_time::expire(&mut self.lock(), &tp, &spec, &mut report)?;
                }
                CleanupPolicy::Delete => self.apply_retention(&tp, &spec, now, &mut report)?,
            }
        }
        Ok(report)
    }

    /// Every partition with its topic's spec, as of now.
    fn partitions_and_specs(&self) -> Vec<(TopicPartition, TopicSpec)> {
        let st = self.lock();
        st.meta
            .topics
            .values()
            .flat_map(|spec| {
                (0..spec.shape.partitions)
                    .map(|p| (TopicPartition::new(spec.name.clone(), p), spec.clone()))
            })
            .collect()
    }

    /// Retention of `tp` judged at `now`: drops the closed segments past
    /// the spec's byte or time limit.
    fn apply_retention(
        &self,
        tp: &TopicPartition,
        spec: &TopicSpec,
        now: Timestamp,
        report: &mut MaintenanceReport,
    ) -> Result<(), LogError> {
        let mut st = self.lock();
        let Some(part) = st.partitions.get(tp) else {
            return Ok(());
        };
        let cutoff = spec.retention.time.map(|d| {
            now.0
                .saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        });
        if let Some(start) = part.retention_start(spec.retention.bytes, cutoff) {
            report.deleted_segments += st.move_log_start(tp, start)?;
        }
        Ok(())
    }

    /// Where the log lives, `None` in memory.
    #[must_use]
    pub fn dir(&self) -> Option<PathBuf> {
        self.lock().root.clone()
    }

    /// Every topic, by name.
    #[must_use]
    pub fn topics(&self) -> Vec<TopicSpec> {
        let mut topics: Vec<TopicSpec> = self.lock().meta.topics.values().cloned().collect();
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        topics
    }
}

impl Shared {
    /// The commit order (see [`Shared::commits`]); taken before `state`.
    pub(crate) fn lock_commits(&self) -> MutexGuard<'_, ()> {
        self.commits
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn lock_state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-applied commit
        // visible: meta is updated only after the commit point.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl State {
    /// Moves the log start of `tp` to `start` (a segment base) and drops the
    /// segments below it. The new start is durable before any file goes, so
    /// recovery can tell retention or a purge from a lost file.
    fn move_log_start(&mut self, tp: &TopicPartition, start: u64) -> Result<u64, LogError> {
        let entry = Entry::LogStart {
            tp: tp.clone(),
            start,
        };
        self.txlog.append(&entry)?;
        self.meta.apply(&entry);
        match self.partitions.get_mut(tp) {
            Some(part) => part.drop_below(start),
            None => Ok(0),
        }
    }

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

    pub(crate) fn partition_dir(&self, tp: &TopicPartition) -> Option<PathBuf> {
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
        let size = frame.len() as u64;
        let Some(root) = &self.root else {
            let path = PathBuf::from(format!("memory:{}", txlog_name(generation)));
            self.txlog = TxLog::new(path, Store::mem(frame), size, generation);
            return Ok(());
        };
        let path = root.join(txlog_name(generation));
        let tmp = root.join(format!("{}.tmp", txlog_name(generation)));
        let written = Store::create_disk(&tmp).and_then(|mut store| {
            store.truncate(0, &tmp)?;
            store.write_at(0, &frame, &tmp)?;
            store.sync(&tmp)?;
            storage::rename(&tmp, &path)?;
            Ok(store)
        });
        let store = match written {
            Ok(store) => store,
            Err(e) => {
                // The current generation is untouched and stays in use.
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        // From the rename on, the new generation is the newest on disk: use
        // it, and keep the old one until the rename is durable.
        let mut txlog = TxLog::new(path, store, size, generation);
        txlog.dir_pending = true;
        let old = std::mem::replace(&mut self.txlog, txlog);
        storage::sync_dir(root)?;
        self.txlog.dir_pending = false;
        if let Err(e) = storage::remove_file(&old.path).and_then(|()| storage::sync_dir(root)) {
            tracing::warn!(file = %old.path.display(), error = %e, "could not remove an old transaction-log generation; the next open removes it");
        }
        Ok(())
    }
}

impl Log for EmbeddedLog {
    type Consumer = EmbeddedConsumer;
    type Producer = EmbeddedProducer;
    type PlainProducer = EmbeddedPlainProducer;

    fn create_topic(&self, spec: &TopicSpec) -> Result<(), LogError> {
        topics::create(&mut self.lock(), spec, &self.shared.config)
    }

    fn describe_topic(&self, topic: &str) -> Result<Option<TopicShape>, LogError> {
        Ok(self.lock().meta.topics.get(topic).map(|s| s.shape))
    }

    fn consumer(&self, group: &str) -> Result<EmbeddedConsumer, LogError> {
        Ok(EmbeddedConsumer::new(Arc::clone(&self.shared), group))
    }

    fn purge_below(&self, tp: &TopicPartition, before: Offset) -> Result<(), LogError> {
        let mut st = self.lock();
        let end = st.end(tp)?;
        if before.0 > end {
            return Err(LogError::OffsetOutOfRange {
                topic: tp.topic.clone(),
                partition: tp.partition,
                offset: before,
                start: Offset(st.partition(tp)?.start()),
                end: Offset(end),
            });
        }
        if before.0 == end
            && let Some(part) = st.partitions.get_mut(tp)
        {
            part.roll_for_purge(end)?;
        }
        if let Some(start) = st.partition(tp)?.purge_start(before.0) {
            st.move_log_start(tp, start)?;
        }
        Ok(())
    }

    fn upkeep(&self, now: Timestamp) -> Result<(), LogError> {
        self.maintain(now).map(|_| ())
    }

    fn producer(&self, _client_id: &str) -> Result<EmbeddedPlainProducer, LogError> {
        Ok(EmbeddedPlainProducer::new(Arc::clone(&self.shared)))
    }

    fn commit_offsets(
        &self,
        group: &str,
        offsets: &[(TopicPartition, OffsetAndMetadata)],
    ) -> Result<(), LogError> {
        producer::commit_offsets(Arc::clone(&self.shared), group, offsets)
    }

    fn transactional_producer(&self, transactional_id: &str) -> Result<EmbeddedProducer, LogError> {
        if transactional_id == producer::UNFENCED {
            return Err(LogError::Config {
                key: "transactional.id".into(),
                reason: "must not be empty".into(),
            });
        }
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
