//! Interactive queries on a running application (Kafka Streams' IQv2,
//! `KafkaStreams::query(StateQueryRequest)`; docs/queries.md).
//!
//! A query travels to every lane as a message ([`LaneQuery`]) and is read
//! on the lane's own thread, where the stores live: at once between records
//! ([`ReadMode::LatestProcessed`]), or, the default
//! ([`ReadMode::Committed`]), at the lane's next barrier crossing, at the one
//! moment its stores hold exactly what that barrier's transaction commits;
//! the answer is handed out only once that transaction has committed. A
//! lane copies the part of the answer its tasks hold and goes on: no lock is
//! held and no barrier waits for the caller. Copies that may be behind (the
//! standby thread's, the lanes' while they restore) take the same visit on
//! an inbox of their own ([`CopyInbox`]) and answer it between two steps of
//! their work, only if the request allows stale answers.
//!
//! Owns the request, the answer and the error types, the four query kinds
//! (`kinds`) and the finality of a window (`finality`). Knows nothing of how
//! the engine polls or commits, of HTTP or of JSON.

mod error;
mod finality;
mod kinds;
mod request;

pub use error::QueryError;
pub use finality::{Finality, TaskClock};
pub use kinds::DEFAULT_LIMIT;
pub use kinds::{
    KeyQuery, RangeAnswer, RangeQuery, SessionQuery, StoreQuery, WindowEntry, WindowQuery,
};
pub use request::{
    ChangelogLag, DEFAULT_QUERY_TIMEOUT, QueryAnswer, ReadMode, SourcePosition, StaleRead,
    StaleSource, StateQueryRequest,
};

pub(crate) use request::{
    CommittedBarriers, CopyInbox, LaneInbox, LaneQuery, QueryTarget, query_lanes,
};
