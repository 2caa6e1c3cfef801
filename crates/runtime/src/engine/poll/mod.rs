//! The poll loop's side of dispatch: fetched batches into ordered dispatch
//! and out to the lanes, and the event time of repartition partitions
//! (docs/time.md#ordered-dispatch, docs/barriers.md#repartition-hops).

pub(in crate::engine) mod dispatch;
pub(in crate::engine) mod marker_time;
