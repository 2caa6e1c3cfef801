//! The messages between the poll loop, the lanes and the barrier driver: what the poll
//! loop sends a lane ([`LaneMsg`], records in [`LaneRun`]s) and what a lane answers
//! ([`LaneReply`]). A leaf: the lane, the dispatcher and the barrier driver all speak it,
//! and it knows none of them.

use std::sync::Arc;

use stoatflow_log::FetchedBatch;
use stoatflow_streams::EpochCommit;
use stoatflow_time::{WallTime, Watermark};

use crate::error::RuntimeError;
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
