//! The messages between the poll loop, the lanes and the barrier driver, one
//! type per phase of a lane's life, so that no phase can receive what only
//! another one sends:
//!
//! 1. **restore**: a lane builds and restores its tasks, then answers once on
//!    its restore channel ([`Restored`]: ready, or failed);
//! 2. **serve**: the poll loop sends it [`LaneMsg`]s in order (records in
//!    [`LaneRun`]s); a barrier carries the channel its [`Crossed`] answer
//!    goes to, which lives only while that barrier is in flight; a failure
//!    goes to the lanes' failure channel ([`LaneFailed`]), the only answer
//!    there is between barriers besides a query's, which goes to the
//!    channel the query carries;
//! 3. **checkpoint**: the last message of a graceful end; nothing answers it.
//!
//! A leaf: the lane, the dispatcher and the barrier driver all speak it, and
//! it knows none of them.

use std::sync::Arc;
use std::sync::mpsc::SyncSender;

use stoatflow_log::FetchedBatch;
use stoatflow_streams::EpochCommit;
use stoatflow_time::{WallTime, Watermark};

use crate::error::RuntimeError;
use crate::query::{LaneInbox, LaneQuery};
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

/// What the poll loop sends a restored lane, in order.
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
    /// stamp is emitted into the same commit. The lane answers on `reply`.
    Barrier {
        barrier: u64,
        stamps: Arc<[Watermark]>,
        flush: bool,
        reply: SyncSender<Crossed>,
    },
    /// An interactive query: read the tasks' stores now, or, for a
    /// committed read, at the next barrier crossing (`crate::query`).
    Query(Box<dyn LaneQuery>),
    /// After the final barrier of a graceful shutdown committed: close the
    /// persistent stores and write each one's checkpoint, then stop.
    Checkpoint,
}

/// A lane's answer to its restore, the one message on its restore channel.
#[derive(Debug)]
pub(crate) enum Restored {
    /// Stores restored and clocks seeded: ready for records.
    Ready { restored: u64 },
    /// Building or restoring a task failed; the lane has stopped.
    Failed(LaneFailed),
}

/// A lane crossed a barrier: the epoch's commits of its tasks, in task order.
#[derive(Debug)]
pub(crate) struct Crossed {
    pub(crate) barrier: u64,
    pub(crate) commits: Vec<(TaskId, EpochCommit)>,
}

/// A task of the lane failed; the lane has stopped.
#[derive(Debug)]
pub(crate) struct LaneFailed {
    pub(crate) lane: usize,
    pub(crate) error: RuntimeError,
}

impl LaneInbox for SyncSender<LaneMsg> {
    fn send_query(&self, query: Box<dyn LaneQuery>) -> bool {
        self.send(LaneMsg::Query(query)).is_ok()
    }
}
