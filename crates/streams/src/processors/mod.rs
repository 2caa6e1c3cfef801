//! The processors: one operator (or one family of trivial ones) per file.

pub(crate) mod custom;
pub(crate) mod scheduled_source;
pub(crate) mod sink;
pub(crate) mod source;
pub(crate) mod stateless;
pub(crate) mod stream_join;
pub(crate) mod stream_table_join;
pub(crate) mod table_aggregate;
pub(crate) mod window_aggregate;
