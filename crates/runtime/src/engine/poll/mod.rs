//! The poll loop's side of dispatch: fetched batches into ordered dispatch
//! and out to the lanes, and the event time of repartition partitions
//! (DESIGN 3.2, 3.3).

pub(in crate::engine) mod dispatch;
pub(in crate::engine) mod marker_time;
