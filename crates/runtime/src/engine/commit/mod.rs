//! Committing an epoch: the barrier that closes it, the committer thread
//! that owns the transactional producer, where each sink record goes, the
//! stamp rings of the `stoatflow-watermark` store, and the log's upkeep
//! after a commit (DESIGN 3.3, 3.6).

pub(in crate::engine) mod barrier;
pub(crate) mod committer;
mod output_order;
pub(crate) mod partitioner;
pub(crate) mod task_stamps;
pub(crate) mod upkeep;
