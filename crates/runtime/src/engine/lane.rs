//! A record lane: one thread that owns a set of tasks and applies, in FIFO
//! order, what the poll loop sends it — record batches, watermark events,
//! wall-clock ticks and barriers (STYLE: control signals travel with the
//! data, so "processed before it crossed barrier N" holds by construction).
//!
//! Owns its tasks outright: `StreamTask` is `!Send` (ports and stores are
//! `Rc<RefCell<..>>`), so each lane builds its tasks on its own thread and
//! restores their stores there. A task is one sub-topology on one input
//! partition; every task of partition `p` lives on lane `p mod lanes`, so a
//! key's state lives on one lane. Knows nothing of the tracker, the
//! producer or transactions: it answers a barrier with the epoch's commits.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};

use std::path::PathBuf;

use stoatflow_log::{Consumer, FetchedBatch, Header, Log, TopicPartition};
use stoatflow_state::{ChangelogOffset, ChangelogPartition, changelog_topic};
use stoatflow_streams::{
    BarrierKind, BarrierSchedule, EpochCommit, Headers, StoreType, StreamTask, StreamsConfig,
    TaskStores, Topology,
};
use stoatflow_time::{EventTime, WallTime, Watermark};

use crate::engine::changelog_read::read_to_end;
use crate::engine::takeover;
use crate::error::RuntimeError;
use crate::observe::metrics::MetricsCells;
use crate::task_id::TaskId;

/// A run of one task's records: consecutive records of one fetched batch,
/// in offset order. The batch is shared with the poll loop (one reference
/// count per run, no copy per record).
#[derive(Debug)]
pub(crate) struct LaneRun {
    pub(crate) task: TaskId,
    pub(crate) topic: Arc<str>,
    pub(crate) batch: Arc<FetchedBatch>,
    /// The run is `batch`'s records `from..to`.
    pub(crate) from: u32,
    pub(crate) to: u32,
}

/// What the poll loop sends a lane, in order.
#[derive(Debug)]
pub(crate) enum LaneMsg {
    /// Records: each task's runs in dispatch order (runs of different tasks
    /// may interleave differently from dispatch, which no task can tell).
    Records(Vec<LaneRun>),
    /// A sub-topology's watermark advanced: fire what runs on event time.
    Watermark {
        subtopology: usize,
        watermark: Watermark,
    },
    /// A wall-clock tick: processing-time timers and wall-clock punctuators.
    WallClock(WallTime),
    /// Barrier `barrier`, stamped per sub-topology. With `flush` (the final
    /// barrier of a graceful shutdown) every window closing at or before its
    /// stamp is emitted into the same commit.
    Barrier {
        barrier: u64,
        stamps: Arc<[Watermark]>,
        flush: bool,
    },
    /// After the final barrier of a graceful shutdown committed: close the
    /// persistent stores and write each one's checkpoint, then stop.
    Checkpoint,
}

/// What a lane answers.
#[derive(Debug)]
pub(crate) enum LaneReply {
    /// Stores restored and clocks seeded: ready for records.
    Ready { restored: u64 },
    /// Every task crossed the barrier; the epoch's commits, in task order.
    Crossed {
        barrier: u64,
        commits: Vec<(TaskId, EpochCommit)>,
    },
    /// A task failed; the lane has stopped.
    Failed { lane: usize, error: RuntimeError },
}

/// Everything a lane thread starts with.
pub(crate) struct LaneSetup<L: Log> {
    pub(crate) lane: usize,
    pub(crate) tasks: Vec<TaskId>,
    pub(crate) topology: Arc<Topology>,
    pub(crate) config: Arc<StreamsConfig>,
    pub(crate) log: Arc<L>,
    /// Per task, the (floor, frontier) seeded from its stamp ring.
    pub(crate) seeds: Arc<BTreeMap<TaskId, (Watermark, Watermark)>>,
    pub(crate) restore_stall_timeout: std::time::Duration,
    pub(crate) wall_clock: WallTime,
    /// Set when a task holds output that only the next barrier commits
    /// (the emission work signal of DESIGN 3.3).
    pub(crate) pending_output: Arc<AtomicBool>,
    /// Where persistent stores live (`<state dir>/<task>/<store>`).
    pub(crate) state_dir: Option<PathBuf>,
    /// The engine of the DSL's stores whose supplier names none.
    pub(crate) default_store: StoreType,
    /// Per task and source topic, the partition time committed with the
    /// partition's offset.
    pub(crate) partition_times: Vec<(TaskId, Arc<str>, EventTime)>,
    /// Where it reports its tasks' counters at each barrier crossing.
    pub(crate) metrics: Arc<MetricsCells>,
    /// When this start takes over from Kafka Streams (`engine::takeover`):
    /// per task, the processor metadata committed with its offsets.
    pub(crate) takeover: Option<Vec<(TaskId, String, i64)>>,
}

/// The lane thread's body: restore, report ready, then serve messages until
/// the sender hangs up.
pub(crate) fn run_lane<L: Log + 'static>(
    setup: LaneSetup<L>,
    inbox: Receiver<LaneMsg>,
    replies: SyncSender<LaneReply>,
) {
    let lane = setup.lane;
    let mut tasks = match build_tasks(&setup) {
        Ok((tasks, restored)) => {
            if replies.send(LaneReply::Ready { restored }).is_err() {
                return;
            }
            tasks
        }
        Err(error) => {
            let _ = replies.send(LaneReply::Failed { lane, error });
            return;
        }
    };
    while let Ok(msg) = inbox.recv() {
        if let LaneMsg::Checkpoint = msg {
            checkpoint(tasks, &setup);
            return;
        }
        let reply = match apply(&mut tasks, msg, &setup.pending_output) {
            Ok(None) => continue,
            Ok(Some((barrier, commits))) => {
                setup
                    .metrics
                    .set_lane(lane, tasks.iter().map(|(id, t)| (*id, t)));
                LaneReply::Crossed { barrier, commits }
            }
            Err(error) => {
                let _ = replies.send(LaneReply::Failed { lane, error });
                return;
            }
        };
        if replies.send(reply).is_err() {
            return;
        }
    }
}

fn process_err(task: TaskId) -> impl FnOnce(stoatflow_streams::ProcessError) -> RuntimeError {
    move |source| RuntimeError::Process {
        task: task.to_string(),
        source,
    }
}

type Crossing = (u64, Vec<(TaskId, EpochCommit)>);

fn apply(
    tasks: &mut BTreeMap<TaskId, StreamTask>,
    msg: LaneMsg,
    pending_output: &AtomicBool,
) -> Result<Option<Crossing>, RuntimeError> {
    match msg {
        LaneMsg::Records(runs) => {
            for run in runs {
                let task = tasks
                    .get_mut(&run.task)
                    .expect("the poll loop routes records only to this lane's tasks");
                let partition = run.batch.partition().partition.0 as i32;
                for i in run.from..run.to {
                    let r = run.batch.get(i as usize);
                    task.process(
                        &run.topic,
                        Some(partition),
                        Some(r.offset.0 as i64),
                        r.key,
                        r.value,
                        r.timestamp.0,
                        to_headers(r.headers),
                    )
                    .map_err(process_err(run.task))?;
                }
            }
        }
        LaneMsg::Watermark {
            subtopology,
            watermark: w,
        } => {
            for (id, task) in tasks
                .iter_mut()
                .filter(|(id, _)| id.subtopology == subtopology)
            {
                task.on_watermark(w);
                let timers = task.floor();
                task.fire_event_time(w, timers).map_err(process_err(*id))?;
            }
            note_pending(tasks, pending_output);
        }
        LaneMsg::WallClock(now) => {
            for (id, task) in tasks.iter_mut() {
                task.on_wall_clock(now).map_err(process_err(*id))?;
            }
            note_pending(tasks, pending_output);
        }
        LaneMsg::Barrier {
            barrier,
            stamps,
            flush,
        } => {
            // The final barrier emits everything closing at or before its
            // stamp into this epoch.
            let kind = if flush {
                BarrierKind::FinalFlush
            } else {
                BarrierKind::Regular
            };
            let mut commits = Vec::with_capacity(tasks.len());
            for (id, task) in tasks.iter_mut() {
                let stamp = stamps[id.subtopology];
                let commit = BarrierSchedule::cross(task, stamp, kind).map_err(process_err(*id))?;
                commits.push((*id, commit));
            }
            note_pending(tasks, pending_output);
            return Ok(Some((barrier, commits)));
        }
        LaneMsg::Checkpoint => unreachable!("run_lane handles the checkpoint itself"),
    }
    Ok(None)
}

fn to_headers(headers: &[Header]) -> Headers {
    if headers.is_empty() {
        return Headers::empty();
    }
    Headers::from_pairs(
        headers
            .iter()
            .map(|h| (h.key.clone(), h.value.clone()))
            .collect(),
    )
}

fn note_pending(tasks: &BTreeMap<TaskId, StreamTask>, pending_output: &AtomicBool) {
    if tasks.values().any(|t| !t.pending_output().is_empty()) {
        pending_output.store(true, Ordering::Release);
    }
}

/// Instantiates this lane's tasks, restores their stores from the committed
/// changelogs (partition = the task's partition) and seeds their clocks.
fn build_tasks<L: Log>(
    setup: &LaneSetup<L>,
) -> Result<(BTreeMap<TaskId, StreamTask>, u64), RuntimeError> {
    let mut tasks = BTreeMap::new();
    for &id in &setup.tasks {
        let stores = TaskStores {
            dir: setup.state_dir.as_ref().map(|d| d.join(id.to_string())),
            default: setup.default_store,
        };
        let task = setup
            .topology
            .instantiate_in(id.subtopology, &setup.config, stores)
            .map_err(process_err(id))?;
        tasks.insert(id, task);
    }
    let restored = if setup.config.changelog_enabled {
        restore_stores(setup, &tasks)?
    } else {
        0
    };
    for (&id, task) in &mut tasks {
        // The task's frontier starts below everything, so the first barrier
        // always runs an emission pass (on the seeded floor): whether a
        // window was already emitted is the emit-frontier stores' to say,
        // restored with the outputs they were committed with. (Seeding the
        // frontier from the stamp ring assumed the pass on W(c−2) had
        // committed, which two crashes in a row can make false.)
        for (_, topic, time) in setup.partition_times.iter().filter(|(t, ..)| *t == id) {
            task.seed_partition_time(topic, *time);
        }
        let (floor, _frontier) = setup.seeds[&id];
        task.seed(floor, Watermark::MIN);
        if let Some(metadata) = &setup.takeover {
            takeover::take_over(id, task, &setup.partition_times, metadata)?;
        }
        task.on_watermark(floor);
        // After the restore: timer indexes are built from restored stores.
        task.on_wall_clock(setup.wall_clock)
            .map_err(process_err(id))?;
    }
    Ok((tasks, restored))
}

/// Reads every changelog partition of this lane's stores with one consumer,
/// assigned once (reassigning a consumer partition by partition is slower,
/// and librdkafka can trip over a quick succession of assignments), each
/// from where its restore starts to its read-committed end as of the start,
/// and applies them in offset order. An in-memory store, or a persistent one
/// whose local copy was rebuilt, starts at the beginning; a persistent one
/// trusted from its checkpoint reads only the tail past it.
fn restore_stores<L: Log>(
    setup: &LaneSetup<L>,
    tasks: &BTreeMap<TaskId, StreamTask>,
) -> Result<u64, RuntimeError> {
    let app = &setup.config.application_id;
    let mut wanted: BTreeMap<TopicPartition, (TaskId, String, u64)> = BTreeMap::new();
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
    if wanted.is_empty() {
        return Ok(0);
    }
    let mut consumer = setup
        .log
        .consumer(&format!("{app}-restore-lane-{}", setup.lane))?;
    let entries = read_to_end(
        &mut consumer,
        wanted.iter().map(|(tp, (_, _, from))| (tp.clone(), *from)),
        setup.restore_stall_timeout,
        &format!("the stores of lane {}", setup.lane),
    )?;
    let mut restored = 0;
    for (tp, list) in entries {
        let (id, store, _) = &wanted[&tp];
        let state = tasks[id]
            .state_store(store)
            .expect("store_names lists only the task's stores");
        let mut list = list
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|entry| RuntimeError::State {
                store: store.clone(),
                source: Box::new(entry.corrupt(store, "changelog record has no key")),
            })?;
        // Kafka Streams' layout on the log, the store's in memory.
        let layout = tasks[id].changelog_value_layout(store);
        for entry in &mut list {
            layout.from_changelog(entry);
        }
        let total = list.len() as u64;
        setup.metrics.restore_expected(total);
        let mut state = state.borrow_mut();
        let n = stoatflow_state::restore(&mut *state, list, total, &mut |p| {
            tracing::debug!(store = store.as_str(), task = %id, restored = p.restored, total = p.total, "restoring");
        })
        .map_err(|source| RuntimeError::State {
            store: store.clone(),
            source: Box::new(source),
        })?;
        setup.metrics.restored(n);
        restored += n;
    }
    Ok(restored)
}

/// A graceful close: every persistent store of this lane is closed (its task
/// dropped), then checkpointed at its changelog partition's end, which the
/// final transaction made the offset every one of its writes is before. A
/// checkpoint that cannot be written costs a full restore at the next start,
/// nothing else, so it is a warning.
fn checkpoint<L: Log>(tasks: BTreeMap<TaskId, StreamTask>, setup: &LaneSetup<L>) {
    let app = &setup.config.application_id;
    let mut closed = Vec::new();
    for (id, task) in tasks {
        closed.extend(
            task.persistent_stores()
                .iter()
                .map(|p| (id, p.name.clone(), p.directory.clone())),
        );
        drop(task);
    }
    if closed.is_empty() {
        return;
    }
    let consumer = setup
        .log
        .consumer(&format!("{app}-checkpoint-lane-{}", setup.lane));
    let mut consumer = match consumer {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, lane = setup.lane, "no checkpoints written: the next start restores the stores in full");
            return;
        }
    };
    for (id, store, directory) in closed {
        let tp = TopicPartition::new(changelog_topic(app, &store), id.partition);
        let written = consumer
            .end_offset(&tp)
            .map_err(|e| e.to_string())
            .and_then(|end| {
                directory
                    .write_checkpoint(&[(ChangelogPartition(id.partition), ChangelogOffset(end.0))])
                    .map_err(|e| e.to_string())
            });
        if let Err(error) = written {
            tracing::warn!(store = store.as_str(), task = %id, error, "checkpoint not written: the next start restores the store in full");
        }
    }
}
