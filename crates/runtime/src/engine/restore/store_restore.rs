//! A task's stores and their changelogs: reading the changelog partitions
//! back into the stores, each from where its restore starts (its beginning,
//! or a persistent store's checkpoint), turning entries back into the
//! store's layout, and the checkpoints of a clean close.
//!
//! Shared by the lanes (active tasks, restored before they process) and
//! the standby thread (warm copies that tail the changelogs). A lane's
//! restore answers the queries that allow stale answers between two
//! batches (docs/queries.md#stale). Owns no thread and no task; knows
//! nothing of barriers, the poll loop or the producer.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use stoatflow_log::{Consumer, Log, LogError, TopicPartition};
use stoatflow_state::{
    ChangelogEntry, ChangelogOffset, ChangelogPartition, ChangelogValueLayout, RestoreBatch,
    changelog_topic,
};
use stoatflow_streams::StreamTask;

use crate::engine::restore::changelog_read::{Delivery, EndsSeen, ReadLimits, read_batches};
use crate::error::RuntimeError;
use crate::observe::metrics::MetricsCells;
use crate::query::{ChangelogLag, LaneQuery, StaleRead, StaleSource};
use crate::task_id::TaskId;

/// How long a restore waits for its next batch before it looks at its
/// queries again.
const QUERY_POLL: Duration = Duration::from_millis(50);

/// Per changelog partition of a set of tasks: the task, the store and the
/// offset its restore starts from.
pub(crate) type ChangelogPartitions = BTreeMap<TopicPartition, (TaskId, String, u64)>;

/// Every changelog partition of `tasks`' stores (partition = the task's
/// partition), with where each one's restore starts: an in-memory store, or
/// a persistent one whose local copy was rebuilt, at the beginning; a
/// persistent one trusted from its checkpoint past it.
pub(crate) fn changelog_partitions(
    app: &str,
    tasks: &BTreeMap<TaskId, StreamTask>,
) -> ChangelogPartitions {
    let mut wanted = ChangelogPartitions::new();
    for (&id, task) in tasks {
        for store in task.store_names() {
            let tp = TopicPartition::new(changelog_topic(app, store), id.partition);
            let from = task
                .persistent_stores()
                .iter()
                .find(|p| p.name == store)
                .map_or(0, |p| {
                    p.recovery.restore_from(ChangelogPartition(id.partition)).0
                });
            wanted.insert(tp, (id, store.to_owned(), from));
        }
    }
    wanted
}

/// Applies committed changelog `entries` of `store` (in offset order) to
/// task `id`'s copy of it, in the store's layout; returns how many.
///
/// # Errors
/// A record without a key, or one the store refuses, naming the store.
pub(crate) fn apply_entries(
    tasks: &BTreeMap<TaskId, StreamTask>,
    id: TaskId,
    store: &str,
    entries: Vec<Result<ChangelogEntry, ChangelogEntry>>,
    metrics: Option<&MetricsCells>,
) -> Result<u64, RuntimeError> {
    let state = tasks[&id]
        .state_store(store)
        .expect("changelog partitions name only the task's stores");
    let mut list = entries
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|entry| RuntimeError::State {
            store: store.to_owned(),
            source: Box::new(entry.corrupt(store, "changelog record has no key")),
        })?;
    // Kafka Streams' layout on the log, the store's in memory.
    let layout = tasks[&id].changelog_value_layout(store);
    for entry in &mut list {
        layout.from_changelog(entry);
    }
    let total = list.len() as u64;
    if let Some(m) = metrics {
        m.restore_expected(total);
    }
    let mut state = state.borrow_mut();
    let n = stoatflow_state::restore(&mut *state, list, total, &mut |p| {
        tracing::debug!(store, task = %id, restored = p.restored, total = p.total, "restoring");
    })
    .map_err(|source| RuntimeError::State {
        store: store.to_owned(),
        source: Box::new(source),
    })?;
    if let Some(m) = metrics {
        m.restored(n);
    }
    Ok(n)
}

/// How a set of tasks' stores are read back from the log.
pub(crate) struct StoreReader<'a, L: Log> {
    pub(crate) log: &'a L,
    pub(crate) app: &'a str,
    /// The reading consumer's group (one nobody commits to).
    pub(crate) consumer: String,
    /// Give up after this long without progress.
    pub(crate) stall: Duration,
    /// Set when the restore's result is no longer wanted (the application
    /// closes while restoring): the reading stops early.
    pub(crate) cancel: Option<&'a AtomicBool>,
    /// The queries it answers while it restores (a lane's).
    pub(crate) queries: Option<&'a Receiver<Box<dyn LaneQuery>>>,
}

impl<L: Log> StoreReader<'_, L> {
    /// Reads every changelog partition of `tasks`' stores with one consumer,
    /// assigned once (reassigning a consumer partition by partition is
    /// slower, and librdkafka can trip over a quick succession of
    /// assignments), each from where its restore starts to its
    /// read-committed end as of the call, and applies them in offset order.
    /// The reading runs on a thread of its own (named after the calling
    /// lane's) while this one applies what it has read, batch by batch
    /// ([`StateStore::apply_changelog_batch`]: a persistent store writes
    /// each to its engine as sorted tables). Progress: `metrics` counts the
    /// records read as they are read and the records restored as each batch
    /// is applied, and every batch logs the store's figures. Returns the
    /// records restored.
    ///
    /// # Errors
    /// The log's (a stall names the stores' consumer), or a bad record.
    ///
    /// [`StateStore::apply_changelog_batch`]: stoatflow_state::StateStore::apply_changelog_batch
    pub(crate) fn restore(
        &self,
        tasks: &BTreeMap<TaskId, StreamTask>,
        metrics: Option<&MetricsCells>,
    ) -> Result<u64, RuntimeError> {
        let wanted = changelog_partitions(self.app, tasks);
        if wanted.is_empty() {
            return Ok(0);
        }
        let layouts: BTreeMap<TopicPartition, ChangelogValueLayout> = wanted
            .iter()
            .map(|(tp, (id, store, _))| (tp.clone(), tasks[id].changelog_value_layout(store)))
            .collect();
        let mut consumer = self.log.consumer(&self.consumer)?;
        let what = format!("the stores read by {}", self.consumer);
        let ends = EndsSeen::default();
        let limits = ReadLimits {
            stall: self.stall,
            what: &what,
            cancel: self.cancel,
            ends_seen: Some(&ends),
        };
        let reader_name = format!(
            "{}-reader",
            std::thread::current().name().unwrap_or("restore")
        );
        let (tx, rx) = mpsc::sync_channel::<Delivery>(1);
        let mut applied = Applied::default();
        let read = std::thread::scope(|scope| {
            let reader = std::thread::Builder::new()
                .name(reader_name)
                .spawn_scoped(scope, || {
                    read_deliveries(&mut consumer, &wanted, &layouts, &limits, metrics, tx)
                })
                .map_err(|e| RuntimeError::ThreadDied {
                    thread: "restore reader".into(),
                    reason: e.to_string(),
                })?;
            let queries = self
                .queries
                .map(|inbox| RestoreQueries { inbox, ends: &ends });
            if let Err(e) = applied.apply_all(&rx, &wanted, tasks, metrics, queries.as_ref()) {
                // The reader stops at its next hand-over.
                drop(rx);
                let _ = reader.join();
                return Err(e);
            }
            reader
                .join()
                .map_err(|_| RuntimeError::ThreadDied {
                    thread: "restore reader".into(),
                    reason: "panicked".into(),
                })?
                .map_err(RuntimeError::from)
        });
        read?;
        if self.cancel.is_some_and(|c| c.load(Ordering::Acquire)) {
            return Err(RuntimeError::Stopped {
                reason: format!(
                    "{} abandoned its restore: the application closes",
                    self.consumer
                ),
            });
        }
        for ((id, store), n) in &applied.per_store {
            tracing::debug!(store, task = %id, restored = n, "restored store from changelog");
        }
        Ok(applied.total)
    }
}

/// The reader thread's work: reads `wanted` as [`read_batches`] does, counting the records
/// read in `metrics` and sending each delivery to the applying thread through `tx` (whose
/// drop, at the end, ends the applying loop).
fn read_deliveries<C: Consumer>(
    consumer: &mut C,
    wanted: &ChangelogPartitions,
    layouts: &BTreeMap<TopicPartition, ChangelogValueLayout>,
    limits: &ReadLimits<'_>,
    metrics: Option<&MetricsCells>,
    tx: mpsc::SyncSender<Delivery>,
) -> Result<(), LogError> {
    read_batches(
        consumer,
        wanted.iter().map(|(tp, (_, _, from))| (tp.clone(), *from)),
        limits,
        |tp| layouts.get(tp).copied().unwrap_or_default(),
        &mut |n| {
            if let Some(m) = metrics {
                m.restore_expected(n);
            }
        },
        &mut |delivery| tx.send(delivery).is_ok(),
    )
}

/// What a restore has applied so far.
#[derive(Debug, Default)]
struct Applied {
    total: u64,
    per_store: BTreeMap<(TaskId, String), u64>,
    /// Per changelog partition, the offset after the last record applied.
    next: BTreeMap<TopicPartition, u64>,
}

/// The queries a lane's restore answers, and the ends it reads to.
struct RestoreQueries<'a> {
    inbox: &'a Receiver<Box<dyn LaneQuery>>,
    ends: &'a EndsSeen,
}

impl RestoreQueries<'_> {
    /// Answers every query waiting: each task with the store asked is read
    /// as it is so far, saying where its restore is in each changelog
    /// partition of the store.
    fn answer(
        &self,
        tasks: &BTreeMap<TaskId, StreamTask>,
        wanted: &ChangelogPartitions,
        next: &BTreeMap<TopicPartition, u64>,
    ) {
        while let Ok(mut query) = self.inbox.try_recv() {
            let store = query.store().to_owned();
            let ends = self.ends.lock().expect("restore ends lock").clone();
            for (&id, task) in tasks {
                if !task.store_names().any(|s| s == store) {
                    continue;
                }
                let changelogs = wanted
                    .iter()
                    .filter(|(_, (t, s, _))| *t == id && *s == store)
                    .map(|(tp, (_, _, from))| {
                        let position = next.get(tp).copied().unwrap_or(*from);
                        // Known ends: a partition not among them had nothing to read.
                        let end = ends
                            .as_ref()
                            .map(|e| e.get(tp).copied().unwrap_or(position).max(position));
                        ChangelogLag {
                            topic: tp.topic.to_string(),
                            partition: tp.partition.0 as i32,
                            position,
                            end,
                            behind: end.map(|e| e - position),
                        }
                    })
                    .collect();
                let read = StaleRead {
                    task: id,
                    source: StaleSource::Restoring,
                    changelogs,
                };
                query.visit_stale(task, read, None);
            }
            query.finish(None);
        }
    }
}

impl Applied {
    /// Applies each delivery from the reader as it comes, until the reader ends or a delivery
    /// fails (a record with no key, or a store that refuses a batch).
    /// Between two deliveries (and at least every [`QUERY_POLL`]) it
    /// answers `queries`.
    fn apply_all(
        &mut self,
        rx: &mpsc::Receiver<Delivery>,
        wanted: &ChangelogPartitions,
        tasks: &BTreeMap<TaskId, StreamTask>,
        metrics: Option<&MetricsCells>,
        queries: Option<&RestoreQueries<'_>>,
    ) -> Result<(), RuntimeError> {
        loop {
            let delivery = match queries {
                None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(_) => rx.recv_timeout(QUERY_POLL),
            };
            if let Some(q) = queries {
                q.answer(tasks, wanted, &self.next);
            }
            let (tp, batch) = match delivery {
                Ok(d) => d,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            };
            let (id, store, _) = &wanted[&tp];
            let batch = batch.map_err(|entry| {
                state_err(store, entry.corrupt(store, "changelog record has no key"))
            })?;
            self.apply(tasks, *id, store, &batch, metrics)?;
            if let Some(last) = batch.iter().last() {
                self.next.insert(tp, last.offset.0 + 1);
            }
        }
    }

    /// Applies `batch` to task `id`'s store `store` and counts it.
    fn apply(
        &mut self,
        tasks: &BTreeMap<TaskId, StreamTask>,
        id: TaskId,
        store: &str,
        batch: &RestoreBatch,
        metrics: Option<&MetricsCells>,
    ) -> Result<(), RuntimeError> {
        let state = tasks[&id]
            .state_store(store)
            .expect("changelog partitions name only the task's stores");
        state
            .borrow_mut()
            .apply_changelog_batch(batch)
            .map_err(|e| state_err(store, e))?;
        let n = batch.len() as u64;
        self.total += n;
        let restored = self.per_store.entry((id, store.to_owned())).or_default();
        *restored += n;
        if let Some(m) = metrics {
            m.restored(n);
        }
        tracing::debug!(store, task = %id, restored = *restored, "restoring");
        Ok(())
    }
}

fn state_err(store: &str, source: stoatflow_state::StateError) -> RuntimeError {
    RuntimeError::State {
        store: store.to_owned(),
        source: Box::new(source),
    }
}

/// A clean close: every persistent store of `tasks` is closed (its task
/// dropped), then checkpointed at the offset `next_offset` gives for its
/// changelog partition: every write before it is in the store's files. A
/// checkpoint that cannot be written costs a full restore at the next
/// start, nothing else, so it is a warning.
pub(crate) fn close_and_checkpoint(
    tasks: BTreeMap<TaskId, StreamTask>,
    app: &str,
    mut next_offset: impl FnMut(&TopicPartition) -> Result<u64, String>,
) {
    let mut closed = Vec::new();
    for (id, task) in tasks {
        closed.extend(
            task.persistent_stores()
                .iter()
                .map(|p| (id, p.name.clone(), p.directory.clone())),
        );
        drop(task);
    }
    for (id, store, directory) in closed {
        let tp = TopicPartition::new(changelog_topic(app, &store), id.partition);
        let written = next_offset(&tp).and_then(|next| {
            directory
                .write_checkpoint(&[(ChangelogPartition(id.partition), ChangelogOffset(next))])
                .map_err(|e| e.to_string())
        });
        if let Err(error) = written {
            tracing::warn!(store = store.as_str(), task = %id, error, "checkpoint not written: the next start restores the store in full");
        }
    }
}
