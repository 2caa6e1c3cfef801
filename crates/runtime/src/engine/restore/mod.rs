//! A task's state brought back from the log: reading changelogs, restoring
//! stores from them, standby copies that keep them warm, and taking over
//! from a Kafka Streams application of the same id (docs/state.md#restart,
//! docs/scale-out.md#standbys, docs/state.md#takeover).

pub(crate) mod changelog_read;
pub(crate) mod placement;
pub(crate) mod standby;
pub(crate) mod store_restore;
pub(crate) mod takeover;
