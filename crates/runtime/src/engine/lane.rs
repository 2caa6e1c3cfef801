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
//! Its life follows the phases of `engine::lane_protocol`: restore, serve,
//! checkpoint.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};

use std::path::PathBuf;

use stoatflow_log::{Consumer, Header, Log};
use stoatflow_streams::{
    BarrierKind, BarrierSchedule, EpochCommit, Headers, RawRecord, StoreType, StreamTask,
    StreamsConfig, TaskStores, Topology,
};
use stoatflow_time::{EventTime, WallTime, Watermark};

use crate::engine::commit::committer::EarlyOutput;
use crate::engine::guard::panic_message;
use crate::engine::lane_protocol::{Crossed, LaneFailed, LaneMsg, LaneRun, Restored};
use crate::engine::restore::store_restore::{StoreReader, close_and_checkpoint};
use crate::engine::restore::takeover;
use crate::error::RuntimeError;
use crate::observe::metrics::MetricsCells;
use crate::query::{LaneQuery, TaskClock};
use crate::task_id::TaskId;

/// Everything a lane thread starts with.
pub(crate) struct LaneSetup<L: Log> {
    pub(crate) lane: usize,
    pub(crate) tasks: Vec<TaskId>,
    pub(crate) topology: Arc<Topology>,
    pub(crate) config: Arc<StreamsConfig>,
    pub(crate) log: Arc<L>,
    /// Set by the poll loop when it no longer waits for this lane's restore
    /// (the application closes first).
    pub(crate) cancel_restore: Arc<AtomicBool>,
    /// Per task, the (floor, frontier) seeded from its stamp ring.
    pub(crate) seeds: Arc<BTreeMap<TaskId, (Watermark, Watermark)>>,
    pub(crate) restore_stall_timeout: std::time::Duration,
    pub(crate) wall_clock: WallTime,
    /// Set when a task holds output that only the next barrier commits
    /// (the emission work signal: docs/barriers.md#cadence).
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
    /// When this start takes over from Kafka Streams (`engine::restore::takeover`):
    /// per task, the processor metadata committed with its offsets.
    pub(crate) takeover: Option<Vec<(TaskId, String, i64)>>,
    /// Where output produced before a barrier goes once [`EARLY_OUTPUT`]
    /// records pile up: the committer sends it inside the epoch's
    /// transaction while the lane goes on.
    pub(crate) early: EarlyOutput,
    /// The epoch the lane's first records belong to (the last committed
    /// barrier's successor).
    pub(crate) first_epoch: u64,
    /// Where its tasks' dynamic sinks look their topics up.
    pub(crate) topics: Arc<dyn stoatflow_streams::TopicCatalog>,
    /// The queries (those allowing stale answers) it answers while it
    /// restores; dropped once restored, which ends the queries still there.
    pub(crate) restore_queries: Option<Receiver<Box<dyn LaneQuery>>>,
}

/// Output records a lane's tasks hold before it hands them to the
/// committer ahead of the barrier.
const EARLY_OUTPUT: usize = 1024;

/// The lane thread's body: restore, report ready on `restored`, then serve
/// the inbox until the poll loop hangs up or asks for the checkpoint. A
/// failure while serving goes to `failures`.
pub(crate) fn run_lane<L: Log + 'static>(
    mut setup: LaneSetup<L>,
    inbox: Receiver<LaneMsg>,
    restored: SyncSender<Restored>,
    failures: SyncSender<LaneFailed>,
) {
    let lane = setup.lane;
    // User code runs here (processors, serdes, store suppliers). A panic in
    // it must not leave the poll loop waiting for a reply that never comes:
    // it becomes this lane's failure, naming the task it hit. `current`
    // names the task being worked on.
    let current = Cell::new(None);
    let queries = setup.restore_queries.take();
    let built = panic::catch_unwind(AssertUnwindSafe(|| {
        build_tasks(&setup, queries.as_ref(), &current)
    }))
    .unwrap_or_else(|payload| Err(task_panicked(lane, &current, &*payload)));
    drop(queries);
    let tasks = match built {
        Ok((tasks, count)) => {
            if restored.send(Restored::Ready { restored: count }).is_err() {
                return;
            }
            tasks
        }
        Err(error) => {
            let _ = restored.send(Restored::Failed(LaneFailed { lane, error }));
            return;
        }
    };
    drop(restored);
    let served = panic::catch_unwind(AssertUnwindSafe(|| serve(tasks, &setup, &inbox, &current)))
        .unwrap_or_else(|payload| Err(task_panicked(lane, &current, &*payload)));
    if let Err(error) = served {
        let _ = failures.send(LaneFailed { lane, error });
    }
}

/// A panic in user code, as the lane's failure.
fn task_panicked(
    lane: usize,
    current: &Cell<Option<TaskId>>,
    payload: &(dyn std::any::Any + Send),
) -> RuntimeError {
    let error = RuntimeError::TaskPanicked {
        lane,
        task: current
            .get()
            .map_or_else(|| "none".to_owned(), |t: TaskId| t.to_string()),
        message: panic_message(payload),
    };
    tracing::error!(lane, error = %error, "a task panicked; the lane stops");
    error
}

/// The restored lane's life: apply its inbox until the poll loop hangs up
/// or asks for the checkpoint. `Ok` when it ends without a failure.
fn serve<L: Log + 'static>(
    mut tasks: BTreeMap<TaskId, StreamTask>,
    setup: &LaneSetup<L>,
    inbox: &Receiver<LaneMsg>,
    current: &Cell<Option<TaskId>>,
) -> Result<(), RuntimeError> {
    let pending_output = &*setup.pending_output;
    // The epoch of what the tasks produce now: the barrier after the last
    // one crossed.
    let mut epoch = setup.first_epoch;
    // The tasks holding final results for the next commit (an emission
    // pass at a crossing leaves them; nothing else produces any).
    let mut holding_finals = BTreeSet::new();
    // Committed reads waiting for the next crossing.
    let mut parked: Vec<Box<dyn LaneQuery>> = Vec::new();
    while let Ok(msg) = inbox.recv() {
        match msg {
            LaneMsg::Query(query) => {
                answer_or_park(&tasks, query, &mut parked, pending_output);
                continue;
            }
            LaneMsg::Records(runs) => process_runs(&mut tasks, runs, current)?,
            LaneMsg::Watermark {
                subtopology,
                watermark,
            } => {
                fire_event_time(&mut tasks, subtopology, watermark, current)?;
                note_pending(&tasks, pending_output);
            }
            LaneMsg::WallClock(now) => {
                for (id, task) in tasks.iter_mut() {
                    current.set(Some(*id));
                    task.on_wall_clock(now).map_err(process_err(*id))?;
                }
                note_pending(&tasks, pending_output);
            }
            LaneMsg::Barrier {
                barrier,
                stamps,
                flush,
                reply,
            } => {
                let commits = cross(&mut tasks, &stamps, flush, current, &mut parked)?;
                for query in parked.drain(..) {
                    query.finish(Some(barrier));
                }
                note_pending(&tasks, pending_output);
                epoch = barrier + 1;
                holding_finals = tasks_holding_output(&tasks);
                setup
                    .metrics
                    .set_lane(setup.lane, barrier, tasks.iter().map(|(id, t)| (*id, t)));
                if reply.send(Crossed { barrier, commits }).is_err() {
                    return Ok(());
                }
                continue;
            }
            LaneMsg::Checkpoint => {
                current.set(None);
                checkpoint_at_ends(tasks, setup);
                return Ok(());
            }
        }
        hand_over_early(&mut tasks, &setup.early, epoch, &holding_finals);
    }
    Ok(())
}

/// Right after a crossing: the tasks whose emission pass left final
/// results for the next commit.
fn tasks_holding_output(tasks: &BTreeMap<TaskId, StreamTask>) -> BTreeSet<TaskId> {
    tasks
        .iter()
        .filter(|(_, t)| !t.pending_output().is_empty())
        .map(|(id, _)| *id)
        .collect()
}

/// Hands the output the tasks produced since the last crossing to the
/// committer once there is enough of it. A task `holding_finals` hands
/// nothing over until its next crossing: its final results are written
/// with the commit, and what it produced after them must follow them (a
/// left join's null side, then a later match of the same key). So an
/// early hand-over never scans final results either.
fn hand_over_early(
    tasks: &mut BTreeMap<TaskId, StreamTask>,
    early: &EarlyOutput,
    epoch: u64,
    holding_finals: &BTreeSet<TaskId>,
) {
    let free = |id: &TaskId| !holding_finals.contains(id);
    let held: usize = tasks
        .iter()
        .filter(|(id, _)| free(id))
        .map(|(_, t)| t.pending_output().len())
        .sum();
    if held < EARLY_OUTPUT {
        return;
    }
    let mut outputs = Vec::with_capacity(held);
    for (_, task) in tasks.iter_mut().filter(|(id, _)| free(id)) {
        task.move_early_outputs(&mut outputs);
    }
    early.send(epoch, outputs);
}

fn process_err(task: TaskId) -> impl FnOnce(stoatflow_streams::ProcessError) -> RuntimeError {
    move |source| RuntimeError::Process {
        task: task.to_string(),
        source,
    }
}

/// Each run to its task, in order.
fn process_runs(
    tasks: &mut BTreeMap<TaskId, StreamTask>,
    runs: Vec<LaneRun>,
    current: &Cell<Option<TaskId>>,
) -> Result<(), RuntimeError> {
    for run in runs {
        current.set(Some(run.task));
        let task = tasks
            .get_mut(&run.task)
            .expect("the poll loop routes records only to this lane's tasks");
        let partition = run.batch.partition().partition.0 as i32;
        let records = (run.from..run.to).map(|i| {
            let r = run.batch.get(i as usize);
            RawRecord {
                offset: Some(r.offset.0 as i64),
                key: r.key,
                value: r.value,
                timestamp: r.timestamp.0,
                headers: to_headers(r.headers),
            }
        });
        task.process_run(&run.topic, Some(partition), records)
            .map_err(process_err(run.task))?;
    }
    Ok(())
}

/// A sub-topology's watermark advanced: its tasks fire their event-time
/// timers up to their floors.
fn fire_event_time(
    tasks: &mut BTreeMap<TaskId, StreamTask>,
    subtopology: usize,
    w: Watermark,
    current: &Cell<Option<TaskId>>,
) -> Result<(), RuntimeError> {
    for (id, task) in tasks
        .iter_mut()
        .filter(|(id, _)| id.subtopology == subtopology)
    {
        current.set(Some(*id));
        task.on_watermark(w);
        let timers = task.floor();
        task.fire_event_time(w, timers).map_err(process_err(*id))?;
    }
    Ok(())
}

/// A query reading what the lanes processed is answered now, between
/// records; a committed read waits for the next crossing, which it asks
/// for (an idle application cuts no barrier otherwise).
fn answer_or_park(
    tasks: &BTreeMap<TaskId, StreamTask>,
    mut query: Box<dyn LaneQuery>,
    parked: &mut Vec<Box<dyn LaneQuery>>,
    pending_output: &AtomicBool,
) {
    if query.committed() {
        parked.push(query);
        pending_output.store(true, Ordering::Release);
        return;
    }
    for (id, task) in tasks {
        let clock = TaskClock {
            watermark: task.watermark(),
            floor: task.floor(),
        };
        query.visit(*id, task, clock);
    }
    query.finish(None);
}

/// Every task crosses the barrier stamped `stamps`: the epoch's commits, in
/// task order. The final barrier (`flush`) emits everything closing at or
/// before its stamp into this epoch. Each `parked` query reads each task
/// where its stores hold exactly what the epoch commits.
fn cross(
    tasks: &mut BTreeMap<TaskId, StreamTask>,
    stamps: &[Watermark],
    flush: bool,
    current: &Cell<Option<TaskId>>,
    parked: &mut [Box<dyn LaneQuery>],
) -> Result<Vec<(TaskId, EpochCommit)>, RuntimeError> {
    let kind = if flush {
        BarrierKind::FinalFlush
    } else {
        BarrierKind::Regular
    };
    let mut commits = Vec::with_capacity(tasks.len());
    for (id, task) in tasks.iter_mut() {
        current.set(Some(*id));
        let stamp = stamps[id.subtopology];
        let mut observe = |task: &StreamTask| {
            let clock = TaskClock {
                watermark: stamp,
                floor: task.floor(),
            };
            for query in parked.iter_mut() {
                query.visit(*id, task, clock);
            }
        };
        let commit = BarrierSchedule::cross_observed(task, stamp, kind, &mut observe)
            .map_err(process_err(*id))?;
        commits.push((*id, commit));
    }
    Ok(commits)
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
/// changelogs (partition = the task's partition), answering `queries`
/// meanwhile, and seeds their clocks.
fn build_tasks<L: Log>(
    setup: &LaneSetup<L>,
    queries: Option<&Receiver<Box<dyn LaneQuery>>>,
    current: &Cell<Option<TaskId>>,
) -> Result<(BTreeMap<TaskId, StreamTask>, u64), RuntimeError> {
    let mut tasks = BTreeMap::new();
    for &id in &setup.tasks {
        current.set(Some(id));
        let stores = TaskStores {
            dir: setup.state_dir.as_ref().map(|d| d.join(id.to_string())),
            default: setup.default_store,
        };
        let mut task = setup
            .topology
            .instantiate_in(id.subtopology, &setup.config, stores)
            .map_err(process_err(id))?;
        task.set_topic_catalog(setup.topics.clone());
        tasks.insert(id, task);
    }
    current.set(None);
    let restored = if setup.config.changelog_enabled {
        let reader = StoreReader {
            log: &*setup.log,
            app: &setup.config.application_id,
            consumer: format!(
                "{}-restore-lane-{}",
                setup.config.application_id, setup.lane
            ),
            stall: setup.restore_stall_timeout,
            cancel: Some(&setup.cancel_restore),
            queries,
        };
        reader.restore(&tasks, Some(&setup.metrics))?
    } else {
        0
    };
    for (&id, task) in &mut tasks {
        current.set(Some(id));
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

/// A graceful close: every persistent store of this lane is closed and
/// checkpointed at its changelog partition's end, which the final
/// transaction made the offset every one of its writes is before.
fn checkpoint_at_ends<L: Log>(tasks: BTreeMap<TaskId, StreamTask>, setup: &LaneSetup<L>) {
    if tasks.values().all(|t| t.persistent_stores().is_empty()) {
        return;
    }
    let app = &setup.config.application_id;
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
    close_and_checkpoint(tasks, app, |tp| {
        consumer
            .end_offset(tp)
            .map(|o| o.0)
            .map_err(|e| e.to_string())
    });
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use stoatflow_streams::{
        Consumed, EmitStrategy, OutputRecord, Produced, Serdes, StreamsBuilder, TimeWindows,
    };

    use super::*;
    use crate::engine::commit::committer::{self, CommitMsg};

    /// Every record to `copies`, and a 10 s tumbling count emitted on
    /// close to `finals`.
    fn copies_and_finals() -> Topology {
        let mut b = StreamsBuilder::new();
        let s = b.stream("in", Consumed::with(Serdes::string(), Serdes::i64()));
        s.to("copies", Produced::with(Serdes::string(), Serdes::i64()));
        s.group_by_key()
            .windowed_by(TimeWindows::of_size_and_grace(
                Duration::from_secs(10),
                Duration::ZERO,
            ))
            .emit_strategy(EmitStrategy::on_window_close())
            .count()
            .to_stream()
            .to(
                "finals",
                Produced::with(
                    Serdes::time_windowed(Serdes::string(), 10_000),
                    Serdes::i64(),
                ),
            );
        b.build().unwrap()
    }

    fn push(task: &mut StreamTask, n: usize, ts: i64) {
        let input = task.typed_input::<String, i64>("in").unwrap();
        for i in 0..n {
            task.push_typed(&input, format!("k{}", i % 7), i as i64, ts)
                .unwrap();
        }
    }

    fn topics(records: &[OutputRecord]) -> Vec<&str> {
        records.iter().map(|r| &*r.topic).collect()
    }

    /// Task 0's last crossing left final results: its later copies stay
    /// behind them for the commit; task 1's go early, in order.
    #[test]
    fn a_task_holding_final_results_hands_nothing_over_early() {
        let topology = copies_and_finals();
        let config = Arc::new(StreamsConfig::new("app"));
        let (with_finals, without) = (TaskId::new(0, 0), TaskId::new(0, 1));
        let mut tasks = BTreeMap::new();
        for id in [with_finals, without] {
            tasks.insert(id, topology.instantiate(0, &config));
        }
        let task = tasks.get_mut(&with_finals).unwrap();
        push(task, 3, 1_000);
        let w = Watermark::from_millis;
        BarrierSchedule::cross(task, w(20_000), BarrierKind::Regular).unwrap();
        for task in tasks.values_mut() {
            // The pass on W(1) = 20 s closes [0, 10 s) on task 0.
            BarrierSchedule::cross(task, w(20_000), BarrierKind::Regular).unwrap();
        }
        let holding = tasks_holding_output(&tasks);
        assert_eq!(holding.iter().copied().collect::<Vec<_>>(), [with_finals]);
        for task in tasks.values_mut() {
            push(task, EARLY_OUTPUT, 30_000);
        }
        let (early, inbox) = committer::inbox();
        hand_over_early(&mut tasks, &early, 3, &holding);
        let Ok(CommitMsg::Early { epoch, outputs }) = inbox.try_recv() else {
            panic!("nothing handed over");
        };
        assert_eq!(epoch, 3);
        assert_eq!(outputs.len(), EARLY_OUTPUT, "task 1's copies only");
        assert!(topics(&outputs).iter().all(|t| *t == "copies"));
        assert!(tasks[&without].pending_output().is_empty());
        let kept = tasks[&with_finals].pending_output();
        let finals = kept.iter().take_while(|r| &*r.topic == "finals").count();
        assert_eq!(finals, 3, "the finals first (one per key)");
        assert_eq!(kept.len(), finals + EARLY_OUTPUT, "then task 0's copies");
    }
}
