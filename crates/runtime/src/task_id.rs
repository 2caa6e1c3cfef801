//! [`TaskId`]: one sub-topology on one input partition, Kafka Streams' unit
//! of state. A task's stores are changelogged to partition `partition` of
//! their changelog topics, so state moves with its input partition.

use std::fmt;

/// A sub-topology running on one partition of its (co-partitioned) sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId {
    /// The sub-topology.
    pub subtopology: usize,
    /// The input partition (and the partition of its changelogs).
    pub partition: u32,
}

impl TaskId {
    /// Sub-topology `subtopology` on partition `partition`.
    #[must_use]
    pub const fn new(subtopology: usize, partition: u32) -> Self {
        TaskId {
            subtopology,
            partition,
        }
    }
}

impl fmt::Display for TaskId {
    /// Kafka Streams' form, `0_3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", self.subtopology, self.partition)
    }
}
