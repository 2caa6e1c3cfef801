//! The engine: one poll loop that reads the source partitions, runs each
//! source's event-time reader, feeds the watermark tracker and ordered
//! dispatch, hands records to the lanes in batches, cuts commit barriers
//! stamped with the watermark, and commits each epoch in one transaction
//! (DESIGN 3.3).
//!
//! Owns the consumer, the tracker, the dispatcher, the one transactional
//! producer of the instance, the `stoatflow-watermark` store and the lanes'
//! channels. Knows the log only through its traits (never rdkafka) and the
//! tasks only through the lanes.
//!
//! An epoch N is everything dispatched between barriers N−1 and N plus what
//! the emission pass at barrier N−1 produced. Transaction N carries its
//! sink records, its changelog records, the stamp ring with W(N), and the
//! source offsets fixed at barrier N with their partition times (Kafka
//! Streams' committed-offset metadata). Barrier N+1 is cut only after
//! transaction N committed ("one committing, one processing"): the lanes
//! cross barrier N while the poll loop goes on dispatching, and the
//! committer thread commits transaction N while the lanes process epoch
//! N+1. Under
//! at-least-once the same epoch commits its records first and its offsets in
//! a second transaction, never atomically with them.
//!
//! An error that stops the engine goes to the uncaught-error handler, whose
//! answer may replace the engine in place: [`run_engine`] then builds a fresh
//! one, which resumes from the last commit exactly as a restart would.

pub(crate) mod assignment;
pub(crate) mod changelog_read;
pub(crate) mod committer;
pub(crate) mod error_response;
pub(crate) mod lane;
pub(crate) mod partitioner;
pub(crate) mod standby;
pub(crate) mod store_restore;
pub(crate) mod takeover;
pub(crate) mod task_stamps;
pub(crate) mod upkeep;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use stoatflow_log::offset_metadata::{self, PartitionMetadata};
use stoatflow_log::{
    Consumer, FetchedBatch, Log, Offset, OffsetAndMetadata, RecordView, TopicPartition,
};
use stoatflow_streams::{CoordinationMode, EventTimeReader, Topology};
use stoatflow_time::{
    Clock, Dispatched, EventTime, OrderedDispatch, PartitionIndex, SourcePartition,
    SourceTimePolicy, WallTime, Watermark, WatermarkGenerator, WatermarkOutput, WatermarkStrategy,
    WatermarkTracker, WatermarksSnapshot,
};

use crate::app_state::AppState;
use crate::config::RuntimeConfig;
use crate::config::cadence::BarrierCadence;
use crate::config::layout::{Layout, log_topic_name, marker, marker_watermark};
use crate::engine::assignment::{Membership, Rebalance};
use crate::engine::committer::{CommitDone, CommitJob, Committer, SinkRouting};
use crate::engine::error_response::{
    StreamThreadExceptionResponse, default_response, fenced, replacement_backoff,
};
use crate::engine::lane::{LaneMsg, LaneReply, LaneRun, LaneSetup, run_lane};
use crate::engine::standby::Standby;
use crate::engine::task_stamps::TaskStamps;
use crate::engine::upkeep::Upkeep;
use crate::error::RuntimeError;
use crate::observe::metrics::{MetricsCells, combine};
use crate::observe::timeline::{BarrierTiming, Timeline};
use crate::task_id::TaskId;

/// The key, in a repartition partition's committed offset metadata (Kafka
/// Streams' processor metadata), of the last watermark marker read.
const MARKER_METADATA_KEY: &str = "stoatflow.watermark.marker";

/// How often lanes get a wall-clock tick.
const WALL_CLOCK_TICK: Duration = Duration::from_millis(50);
/// How often the shared `/watermarks` view is refreshed.
const SNAPSHOT_EVERY: Duration = Duration::from_millis(100);
/// Records per lane batch before it is sent without waiting for the poll to end.
const BATCH: usize = 4096;
/// Bound of each lane's inbox, in messages (batches): backpressure on the
/// poll loop. A barrier waits behind what is queued, so in a backlog a
/// deeper queue adds to its crossing (16 × 4 096 records: about 10 ms of
/// lane work; a steady state keeps the queues short). Four were too few: a
/// commit that takes the poll thread's core for 30-60 ms let the lane run
/// dry after 3 ms (BENCHMARKS, "one committing, one processing").
const LANE_QUEUE: usize = 16;
/// The longest fetch wait while a barrier is in flight: its crossings and
/// its commit are looked for between fetches.
const IN_FLIGHT_POLL_WAIT: Duration = Duration::from_millis(1);

/// What the application and the engine share.
pub(crate) struct Shared {
    pub(crate) state: Mutex<AppState>,
    pub(crate) listener: Mutex<Option<StateListener>>,
    pub(crate) error_handler: Mutex<Option<ErrorHandler>>,
    /// `close()`: cut a final flush barrier, then stop.
    pub(crate) stop: AtomicBool,
    /// Dropped without `close()`: stop at once, commit nothing more.
    pub(crate) halt: AtomicBool,
    pub(crate) snapshot: Mutex<Option<WatermarksSnapshot>>,
    /// Per source partition, the offset committed by the last transaction.
    pub(crate) committed: Mutex<HashMap<TopicPartition, u64>>,
    /// Per source partition, the offset up to which records were handed to
    /// the tasks, as of the last fetch that found nothing new.
    pub(crate) consumed: Mutex<HashMap<TopicPartition, u64>>,
    /// Barriers committed since start.
    pub(crate) barriers: std::sync::atomic::AtomicU64,
    /// The error that stopped the application.
    pub(crate) error: Mutex<Option<Arc<RuntimeError>>>,
    /// Changelog records the last start restored into the tasks' stores.
    pub(crate) restored: std::sync::atomic::AtomicU64,
    /// Engines replaced in place after an error.
    pub(crate) replacements: std::sync::atomic::AtomicU64,
    /// What `/metrics` reads (written per barrier and per snapshot refresh).
    pub(crate) metrics: Arc<MetricsCells>,
    /// Barrier and watermark times (final-result latency), updated per barrier.
    pub(crate) timeline: Mutex<Timeline>,
    /// The tasks the running engine owns, and those it keeps standby copies of.
    pub(crate) assignment: Mutex<Assignment>,
    /// Changelog records the standby copies applied since start.
    pub(crate) standby_applied: Arc<std::sync::atomic::AtomicU64>,
    /// How far the running engine's standby copies are behind their
    /// changelogs (`standby::LAG_UNKNOWN` before they measured it).
    pub(crate) standby_lag: Arc<std::sync::atomic::AtomicU64>,
}

/// Which tasks an instance runs, and which it keeps warm copies of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assignment {
    /// The tasks it owns (processes, commits).
    pub active: Vec<TaskId>,
    /// The tasks whose stores it keeps warm from their changelogs
    /// (`num.standby.replicas`).
    pub standby: Vec<TaskId>,
}

/// Called on every state change with (new, old).
pub type StateListener = Box<dyn Fn(AppState, AppState) + Send + Sync>;
/// Called with each error that stops the engine; its answer (`None`: the
/// default) decides whether a fresh engine replaces it.
pub type ErrorHandler =
    Box<dyn Fn(&RuntimeError) -> Option<StreamThreadExceptionResponse> + Send + Sync>;

impl Shared {
    /// How far the standby copies are behind their changelogs; `None` until
    /// the running engine's copies measured it.
    pub(crate) fn standby_lag(&self) -> Option<u64> {
        match self.standby_lag.load(Ordering::Acquire) {
            standby::LAG_UNKNOWN => None,
            lag => Some(lag),
        }
    }

    /// The running engine's active and standby tasks.
    pub(crate) fn assignment(&self) -> Assignment {
        self.assignment.lock().expect("assignment lock").clone()
    }

    pub(crate) fn new() -> Self {
        Shared {
            state: Mutex::new(AppState::Created),
            listener: Mutex::new(None),
            error_handler: Mutex::new(None),
            stop: AtomicBool::new(false),
            halt: AtomicBool::new(false),
            snapshot: Mutex::new(None),
            committed: Mutex::new(HashMap::new()),
            consumed: Mutex::new(HashMap::new()),
            barriers: std::sync::atomic::AtomicU64::new(0),
            error: Mutex::new(None),
            restored: std::sync::atomic::AtomicU64::new(0),
            replacements: std::sync::atomic::AtomicU64::new(0),
            metrics: Arc::default(),
            timeline: Mutex::new(Timeline::default()),
            assignment: Mutex::new(Assignment::default()),
            standby_applied: Arc::default(),
            standby_lag: Arc::new(std::sync::atomic::AtomicU64::new(standby::LAG_UNKNOWN)),
        }
    }

    pub(crate) fn state(&self) -> AppState {
        *self.state.lock().expect("state lock")
    }

    /// Moves to `to` if the lifecycle allows it; tells the listener.
    pub(crate) fn transition(&self, to: AppState) -> bool {
        let from = {
            let mut s = self.state.lock().expect("state lock");
            if !s.can_become(to) {
                return false;
            }
            std::mem::replace(&mut *s, to)
        };
        tracing::info!(from = %from, to = %to, "application state");
        if let Some(l) = &*self.listener.lock().expect("listener lock") {
            l(to, from);
        }
        true
    }

    /// What to do after `error` stopped the engine: the handler's answer,
    /// else the default.
    pub(crate) fn decide(&self, error: &RuntimeError) -> StreamThreadExceptionResponse {
        let answer = match &*self.error_handler.lock().expect("handler lock") {
            Some(h) => h(error),
            None => None,
        };
        answer.unwrap_or_else(|| default_response(error))
    }

    /// Stops the application in ERROR (the handler has been asked already).
    pub(crate) fn fail(&self, error: &RuntimeError) {
        tracing::error!(error = %error, "application stopped by an error");
        self.transition(AppState::PendingError);
        *self.error.lock().expect("error lock") = Some(Arc::new(RuntimeError::Stopped {
            reason: error.to_string(),
        }));
        self.transition(AppState::Error);
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("state", &self.state())
            .field("stop", &self.stop)
            .field("halt", &self.halt)
            .finish_non_exhaustive()
    }
}

/// One source partition as the poll loop sees it.
struct SourceSlot {
    tp: TopicPartition,
    topic: Arc<str>,
    index: PartitionIndex,
    task: TaskId,
    lane: usize,
    reader: Option<Arc<dyn EventTimeReader>>,
    /// Next offset to commit: one past the last dispatched record.
    position: Option<u64>,
    /// The largest event time dispatched (committed as partition time).
    partition_time: Option<EventTime>,
    /// A repartition partition: the last marker read from it.
    last_marker: Option<Arc<AtomicI64>>,
    /// Records fetched and not yet dispatched.
    buffered: usize,
    /// The offset of the newest marker read (committed past once every
    /// record before it is dispatched).
    marker_offset: Option<u64>,
    /// Fetched batches with records still in dispatch, by sequence number,
    /// oldest first.
    fetched: VecDeque<(u64, Arc<FetchedBatch>)>,
    /// The sequence number of the next fetched batch.
    next_seq: u64,
    /// The run of dispatched records not yet handed to the lane.
    open: Option<LaneRun>,
}

/// A fetched record waiting in ordered dispatch: record `index` of the
/// slot's batch number `seq`.
struct Pending {
    slot: u32,
    index: u32,
    seq: u64,
}

/// The generator of a repartition partition: its watermark is the last
/// marker read from it (DESIGN 3.3), never a record's time.
#[derive(Debug)]
struct MarkerGenerator {
    last_marker: Arc<AtomicI64>,
}

impl WatermarkGenerator for MarkerGenerator {
    fn on_event(&mut self, _: EventTime, _: &mut WatermarkOutput) {}

    fn on_periodic_emit(&mut self, output: &mut WatermarkOutput) {
        let w = self.last_marker.load(Ordering::Acquire);
        if w != i64::MIN {
            output.emit_watermark(Watermark::from_millis(w));
        }
    }
}

/// The time policy of a repartition partition: marker-driven, never idle
/// (its writer sends a marker with every commit).
fn marker_policy(last_marker: Arc<AtomicI64>) -> SourceTimePolicy {
    WatermarkStrategy::<(), ()>::for_generator(move || MarkerGenerator {
        last_marker: last_marker.clone(),
    })
    .with_idleness(Duration::ZERO)
    .policy()
    .clone()
}

/// The engine thread's body. Returns when the application stops.
pub(crate) fn run_engine<L: Log + 'static>(
    topology: Arc<Topology>,
    config: Arc<RuntimeConfig>,
    log: Arc<L>,
    clock: Arc<dyn Clock>,
    shared: Arc<Shared>,
) {
    let mut in_a_row = 0u32;
    // The group membership outlives each engine: a rebuild is not a rejoin.
    let mut membership = Membership::default();
    loop {
        let barriers_before = shared.barriers.load(Ordering::Acquire);
        let result = Engine::start(&topology, &config, &log, &clock, &shared, &mut membership)
            .and_then(|mut engine| engine.run(&mut membership));
        let error = match result {
            Ok(Exit::Stopped) => {
                shared.transition(AppState::PendingShutdown);
                shared.transition(AppState::NotRunning);
                return;
            }
            // Eager rebalancing: the next engine runs the new assignment.
            Ok(Exit::Rebalance) => continue,
            Err(e) => e,
        };
        if shared.halt.load(Ordering::Acquire) {
            tracing::debug!(error = %error, "stopped without close");
            shared.fail(&error);
            return;
        }
        // A fenced producer is never replaced: the replacement would fence
        // the instance that took over. The handler still hears of it.
        let (error, response) = match fenced(&error) {
            Some(plain) => {
                shared.decide(&plain);
                (plain, StreamThreadExceptionResponse::ShutdownClient)
            }
            None => {
                let response = shared.decide(&error);
                (error, response)
            }
        };
        if response != StreamThreadExceptionResponse::ReplaceThread
            || shared.stop.load(Ordering::Acquire)
        {
            shared.fail(&error);
            return;
        }
        // Replace the engine in place: the failed one aborted its epoch and
        // is gone (lanes joined, stores closed, producer dropped); the new
        // one resumes from the last commit as a restart would.
        if shared.barriers.load(Ordering::Acquire) > barriers_before {
            in_a_row = 0;
        }
        in_a_row += 1;
        shared.replacements.fetch_add(1, Ordering::AcqRel);
        let backoff = replacement_backoff(in_a_row);
        tracing::warn!(error = %error, replacement = in_a_row, backoff_ms = backoff.as_millis() as u64, "the engine failed; replacing it, resuming from the last commit");
        let until = Instant::now() + backoff;
        while Instant::now() < until {
            if shared.halt.load(Ordering::Acquire) {
                shared.fail(&error);
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Why an engine's poll loop ended without an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exit {
    /// The application stops.
    Stopped,
    /// The group's assignment changed: build the engine again.
    Rebalance,
}

/// A barrier between its cut and its commit: first its lanes cross it (their
/// commits gather here), then the committer commits its transaction.
struct InFlight {
    barrier: u64,
    stamps: Arc<[Watermark]>,
    flush: bool,
    /// When it was cut, and the clock's time then (the stamp ring's).
    cut: Instant,
    now: WallTime,
    /// The source offsets fixed at the cut (moved into the job).
    offsets: Vec<(TopicPartition, OffsetAndMetadata)>,
    /// Lanes still to cross it; once none, the transaction is the committer's.
    crossing: usize,
    /// The crossed lanes' commits.
    commits: Vec<(TaskId, stoatflow_streams::EpochCommit)>,
}

/// One sub-topology's event time. A sub-topology fed by a repartition topic
/// takes its watermark from the markers in it and runs barriers on its own
/// stamps (DESIGN 3.3), so each has its own tracker, dispatcher and stamp
/// ring; without repartition topics there is one, the application's.
struct SubtopologyTime {
    tracker: WatermarkTracker,
    dispatch: OrderedDispatch<Pending>,
    /// The last two stamps, newest last.
    recent: [Watermark; 2],
    /// The stamp of the last markers it wrote to its repartition topics.
    last_marker_sent: Watermark,
}

impl SubtopologyTime {
    fn has_work(&self) -> bool {
        self.tracker.current() != self.recent[1] || self.recent[0] != self.recent[1]
    }
}

struct Engine<L: Log> {
    config: Arc<RuntimeConfig>,
    clock: Arc<dyn Clock>,
    shared: Arc<Shared>,
    consumer: L::Consumer,
    /// The thread that owns the producer and commits each epoch.
    committer: Committer,
    /// The barrier between its cut and its commit (at most one).
    inflight: Option<InFlight>,
    /// Per sub-topology: its tracker, dispatcher and last stamps.
    times: Vec<SubtopologyTime>,
    /// Per owned task, its stamp ring.
    stamps: TaskStamps,
    slots: Vec<SourceSlot>,
    slot_of: HashMap<TopicPartition, usize>,
    plan: Layout,
    lanes: Vec<SyncSender<LaneMsg>>,
    lane_threads: Vec<JoinHandle<()>>,
    replies: Receiver<LaneReply>,
    pending_output: Arc<AtomicBool>,
    cadence: BarrierCadence,
    barrier: u64,
    last_barrier_at: Instant,
    /// When the last barrier was cut (the commit-barrier interval metric).
    barrier_cut_at: Option<Instant>,
    dispatched_since_barrier: u64,
    punctuation_since_barrier: bool,
    /// A repartition marker, or a position past what is not a record, was
    /// read since the last barrier: the moved position is owed a commit.
    markers_since_barrier: bool,
    /// Per lane, the runs waiting to be sent and the records in them.
    runs: Vec<(Vec<LaneRun>, usize)>,
    last_tick: Instant,
    last_snapshot: Instant,
    /// Watermark moves since the last barrier, published with it.
    timeline: Timeline,
    upkeep: Upkeep<L>,
    /// The standby copies' thread, if this instance keeps any.
    standby: Option<Standby>,
}

impl<L: Log + 'static> Engine<L> {
    fn start(
        topology: &Arc<Topology>,
        config: &Arc<RuntimeConfig>,
        log: &Arc<L>,
        clock: &Arc<dyn Clock>,
        shared: &Arc<Shared>,
        membership: &mut Membership,
    ) -> Result<Self, RuntimeError> {
        shared.transition(AppState::Rebalancing);
        let app = config.application_id().to_owned();
        let plan = Layout::plan(topology, config, &**log)?;
        let now = clock.now();

        // The group join goes on in the background while the producer
        // fences (it reads nothing; on Kafka the join takes hundreds of ms).
        membership.join(&**log, topology, &app, &config.transactional_id())?;

        // The producer first: creating it fences every older producer of this
        // transactional id and completes the transaction a dead instance left
        // open. Everything read below (the watermark stamps, the committed
        // offsets, the changelogs) is read after that: before, reads stop at
        // the open transaction and offsets stay unstable until the broker
        // times it out (a minute on Kafka), and a broker that shows pending
        // offsets would let us start past input whose output is then aborted.
        let producer = log.transactional_producer(&config.transactional_id())?;

        // The tasks this instance owns (after the fence: the previous owner
        // has committed and released them), then their stamp rings: their
        // seeds are the tasks' floors and frontiers.
        let owned = membership.tasks(&**log, topology, &app, &config.transactional_id(), || {
            shared.stop.load(Ordering::Acquire) || shared.halt.load(Ordering::Acquire)
        })?;
        let subtopologies = topology.subtopology_count();
        let mut stamps = TaskStamps::restore(config, &**log, &plan, owned.iter().copied())?;
        let seeds = stamps.seeds(subtopologies)?;
        let last_barrier = seeds.last_barrier;
        let mut times: Vec<SubtopologyTime> = seeds
            .recent
            .iter()
            .map(|&recent| SubtopologyTime {
                tracker: WatermarkTracker::new(config.tracker.clone()),
                dispatch: OrderedDispatch::new(),
                recent,
                last_marker_sent: Watermark::MIN,
            })
            .collect();
        let seeds = Arc::new(seeds.tasks);

        // Source partitions: tracker registration, committed offsets, partition times.
        let lanes_n = config.lanes;
        let tracking = config.streams.coordination != CoordinationMode::Disabled;
        let mut slots = Vec::new();
        let mut slot_of = HashMap::new();
        for source in topology.sources() {
            let partitions = plan.partitions[&source.subtopology];
            let reader = topology.event_time_reader(&source.topic);
            let log_name = log_topic_name(&app, &source.topic, source.internal);
            for p in (0..partitions).filter(|&p| {
                owned.contains(&TaskId {
                    subtopology: source.subtopology,
                    partition: p,
                })
            }) {
                let sp = SourcePartition::new(log_name.as_str(), p as i32);
                let last_marker = source.internal.then(|| Arc::new(AtomicI64::new(i64::MIN)));
                let tracker = &mut times[source.subtopology].tracker;
                let index = match (&last_marker, &source.policy) {
                    (Some(cell), _) => tracker.register(sp, &marker_policy(cell.clone()), now)?,
                    (None, Some(policy)) => tracker.register(sp, policy, now)?,
                    (None, None) => tracker.register_default(sp, now)?,
                };
                let tp = TopicPartition::new(log_name.clone(), p);
                slot_of.insert(tp.clone(), slots.len());
                slots.push(SourceSlot {
                    tp,
                    topic: Arc::from(source.topic.as_str()),
                    index,
                    task: TaskId {
                        subtopology: source.subtopology,
                        partition: p,
                    },
                    lane: p as usize % lanes_n,
                    reader: reader.clone(),
                    position: None,
                    partition_time: None,
                    last_marker,
                    buffered: 0,
                    marker_offset: None,
                    fetched: VecDeque::new(),
                    next_seq: 0,
                    open: None,
                });
            }
        }
        for t in &mut times {
            if let Some(w) = t.tracker.report_startup() {
                tracing::warn!(warning = ?w, "watermark tracker");
            }
        }
        let group = app.clone();
        let tps: Vec<TopicPartition> = slots.iter().map(|s| s.tp.clone()).collect();
        let committed = match membership.committed_offsets(&tps) {
            Some(read) => read?,
            None => log.committed_offsets(&group, &tps)?,
        };
        // Kafka Streams' processor metadata per task, for a takeover.
        let mut processor_metadata = Vec::new();
        {
            let mut shared_committed = shared.committed.lock().expect("committed lock");
            for (tp, om) in committed {
                let Some(om) = om else { continue };
                let slot = &mut slots[slot_of[&tp]];
                slot.position = Some(om.offset.0);
                shared_committed.insert(tp.clone(), om.offset.0);
                let meta = offset_metadata::decode(&om.metadata).map_err(|e| {
                    RuntimeError::OffsetMetadata {
                        partition: tp.to_string(),
                        reason: e.to_string(),
                    }
                })?;
                if let (Some(cell), Some((_, w))) = (
                    &slot.last_marker,
                    meta.processor
                        .iter()
                        .find(|(k, _)| k == MARKER_METADATA_KEY),
                ) {
                    cell.store(*w, Ordering::Release);
                }
                processor_metadata.extend(
                    meta.processor
                        .iter()
                        .map(|(k, v)| (slot.task, k.clone(), *v)),
                );
                if let Some(t) = meta.partition_time {
                    let t = EventTime::new(t).map_err(|e| RuntimeError::OffsetMetadata {
                        partition: tp.to_string(),
                        reason: e.to_string(),
                    })?;
                    slot.partition_time = Some(t);
                    if tracking {
                        times[slot.task.subtopology]
                            .tracker
                            .seed_partition_time(slot.index, t)?;
                    }
                }
            }
        }
        let mut consumer = log.consumer(&group)?;
        consumer.assign(&tps)?;

        // Lanes: each builds, restores and seeds its own tasks.
        let mut by_lane: Vec<Vec<TaskId>> = vec![Vec::new(); lanes_n];
        for &id in &owned {
            by_lane[id.partition as usize % lanes_n].push(id);
        }
        // Each task's sources start from their partition's committed time, as
        // the poll loop's readers do: both assign the same event times.
        let partition_times: Vec<(TaskId, Arc<str>, EventTime)> = slots
            .iter()
            .filter_map(|s| Some((s.task, s.topic.clone(), s.partition_time?)))
            .collect();
        let takeover = takeover::is_takeover(config, last_barrier);
        let streams_config = Arc::new(config.streams.clone());
        let pending_output = Arc::new(AtomicBool::new(false));
        let (reply_tx, replies) = sync_channel(lanes_n * 2 + 4);
        let mut lanes = Vec::new();
        let mut lane_threads = Vec::new();
        for (lane, tasks) in by_lane.into_iter().enumerate() {
            let (tx, rx) = sync_channel(LANE_QUEUE);
            let setup = LaneSetup {
                lane,
                tasks,
                topology: topology.clone(),
                config: streams_config.clone(),
                log: log.clone(),
                seeds: seeds.clone(),
                restore_stall_timeout: config.restore_stall_timeout,
                wall_clock: now,
                pending_output: pending_output.clone(),
                state_dir: config.effective_state_dir(),
                default_store: config.default_dsl_store(),
                partition_times: partition_times.clone(),
                metrics: shared.metrics.clone(),
                takeover: takeover.then(|| processor_metadata.clone()),
            };
            let reply_tx = reply_tx.clone();
            let handle = std::thread::Builder::new()
                .name(format!("{app}-lane-{lane}"))
                .spawn(move || run_lane(setup, rx, reply_tx))
                .map_err(|e| RuntimeError::ThreadDied {
                    thread: format!("lane {lane}"),
                    reason: e.to_string(),
                })?;
            lanes.push(tx);
            lane_threads.push(handle);
        }
        drop(reply_tx);
        let mut restored = 0u64;
        for _ in 0..lanes_n {
            match replies.recv() {
                Ok(LaneReply::Ready { restored: r, .. }) => restored += r,
                Ok(LaneReply::Failed { lane, error }) => return Err(lane_failed(lane, error)),
                Ok(other) => unreachable!("a lane answers Ready or Failed first, not {other:?}"),
                Err(_) => {
                    return Err(RuntimeError::ThreadDied {
                        thread: "lane".into(),
                        reason: "exited during restore".into(),
                    });
                }
            }
        }
        tracing::info!(restored, lanes = lanes_n, "stores restored");
        shared.restored.store(restored, Ordering::Release);

        // Standby copies of the tasks owned elsewhere, once this instance's
        // own tasks are restored.
        let all_tasks = (0..subtopologies).flat_map(|st| {
            let partitions = plan.partitions.get(&st).copied().unwrap_or(0);
            (0..partitions).map(move |p| TaskId::new(st, p))
        });
        let standby_tasks = standby::standby_tasks(config.standby_replicas, all_tasks, &owned);
        let standby = Standby::start_for(
            standby_tasks.clone(),
            config,
            topology,
            &streams_config,
            log,
            shared,
        )?;
        *shared.assignment.lock().expect("assignment lock") = Assignment {
            active: owned.iter().copied().collect(),
            standby: match standby {
                Some(_) => standby_tasks.into_iter().collect(),
                None => Vec::new(),
            },
        };
        let barrier = last_barrier;
        let sink_tps = plan
            .sinks
            .iter()
            .map(|(topic, sink)| {
                let tps = (0..sink.partitions)
                    .map(|p| TopicPartition::new(&*sink.log_name, p))
                    .collect();
                (Arc::from(topic.as_str()), tps)
            })
            .collect();
        let repartition = slots
            .iter()
            .filter(|s| s.last_marker.is_some())
            .map(|s| s.tp.clone());
        let upkeep = Upkeep::new(
            log.clone(),
            config.purge_interval,
            repartition,
            Instant::now(),
        );
        let committer =
            Committer::start(producer, SinkRouting::new(sink_tps), &app, config.guarantee)?;
        let engine = Engine {
            config: config.clone(),
            clock: clock.clone(),
            shared: shared.clone(),
            consumer,
            committer,
            inflight: None,
            times,
            stamps,
            slots,
            slot_of,
            plan,
            lanes,
            lane_threads,
            replies,
            pending_output,
            cadence: BarrierCadence::new(config.barrier),
            barrier,
            last_barrier_at: Instant::now(),
            barrier_cut_at: None,
            dispatched_since_barrier: 0,
            punctuation_since_barrier: false,
            // The first barrier after a start is always cut: it writes each
            // repartition topic a marker with the writer's resumed stamp, so
            // a reader that had consumed every earlier marker learns its
            // watermark again (markers are not replayed: the reader's
            // committed position is past them).
            markers_since_barrier: true,
            runs: (0..lanes_n).map(|_| (Vec::new(), 0)).collect(),
            last_tick: Instant::now(),
            last_snapshot: Instant::now() - SNAPSHOT_EVERY,
            timeline: Timeline::default(),
            upkeep,
            standby,
        };
        shared.transition(AppState::Running);
        Ok(engine)
    }

    fn run(&mut self, membership: &mut Membership) -> Result<Exit, RuntimeError> {
        let result = self.poll_loop(membership);
        // Hang up on the lanes and wait for them.
        self.lanes.clear();
        for h in self.lane_threads.drain(..) {
            let _ = h.join();
        }
        // The standby copies close and checkpoint where they got to, before
        // the next engine may open the same stores as its own (a
        // promotion); after a crash (halt) they leave nothing behind.
        if let Some(standby) = self.standby.take() {
            standby.stop(!self.shared.halt.load(Ordering::Acquire));
        }
        result
    }

    fn poll_loop(&mut self, membership: &mut Membership) -> Result<Exit, RuntimeError> {
        loop {
            if self.shared.halt.load(Ordering::Acquire) {
                return Ok(Exit::Stopped);
            }
            if let Some(rebalance) = membership.poll()? {
                return self.rebalance(rebalance, membership);
            }
            if self.shared.stop.load(Ordering::Acquire) {
                self.shared.transition(AppState::PendingShutdown);
                self.flush_and_checkpoint()?;
                return Ok(Exit::Stopped);
            }
            // A barrier in flight is looked after between short fetches.
            let wait = match self.inflight {
                Some(_) => self.config.poll_wait.min(IN_FLIGHT_POLL_WAIT),
                None => self.config.poll_wait,
            };
            let fetched = self.consumer.fetch_batches(wait)?;
            let caught_up = fetched.is_empty();
            let now = self.clock.now();
            for batch in fetched {
                self.buffer(batch, now)?;
            }
            self.drain_dispatch()?;
            // Also after an empty fetch: Kafka can hand over a transaction's
            // commit marker in a fetch that returns no record (a fetch
            // response cut before it, a broker that just restarted, an
            // engine rebuilt exactly at the end of its input).
            self.advance_idle_positions()?;
            if caught_up {
                self.publish_consumed();
            }
            for st in 0..self.times.len() {
                if let Some(w) = self.times[st].tracker.poll_watermark(now) {
                    self.timeline.watermark_reached(st, w, Instant::now());
                    for lane in &self.lanes {
                        send(
                            lane,
                            LaneMsg::Watermark {
                                subtopology: st,
                                watermark: w,
                            },
                        )?;
                    }
                    self.punctuation_since_barrier = true;
                }
            }
            if self.last_tick.elapsed() >= WALL_CLOCK_TICK {
                self.last_tick = Instant::now();
                for lane in &self.lanes {
                    send(lane, LaneMsg::WallClock(now))?;
                }
            }
            if self.last_snapshot.elapsed() >= SNAPSHOT_EVERY {
                self.last_snapshot = Instant::now();
                *self.shared.snapshot.lock().expect("snapshot lock") = Some(self.snapshot());
                if let Some(m) = combine(self.times.iter().map(|t| t.tracker.metrics(now))) {
                    self.shared.metrics.set_watermark(m);
                }
            }
            self.keep_barriers_moving()?;
        }
    }

    /// A rebalance (eager): commit the epoch at a barrier (unless the tasks
    /// were lost), checkpoint the persistent stores as a graceful close
    /// does, release the revoked partitions, and end this engine.
    ///
    /// The barrier is a flush barrier, as a close's: an emission pass
    /// expires what it emits, and a regular barrier's pass would leave its
    /// results to the next transaction, which this engine never commits,
    /// while the checkpoint kept the expiry. The rebuilt engine would then
    /// find neither the results nor the windows.
    fn rebalance(
        &mut self,
        rebalance: Rebalance,
        membership: &mut Membership,
    ) -> Result<Exit, RuntimeError> {
        self.shared.transition(AppState::Rebalancing);
        if rebalance == Rebalance::CommitAndRebuild && !self.flush_and_checkpoint()? {
            return Ok(Exit::Stopped);
        }
        membership.release()?;
        Ok(Exit::Rebalance)
    }

    /// The end of an engine that commits (a close, a graceful rebalance):
    /// dispatch what is buffered, let the barrier in flight commit, then a
    /// flush barrier; once it committed, the lanes close and checkpoint
    /// their persistent stores. `false` if the application was halted on
    /// the way (nothing more is committed or checkpointed then).
    fn flush_and_checkpoint(&mut self) -> Result<bool, RuntimeError> {
        self.drain_dispatch()?;
        if !self.finish_barrier()? {
            return Ok(false);
        }
        self.cut_barrier(true)?;
        if !self.finish_barrier()? {
            return Ok(false);
        }
        for lane in &self.lanes {
            send(lane, LaneMsg::Checkpoint)?;
        }
        Ok(true)
    }

    /// Between two batches of a long dispatch (a fetch holds up to 4 MiB):
    /// the barrier in flight moves on, and the next one is cut when due.
    /// The tracker has seen only dispatched records, so a cut between any
    /// two of them is a cut like any other.
    fn keep_barriers_moving(&mut self) -> Result<(), RuntimeError> {
        self.advance_barrier(Duration::ZERO)?;
        if self.inflight.is_none()
            && self
                .cadence
                .is_due(self.last_barrier_at.elapsed(), self.epoch_has_work())
        {
            self.cut_barrier(false)?;
        }
        Ok(())
    }

    /// Publishes how far each source partition was handed to the lanes
    /// (`StreamsApp::wait_until_consumed`).
    fn publish_consumed(&self) {
        let mut consumed = self.shared.consumed.lock().expect("consumed lock");
        for s in &self.slots {
            if let Some(p) = s.position {
                consumed.insert(s.tp.clone(), p);
            }
        }
    }

    /// Whether the epoch since the last barrier did anything, or a later
    /// barrier still has final results to emit or commit (DESIGN 3.3).
    fn epoch_has_work(&self) -> bool {
        self.dispatched_since_barrier > 0
            || self.punctuation_since_barrier
            || self.markers_since_barrier
            || self.pending_output.load(Ordering::Acquire)
            || self.times.iter().any(SubtopologyTime::has_work)
    }

    /// A lane that failed between barriers stops the application now.
    fn check_replies(&mut self) -> Result<(), RuntimeError> {
        match self.replies.try_recv() {
            Ok(LaneReply::Failed { lane, error }) => Err(lane_failed(lane, error)),
            Ok(other) => unreachable!("lanes answer only barriers, not {other:?}"),
            Err(TryRecvError::Empty) => Ok(()),
            Err(TryRecvError::Disconnected) => Err(lanes_gone()),
        }
    }

    /// Reads a fetched batch's markers and event times and buffers its
    /// records in ordered dispatch; the batch itself waits in its slot
    /// until its last record is dispatched.
    fn buffer(&mut self, batch: FetchedBatch, now: WallTime) -> Result<(), RuntimeError> {
        let Some(&slot) = self.slot_of.get(batch.partition()) else {
            return Ok(());
        };
        let batch = Arc::new(batch);
        let seq = self.slots[slot].next_seq;
        let mut pushed = false;
        for (index, r) in batch.iter().enumerate() {
            if self.slots[slot].last_marker.is_some() && self.read_marker(slot, &r)? {
                continue;
            }
            self.push_record(slot, seq, index, &r, now)?;
            pushed = true;
        }
        if pushed {
            let s = &mut self.slots[slot];
            s.fetched.push_back((seq, batch));
            s.next_seq += 1;
        }
        Ok(())
    }

    /// A repartition partition's record: if it is a watermark marker,
    /// takes its watermark and returns true.
    fn read_marker(&mut self, slot: usize, r: &RecordView<'_>) -> Result<bool, RuntimeError> {
        let s = &mut self.slots[slot];
        match marker_watermark(r.headers) {
            Ok(None) => Ok(false),
            Ok(Some(w)) => {
                if let Some(cell) = &s.last_marker {
                    cell.fetch_max(w, Ordering::AcqRel);
                }
                s.marker_offset = Some(r.offset.0);
                if s.buffered == 0 {
                    s.position = Some(r.offset.0 + 1);
                }
                // The position moved: a barrier commits it.
                self.markers_since_barrier = true;
                Ok(true)
            }
            Err(reason) => Err(RuntimeError::BadMarker {
                partition: s.tp.to_string(),
                offset: r.offset.0,
                reason,
            }),
        }
    }

    fn push_record(
        &mut self,
        slot: usize,
        seq: u64,
        index: usize,
        r: &RecordView<'_>,
        now: WallTime,
    ) -> Result<(), RuntimeError> {
        let s = &mut self.slots[slot];
        s.buffered += 1;
        let record_ts = r.timestamp.0;
        let event_time = match &s.reader {
            Some(reader) => reader.event_time(r.key, r.value, record_ts, s.partition_time),
            None => EventTime::new(record_ts).map_err(|e| e.to_string()),
        };
        let event_time = match event_time {
            Ok(t) => t,
            Err(reason) => {
                // The task meets the same failure and its deserialization
                // handler decides; dispatch orders it by its log timestamp.
                tracing::debug!(partition = %s.tp, offset = r.offset.0, reason, "event time unreadable at dispatch");
                EventTime::new(record_ts.max(0))
                    .unwrap_or_else(|_| EventTime::new(0).expect("zero is a valid event time"))
            }
        };
        let time = &mut self.times[s.task.subtopology];
        time.dispatch
            .push(
                &mut time.tracker,
                s.index,
                stoatflow_time::Offset(r.offset.0 as i64),
                event_time,
                Pending {
                    slot: slot as u32,
                    index: index as u32,
                    seq,
                },
                now,
            )
            .map_err(|e| RuntimeError::ThreadDied {
                thread: "poll loop".into(),
                reason: e.to_string(),
            })
    }

    /// A partition with nothing waiting in dispatch commits the consumer's
    /// position, which has passed what is not a record (Kafka's transaction
    /// markers), so a committed offset reaches the partition's end.
    fn advance_idle_positions(&mut self) -> Result<(), RuntimeError> {
        for s in &mut self.slots {
            if s.buffered > 0 {
                continue;
            }
            let next = self.consumer.position(&s.tp)?.0;
            // A partition that never had a record (only an aborted
            // transaction, say) still reaches its end.
            if s.position.is_none_or(|at| next > at) {
                s.position = Some(next);
                // No record may follow soon: a barrier commits the move, or
                // the committed offset never reaches the partition's end.
                self.markers_since_barrier = true;
            }
        }
        Ok(())
    }

    /// Hands every record ordered dispatch releases to its lane, as runs of
    /// consecutive records of one fetched batch (one run per partition and
    /// batch in the usual case, whatever the interleaving of partitions).
    fn drain_dispatch(&mut self) -> Result<(), RuntimeError> {
        let now = self.clock.now();
        let mut since_check = 0usize;
        for st in 0..self.times.len() {
            loop {
                let time = &mut self.times[st];
                let Some(d) = time.dispatch.next(&mut time.tracker, now) else {
                    break;
                };
                self.route(d)?;
                since_check += 1;
                if since_check == BATCH {
                    since_check = 0;
                    self.keep_barriers_moving()?;
                }
            }
        }
        for lane in 0..self.lanes.len() {
            self.send_runs(lane)?;
        }
        Ok(())
    }

    /// One dispatched record: its slot's position and partition time move,
    /// and it joins its partition's open run.
    fn route(&mut self, d: Dispatched<Pending>) -> Result<(), RuntimeError> {
        let Pending { slot, index, seq } = d.record;
        let s = &mut self.slots[slot as usize];
        let offset = d.offset.0 as u64;
        s.position = Some(offset + 1);
        s.buffered -= 1;
        if s.buffered == 0
            && let Some(m) = s.marker_offset
            && m > offset
        {
            s.position = Some(m + 1);
        }
        if s.partition_time.is_none_or(|p| d.event_time > p) {
            s.partition_time = Some(d.event_time);
        }
        self.dispatched_since_barrier += 1;
        while s.fetched.front().is_some_and(|(q, _)| *q < seq) {
            s.fetched.pop_front();
        }
        let (_, batch) = s
            .fetched
            .front()
            .expect("a dispatched record's batch waits in its slot");
        let last_of_batch = index as usize + 1 == batch.len();
        match &mut s.open {
            Some(run) if run.to == index && Arc::ptr_eq(&run.batch, batch) => run.to += 1,
            open => {
                let run = LaneRun {
                    task: s.task,
                    topic: s.topic.clone(),
                    batch: batch.clone(),
                    from: index,
                    to: index + 1,
                };
                if let Some(done) = open.replace(run) {
                    self.runs[s.lane].0.push(done);
                }
            }
        }
        if last_of_batch {
            // Its run holds it now; an idle partition keeps no batch.
            s.fetched.pop_front();
        }
        let lane = s.lane;
        self.runs[lane].1 += 1;
        if self.runs[lane].1 >= BATCH {
            self.send_runs(lane)?;
        }
        Ok(())
    }

    /// Sends `lane` its waiting runs, the open ones included.
    fn send_runs(&mut self, lane: usize) -> Result<(), RuntimeError> {
        let (runs, count) = &mut self.runs[lane];
        for s in self.slots.iter_mut().filter(|s| s.lane == lane) {
            runs.extend(s.open.take());
        }
        if runs.is_empty() {
            return Ok(());
        }
        *count = 0;
        send(&self.lanes[lane], LaneMsg::Records(std::mem::take(runs)))
    }

    /// Cuts barrier N: fixes the offsets, stamps W(N) and sends it down
    /// every lane behind what they hold. The lanes cross it while the poll
    /// loop goes on dispatching epoch N+1; [`Engine::advance_barrier`]
    /// collects their commits and hands the transaction to the committer.
    fn cut_barrier(&mut self, flush: bool) -> Result<(), RuntimeError> {
        debug_assert!(self.inflight.is_none(), "barrier N+1 waits for N's commit");
        // Everything dispatched before the cut reaches its lane before the
        // barrier: the offsets fixed below count it as epoch N's.
        for lane in 0..self.lanes.len() {
            self.send_runs(lane)?;
        }
        let now = self.clock.now();
        let cut = Instant::now();
        let stamps: Arc<[Watermark]> = self
            .times
            .iter_mut()
            .map(|t| t.tracker.force_watermark(now))
            .collect();
        let n = self.barrier + 1;
        let offsets: Vec<(TopicPartition, OffsetAndMetadata)> = self
            .slots
            .iter()
            .filter_map(|s| {
                let position = s.position?;
                // A repartition partition's watermark is the last marker
                // read; it commits with the position past it, so a restart
                // resumes it (markers before the position are not re-read).
                let processor = s
                    .last_marker
                    .as_ref()
                    .map(|m| m.load(Ordering::Acquire))
                    .filter(|&w| w != i64::MIN)
                    .map(|w| vec![(MARKER_METADATA_KEY.to_owned(), w)])
                    .unwrap_or_default();
                let meta = PartitionMetadata {
                    partition_time: s.partition_time.map(EventTime::as_millis),
                    processor,
                };
                Some((
                    s.tp.clone(),
                    OffsetAndMetadata {
                        offset: Offset(position),
                        metadata: offset_metadata::encode(&meta),
                    },
                ))
            })
            .collect();
        self.pending_output.store(false, Ordering::Release);
        // The force above publishes the watermark, so the throttled poll
        // would never report it: the advance reaches the lanes here, ahead
        // of the barrier (DESIGN 3.3). Timers fire against the floor, so an
        // event is also owed the barrier after the floor moved, or timers
        // due under the last floor would wait for the watermark to move.
        for (st, time) in self.times.iter().enumerate() {
            if stamps[st] > time.recent[1] || time.recent[0] != time.recent[1] {
                for lane in &self.lanes {
                    send(
                        lane,
                        LaneMsg::Watermark {
                            subtopology: st,
                            watermark: stamps[st],
                        },
                    )?;
                }
            }
        }
        for lane in &self.lanes {
            send(
                lane,
                LaneMsg::Barrier {
                    barrier: n,
                    stamps: stamps.clone(),
                    flush,
                },
            )?;
        }
        // What follows the cut is epoch N+1's.
        self.dispatched_since_barrier = 0;
        self.punctuation_since_barrier = false;
        self.markers_since_barrier = false;
        self.inflight = Some(InFlight {
            barrier: n,
            stamps,
            flush,
            cut,
            now,
            offsets,
            crossing: self.lanes.len(),
            commits: Vec::new(),
        });
        Ok(())
    }

    /// Moves the barrier in flight on: takes the lanes' crossings, hands the
    /// transaction to the committer once every lane crossed, and finishes
    /// the barrier once it committed. Waits at most `wait` for each step.
    /// Without a barrier in flight, only a lane's failure is looked for.
    fn advance_barrier(&mut self, wait: Duration) -> Result<(), RuntimeError> {
        let Some(inflight) = &mut self.inflight else {
            return self.check_replies();
        };
        while inflight.crossing > 0 {
            let reply = if wait.is_zero() {
                match self.replies.try_recv() {
                    Ok(r) => r,
                    Err(TryRecvError::Empty) => return Ok(()),
                    Err(TryRecvError::Disconnected) => return Err(lanes_gone()),
                }
            } else {
                match self.replies.recv_timeout(wait) {
                    Ok(r) => r,
                    Err(RecvTimeoutError::Timeout) => return Ok(()),
                    Err(RecvTimeoutError::Disconnected) => return Err(lanes_gone()),
                }
            };
            match reply {
                LaneReply::Crossed { barrier, commits } => {
                    debug_assert_eq!(barrier, inflight.barrier);
                    inflight.commits.extend(commits);
                    inflight.crossing -= 1;
                    if inflight.crossing == 0 {
                        self.submit_commit()?;
                        break;
                    }
                }
                LaneReply::Failed { lane, error } => return Err(lane_failed(lane, error)),
                LaneReply::Ready { .. } => unreachable!("lanes are ready before any barrier"),
            }
        }
        if let Some(done) = self.committer.answer(wait)? {
            self.on_committed(done)?;
        }
        Ok(())
    }

    /// Waits until the barrier in flight (if any) committed. `false` if the
    /// application was halted meanwhile (nothing more is committed then).
    fn finish_barrier(&mut self) -> Result<bool, RuntimeError> {
        while self.inflight.is_some() {
            if self.shared.halt.load(Ordering::Acquire) {
                return Ok(false);
            }
            self.advance_barrier(Duration::from_millis(20))?;
        }
        Ok(true)
    }

    /// Every lane crossed the barrier in flight: its transaction, in task
    /// order whatever the lane count (the same output sequence), goes to
    /// the committer with the stamp ring and the repartition markers.
    fn submit_commit(&mut self) -> Result<(), RuntimeError> {
        let inflight = self.inflight.as_mut().expect("a barrier in flight");
        let mut commits = std::mem::take(&mut inflight.commits);
        commits.sort_by_key(|(id, _)| *id);
        let (n, flush) = (inflight.barrier, inflight.flush);
        let stamps = inflight.stamps.clone();
        let offsets = std::mem::take(&mut inflight.offsets);
        let stamp_records = self
            .stamps
            .record(n, &stamps, flush, inflight.now.as_millis())?;
        // After the epoch's records, a marker carrying W(N) of the writing
        // sub-topology to every partition of each repartition topic it
        // writes (DESIGN 3.3); only when that stamp moved: a repeated marker
        // says nothing new and would keep an idle application cutting
        // barriers.
        let mut markers = Vec::new();
        for sink in self.plan.sinks.values().filter(|s| s.internal) {
            let stamp = stamps[sink.writer];
            if stamp <= self.times[sink.writer].last_marker_sent {
                continue;
            }
            let record = marker(stamp.as_millis());
            for p in 0..sink.partitions {
                markers.push((TopicPartition::new(&*sink.log_name, p), record.clone()));
            }
        }
        for (time, &stamp) in self.times.iter_mut().zip(stamps.iter()) {
            time.last_marker_sent.advance_to(stamp);
            time.recent = [time.recent[1], stamp];
        }
        self.committer.submit(CommitJob {
            barrier: n,
            commits,
            markers,
            stamp_records,
            offsets,
        })
    }

    /// Transaction N committed: barrier N is done, and N+1 may be cut once
    /// the cadence says so (counted from this commit).
    fn on_committed(&mut self, done: CommitDone) -> Result<(), RuntimeError> {
        let inflight = self.inflight.take().expect("a barrier in flight");
        debug_assert_eq!(done.barrier, inflight.barrier);
        done.result?;
        let n = inflight.barrier;
        self.cadence.on_commit(done.took);
        let interval = (self.barrier_cut_at.replace(inflight.cut)).map(|last| inflight.cut - last);
        self.shared
            .metrics
            .on_barrier(interval, done.at.saturating_duration_since(inflight.cut));
        self.barrier = n;
        self.last_barrier_at = done.at;
        {
            let mut committed = self.shared.committed.lock().expect("committed lock");
            for (tp, om) in &done.offsets {
                committed.insert(tp.clone(), om.offset.0);
            }
        }
        self.upkeep.after_commit(&done.offsets);
        self.timeline.barrier_committed(BarrierTiming {
            barrier: n,
            stamps: inflight.stamps.to_vec(),
            flush: inflight.flush,
            cut: inflight.cut,
            committed: done.at,
        });
        self.shared
            .timeline
            .lock()
            .expect("timeline lock")
            .append(&mut self.timeline);
        self.shared
            .barriers
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        tracing::debug!(barrier = n, stamps = ?inflight.stamps, flush = inflight.flush, "barrier committed");
        Ok(())
    }

    /// The `/watermarks` view: every sub-topology's partitions; the global
    /// watermark is the least of the sub-topologies' (the first one's when
    /// there are no repartition topics).
    fn snapshot(&self) -> WatermarksSnapshot {
        let mut snapshots = self.times.iter().map(|t| t.tracker.snapshot());
        let mut out = snapshots.next().expect("a topology has a sub-topology");
        for other in snapshots {
            out.global = out.global.min(other.global);
            out.partitions.extend(other.partitions);
            out.registered |= other.registered;
        }
        out
    }
}

fn lane_failed(lane: usize, error: RuntimeError) -> RuntimeError {
    tracing::error!(lane, error = %error, "record lane failed");
    error
}

fn lanes_gone() -> RuntimeError {
    RuntimeError::ThreadDied {
        thread: "lane".into(),
        reason: "hung up before crossing a barrier".into(),
    }
}

fn send(lane: &SyncSender<LaneMsg>, msg: LaneMsg) -> Result<(), RuntimeError> {
    lane.send(msg).map_err(|_| RuntimeError::ThreadDied {
        thread: "lane".into(),
        reason: "its inbox is closed".into(),
    })
}
