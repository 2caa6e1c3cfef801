//! A query's way there and back: [`StateQueryRequest`] in, one
//! [`LaneQuery`] per lane, the lanes' parts merged into a [`QueryAnswer`],
//! and for a committed read the wait for the transaction that makes it
//! committed ([`CommittedBarriers`]).
//!
//! Knows nothing of the store kinds (`kinds`) beyond [`StoreQuery`], of a
//! lane's inbox beyond [`LaneInbox`], or of how a lane schedules the read
//! (`engine::lane`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use stoatflow_log::TopicPartition;
use stoatflow_streams::StreamTask;
use stoatflow_time::Watermark;

use crate::query::error::QueryError;
use crate::query::finality::TaskClock;
use crate::query::kinds::StoreQuery;
use crate::task_id::TaskId;

/// What state a query reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReadMode {
    /// What the last committed transaction holds (the default): under
    /// `exactly_once_v2` nothing an answer shows can be rolled back. Waits
    /// up to about one barrier interval plus a commit.
    #[default]
    Committed,
    /// What the lanes have processed so far, committed or not: at once, but
    /// a crash can take back what it shows.
    LatestProcessed,
}

/// A query on one store: Kafka Streams' `StateQueryRequest`.
#[derive(Debug, Clone)]
pub struct StateQueryRequest<Q> {
    store: String,
    query: Q,
    mode: ReadMode,
    timeout: Duration,
    /// Answer from copies that may be behind too (standbys, restoring tasks).
    stale: bool,
}

/// How long a query waits for its answer unless told otherwise.
pub const DEFAULT_QUERY_TIMEOUT: Duration = Duration::from_secs(30);

impl<Q: StoreQuery> StateQueryRequest<Q> {
    /// `query` on the store `store`, reading committed state.
    pub fn in_store(store: impl Into<String>, query: Q) -> Self {
        StateQueryRequest {
            store: store.into(),
            query,
            mode: ReadMode::Committed,
            timeout: DEFAULT_QUERY_TIMEOUT,
            stale: false,
        }
    }

    /// Answers from the store's copies that may be behind too: the standby
    /// copies this instance keeps and its tasks still restoring (Kafka
    /// Streams' `StoreQueryParameters::enableStaleStores`). Their parts are
    /// read at once, whatever the read mode, and the answer says how far
    /// behind each was ([`QueryAnswer::stale`]). Without it such a store is
    /// refused ([`QueryError::Stale`]).
    #[must_use]
    pub fn enable_stale(mut self) -> Self {
        self.stale = true;
        self
    }

    /// Reads what the lanes have processed, committed or not.
    #[must_use]
    pub fn latest_processed(mut self) -> Self {
        self.mode = ReadMode::LatestProcessed;
        self
    }

    /// Waits at most `timeout` for the answer.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The store asked.
    pub fn store(&self) -> &str {
        &self.store
    }
}

/// One source partition's committed offset: Kafka Streams' `Position`,
/// one entry of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcePosition {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset of the next record to process.
    pub offset: u64,
}

/// An answer and what state it reflects.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryAnswer<A> {
    /// The answer.
    pub answer: A,
    /// The committed barrier (transaction) it reflects; `None` for a
    /// [`ReadMode::LatestProcessed`] answer.
    pub barrier: Option<u64>,
    /// The watermark it reflects (the lowest of the tasks read): the
    /// barrier's stamp, or the last watermark the tasks were told.
    pub watermark: Watermark,
    /// The floor (the lowest of the tasks read): every window closing at or
    /// before it is final.
    pub floor: Watermark,
    /// The source offsets committed with that barrier; empty for a
    /// [`ReadMode::LatestProcessed`] answer.
    pub position: Vec<SourcePosition>,
    /// The tasks read that may be behind (a request that
    /// [`enable_stale`](StateQueryRequest::enable_stale)s them), each with
    /// how far; empty when every part came from a task up to date.
    pub stale: Vec<StaleRead>,
}

/// Why a task read may be behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaleSource {
    /// A standby copy, kept by tailing the changelogs of a task another
    /// instance owns.
    Standby,
    /// A task of this instance whose stores are still being restored from
    /// their changelogs.
    Restoring,
}

impl StaleSource {
    /// Its name in JSON and the CLI: `standby` or `restoring`.
    pub fn name(&self) -> &'static str {
        match self {
            StaleSource::Standby => "standby",
            StaleSource::Restoring => "restoring",
        }
    }
}

/// One changelog partition of a stale read: where the copy is in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangelogLag {
    /// The changelog topic.
    pub topic: String,
    /// Its partition (the task's).
    pub partition: i32,
    /// The offset after the last record applied: where the copy's
    /// checkpoint would put it.
    pub position: u64,
    /// The partition's end as the copy last saw it (a standby measures it
    /// every 500 ms; a restore reads up to the end it saw at its start);
    /// `None` before it first looked.
    pub end: Option<u64>,
    /// `end` minus the copy's read position: offsets still to read
    /// (transaction markers included).
    pub behind: Option<u64>,
}

/// A task read that may be behind, and how far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleRead {
    /// The task.
    pub task: TaskId,
    /// A standby copy or a task restoring.
    pub source: StaleSource,
    /// Where it is in each changelog partition of the store asked.
    pub changelogs: Vec<ChangelogLag>,
}

/// What a lane runs for a query: `visit` each of its tasks (at once, or at
/// the barrier crossing a committed read waits for), then `finish`.
pub(crate) trait LaneQuery: Send {
    /// Reads committed state (at the next crossing) rather than at once.
    fn committed(&self) -> bool;
    /// Reads task `id` at `clock`.
    fn visit(&mut self, id: TaskId, task: &StreamTask, clock: TaskClock);
    /// The store asked.
    fn store(&self) -> &str;
    /// Task `id` may be behind, as `read` says: read it now (no clock: no
    /// window of it is final) if stale answers are allowed, else note it
    /// as refused. `refuse` says why its copy of the store cannot answer
    /// at all (a standby keeps no copy of a store in memory).
    fn visit_stale(&mut self, task: &StreamTask, read: StaleRead, refuse: Option<&str>);
    /// Sends the parts read; `barrier` is the crossing they were read at.
    fn finish(self: Box<Self>, barrier: Option<u64>);
}

impl std::fmt::Debug for dyn LaneQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LaneQuery")
    }
}

/// One lane's parts of an answer.
struct LaneParts<P> {
    parts: Result<Vec<(P, TaskClock)>, QueryError>,
    barrier: Option<u64>,
    /// The stores of its tasks, for an error naming those there are.
    known: BTreeSet<String>,
    /// The tasks read that may be behind.
    stale: Vec<StaleRead>,
    /// The tasks with the store that were not read, and why.
    refused: Vec<String>,
}

/// A query's visit to one lane: its parts, sent back on `reply`.
struct Visit<Q: StoreQuery> {
    query: Arc<Q>,
    store: Arc<str>,
    committed: bool,
    parts: Result<Vec<(Q::Part, TaskClock)>, QueryError>,
    known: BTreeSet<String>,
    reply: SyncSender<LaneParts<Q::Part>>,
    /// Stale answers allowed.
    allow_stale: bool,
    stale: Vec<StaleRead>,
    refused: Vec<String>,
}

impl<Q: StoreQuery> LaneQuery for Visit<Q> {
    fn committed(&self) -> bool {
        self.committed
    }

    fn visit(&mut self, _id: TaskId, task: &StreamTask, clock: TaskClock) {
        let Ok(parts) = &mut self.parts else { return };
        match self.query.read(task, &self.store, clock) {
            Ok(Some(part)) => parts.push((part, clock)),
            Ok(None) => self.known.extend(task.store_names().map(str::to_owned)),
            Err(e) => self.parts = Err(e),
        }
    }

    fn store(&self) -> &str {
        &self.store
    }

    fn visit_stale(&mut self, task: &StreamTask, read: StaleRead, refuse: Option<&str>) {
        let what = match read.source {
            StaleSource::Standby => "is a standby copy",
            StaleSource::Restoring => "is still restoring",
        };
        if let Some(why) = refuse {
            self.refused
                .push(format!("task {} {what}, {why}", read.task));
            return;
        }
        if !self.allow_stale {
            self.refused.push(format!(
                "task {} {what} (allow stale answers to read it)",
                read.task
            ));
            return;
        }
        let Ok(parts) = &mut self.parts else { return };
        match self.query.read(task, &self.store, TaskClock::UNKNOWN) {
            Ok(Some(part)) => {
                parts.push((part, TaskClock::UNKNOWN));
                self.stale.push(read);
            }
            Ok(None) => {}
            Err(e) => self.parts = Err(e),
        }
    }

    fn finish(self: Box<Self>, barrier: Option<u64>) {
        let _ = self.reply.send(LaneParts {
            parts: self.parts,
            barrier,
            known: self.known,
            stale: self.stale,
            refused: self.refused,
        });
    }
}

/// The barriers committed lately and the offsets each committed, newest
/// last: what a committed answer waits on and reports as its position.
#[derive(Debug, Default)]
pub(crate) struct CommittedBarriers {
    recent: Mutex<VecDeque<(u64, Arc<[(TopicPartition, u64)]>)>>,
    changed: Condvar,
}

/// How many committed barriers' offsets are kept for answers to report.
const KEPT: usize = 16;

impl CommittedBarriers {
    /// Barrier `n` committed `offsets`.
    pub(crate) fn committed(&self, n: u64, offsets: Vec<(TopicPartition, u64)>) {
        let mut recent = self.recent.lock().expect("committed barriers lock");
        if recent.len() == KEPT {
            recent.pop_front();
        }
        recent.push_back((n, offsets.into()));
        self.changed.notify_all();
    }

    /// Wakes every waiter (the engine stopped).
    pub(crate) fn wake(&self) {
        let _guard = self.recent.lock().expect("committed barriers lock");
        self.changed.notify_all();
    }

    /// Waits until barrier `n` has committed (its offsets: `Some`; `None`
    /// if it was already forgotten), or `running` turns false, or
    /// `deadline`.
    fn wait_for(
        &self,
        n: u64,
        deadline: Instant,
        running: &dyn Fn() -> bool,
    ) -> Result<Option<Arc<[(TopicPartition, u64)]>>, QueryError> {
        let mut recent = self.recent.lock().expect("committed barriers lock");
        loop {
            if recent.back().is_some_and(|(last, _)| *last >= n) {
                return Ok(recent.iter().find(|(b, _)| *b == n).map(|(_, o)| o.clone()));
            }
            if !running() {
                return Err(QueryError::Interrupted);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(QueryError::Timeout(Duration::ZERO));
            }
            // Bounded, so a stop that wakes no one is still seen.
            let step = left.min(Duration::from_millis(100));
            recent = self
                .changed
                .wait_timeout(recent, step)
                .expect("committed barriers lock")
                .0;
        }
    }
}

/// A lane's inbox, as a query reaches it.
pub(crate) trait LaneInbox {
    /// Hands `query` to the lane; `false` when the lane is gone.
    fn send_query(&self, query: Box<dyn LaneQuery>) -> bool;
}

/// What [`query_lanes`] needs of the application.
pub(crate) struct QueryTarget<'a, I> {
    /// The running engine's lane inboxes (empty: not running).
    pub(crate) lanes: Vec<I>,
    /// Where the copies that may be behind take queries: the standby
    /// thread's, the lanes' while they restore. One that is gone (its
    /// receiver dropped) is skipped.
    pub(crate) copies: Vec<CopyInbox>,
    /// What committed lately.
    pub(crate) committed: &'a CommittedBarriers,
    /// Whether the engine that took the query still runs.
    pub(crate) running: &'a dyn Fn() -> bool,
}

/// Where a thread holding copies that may be behind takes queries: it
/// answers each between two steps of its work ([`LaneQuery::visit_stale`]
/// per task, then [`LaneQuery::finish`]).
pub(crate) type CopyInbox = SyncSender<Box<dyn LaneQuery>>;

/// What the lanes' and the copies' parts add up to.
struct Gathered<P> {
    parts: Vec<(P, TaskClock)>,
    barrier: Option<u64>,
    known: BTreeSet<String>,
    stale: Vec<StaleRead>,
    refused: Vec<String>,
}

/// Runs `request` on every lane of `target` and merges the parts.
pub(crate) fn query_lanes<Q: StoreQuery, I: LaneInbox>(
    target: QueryTarget<'_, I>,
    request: StateQueryRequest<Q>,
) -> Result<QueryAnswer<Q::Answer>, QueryError> {
    let deadline = Instant::now() + request.timeout;
    let timeout = || QueryError::Timeout(request.timeout);
    if target.lanes.is_empty() && target.copies.is_empty() {
        return Err(QueryError::NotRunning);
    }
    let query = Arc::new(request.query);
    let sent = send_visits(&target, &query, &request.store, request.mode, request.stale)?;
    let g = gather(sent, deadline).map_err(|e| match e {
        QueryError::Timeout(_) => timeout(),
        e => e,
    })?;
    if g.parts.is_empty() {
        if !g.refused.is_empty() {
            return Err(QueryError::Stale {
                store: request.store,
                why: g.refused.join("; "),
            });
        }
        if target.lanes.is_empty() {
            return Err(QueryError::NotRunning);
        }
        return Err(QueryError::NoStore {
            store: request.store,
            known: g.known.into_iter().collect::<Vec<_>>().join(", "),
        });
    }
    let position = match g.barrier {
        Some(n) => {
            let offsets = target
                .committed
                .wait_for(n, deadline, target.running)
                .map_err(|e| match e {
                    QueryError::Timeout(_) => timeout(),
                    e => e,
                })?;
            positions(offsets.as_deref().unwrap_or(&[]))
        }
        None => Vec::new(),
    };
    let parts = g.parts;
    let lowest = |f: fn(&TaskClock) -> Watermark| {
        parts
            .iter()
            .map(|(_, c)| f(c))
            .min()
            .unwrap_or(Watermark::MIN)
    };
    let (watermark, floor) = (lowest(|c| c.watermark), lowest(|c| c.floor));
    let answer = query.merge(parts.into_iter().map(|(p, _)| p).collect());
    let mut stale = g.stale;
    stale.sort_by_key(|s| s.task);
    Ok(QueryAnswer {
        answer,
        barrier: g.barrier,
        watermark,
        floor,
        position,
        stale,
    })
}

/// Sends one visit to every lane and copy of `target`; the channel their
/// parts come back on, and how many will.
fn send_visits<Q: StoreQuery, I: LaneInbox>(
    target: &QueryTarget<'_, I>,
    query: &Arc<Q>,
    store: &str,
    mode: ReadMode,
    allow_stale: bool,
) -> Result<(Receiver<LaneParts<Q::Part>>, usize), QueryError> {
    let store: Arc<str> = store.into();
    let (reply, answers) = sync_channel(target.lanes.len() + target.copies.len());
    let visit = || Visit {
        query: query.clone(),
        store: store.clone(),
        committed: mode == ReadMode::Committed,
        parts: Ok(Vec::new()),
        known: BTreeSet::new(),
        reply: reply.clone(),
        allow_stale,
        stale: Vec::new(),
        refused: Vec::new(),
    };
    for lane in &target.lanes {
        if !lane.send_query(Box::new(visit())) {
            return Err(QueryError::Interrupted);
        }
    }
    let copies = target
        .copies
        .iter()
        .filter(|copy| copy.send_query(Box::new(visit())))
        .count();
    Ok((answers, target.lanes.len() + copies))
}

/// Receives `n` parts from `answers` by `deadline`.
fn gather<P>(
    (answers, n): (Receiver<LaneParts<P>>, usize),
    deadline: Instant,
) -> Result<Gathered<P>, QueryError> {
    let mut g = Gathered {
        parts: Vec::new(),
        barrier: None,
        known: BTreeSet::new(),
        stale: Vec::new(),
        refused: Vec::new(),
    };
    for _ in 0..n {
        let left = deadline.saturating_duration_since(Instant::now());
        let lane = match answers.recv_timeout(left) {
            Ok(lane) => lane,
            Err(RecvTimeoutError::Timeout) => return Err(QueryError::Timeout(Duration::ZERO)),
            Err(RecvTimeoutError::Disconnected) => return Err(QueryError::Interrupted),
        };
        g.known.extend(lane.known);
        let parts = lane.parts?;
        // A lane (or copy) that read nothing reflects no barrier.
        if !parts.is_empty() {
            g.barrier = g.barrier.max(lane.barrier);
        }
        g.parts.extend(parts);
        g.stale.extend(lane.stale);
        g.refused.extend(lane.refused);
    }
    Ok(g)
}

impl LaneInbox for CopyInbox {
    fn send_query(&self, query: Box<dyn LaneQuery>) -> bool {
        self.send(query).is_ok()
    }
}

fn positions(offsets: &[(TopicPartition, u64)]) -> Vec<SourcePosition> {
    let sorted: BTreeMap<(String, i32), u64> = offsets
        .iter()
        .map(|(tp, o)| ((tp.topic.clone(), tp.partition.0 as i32), *o))
        .collect();
    sorted
        .into_iter()
        .map(|((topic, partition), offset)| SourcePosition {
            topic,
            partition,
            offset,
        })
        .collect()
}
