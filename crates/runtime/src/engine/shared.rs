//! [`Shared`]: what the application's handle and the engine thread share:
//! the state and its listener, the uncaught-error handler and its
//! decisions, the stop and halt flags, and what the engine publishes for
//! the handle to read (the `/watermarks` view, committed and consumed
//! positions, counters, the timeline, the assignment), and the lanes'
//! inboxes an interactive query goes to.
//!
//! Owns the state machine's transitions and the calls into the two user
//! callbacks it holds: each runs with no lock held, behind a panic guard. A
//! panicking listener leaves its error pending for the engine (which stops
//! on it, committing nothing more) or for the next step toward NOT_RUNNING
//! (which becomes ERROR instead); a panicking handler's error is the one the
//! application stops with. Knows nothing of how the engine polls,
//! dispatches or commits.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};

use stoatflow_log::TopicPartition;
use stoatflow_time::WatermarksSnapshot;

use crate::app_state::AppState;
use crate::engine::error_response::{StreamThreadExceptionResponse, default_response};
use crate::engine::guard::{self, ERROR_HANDLER, Panicked, STATE_LISTENER};
use crate::engine::lane_protocol::LaneMsg;
use crate::error::RuntimeError;
use crate::observe::metrics::MetricsCells;
use crate::observe::timeline::Timeline;
use crate::query::{
    CommittedBarriers, CopyInbox, QueryAnswer, QueryError, QueryTarget, StateQueryRequest,
    StoreQuery, query_lanes,
};
use crate::task_id::TaskId;

/// What the application and the engine share.
pub(crate) struct Shared {
    pub(crate) state: Mutex<AppState>,
    pub(crate) listener: Mutex<Option<StateListener>>,
    pub(crate) error_handler: Mutex<Option<ErrorHandler>>,
    /// A callback's panic not yet acted on: the engine stops on it, a move
    /// to NOT_RUNNING becomes ERROR, and [`Shared::fail`] stops with it.
    pub(crate) callback_panic: Mutex<Option<RuntimeError>>,
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
    pub(crate) barriers: AtomicU64,
    /// The error that stopped the application.
    pub(crate) error: Mutex<Option<Arc<RuntimeError>>>,
    /// Changelog records the last start restored into the tasks' stores.
    pub(crate) restored: AtomicU64,
    /// Engines replaced in place after an error.
    pub(crate) replacements: AtomicU64,
    /// What `/metrics` reads (written per barrier and per snapshot refresh).
    pub(crate) metrics: Arc<MetricsCells>,
    /// Barrier and watermark times (final-result latency), updated per barrier.
    pub(crate) timeline: Mutex<Timeline>,
    /// The tasks the running engine owns, and those it keeps standby copies of.
    pub(crate) assignment: Mutex<Assignment>,
    /// The group as the running engine was built with it (who is in it and
    /// who owns what), when the log could describe it: what key metadata
    /// reads (docs/queries.md#metadata).
    pub(crate) group: Mutex<Option<GroupView>>,
    /// Changelog records the standby copies applied since start.
    pub(crate) standby_applied: Arc<AtomicU64>,
    /// How far the running engine's standby copies are behind their
    /// changelogs ([`STANDBY_LAG_UNKNOWN`] before they measured it).
    pub(crate) standby_lag: Arc<AtomicU64>,
    /// The running engine's lane inboxes, where queries go (empty while no
    /// engine runs; cleared before the engine hangs up on its lanes, so
    /// they end).
    pub(crate) query_lanes: Mutex<QueryLanes>,
    /// The barriers committed lately, what committed reads wait for.
    pub(crate) committed_barriers: CommittedBarriers,
}

/// The running engine's lane inboxes, and which engine that is: a
/// committed read waits for its barrier on the engine that read it, never
/// on a successor that numbers its barriers alike.
#[derive(Debug, Default)]
pub(crate) struct QueryLanes {
    /// Counts the engines that published their lanes.
    pub(crate) generation: u64,
    /// Empty while no engine runs.
    pub(crate) lanes: Vec<SyncSender<LaneMsg>>,
    /// The standby thread's inbox, while it keeps copies.
    pub(crate) standby: Option<CopyInbox>,
    /// The lanes' inboxes while they restore (empty once they serve).
    pub(crate) restoring: Vec<CopyInbox>,
}

impl QueryLanes {
    /// A new engine's lanes.
    pub(crate) fn publish(&mut self, lanes: Vec<SyncSender<LaneMsg>>) {
        self.generation += 1;
        self.lanes = lanes;
        self.restoring.clear();
    }
}

/// The group as every member sees it: its members (instance ids) and the
/// owner of each task that has one (what standby placement ranks, and key
/// metadata reads; defined here so that the shared state names no
/// placement).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GroupView {
    /// Every member of the group, by instance id.
    pub members: BTreeSet<String>,
    /// The member owning each assigned task.
    pub owners: BTreeMap<TaskId, String>,
}

/// The standby copies' lag before they first measured it.
pub(crate) const STANDBY_LAG_UNKNOWN: u64 = u64::MAX;

/// Which tasks an instance runs, and which it keeps warm copies of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assignment {
    /// The tasks it owns (processes, commits).
    pub active: Vec<TaskId>,
    /// The tasks whose stores it keeps warm from their changelogs
    /// (`num.standby.replicas`).
    pub standby: Vec<TaskId>,
}

/// Called on every state change with (new, old). Shared, so that a call
/// runs without the lock that holds it.
pub type StateListener = Arc<dyn Fn(AppState, AppState) + Send + Sync>;

/// Called with each error that stops the engine; its answer (`None`: the
/// default) decides whether a fresh engine replaces it. Shared, so that a
/// call runs without the lock that holds it.
pub type ErrorHandler =
    Arc<dyn Fn(&RuntimeError) -> Option<StreamThreadExceptionResponse> + Send + Sync>;

impl Shared {
    /// How far the standby copies are behind their changelogs; `None` until
    /// the running engine's copies measured it.
    pub(crate) fn standby_lag(&self) -> Option<u64> {
        match self.standby_lag.load(Ordering::Acquire) {
            STANDBY_LAG_UNKNOWN => None,
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
            callback_panic: Mutex::new(None),
            stop: AtomicBool::new(false),
            halt: AtomicBool::new(false),
            snapshot: Mutex::new(None),
            committed: Mutex::new(HashMap::new()),
            consumed: Mutex::new(HashMap::new()),
            barriers: AtomicU64::new(0),
            error: Mutex::new(None),
            restored: AtomicU64::new(0),
            replacements: AtomicU64::new(0),
            metrics: Arc::default(),
            timeline: Mutex::new(Timeline::default()),
            assignment: Mutex::new(Assignment::default()),
            group: Mutex::new(None),
            standby_applied: Arc::default(),
            standby_lag: Arc::new(AtomicU64::new(STANDBY_LAG_UNKNOWN)),
            query_lanes: Mutex::new(QueryLanes::default()),
            committed_barriers: CommittedBarriers::default(),
        }
    }

    pub(crate) fn state(&self) -> AppState {
        *self.state.lock().expect("state lock")
    }

    /// Moves to `to` if the lifecycle allows it; tells the listener (with
    /// no lock held; a panic in it is kept for [`Shared::callback_panicked`]).
    /// A move to NOT_RUNNING after a listener panicked stops in ERROR
    /// instead, with that panic.
    pub(crate) fn transition(&self, to: AppState) -> bool {
        if to == AppState::NotRunning
            && let Some(panicked) = self.take_callback_panic()
        {
            self.fail(panicked);
            return false;
        }
        let from = {
            let mut s = self.state.lock().expect("state lock");
            if !s.can_become(to) {
                return false;
            }
            std::mem::replace(&mut *s, to)
        };
        tracing::info!(from = %from, to = %to, "application state");
        let listener = self.listener.lock().expect("listener lock").clone();
        if let Some(listener) = listener
            && let Err(panicked) = guard::guarded(|| listener(to, from))
        {
            let error = panicked.naming(STATE_LISTENER);
            tracing::error!(error = %error, from = %from, to = %to, "the state listener panicked");
            self.keep_callback_panic(error);
        }
        true
    }

    /// The panic of a callback not yet acted on, as an error: what the
    /// engine checks after each of its moves, before it processes or
    /// commits anything more.
    pub(crate) fn callback_panicked(&self) -> Result<(), RuntimeError> {
        match self.take_callback_panic() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn take_callback_panic(&self) -> Option<RuntimeError> {
        self.callback_panic.lock().expect("callback lock").take()
    }

    /// Keeps the first panic not yet acted on.
    fn keep_callback_panic(&self, error: RuntimeError) {
        let mut pending = self.callback_panic.lock().expect("callback lock");
        if pending.is_none() {
            *pending = Some(error);
        }
    }

    /// What to do after `error` stopped the engine: the handler's answer,
    /// else the default. The handler runs with no lock held; if it panics,
    /// the answer is to shut down, and [`Shared::fail`] stops with the
    /// panic (naming the handler and `error`) instead of `error`.
    pub(crate) fn decide(&self, error: &RuntimeError) -> StreamThreadExceptionResponse {
        let handler = self.error_handler.lock().expect("handler lock").clone();
        let answer = match handler {
            Some(h) => match guard::guarded(|| h(error)) {
                Ok(answer) => answer,
                Err(Panicked(message)) => {
                    let panicked = Panicked(format!("{message} (it was handed: {error})"))
                        .naming(ERROR_HANDLER);
                    tracing::error!(error = %panicked, "the uncaught-error handler panicked");
                    self.keep_callback_panic(panicked);
                    return StreamThreadExceptionResponse::ShutdownClient;
                }
            },
            None => None,
        };
        answer.unwrap_or_else(|| default_response(error))
    }

    /// Stops the application in ERROR (the handler has been asked already).
    /// `StreamsApp::error` then returns `error` itself, so a caller can
    /// match on what stopped it, unless a callback's panic is pending
    /// (the handler panicked deciding on `error`): that is what stopped it.
    pub(crate) fn fail(&self, error: RuntimeError) {
        let error = match self.take_callback_panic() {
            Some(panicked) => {
                tracing::error!(error = %error, "the error a callback's panic supersedes");
                panicked
            }
            None => error,
        };
        tracing::error!(error = %error, "application stopped by an error");
        self.transition(AppState::PendingError);
        *self.error.lock().expect("error lock") = Some(Arc::new(error));
        self.transition(AppState::Error);
        // The listener told of PENDING_ERROR or ERROR may have panicked too:
        // logged; the application has stopped already.
        let _ = self.take_callback_panic();
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

/// Runs `request` on every lane of the engine running now and merges the
/// parts.
pub(crate) fn run_query<Q: StoreQuery>(
    shared: &Shared,
    request: StateQueryRequest<Q>,
) -> Result<QueryAnswer<Q::Answer>, QueryError> {
    let (generation, lanes, copies) = {
        let q = shared.query_lanes.lock().expect("query lanes lock");
        let copies = q.standby.iter().chain(&q.restoring).cloned().collect();
        (q.generation, q.lanes.clone(), copies)
    };
    let running = || {
        let q = shared.query_lanes.lock().expect("query lanes lock");
        q.generation == generation && !q.lanes.is_empty()
    };
    let target = QueryTarget {
        lanes,
        copies,
        committed: &shared.committed_barriers,
        running: &running,
    };
    query_lanes(target, request)
}
