//! The engine: one poll loop that reads the source partitions, runs each
//! source's event-time reader, feeds the watermark tracker and ordered
//! dispatch, hands records to the lanes in batches, cuts commit barriers
//! stamped with the watermark, and commits each epoch in one transaction
//! (docs/barriers.md#epochs).
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
pub(crate) mod commit;
pub(crate) mod error_response;
pub(crate) mod guard;
pub(crate) mod lane;
pub(crate) mod lane_protocol;
mod poll;
pub(crate) mod restore;
pub(crate) mod shared;
pub(crate) mod upkeep;

pub(crate) use shared::Shared;
pub use shared::{Assignment, ErrorHandler, StateListener};

use commit::barrier::{InFlight, lane_failed};
use poll::dispatch::{Pending, SourceSlot};
use poll::marker_time::marker_policy;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use stoatflow_log::offset_metadata;
use stoatflow_log::{Consumer, ErrorKind, Log, TopicPartition};
use stoatflow_streams::{CoordinationMode, DispatchMode, Topology};
use stoatflow_time::{
    Clock, EventTime, OrderedDispatch, SourcePartition, Watermark, WatermarkTracker,
    WatermarksSnapshot,
};

use crate::app_state::AppState;
use crate::config::cadence::BarrierCadence;
use crate::config::layout::{Layout, log_topic_name};
use crate::config::{ProcessingGuarantee, RuntimeConfig};
use crate::engine::assignment::{Membership, Rebalance};
use crate::engine::commit::committer::{self, CommitPath, Committer, SinkRouting};
use crate::engine::commit::task_stamps::TaskStamps;
use crate::engine::error_response::{StreamThreadExceptionResponse, fenced, replacement_backoff};
use crate::engine::guard::{WATERMARK_GENERATOR, guarded};
use crate::engine::lane::{LaneSetup, run_lane};
use crate::engine::lane_protocol::{LaneMsg, LaneReply, LaneRun};
use crate::engine::restore::standby::{self, Standby};
use crate::engine::restore::takeover;
use crate::engine::upkeep::{Upkeep, UpkeepThread};
use crate::error::RuntimeError;
use crate::observe::metrics::combine;
use crate::observe::timeline::Timeline;
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
/// Retriable fetch failures in a row the poll loop rides out before the
/// error replaces the engine (about 4.5 s of backoff in all).
const FETCH_RETRIES: u32 = 8;

/// The wait before retrying the `n`th failed fetch in a row (from 1):
/// 50 ms, doubling, at most 1 s.
fn fetch_backoff(n: u32) -> Duration {
    Duration::from_millis((50u64 << n.saturating_sub(1).min(5)).min(1_000))
}

/// How often the wait for the lanes' restore looks for a close.
const RESTORE_POLL: Duration = Duration::from_millis(20);

/// The engine thread's body. Returns when the application stops.
pub(crate) fn run_engine<L: Log + 'static>(
    topology: Arc<Topology>,
    config: Arc<RuntimeConfig>,
    log: Arc<L>,
    clock: Arc<dyn Clock>,
    shared: Arc<Shared>,
) {
    let upkeep =
        match UpkeepThread::start(log.clone(), config.application_id(), shared.metrics.clone()) {
            Ok(upkeep) => upkeep,
            Err(e) => {
                shared.decide(&e);
                shared.fail(e);
                return;
            }
        };
    let result = run_engines(&topology, &config, &log, &clock, &shared, &upkeep);
    let halted = || shared.halt.load(Ordering::Acquire);
    match result {
        // A stop leaves nothing of the application running: a pass of the
        // upkeep under way is waited for (unless halted meanwhile).
        Ok(()) => {
            upkeep.stop(halted);
            shared.transition(AppState::PendingShutdown);
            shared.transition(AppState::NotRunning);
        }
        Err(error) => {
            shared.fail(error);
            upkeep.stop(halted);
        }
    }
}

/// Runs an engine, and each that replaces it, until the application stops
/// (`Ok`) or an error stops it.
fn run_engines<L: Log + 'static>(
    topology: &Arc<Topology>,
    config: &Arc<RuntimeConfig>,
    log: &Arc<L>,
    clock: &Arc<dyn Clock>,
    shared: &Arc<Shared>,
    upkeep: &UpkeepThread,
) -> Result<(), RuntimeError> {
    let mut in_a_row = 0u32;
    // The group membership outlives each engine: a rebuild is not a rejoin.
    let mut membership = Membership::default();
    loop {
        let barriers_before = shared.barriers.load(Ordering::Acquire);
        // A panic on the poll thread that no guard closer to it caught
        // (user code such as a watermark generator's factory, or a fault of
        // the runtime's) stops this engine as an error would, rather than
        // killing the thread and leaving the state as it was.
        let result = guarded(|| {
            Engine::start(
                topology,
                config,
                log,
                clock,
                shared,
                upkeep,
                &mut membership,
            )
            .and_then(|engine| match engine {
                Some(mut engine) => engine.run(&mut membership),
                None => Ok(Exit::Stopped),
            })
        })
        .unwrap_or_else(|p| Err(p.naming("the poll loop")));
        // The engine is gone (its lanes joined): its counters are kept.
        shared.metrics.retire_lanes();
        let error = match result {
            Ok(Exit::Stopped) => return Ok(()),
            // Eager rebalancing: the next engine runs the new assignment.
            Ok(Exit::Rebalance) => continue,
            Err(e) => e,
        };
        if shared.halt.load(Ordering::Acquire) {
            tracing::debug!(error = %error, "stopped without close");
            return Err(error);
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
            return Err(error);
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
                return Err(error);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Whether the engine tracks event time
/// (docs/validation.md#coordination-mode): always under `ENABLED`, never
/// under `DISABLED`, under `AUTO` when the topology has anything a watermark
/// drives or a source with a watermark strategy.
pub(crate) fn tracks_event_time(topology: &Topology, config: &RuntimeConfig) -> bool {
    match config.streams.coordination {
        CoordinationMode::Enabled => true,
        CoordinationMode::Disabled => false,
        CoordinationMode::Auto => topology.needs_event_time(),
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

/// One sub-topology's event time. A sub-topology fed by a repartition topic
/// takes its watermark from the markers in it and runs barriers on its own
/// stamps (docs/barriers.md#repartition-hops), so each has its own tracker,
/// dispatcher and stamp ring; without repartition topics there is one, the
/// application's.
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
    /// Retriable fetch failures in a row.
    fetch_failures: u32,
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
    /// Hands the upkeep thread a pass after a commit, when one is due.
    upkeep: Upkeep,
    /// The standby copies' thread, if this instance keeps any.
    standby: Option<Standby>,
    /// DIRECT dispatch (docs/validation.md#dispatch-mode): no event time is
    /// tracked, so records go to their lanes in fetch order, past the tracker
    /// and ordered dispatch, and barriers carry no stamp.
    direct: bool,
}

impl<L: Log + 'static> Engine<L> {
    /// Builds an engine for this instance's assignment from the committed
    /// state: plans and checks the topics, reads the stamp rings and the
    /// committed offsets, starts the committer and the lanes and waits for
    /// their restore. `None` if the application was halted meanwhile.
    fn start(
        topology: &Arc<Topology>,
        config: &Arc<RuntimeConfig>,
        log: &Arc<L>,
        clock: &Arc<dyn Clock>,
        shared: &Arc<Shared>,
        upkeep: &UpkeepThread,
        membership: &mut Membership,
    ) -> Result<Option<Self>, RuntimeError> {
        shared.transition(AppState::Rebalancing);
        shared.callback_panicked()?;
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
        // Under at-least-once nothing is fenced: its producer has no
        // transactions, and what a dead instance wrote is already readable.
        let commit_path = match config.guarantee {
            ProcessingGuarantee::ExactlyOnceV2 => {
                CommitPath::ExactlyOnce(log.transactional_producer(&config.transactional_id())?)
            }
            ProcessingGuarantee::AtLeastOnce => CommitPath::AtLeastOnce {
                producer: log.producer(&config.transactional_id())?,
                log: log.clone(),
            },
        };

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
        let mut task_seeds = seeds.tasks;

        // Source partitions: tracker registration, committed offsets, partition times.
        let lanes_n = config.lanes;
        let tracking = tracks_event_time(topology, config);
        let direct = !tracking && config.streams.dispatch != DispatchMode::Lane;
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
                    fetched_to: None,
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
                        let tracker = &mut times[slot.task.subtopology].tracker;
                        guarded(|| tracker.seed_partition_time(slot.index, t))
                            .map_err(|p| p.naming(format!("{WATERMARK_GENERATOR} of {tp}")))??;
                    }
                }
            }
        }
        let mut consumer = log.consumer(&group)?;
        consumer.assign(&tps)?;
        for slot in &mut slots {
            slot.fetched_to = Some(consumer.position(&slot.tp)?.0);
        }
        // The watermark resumes from the committed partition times before
        // anything is dispatched: a record read again after a restart or a
        // replacement is judged (and counted as a late arrival) against the
        // watermark it was dispatched under before, not against none.
        let resumed: Vec<Watermark> = times
            .iter_mut()
            .map(|t| match tracking {
                true => t.tracker.force_watermark(now),
                false => Watermark::MIN,
            })
            .collect();
        // Without changelogs there are no stamp rings: each task's floor
        // starts at the watermark its committed partition times give (the
        // least over its sub-topology's partitions, none above the stamp
        // the last commit carried), so a record for a window closed before
        // the restart is late, and cannot reopen a window already emitted.
        if !config.streams.changelog_enabled && tracking {
            for (id, (floor, _)) in &mut task_seeds {
                *floor = (*floor).max(resumed[id.subtopology]);
            }
        }
        let seeds = Arc::new(task_seeds);

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
        let cancel_restore = Arc::new(AtomicBool::new(false));
        let (reply_tx, replies) = sync_channel(lanes_n * 2 + 4);
        let commit_inbox = committer::inbox();
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
                cancel_restore: cancel_restore.clone(),
                state_dir: config.effective_state_dir(),
                default_store: config.default_dsl_store(),
                partition_times: partition_times.clone(),
                metrics: shared.metrics.clone(),
                takeover: takeover.then(|| processor_metadata.clone()),
                early: commit_inbox.0.clone(),
                first_epoch: last_barrier + 1,
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
        let mut ready = 0;
        while ready < lanes_n {
            // A halt (a close whose timeout ran out) does not wait for the
            // restore: the lanes stop reading, and are waited for. A close
            // in time still does: results may be owed from the committed
            // state (an emission pass whose transaction was aborted), and
            // the close's flush barrier commits them.
            if shared.halt.load(Ordering::Acquire) {
                cancel_restore.store(true, Ordering::Release);
                drop(lanes);
                for h in lane_threads {
                    let _ = h.join();
                }
                tracing::info!("halted while restoring");
                return Ok(None);
            }
            match replies.recv_timeout(RESTORE_POLL) {
                Ok(LaneReply::Ready { restored: r, .. }) => {
                    restored += r;
                    ready += 1;
                }
                Ok(LaneReply::Failed { lane, error }) => return Err(lane_failed(lane, error)),
                Ok(other) => unreachable!("a lane answers Ready or Failed first, not {other:?}"),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(RuntimeError::ThreadDied {
                        thread: "lane".into(),
                        reason: "exited during restore".into(),
                    });
                }
            }
        }
        tracing::info!(restored, lanes = lanes_n, "stores restored");
        shared.restored.store(restored, Ordering::Release);
        // The resumed watermark reaches the lanes before the first record,
        // as the poll loop's advances do after it.
        for (subtopology, &watermark) in resumed.iter().enumerate() {
            if !watermark.is_none_yet() {
                for lane in &lanes {
                    send(
                        lane,
                        LaneMsg::Watermark {
                            subtopology,
                            watermark,
                        },
                    )?;
                }
            }
        }

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
        let upkeep = upkeep.front(config.purge_interval, repartition, Instant::now());
        let committer = Committer::start(
            commit_path,
            SinkRouting::new(sink_tps),
            &app,
            commit_inbox,
            barrier + 1,
        )?;
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
            fetch_failures: 0,
            last_tick: Instant::now(),
            last_snapshot: Instant::now() - SNAPSHOT_EVERY,
            timeline: Timeline::default(),
            upkeep,
            standby,
            direct,
        };
        shared.transition(AppState::Running);
        Ok(Some(engine))
    }

    fn run(&mut self, membership: &mut Membership) -> Result<Exit, RuntimeError> {
        let result = self.poll_loop(membership);
        // Hang up on the lanes and wait for them.
        self.lanes.clear();
        for h in self.lane_threads.drain(..) {
            let _ = h.join();
        }
        // A lane that failed closed its inbox: the poll loop may have met
        // the closed inbox before the lane's report. The report says why.
        let result = match result {
            Err(RuntimeError::ThreadDied { thread, reason }) if thread == "lane" => {
                let failed = self.replies.try_iter().find_map(|reply| match reply {
                    LaneReply::Failed { lane, error } => Some(lane_failed(lane, error)),
                    _ => None,
                });
                Err(failed.unwrap_or(RuntimeError::ThreadDied { thread, reason }))
            }
            other => other,
        };
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
            // The state listener panicked (told of RUNNING, say): stop
            // before anything more is processed or committed.
            self.shared.callback_panicked()?;
            if let Some(rebalance) = membership.poll()? {
                return self.rebalance(rebalance, membership);
            }
            if self.shared.stop.load(Ordering::Acquire) {
                self.shared.transition(AppState::PendingShutdown);
                self.shared.callback_panicked()?;
                self.flush_and_checkpoint()?;
                return Ok(Exit::Stopped);
            }
            // A barrier in flight is looked after between short fetches.
            let wait = match self.inflight {
                Some(_) => self.config.poll_wait.min(IN_FLIGHT_POLL_WAIT),
                None => self.config.poll_wait,
            };
            let fetched = match self.consumer.fetch_batches(wait) {
                Ok(fetched) => {
                    self.fetch_failures = 0;
                    fetched
                }
                // A broker that restarts, a connection that drops: a fetch
                // that took nothing is tried again (the barrier in flight
                // moves on meanwhile) before the engine is replaced.
                Err(e)
                    if e.kind() == ErrorKind::Retriable
                        && self.fetch_failures < FETCH_RETRIES
                        && !self.fetch_took_records()? =>
                {
                    self.fetch_failures += 1;
                    let backoff = fetch_backoff(self.fetch_failures);
                    tracing::warn!(error = %e, attempt = self.fetch_failures, backoff_ms = backoff.as_millis() as u64, "a fetch failed; trying again");
                    std::thread::sleep(backoff);
                    self.keep_barriers_moving()?;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let caught_up = fetched.is_empty();
            let now = self.clock.now();
            for batch in fetched {
                if self.direct {
                    self.hand_over(batch)?;
                } else {
                    self.buffer(batch, now)?;
                }
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
            for st in (0..self.times.len()).filter(|_| !self.direct) {
                let time = &mut self.times[st];
                let polled = guarded(|| time.tracker.poll_watermark(now))
                    .map_err(|p| p.naming(format!("{WATERMARK_GENERATOR} of sub-topology {st}")))?;
                if let Some(w) = polled {
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
            if !self.direct && self.last_snapshot.elapsed() >= SNAPSHOT_EVERY {
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
        self.shared.callback_panicked()?;
        if rebalance == Rebalance::CommitAndRebuild && !self.flush_and_checkpoint()? {
            return Ok(Exit::Stopped);
        }
        membership.release()?;
        Ok(Exit::Rebalance)
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

fn send(lane: &SyncSender<LaneMsg>, msg: LaneMsg) -> Result<(), RuntimeError> {
    lane.send(msg).map_err(|_| RuntimeError::ThreadDied {
        thread: "lane".into(),
        reason: "its inbox is closed".into(),
    })
}
