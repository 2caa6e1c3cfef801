//! The processors: one operator (or one family of trivial ones) per file.
//!
//! An operator knows the topology layer's contracts (`Push`, `Downstream`,
//! `FrontierOperator`, `TimeOperator`, the task's context) and the shared
//! leaves (records, serdes, window definitions); never the DSL that wires it
//! nor the Processor API.

pub(crate) mod dynamic_sink;
pub(crate) mod fk_join;
pub(crate) mod global_join;
pub(crate) mod scheduled_source;
pub(crate) mod session_aggregate;
pub(crate) mod sink;
pub(crate) mod sliding_aggregate;
pub(crate) mod source;
pub(crate) mod stateless;
pub(crate) mod stream_join;
pub(crate) mod stream_table_join;
pub(crate) mod suppress_barrier;
pub(crate) mod suppress_time;
pub(crate) mod table_aggregate;
pub(crate) mod table_join;
pub(crate) mod table_regroup;
pub(crate) mod window_aggregate;
pub(crate) mod windowed;
