//! Standby replicas (`num.standby.replicas`, docs/scale-out.md#standbys):
//! warm copies of tasks this instance does not own, kept by tailing their
//! changelogs into persistent stores in the state directory, so that when the
//! group moves such a task here its restore starts from the standby's
//! checkpoint (the tail written since), not from the changelog's beginning.
//!
//! Which tasks: those the placement gives this instance from the group's
//! description (`placement`: `num.standby.replicas` copies of each task,
//! never on its owner); when the group cannot be described, every task this
//! instance does not own.
//!
//! Only stores on disk are copied (an in-memory copy would go with the
//! engine; a promotion restores those in full, as the emit-frontier stores,
//! a few records per task, always are). A standby task is the task's stores
//! only: no processor runs, nothing is
//! written to the log. It reads read-committed, so its stores hold exactly
//! what committed transactions wrote, as a restore would. At a rebuild of
//! the engine (a rebalance, a close, an error) it closes its stores cleanly
//! and checkpoints each at the offset after the last record it applied;
//! dropped without that (a crash), it writes nothing and the next open
//! rebuilds. Owns the standby thread, its tasks' stores and its consumer;
//! knows nothing of the poll loop, lanes, barriers or the producer. An
//! error here never stops the application, nor does a panic (caught, and
//! logged as an error naming the thread, the task and the store it struck
//! in): the copy is abandoned (no checkpoint), its lag reads unknown, and
//! a promotion restores in full.
//!
//! It answers interactive queries that allow stale answers
//! (docs/queries.md#stale) from its stores, between two fetches: a query
//! waits for it at most one fetch, and it copies an answer and goes on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use stoatflow_log::{Consumer, ErrorKind, Log, Offset, TopicPartition};
use stoatflow_streams::{StoreType, StreamTask, StreamsConfig, TaskStores, Topology};

use crate::config::RuntimeConfig;
use crate::engine::Shared;
use crate::engine::guard::{Panicked, guarded};
use crate::engine::restore::changelog_read::changelog_entry;
use crate::engine::restore::placement::{self, GroupView};
use crate::engine::restore::store_restore::{
    ChangelogPartitions, apply_entries, changelog_partitions, close_and_checkpoint,
};
use crate::engine::shared::STANDBY_LAG_UNKNOWN as LAG_UNKNOWN;
use crate::error::RuntimeError;
use crate::query::{ChangelogLag, LaneQuery, StaleRead, StaleSource};
use crate::task_id::TaskId;

/// How long one fetch of the changelogs waits.
const FETCH_WAIT: Duration = Duration::from_millis(100);
/// The pause after a retriable error of the log.
const RETRY_AFTER: Duration = Duration::from_millis(200);

/// The standby tasks among `all` of instance `me`, owning `owned`: those
/// the placement gives it when the group's view is known, else every task
/// it does not own.
pub(crate) fn standby_tasks(
    replicas: u32,
    all: impl IntoIterator<Item = TaskId>,
    owned: &BTreeSet<TaskId>,
    me: &str,
    group: Option<&GroupView>,
) -> BTreeSet<TaskId> {
    if replicas == 0 {
        return BTreeSet::new();
    }
    let others = all.into_iter().filter(|t| !owned.contains(t));
    match group {
        Some(group) => placement::copies_of(replicas, me, others, group),
        None => others.collect(),
    }
}

/// What the standby thread starts with.
struct StandbySetup<L: Log> {
    tasks: BTreeSet<TaskId>,
    topology: Arc<Topology>,
    config: Arc<StreamsConfig>,
    log: Arc<L>,
    state_dir: PathBuf,
    /// The engine of the DSL's stores whose supplier names none (as the
    /// lanes have it: a copy is kept only of the stores that are on disk).
    default_store: StoreType,
    /// The group of its changelog consumer (the instance's own: nobody
    /// commits to it).
    reader: String,
    /// Changelog records applied, across the standby's life (shared with
    /// the application's view).
    applied: Arc<AtomicU64>,
    /// Records the copies are behind their changelogs' ends, last measured
    /// ([`LAG_UNKNOWN`] until then; shared with the application's view).
    lag: Arc<AtomicU64>,
    /// The queries that read the copies.
    queries: Receiver<Box<dyn LaneQuery>>,
}

/// How many queries wait for the standby thread before a caller blocks.
const QUERIES_WAITING: usize = 64;

/// How often the copies measure how far behind their changelogs they are.
const LAG_EVERY: Duration = Duration::from_millis(500);

/// How the standby thread is told to end.
#[derive(Debug, Default)]
struct Stop {
    requested: AtomicBool,
    /// Close the stores and write their checkpoints (not after a crash).
    checkpoint: AtomicBool,
}

/// The running standby thread.
pub(crate) struct Standby {
    stop: Arc<Stop>,
    thread: Option<JoinHandle<()>>,
}

impl Standby {
    /// Starts the copies of `tasks` an engine keeps (none without
    /// changelogs or a state directory), and resets the lag `shared`
    /// reports: unknown until the copies measure it, 0 with no copies.
    ///
    /// # Errors
    /// The thread could not be spawned.
    pub(crate) fn start_for<L: Log + 'static>(
        tasks: BTreeSet<TaskId>,
        config: &RuntimeConfig,
        topology: &Arc<Topology>,
        streams_config: &Arc<StreamsConfig>,
        log: &Arc<L>,
        shared: &Shared,
    ) -> Result<Option<Self>, RuntimeError> {
        let standby = match config.effective_state_dir() {
            Some(state_dir) if config.streams.changelog_enabled && !tasks.is_empty() => {
                shared.standby_lag.store(LAG_UNKNOWN, Ordering::Release);
                let (inbox, queries) = sync_channel(QUERIES_WAITING);
                let q = &shared.query_lanes;
                q.lock().expect("query lanes lock").standby = Some(inbox);
                Standby::start(StandbySetup {
                    tasks,
                    topology: topology.clone(),
                    config: streams_config.clone(),
                    log: log.clone(),
                    state_dir,
                    default_store: config.default_dsl_store(),
                    reader: format!("{}-standby", config.transactional_id()),
                    applied: shared.standby_applied.clone(),
                    lag: shared.standby_lag.clone(),
                    queries,
                })?
            }
            _ => None,
        };
        if standby.is_none() {
            shared.standby_lag.store(0, Ordering::Release);
            let q = &shared.query_lanes;
            q.lock().expect("query lanes lock").standby = None;
        }
        Ok(standby)
    }

    /// Starts the thread keeping `setup.tasks` warm (none: no thread).
    ///
    /// # Errors
    /// The thread could not be spawned.
    fn start<L: Log + 'static>(setup: StandbySetup<L>) -> Result<Option<Self>, RuntimeError> {
        if setup.tasks.is_empty() {
            return Ok(None);
        }
        let stop = Arc::new(Stop::default());
        let thread_stop = stop.clone();
        let name = thread_name(&setup.config.application_id);
        let thread = std::thread::Builder::new()
            .name(name)
            .spawn(move || run(&setup, &thread_stop))
            .map_err(|e| RuntimeError::ThreadDied {
                thread: "standby".into(),
                reason: e.to_string(),
            })?;
        Ok(Some(Standby {
            stop,
            thread: Some(thread),
        }))
    }

    /// Ends the thread: with `checkpoint`, its stores are closed and
    /// checkpointed where it got to (a rebuild, a close); without, they are
    /// dropped as a crash leaves them.
    pub(crate) fn stop(mut self, checkpoint: bool) {
        self.stop.checkpoint.store(checkpoint, Ordering::Release);
        self.stop.requested.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Standby {
    fn drop(&mut self) {
        self.stop.requested.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The thread's name: the application's id and `-standby`.
fn thread_name(application_id: &str) -> String {
    format!("{application_id}-standby")
}

/// The thread's body: [`keep_warm`]. An error or a panic there ends the
/// copy and never the application: it is logged, naming the thread and
/// what it was doing (the task, the store), the stores are dropped without
/// a checkpoint (the next open rebuilds them, and a promotion restores in
/// full), and the lag reads unknown rather than the last figure measured.
fn run<L: Log>(setup: &StandbySetup<L>, stop: &Stop) {
    if let Err(error) = guarded_copy(setup, stop) {
        setup.lag.store(LAG_UNKNOWN, Ordering::Release);
        tracing::warn!(%error, "standby copy abandoned: a promotion restores these tasks in full");
    }
}

/// [`keep_warm`] behind a panic guard: a panic becomes
/// [`RuntimeError::ThreadDied`] naming the thread and what it was doing.
fn guarded_copy<L: Log>(setup: &StandbySetup<L>, stop: &Stop) -> Result<(), RuntimeError> {
    let mut doing = String::from("starting");
    guarded(|| keep_warm(setup, stop, &mut doing)).unwrap_or_else(|Panicked(message)| {
        Err(RuntimeError::ThreadDied {
            thread: thread_name(&setup.config.application_id),
            reason: format!("it panicked {doing}: {message}"),
        })
    })
}

/// Builds the standby tasks' stores, tails their changelogs until told to
/// stop, then checkpoints (or not); says in `doing` what it is doing, for
/// the error of a panic.
fn keep_warm<L: Log>(
    setup: &StandbySetup<L>,
    stop: &Stop,
    doing: &mut String,
) -> Result<(), RuntimeError> {
    let app = setup.config.application_id.clone();
    let mut copy = WarmCopy::open(setup, doing)?;
    tracing::info!(tasks = ?copy.tasks.keys().collect::<Vec<_>>(), "standby tasks");
    let mut lag_measured: Option<Instant> = None;
    while !stop.requested.load(Ordering::Acquire) {
        if lag_measured.is_none_or(|t| t.elapsed() >= LAG_EVERY) {
            lag_measured = Some(Instant::now());
            "measuring the lag".clone_into(doing);
            match copy.lag() {
                Ok(lag) => setup.lag.store(lag, Ordering::Release),
                Err(e) => tracing::debug!(error = %e, "standby: lag not measured"),
            }
        }
        match copy.poll(setup, doing) {
            Ok(()) => {}
            Err(RuntimeError::Log(e)) if e.kind() == ErrorKind::Retriable => {
                tracing::debug!(error = %e, "standby: retrying");
                std::thread::sleep(RETRY_AFTER);
            }
            Err(error) => return Err(error),
        }
        copy.answer(&setup.queries, doing);
    }
    if stop.checkpoint.load(Ordering::Acquire) {
        "closing and checkpointing the standby stores".clone_into(doing);
        let next = copy.next;
        close_and_checkpoint(copy.tasks, &app, |tp| {
            next.get(tp)
                .copied()
                .ok_or_else(|| format!("no position for {tp}"))
        });
    }
    Ok(())
}

/// The standby's stores and where it is in each changelog partition.
struct WarmCopy<C> {
    tasks: BTreeMap<TaskId, StreamTask>,
    partitions: ChangelogPartitions,
    consumer: C,
    /// Per changelog partition, the offset after the last record applied.
    next: BTreeMap<TopicPartition, u64>,
    /// Per changelog partition, its end as last measured.
    ends: BTreeMap<TopicPartition, u64>,
}

impl<C: Consumer> WarmCopy<C> {
    fn open<L: Log<Consumer = C>>(
        setup: &StandbySetup<L>,
        doing: &mut String,
    ) -> Result<Self, RuntimeError> {
        let app = &setup.config.application_id;
        let mut tasks = BTreeMap::new();
        for &id in &setup.tasks {
            *doing = format!("building standby task {id}");
            let stores = TaskStores {
                dir: Some(setup.state_dir.join(id.to_string())),
                default: setup.default_store,
            };
            let task = setup
                .topology
                .instantiate_in(id.subtopology, &setup.config, stores)
                .map_err(|source| RuntimeError::Process {
                    task: id.to_string(),
                    source,
                })?;
            tasks.insert(id, task);
        }
        // Only the stores on disk are filled: an in-memory copy would be
        // dropped with this engine, and a promotion restores those in full
        // anyway. (Their tasks are kept, so that a query says why they have
        // no copy.)
        let mut partitions = changelog_partitions(app, &tasks);
        partitions.retain(|_, (id, store, _)| {
            tasks[id]
                .persistent_stores()
                .iter()
                .any(|p| p.name == *store)
        });
        "opening the changelogs".clone_into(doing);
        let mut consumer = setup.log.consumer(&setup.reader)?;
        let mut next = BTreeMap::new();
        for (tp, (_, _, from)) in &partitions {
            next.insert(tp.clone(), consumer.beginning_offset(tp)?.0.max(*from));
        }
        let at: Vec<(TopicPartition, Offset)> = next
            .iter()
            .map(|(tp, &o)| (tp.clone(), Offset(o)))
            .collect();
        consumer.assign_at(&at)?;
        Ok(WarmCopy {
            tasks,
            partitions,
            consumer,
            next,
            ends: BTreeMap::new(),
        })
    }

    /// How many offsets the copies are behind their changelogs' ends (the
    /// consumer's positions, which pass transaction markers, against the
    /// ends).
    fn lag(&mut self) -> Result<u64, RuntimeError> {
        let mut lag = 0;
        for tp in self.partitions.keys() {
            let end = self.consumer.end_offset(tp)?.0;
            self.ends.insert(tp.clone(), end);
            lag += end.saturating_sub(self.consumer.position(tp)?.0);
        }
        Ok(lag)
    }

    /// Answers every query waiting: each task with the store asked is read
    /// as a copy that may be behind, saying where it is in each changelog
    /// partition of the store; a store kept in memory has no copy here.
    fn answer(&mut self, queries: &Receiver<Box<dyn LaneQuery>>, doing: &mut String) {
        while let Ok(mut query) = queries.try_recv() {
            let store = query.store().to_owned();
            *doing = format!("answering a query on store {store}");
            for (&id, task) in &self.tasks {
                if !task.store_names().any(|s| s == store) {
                    continue;
                }
                let copied = task.persistent_stores().iter().any(|p| p.name == store);
                let read = StaleRead {
                    task: id,
                    source: StaleSource::Standby,
                    changelogs: self.lag_of(id, &store),
                };
                let refuse = (!copied).then_some("which keeps no copy of a store in memory");
                query.visit_stale(task, read, refuse);
            }
            query.finish(None);
        }
    }

    /// Where task `id`'s copy of `store` is in its changelog partitions.
    fn lag_of(&self, id: TaskId, store: &str) -> Vec<ChangelogLag> {
        let mine =
            |(_, (t, s, _)): &(&TopicPartition, &(TaskId, String, u64))| *t == id && s == store;
        self.partitions
            .iter()
            .filter(mine)
            .map(|(tp, _)| {
                let read = self.consumer.position(tp).ok().map(|o| o.0);
                // What it has read since is part of the end it has seen.
                let end = self.ends.get(tp).map(|&e| e.max(read.unwrap_or(0)));
                ChangelogLag {
                    topic: tp.topic.to_string(),
                    partition: tp.partition.0 as i32,
                    position: self.next.get(tp).copied().unwrap_or(0),
                    end,
                    behind: end.zip(read).map(|(e, r)| e.saturating_sub(r)),
                }
            })
            .collect()
    }

    /// Applies what one fetch brings.
    fn poll<L: Log>(
        &mut self,
        setup: &StandbySetup<L>,
        doing: &mut String,
    ) -> Result<(), RuntimeError> {
        "fetching the changelogs".clone_into(doing);
        let fetched = self.consumer.fetch(FETCH_WAIT)?;
        if fetched.is_empty() {
            return Ok(());
        }
        // In offset order per partition, as fetched.
        let mut by_partition: BTreeMap<TopicPartition, Vec<_>> = BTreeMap::new();
        for r in fetched {
            let Some(next) = self.next.get_mut(&r.partition) else {
                continue;
            };
            if r.offset.0 < *next {
                continue;
            }
            *next = r.offset.0 + 1;
            by_partition
                .entry(r.partition.clone())
                .or_default()
                .push(changelog_entry(r));
        }
        for (tp, entries) in by_partition {
            let (id, store, _) = &self.partitions[&tp];
            *doing = format!("applying changelog {tp} to store {store} of standby task {id}");
            let n = apply_entries(&self.tasks, *id, store, entries, None)?;
            setup.applied.fetch_add(n, Ordering::Relaxed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use stoatflow_log::EmbeddedLog;
    use stoatflow_streams::{
        Consumed, ProcessError, Processor, ProcessorContext, Produced, Record, Serdes,
        StreamsBuilder,
    };

    use super::*;

    struct PassThrough;

    impl Processor<String, i64, String, i64> for PassThrough {
        fn process(
            &mut self,
            ctx: &mut ProcessorContext<'_, String, i64>,
            r: Record<String, i64>,
        ) -> Result<(), ProcessError> {
            ctx.forward(r)
        }
    }

    /// A standby of task 0_1 of a topology whose processor supplier panics.
    fn panicking_setup(state_dir: PathBuf) -> StandbySetup<EmbeddedLog> {
        let mut b = StreamsBuilder::new();
        b.stream("in", Consumed::with(Serdes::string(), Serdes::i64()))
            .process(|| -> PassThrough { panic!("no processor today") }, &[])
            .to("out", Produced::with(Serdes::string(), Serdes::i64()));
        StandbySetup {
            tasks: [task(0, 1)].into(),
            topology: Arc::new(b.build().unwrap()),
            config: Arc::new(StreamsConfig::new("warm")),
            log: Arc::new(EmbeddedLog::in_memory()),
            state_dir,
            default_store: StoreType::Persistent,
            reader: "warm-standby-reader".into(),
            applied: Arc::default(),
            lag: Arc::new(AtomicU64::new(0)),
            queries: sync_channel(1).1,
        }
    }

    #[test]
    fn a_panic_on_the_standby_thread_is_an_error_naming_the_thread_and_the_task() {
        let dir = tempfile::tempdir().unwrap();
        let setup = panicking_setup(dir.path().to_owned());
        let error = guarded_copy(&setup, &Stop::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "runtime thread warm-standby stopped unexpectedly: it panicked building standby task 0_1: no processor today"
        );
        // The thread's body catches it: the copy ends, its lag unknown.
        run(&setup, &Stop::default());
        assert_eq!(setup.lag.load(Ordering::Acquire), LAG_UNKNOWN);
    }

    fn task(subtopology: usize, partition: u32) -> TaskId {
        TaskId::new(subtopology, partition)
    }

    #[test]
    fn without_a_view_of_the_group_a_standby_keeps_every_task_it_does_not_own() {
        let all: Vec<TaskId> = (0..2)
            .flat_map(|st| (0..3).map(move |p| task(st, p)))
            .collect();
        let owned: BTreeSet<TaskId> = [task(0, 1), task(1, 1)].into();
        let standby = standby_tasks(1, all.iter().copied(), &owned, "a", None);
        assert_eq!(
            standby,
            [task(0, 0), task(0, 2), task(1, 0), task(1, 2)].into()
        );
        assert!(standby_tasks(0, all.iter().copied(), &owned, "a", None).is_empty());
    }

    #[test]
    fn with_a_view_of_the_group_a_standby_keeps_only_what_the_placement_gives_it() {
        let all: Vec<TaskId> = (0..12).map(|p| task(0, p)).collect();
        let members = ["a", "b", "c", "d"];
        let group = GroupView {
            members: members.iter().map(|m| (*m).to_owned()).collect(),
            owners: all
                .iter()
                .map(|t| (*t, members[t.partition as usize % 4].to_owned()))
                .collect(),
        };
        let mut copies = 0;
        for m in members {
            let owned: BTreeSet<TaskId> = all
                .iter()
                .copied()
                .filter(|t| group.owners[t] == m)
                .collect();
            let standby = standby_tasks(1, all.iter().copied(), &owned, m, Some(&group));
            assert!(standby.is_disjoint(&owned), "{m} copies a task it owns");
            assert!(
                standby.len() < all.len() - owned.len(),
                "{m} copies every other task"
            );
            copies += standby.len();
        }
        assert_eq!(copies, all.len(), "one copy per task");
        let none = standby_tasks(0, all.iter().copied(), &BTreeSet::new(), "a", Some(&group));
        assert!(none.is_empty());
    }
}
