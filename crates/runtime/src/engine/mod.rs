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
pub(crate) mod backoff;
pub(crate) mod commit;
mod copies;
pub(crate) mod error_response;
mod global;
pub(crate) mod guard;
pub(crate) mod lane;
pub(crate) mod lane_protocol;
pub(crate) mod partitioner;
mod poll;
pub(crate) mod restore;
pub(crate) mod shared;
mod start;
pub(crate) mod upkeep;

pub(crate) use shared::Shared;
pub use shared::{Assignment, ErrorHandler, StateListener};

use commit::barrier::{InFlight, lane_failed};
use poll::dispatch::{Pending, SourceSlot};

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use stoatflow_log::{Consumer, ErrorKind, FetchedBatch, Log, TopicPartition};
use stoatflow_streams::{CoordinationMode, Topology};
use stoatflow_time::{
    Clock, OrderedDispatch, WallTime, Watermark, WatermarkTracker, WatermarksSnapshot,
};

use crate::app_state::AppState;
use crate::config::RuntimeConfig;
use crate::config::cadence::BarrierCadence;
use crate::config::layout::Layout;
use crate::engine::assignment::{Membership, Rebalance};
use crate::engine::backoff::Backoff;
use crate::engine::commit::committer::Committer;
use crate::engine::commit::task_stamps::TaskStamps;
use crate::engine::copies::Copies;
use crate::engine::error_response::{REPLACEMENT_BACKOFF, StreamThreadExceptionResponse, fenced};
use crate::engine::global::GlobalThread;
use crate::engine::guard::{WATERMARK_GENERATOR, guarded};
use crate::engine::lane_protocol::{LaneFailed, LaneMsg, LaneRun};
use crate::engine::upkeep::{Upkeep, UpkeepThread};
use crate::error::RuntimeError;
use crate::observe::metrics::combine;
use crate::observe::timeline::Timeline;

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
/// dry after 3 ms (`bench/results/e2e-lanes.txt`, round 4).
const LANE_QUEUE: usize = 16;
/// The longest fetch wait while a barrier is in flight: its crossings and
/// its commit are looked for between fetches.
const IN_FLIGHT_POLL_WAIT: Duration = Duration::from_millis(1);
/// Retriable fetch failures in a row the poll loop rides out before the
/// error replaces the engine (2.3 to 4.5 s of backoff in all).
const FETCH_RETRIES: u32 = 8;

/// The wait before retrying each failed fetch in a row: 50 ms, doubling, at
/// most 1 s, jittered.
const FETCH_BACKOFF: Backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(1));

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
    // This run's own global stores, restored in full before any engine starts.
    let topology = Arc::new(topology.with_new_global_stores());
    let global = match GlobalThread::start(
        topology.global_stores(),
        &*log,
        config.application_id(),
        config.streams.deserialization_handler,
        &shared,
    ) {
        Ok(None) if !topology.global_stores().is_empty() => {
            // Stopped or halted during the restore: nothing ran, nothing to commit.
            upkeep.stop(|| shared.halt.load(Ordering::Acquire));
            shared.transition(AppState::PendingShutdown);
            shared.transition(AppState::NotRunning);
            return;
        }
        Ok(global) => global,
        Err(e) => {
            shared.decide(&e);
            shared.fail(e);
            upkeep.stop(|| shared.halt.load(Ordering::Acquire));
            return;
        }
    };
    let result = run_engines(&EngineContext {
        topology: &topology,
        config: &config,
        log: &log,
        clock: &clock,
        shared: &shared,
        upkeep: &upkeep,
    });
    if let Some(global) = global {
        global.stop();
    }
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

/// What every engine of an application runs on, from the first to each
/// that replaces it: [`run_engines`] hands it to each [`Engine::start`].
struct EngineContext<'a, L: Log> {
    topology: &'a Arc<Topology>,
    config: &'a Arc<RuntimeConfig>,
    log: &'a Arc<L>,
    clock: &'a Arc<dyn Clock>,
    shared: &'a Arc<Shared>,
    upkeep: &'a UpkeepThread,
}

/// Runs an engine, and each that replaces it, until the application stops
/// (`Ok`) or an error stops it.
fn run_engines<L: Log + 'static>(cx: &EngineContext<'_, L>) -> Result<(), RuntimeError> {
    let shared = cx.shared;
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
            Engine::start(cx, &mut membership).and_then(|engine| match engine {
                Some(mut engine) => engine.run(&mut membership),
                None => Ok(Exit::Stopped),
            })
        })
        .unwrap_or_else(|p| Err(p.naming("the poll loop")));
        // The engine is gone (its lanes joined): its counters are kept.
        shared.metrics.retire_lanes();
        let error = match result {
            Ok(Exit::Stopped) => return Ok(()),
            // This engine's tasks changed: the next one runs the new set.
            Ok(Exit::Rebalance) => continue,
            Err(e) => e,
        };
        if shared.halt.load(Ordering::Acquire) {
            tracing::debug!(error = %error, "stopped without close");
            return Err(error);
        }
        let (error, response) = respond(shared, error);
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
        let backoff = REPLACEMENT_BACKOFF.wait(in_a_row);
        tracing::warn!(error = %error, replacement = in_a_row, backoff_ms = backoff.as_millis() as u64, "the engine failed; replacing it, resuming from the last commit");
        if !wait_unless_halted(shared, backoff) {
            return Err(error);
        }
    }
}

/// The handler's answer to the error that stopped an engine. A fenced
/// producer is never replaced: the replacement would fence the instance
/// that took over. The handler still hears of it.
fn respond(shared: &Shared, error: RuntimeError) -> (RuntimeError, StreamThreadExceptionResponse) {
    match fenced(&error) {
        Some(plain) => {
            shared.decide(&plain);
            (plain, StreamThreadExceptionResponse::ShutdownClient)
        }
        None => {
            let response = shared.decide(&error);
            (error, response)
        }
    }
}

/// Waits `wait`, looking for a halt every 5 ms; `false` if halted.
fn wait_unless_halted(shared: &Shared, wait: Duration) -> bool {
    let until = Instant::now() + wait;
    while Instant::now() < until {
        if shared.halt.load(Ordering::Acquire) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
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
    /// Where a lane that fails says why.
    failures: Receiver<LaneFailed>,
    pending_output: Arc<AtomicBool>,
    cadence: BarrierCadence,
    barrier: u64,
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
    /// The standby copies, placed again when the group changes but not
    /// this engine's tasks.
    copies: Copies<L>,
    /// DIRECT dispatch (docs/validation.md#dispatch-mode): no event time is
    /// tracked, so records go to their lanes in fetch order, past the tracker
    /// and ordered dispatch, and barriers carry no stamp.
    direct: bool,
}

impl<L: Log + 'static> Engine<L> {
    fn run(&mut self, membership: &mut Membership) -> Result<Exit, RuntimeError> {
        let result = self.poll_loop(membership);
        // Hang up on the lanes and wait for them (queries first: their
        // copies of the inboxes would keep the lanes alive).
        self.shared
            .query_lanes
            .lock()
            .expect("query lanes lock")
            .lanes
            .clear();
        self.shared.committed_barriers.wake();
        self.lanes.clear();
        for h in self.lane_threads.drain(..) {
            let _ = h.join();
        }
        // A lane that failed closed its inbox: the poll loop may have met
        // the closed inbox before the lane's report. The report says why.
        let result = match result {
            Err(RuntimeError::ThreadDied { thread, reason }) if thread == "lane" => {
                let failed = self.failures.try_recv().map(lane_failed);
                Err(failed.unwrap_or(RuntimeError::ThreadDied { thread, reason }))
            }
            other => other,
        };
        // The standby copies close and checkpoint where they got to, before
        // the next engine may open the same stores as its own (a
        // promotion); after a crash (halt) they leave nothing behind.
        self.copies.stop(!self.shared.halt.load(Ordering::Acquire));
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
            match membership.poll()? {
                None => {}
                // Incremental rebalancing that kept this engine's tasks.
                Some(Rebalance::Regroup) => self.copies.regroup(membership)?,
                Some(rebalance) => return self.rebalance(rebalance, membership),
            }
            if self.shared.stop.load(Ordering::Acquire) {
                self.shared.transition(AppState::PendingShutdown);
                self.shared.callback_panicked()?;
                self.flush_and_checkpoint()?;
                // The close's summary reads the final watermark and its holder.
                self.publish_view(self.clock.now());
                return Ok(Exit::Stopped);
            }
            // A barrier in flight is looked after between short fetches.
            let wait = match self.inflight {
                Some(_) => self.config.poll_wait.min(IN_FLIGHT_POLL_WAIT),
                None => self.config.poll_wait,
            };
            let Some(fetched) = self.fetch(wait)? else {
                continue;
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
            self.poll_watermarks(now)?;
            self.tick_and_publish(now)?;
            self.keep_barriers_moving()?;
        }
    }

    /// One fetch, waiting at most `wait`. `None` after a retriable failure
    /// ridden out: the wait before the next try is over, and the barrier in
    /// flight moved on meanwhile.
    fn fetch(&mut self, wait: Duration) -> Result<Option<Vec<FetchedBatch>>, RuntimeError> {
        match self.consumer.fetch_batches(wait) {
            Ok(fetched) => {
                self.fetch_failures = 0;
                Ok(Some(fetched))
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
                let backoff = FETCH_BACKOFF.wait(self.fetch_failures);
                tracing::warn!(error = %e, attempt = self.fetch_failures, backoff_ms = backoff.as_millis() as u64, "a fetch failed; trying again");
                std::thread::sleep(backoff);
                self.keep_barriers_moving()?;
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Polls each sub-topology's tracker (none under DIRECT dispatch): an
    /// advance goes to every lane and the timeline, and is owed a barrier.
    fn poll_watermarks(&mut self, now: WallTime) -> Result<(), RuntimeError> {
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
        Ok(())
    }

    /// When due: the lanes' wall-clock tick, and the `/watermarks` view and
    /// watermark metrics refreshed.
    fn tick_and_publish(&mut self, now: WallTime) -> Result<(), RuntimeError> {
        if self.last_tick.elapsed() >= WALL_CLOCK_TICK {
            self.last_tick = Instant::now();
            for lane in &self.lanes {
                send(lane, LaneMsg::WallClock(now))?;
            }
        }
        if self.last_snapshot.elapsed() >= SNAPSHOT_EVERY {
            self.publish_view(now);
        }
        Ok(())
    }

    /// The `/watermarks` view and the watermark metrics, as of `now` (none
    /// under DIRECT dispatch).
    fn publish_view(&mut self, now: WallTime) {
        if self.direct {
            return;
        }
        self.last_snapshot = Instant::now();
        *self.shared.snapshot.lock().expect("snapshot lock") = Some(self.snapshot(now));
        if let Some(m) = combine(self.times.iter().map(|t| t.tracker.metrics(now))) {
            self.shared.metrics.set_watermark(m);
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

    /// The `/watermarks` view at `now`: every sub-topology's partitions; the
    /// global watermark is the least of the sub-topologies' (the first one's
    /// when there are no repartition topics), and its holder that
    /// sub-topology's.
    fn snapshot(&self, now: WallTime) -> WatermarksSnapshot {
        let mut snapshots = self.times.iter().map(|t| t.tracker.snapshot_at(now));
        let mut out = snapshots.next().expect("a topology has a sub-topology");
        for other in snapshots {
            if other.holder.is_some() && (other.global < out.global || out.holder.is_none()) {
                out.holder = other.holder;
            }
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
