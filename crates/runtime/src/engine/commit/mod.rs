//! Committing an epoch: the barrier that closes it, the committer thread
//! that owns the transactional producer, where each sink record goes, and
//! the stamp rings of the `stoatflow-watermark` store (whose seed rule
//! `stoatflow_state::WatermarkStore::seed` states).
//! A commit hands the log's upkeep its offsets (`engine::upkeep`), never
//! waiting for it.

pub(in crate::engine) mod barrier;
pub(crate) mod committer;
mod output_order;
pub(crate) mod task_stamps;
