//! An engine's start, phase by phase: from the committed state to a poll
//! loop ready to run (see [`Engine::start`] for the order and why).
//!
//! Owns the order of the start only: each phase is a function here, over
//! what the engine's neighbours provide (the membership, the stamp rings,
//! the lanes, the committer, the standby copies). Knows nothing of what
//! the poll loop does once it runs.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use stoatflow_log::offset_metadata;
use stoatflow_log::{Consumer, Log, TopicPartition};
use stoatflow_streams::{DispatchMode, StreamsConfig, TopicCatalog, Topology};
use stoatflow_time::{
    Clock, EventTime, OrderedDispatch, SourcePartition, WallTime, Watermark, WatermarkTracker,
};

use crate::app_state::AppState;
use crate::config::cadence::BarrierCadence;
use crate::config::layout::{Layout, log_topic_name};
use crate::config::topic_catalog::LogTopics;
use crate::config::{ProcessingGuarantee, RuntimeConfig};
use crate::engine::assignment::Membership;
use crate::engine::commit::barrier::lane_failed;
use crate::engine::commit::committer::{self, CommitPath, Committer, EarlyOutput, SinkRouting};
use crate::engine::commit::task_stamps::TaskStamps;
use crate::engine::copies::Copies;
use crate::engine::guard::{WATERMARK_GENERATOR, guarded};
use crate::engine::lane::{LaneSetup, run_lane};
use crate::engine::lane_protocol::{LaneFailed, LaneMsg, Restored};
use crate::engine::poll::dispatch::SourceSlot;
use crate::engine::poll::marker_time::marker_policy;
use crate::engine::restore::takeover;
use crate::engine::upkeep::{Upkeep, UpkeepThread};
use crate::engine::{
    Engine, EngineContext, LANE_QUEUE, MARKER_METADATA_KEY, SNAPSHOT_EVERY, Shared,
    SubtopologyTime, send, tracks_event_time,
};
use crate::error::RuntimeError;
use crate::observe::timeline::Timeline;
use crate::task_id::TaskId;

/// How many queries wait for a restoring lane before a caller blocks.
const RESTORE_QUERIES: usize = 64;
/// How often the wait for the lanes' restore looks for a close.
const RESTORE_POLL: Duration = Duration::from_millis(20);

/// What every phase of a start reads.
struct Starting<'a, L: Log> {
    topology: &'a Arc<Topology>,
    config: &'a Arc<RuntimeConfig>,
    log: &'a Arc<L>,
    shared: &'a Arc<Shared>,
    app: String,
    plan: Layout,
    /// The clock's time at the start: the trackers' registrations and the
    /// lanes' first wall-clock tick.
    now: WallTime,
    /// Whether event time is tracked at all.
    tracking: bool,
    /// The configuration the lanes' and the standby copies' tasks run on.
    streams_config: Arc<StreamsConfig>,
    /// The topics dynamic sinks pick, as the lanes and the committer look
    /// them up.
    topics: Arc<dyn TopicCatalog>,
}

impl<'a, L: Log + 'static> Starting<'a, L> {
    /// Plans the layout of the topology's topics on the log, then reads the clock.
    fn new(
        topology: &'a Arc<Topology>,
        config: &'a Arc<RuntimeConfig>,
        log: &'a Arc<L>,
        shared: &'a Arc<Shared>,
        clock: &Arc<dyn Clock>,
    ) -> Result<Self, RuntimeError> {
        Ok(Starting {
            topology,
            config,
            log,
            shared,
            app: config.application_id().to_owned(),
            plan: Layout::plan(topology, config, &**log)?,
            now: clock.now(),
            tracking: tracks_event_time(topology, config),
            streams_config: Arc::new(config.streams.clone()),
            topics: Arc::new(LogTopics::new(log.clone())),
        })
    }
}

/// What the stamp rings seed: each sub-topology's time, each task's floor
/// and frontier, the last barrier committed.
struct Seeded {
    times: Vec<SubtopologyTime>,
    tasks: BTreeMap<TaskId, (Watermark, Watermark)>,
    last_barrier: u64,
}

/// The owned source partitions, positioned at their committed offsets.
struct Sources<C> {
    slots: Vec<SourceSlot>,
    slot_of: HashMap<TopicPartition, usize>,
    consumer: C,
    /// Kafka Streams' processor metadata per task, for a takeover.
    processor_metadata: Vec<(TaskId, String, i64)>,
}

/// The lanes, spawned and restoring.
struct Lanes {
    inboxes: Vec<SyncSender<LaneMsg>>,
    threads: Vec<JoinHandle<()>>,
    restored: Receiver<Restored>,
    failures: Receiver<LaneFailed>,
    pending_output: Arc<AtomicBool>,
    cancel_restore: Arc<AtomicBool>,
}

impl<L: Log + 'static> Engine<L> {
    /// Builds an engine for this instance's assignment from the committed
    /// state. The phases, in order, each reading only what the ones before
    /// made safe to read:
    ///
    /// 1. [`fence`]: plan and check the topics, join the group (in the
    ///    background), create the producer, which fences every older one;
    /// 2. [`Membership::tasks`]: the tasks this instance owns (after the
    ///    fence: the previous owner has committed and released them);
    /// 3. [`seed_times`]: their stamp rings, whose seeds are the tasks'
    ///    floors and frontiers and each sub-topology's last stamps;
    /// 4. [`position_sources`]: each owned source partition registered with
    ///    its sub-topology's tracker, at its committed offset and
    ///    partition time, with the consumer assigned there;
    /// 5. [`resume_watermarks`]: the watermark from those partition times,
    ///    before anything is dispatched;
    /// 6. [`spawn_lanes`], then [`await_restore`]: the lanes build, restore
    ///    and seed their tasks, then hear the resumed watermark before any
    ///    record;
    /// 7. [`start_copies`]: copies of the tasks owned elsewhere, once this
    ///    instance's own are restored;
    /// 8. the committer and the upkeep's front, then RUNNING.
    ///
    /// `None` if the application was halted meanwhile.
    pub(super) fn start(
        cx: &EngineContext<'_, L>,
        membership: &mut Membership,
    ) -> Result<Option<Self>, RuntimeError> {
        let EngineContext {
            topology,
            config,
            log,
            clock,
            shared,
            upkeep,
        } = *cx;
        shared.transition(AppState::Rebalancing);
        shared.callback_panicked()?;
        let s = Starting::new(topology, config, log, shared, clock)?;
        let commit_path = fence(&s, membership)?;
        let owned =
            membership.tasks(&**log, topology, &s.app, &config.transactional_id(), || {
                shared.stop.load(Ordering::Acquire) || shared.halt.load(Ordering::Acquire)
            })?;
        let (stamps, mut seeded) = seed_times(&s, &owned)?;
        let sources = position_sources(&s, membership, &owned, &mut seeded.times)?;
        let resumed = resume_watermarks(&s, &mut seeded);
        let commit_inbox = committer::inbox();
        let mut lanes = spawn_lanes(&s, &owned, &seeded, &sources, &commit_inbox.0)?;
        let Some((inboxes, threads)) = await_restore(&s, lanes.restoring())? else {
            return Ok(None);
        };
        announce_resumed(&inboxes, &resumed)?;
        let copies = start_copies(&s, membership, &owned)?;
        let barrier = seeded.last_barrier;
        let upkeep = upkeep_front(config, upkeep, &sources.slots);
        let committer = Committer::start(
            commit_path,
            sink_routing(&s.plan, s.topics.clone()),
            &s.app,
            commit_inbox,
            barrier + 1,
        )?;
        let lanes_n = inboxes.len();
        let engine = Engine {
            config: config.clone(),
            clock: clock.clone(),
            shared: shared.clone(),
            consumer: sources.consumer,
            committer,
            inflight: None,
            times: seeded.times,
            stamps,
            slots: sources.slots,
            slot_of: sources.slot_of,
            plan: s.plan,
            lanes: inboxes,
            lane_threads: threads,
            failures: lanes.failures,
            pending_output: lanes.pending_output,
            cadence: BarrierCadence::new(config.barrier, Instant::now()),
            barrier,
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
            copies,
            direct: !s.tracking && config.streams.dispatch != DispatchMode::Lane,
        };
        engine.announce_running(barrier);
        Ok(Some(engine))
    }

    /// Step 8's end: the last committed barrier and the lanes, published to
    /// waiters and queries, then RUNNING.
    fn announce_running(&self, barrier: u64) {
        let shared = &self.shared;
        shared.committed_barriers.committed(barrier, Vec::new());
        shared
            .query_lanes
            .lock()
            .expect("query lanes lock")
            .publish(self.lanes.clone());
        shared.transition(AppState::Running);
    }
}

/// Joins the group (it goes on in the background while the producer fences:
/// it reads nothing, and on Kafka the join takes hundreds of ms), then
/// creates the producer.
///
/// The producer first: creating it fences every older producer of this
/// transactional id and completes the transaction a dead instance left
/// open. Everything the later phases read (the watermark stamps, the
/// committed offsets, the changelogs) is read after that: before, reads
/// stop at the open transaction and offsets stay unstable until the broker
/// times it out (a minute on Kafka), and a broker that shows pending
/// offsets would let us start past input whose output is then aborted.
/// Under at-least-once nothing is fenced: its producer has no transactions,
/// and what a dead instance wrote is already readable.
fn fence<L: Log + 'static>(
    s: &Starting<'_, L>,
    membership: &mut Membership,
) -> Result<CommitPath<L>, RuntimeError> {
    let (config, log) = (s.config, s.log);
    membership.join(&**log, s.topology, &s.app, &config.transactional_id())?;
    Ok(match config.guarantee {
        ProcessingGuarantee::ExactlyOnceV2 => {
            CommitPath::ExactlyOnce(log.transactional_producer(&config.transactional_id())?)
        }
        ProcessingGuarantee::AtLeastOnce => CommitPath::AtLeastOnce {
            producer: log.producer(&config.transactional_id())?,
            log: log.clone(),
        },
    })
}

/// Reads the owned tasks' stamp rings: each task's floor and frontier, and
/// per sub-topology a fresh tracker and dispatcher with its last stamps.
fn seed_times<L: Log>(
    s: &Starting<'_, L>,
    owned: &BTreeSet<TaskId>,
) -> Result<(TaskStamps, Seeded), RuntimeError> {
    let mut stamps = TaskStamps::restore(s.config, &**s.log, &s.plan, owned.iter().copied())?;
    let seeds = stamps.seeds(s.topology.subtopology_count())?;
    let times = seeds
        .recent
        .iter()
        .map(|&recent| SubtopologyTime {
            tracker: WatermarkTracker::new(s.config.tracker.clone()),
            dispatch: OrderedDispatch::new(),
            recent,
            last_marker_sent: Watermark::MIN,
        })
        .collect();
    let seeded = Seeded {
        times,
        tasks: seeds.tasks,
        last_barrier: seeds.last_barrier,
    };
    Ok((stamps, seeded))
}

/// The owned source partitions: each registered with its sub-topology's
/// tracker, then placed at its committed offset and partition time (which
/// seeds the tracker), with the consumer assigned to all of them.
fn position_sources<L: Log>(
    s: &Starting<'_, L>,
    membership: &mut Membership,
    owned: &BTreeSet<TaskId>,
    times: &mut [SubtopologyTime],
) -> Result<Sources<L::Consumer>, RuntimeError> {
    let (mut slots, slot_of) = register_sources(s, owned, times)?;
    let tps: Vec<TopicPartition> = slots.iter().map(|slot| slot.tp.clone()).collect();
    let processor_metadata = apply_committed(s, membership, &mut slots, &slot_of, &tps, times)?;
    let mut consumer = s.log.consumer(&s.app)?;
    consumer.assign(&tps)?;
    for slot in &mut slots {
        slot.fetched_to = Some(consumer.position(&slot.tp)?.0);
    }
    Ok(Sources {
        slots,
        slot_of,
        consumer,
        processor_metadata,
    })
}

/// A slot per owned source partition, registered with its sub-topology's
/// tracker (a repartition partition under the marker policy: its watermark
/// is the last marker read).
fn register_sources<L: Log>(
    s: &Starting<'_, L>,
    owned: &BTreeSet<TaskId>,
    times: &mut [SubtopologyTime],
) -> Result<(Vec<SourceSlot>, HashMap<TopicPartition, usize>), RuntimeError> {
    let lanes_n = s.config.lanes;
    let mut slots = Vec::new();
    let mut slot_of = HashMap::new();
    for source in s.topology.sources() {
        let partitions = s.plan.partitions[&source.subtopology];
        let reader = s.topology.event_time_reader(&source.topic);
        let log_name = log_topic_name(&s.app, &source.topic, source.internal);
        let owned_partitions = (0..partitions).filter(|&p| {
            owned.contains(&TaskId {
                subtopology: source.subtopology,
                partition: p,
            })
        });
        for p in owned_partitions {
            let sp = SourcePartition::new(log_name.as_str(), p as i32);
            let last_marker = source.internal.then(|| Arc::new(AtomicI64::new(i64::MIN)));
            let tracker = &mut times[source.subtopology].tracker;
            let index = match (&last_marker, &source.policy) {
                (Some(cell), _) => tracker.register(sp, &marker_policy(cell.clone()), s.now)?,
                (None, Some(policy)) => tracker.register(sp, policy, s.now)?,
                (None, None) => tracker.register_default(sp, s.now)?,
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
    for t in times.iter_mut() {
        if let Some(w) = t.tracker.report_startup() {
            tracing::warn!(warning = ?w, "watermark tracker");
        }
    }
    Ok((slots, slot_of))
}

/// The committed offsets of `tps` (the membership's, when it read them
/// with the assignment): each slot's position, its last marker, its
/// partition time (seeding the tracker when event time is tracked), and the
/// processor metadata a takeover reads.
fn apply_committed<L: Log>(
    s: &Starting<'_, L>,
    membership: &mut Membership,
    slots: &mut [SourceSlot],
    slot_of: &HashMap<TopicPartition, usize>,
    tps: &[TopicPartition],
    times: &mut [SubtopologyTime],
) -> Result<Vec<(TaskId, String, i64)>, RuntimeError> {
    let mut processor_metadata = Vec::new();
    let committed = match membership.committed_offsets(tps) {
        Some(read) => read?,
        None => s.log.committed_offsets(&s.app, tps)?,
    };
    let mut shared_committed = s.shared.committed.lock().expect("committed lock");
    for (tp, om) in committed {
        let Some(om) = om else { continue };
        let slot = &mut slots[slot_of[&tp]];
        slot.position = Some(om.offset.0);
        shared_committed.insert(tp.clone(), om.offset.0);
        let bad_metadata = |reason: String| RuntimeError::OffsetMetadata {
            partition: tp.to_string(),
            reason,
        };
        let meta =
            offset_metadata::decode(&om.metadata).map_err(|e| bad_metadata(e.to_string()))?;
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
            let t = EventTime::new(t).map_err(|e| bad_metadata(e.to_string()))?;
            slot.partition_time = Some(t);
            if s.tracking {
                let tracker = &mut times[slot.task.subtopology].tracker;
                guarded(|| tracker.seed_partition_time(slot.index, t))
                    .map_err(|p| p.naming(format!("{WATERMARK_GENERATOR} of {tp}")))??;
            }
        }
    }
    Ok(processor_metadata)
}

/// The watermark resumes from the committed partition times before anything
/// is dispatched: a record read again after a restart or a replacement is
/// judged (and counted as a late arrival) against the watermark it was
/// dispatched under before, not against none. Returns it per sub-topology.
///
/// Without changelogs there are no stamp rings: each task's floor starts at
/// the watermark its committed partition times give (the least over its
/// sub-topology's partitions, none above the stamp the last commit
/// carried), so a record for a window closed before the restart is late,
/// and cannot reopen a window already emitted.
fn resume_watermarks<L: Log>(s: &Starting<'_, L>, seeded: &mut Seeded) -> Vec<Watermark> {
    let resumed: Vec<Watermark> = seeded
        .times
        .iter_mut()
        .map(|t| match s.tracking {
            true => t.tracker.force_watermark(s.now),
            false => Watermark::MIN,
        })
        .collect();
    if !s.config.streams.changelog_enabled && s.tracking {
        for (id, (floor, _)) in &mut seeded.tasks {
            *floor = (*floor).max(resumed[id.subtopology]);
        }
    }
    resumed
}

/// One thread per lane, each building, restoring and seeding its own tasks
/// (every task of partition `p` on lane `p mod lanes`).
fn spawn_lanes<L: Log + 'static, C>(
    s: &Starting<'_, L>,
    owned: &BTreeSet<TaskId>,
    seeded: &Seeded,
    sources: &Sources<C>,
    early: &EarlyOutput,
) -> Result<Lanes, RuntimeError> {
    let lanes_n = s.config.lanes;
    let mut by_lane: Vec<Vec<TaskId>> = vec![Vec::new(); lanes_n];
    for &id in owned {
        by_lane[id.partition as usize % lanes_n].push(id);
    }
    // Each task's sources start from their partition's committed time, as
    // the poll loop's readers do: both assign the same event times.
    let partition_times: Vec<(TaskId, Arc<str>, EventTime)> = sources
        .slots
        .iter()
        .filter_map(|slot| Some((slot.task, slot.topic.clone(), slot.partition_time?)))
        .collect();
    let takeover = takeover::is_takeover(s.config, seeded.last_barrier);
    let seeds = Arc::new(seeded.tasks.clone());
    let (restored_tx, restored) = sync_channel(lanes_n);
    let (failures_tx, failures) = sync_channel(lanes_n);
    let mut lanes = Lanes {
        inboxes: Vec::new(),
        threads: Vec::new(),
        restored,
        failures,
        pending_output: Arc::new(AtomicBool::new(false)),
        cancel_restore: Arc::new(AtomicBool::new(false)),
    };
    // Queries allowing stale answers reach the lanes while they restore
    // (until RUNNING publishes their inboxes instead).
    let mut restoring = Vec::with_capacity(lanes_n);
    for (lane, tasks) in by_lane.into_iter().enumerate() {
        let (tx, rx) = sync_channel(LANE_QUEUE);
        let (query_tx, restore_queries) = sync_channel(RESTORE_QUERIES);
        restoring.push(query_tx);
        let setup = LaneSetup {
            lane,
            tasks,
            topology: s.topology.clone(),
            config: s.streams_config.clone(),
            log: s.log.clone(),
            seeds: seeds.clone(),
            restore_stall_timeout: s.config.restore_stall_timeout,
            wall_clock: s.now,
            pending_output: lanes.pending_output.clone(),
            cancel_restore: lanes.cancel_restore.clone(),
            state_dir: s.config.effective_state_dir(),
            default_store: s.config.default_dsl_store(),
            partition_times: partition_times.clone(),
            metrics: s.shared.metrics.clone(),
            takeover: takeover.then(|| sources.processor_metadata.clone()),
            early: early.clone(),
            first_epoch: seeded.last_barrier + 1,
            topics: s.topics.clone(),
            restore_queries: Some(restore_queries),
        };
        let (restored_tx, failures_tx) = (restored_tx.clone(), failures_tx.clone());
        let handle = std::thread::Builder::new()
            .name(format!("{}-lane-{lane}", s.app))
            .spawn(move || run_lane(setup, rx, restored_tx, failures_tx))
            .map_err(|e| RuntimeError::ThreadDied {
                thread: format!("lane {lane}"),
                reason: e.to_string(),
            })?;
        lanes.inboxes.push(tx);
        lanes.threads.push(handle);
    }
    s.shared
        .query_lanes
        .lock()
        .expect("query lanes lock")
        .restoring = restoring;
    Ok(lanes)
}

/// The lanes while they restore: what [`await_restore`] needs of them.
struct Restoring<'a> {
    inboxes: Vec<SyncSender<LaneMsg>>,
    threads: Vec<JoinHandle<()>>,
    restored: &'a Receiver<Restored>,
    cancel_restore: &'a AtomicBool,
}

impl Lanes {
    fn restoring(&mut self) -> Restoring<'_> {
        Restoring {
            inboxes: std::mem::take(&mut self.inboxes),
            threads: std::mem::take(&mut self.threads),
            restored: &self.restored,
            cancel_restore: &self.cancel_restore,
        }
    }
}

/// Waits until every lane restored its tasks: the lanes' inboxes and
/// threads, or `None` if the application was halted meanwhile (the lanes
/// were then told to stop reading, and were waited for).
fn await_restore<L: Log>(
    s: &Starting<'_, L>,
    lanes: Restoring<'_>,
) -> Result<Option<(Vec<SyncSender<LaneMsg>>, Vec<JoinHandle<()>>)>, RuntimeError> {
    let lanes_n = lanes.inboxes.len();
    let mut restored = 0u64;
    let mut ready = 0;
    while ready < lanes_n {
        // A halt (a close whose timeout ran out) does not wait for the
        // restore: the lanes stop reading, and are waited for. A close in
        // time still does: results may be owed from the committed state (an
        // emission pass whose transaction was aborted), and the close's
        // flush barrier commits them.
        if s.shared.halt.load(Ordering::Acquire) {
            lanes.cancel_restore.store(true, Ordering::Release);
            drop(lanes.inboxes);
            for h in lanes.threads {
                let _ = h.join();
            }
            tracing::info!("halted while restoring");
            return Ok(None);
        }
        match lanes.restored.recv_timeout(RESTORE_POLL) {
            Ok(Restored::Ready { restored: r }) => {
                restored += r;
                ready += 1;
            }
            Ok(Restored::Failed(failed)) => return Err(lane_failed(failed)),
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
    s.shared.restored.store(restored, Ordering::Release);
    Ok(Some((lanes.inboxes, lanes.threads)))
}

/// The resumed watermark reaches the lanes before the first record, as the
/// poll loop's advances do after it.
fn announce_resumed(
    inboxes: &[SyncSender<LaneMsg>],
    resumed: &[Watermark],
) -> Result<(), RuntimeError> {
    for (subtopology, &watermark) in resumed.iter().enumerate() {
        if !watermark.is_none_yet() {
            for lane in inboxes {
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
    Ok(())
}

/// The engine's front of the upkeep thread: it purges the repartition
/// partitions this engine reads.
fn upkeep_front(config: &RuntimeConfig, upkeep: &UpkeepThread, slots: &[SourceSlot]) -> Upkeep {
    let repartition = slots
        .iter()
        .filter(|slot| slot.last_marker.is_some())
        .map(|slot| slot.tp.clone());
    upkeep.front(config.purge_interval, repartition, Instant::now())
}

/// Standby copies of the tasks owned elsewhere (none when no state
/// directory keeps them), and the assignment published with them.
fn start_copies<L: Log + 'static>(
    s: &Starting<'_, L>,
    membership: &Membership,
    owned: &BTreeSet<TaskId>,
) -> Result<Copies<L>, RuntimeError> {
    let all_tasks = (0..s.topology.subtopology_count())
        .flat_map(|st| {
            let partitions = s.plan.partitions.get(&st).copied().unwrap_or(0);
            (0..partitions).map(move |p| TaskId::new(st, p))
        })
        .collect();
    Copies::new(s.config, s.topology, &s.streams_config, s.log, s.shared)
        .start(all_tasks, owned, membership)
}

/// Each sink topic's partitions, as the committer routes output to them,
/// and where it finds those of the topics dynamic sinks pick.
fn sink_routing(plan: &Layout, topics: Arc<dyn TopicCatalog>) -> SinkRouting {
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
    SinkRouting::new(sink_tps, Some(topics))
}
