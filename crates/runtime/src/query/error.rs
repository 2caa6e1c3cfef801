//! [`QueryError`]: why an interactive query has no answer.
//!
//! A leaf of `query`: the store kinds (`kinds`) and the way there and back
//! (`request`) both answer with it.

use std::time::Duration;

/// Why a query has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// No task of this instance has the store.
    #[error("no store '{store}' on this instance (stores: {known})")]
    NoStore {
        /// The store asked.
        store: String,
        /// The stores there are.
        known: String,
    },
    /// The store is of another type than the query reads.
    #[error("store '{store}' is a {actual}, not a {expected}")]
    StoreType {
        /// The store asked.
        store: String,
        /// The type the query reads.
        expected: &'static str,
        /// The store's type.
        actual: &'static str,
    },
    /// A window or session query on a store no windowed aggregation writes.
    #[error("store '{store}' holds no windows a window query can say the finality of")]
    NotWindowed {
        /// The store asked.
        store: String,
    },
    /// The store refused the read.
    #[error("store '{store}' refused the read: {message}")]
    Store {
        /// The store asked.
        store: String,
        /// Why.
        message: String,
    },
    /// The store is here only in tasks that may be behind (standby copies,
    /// tasks still restoring) and the request did not allow stale answers,
    /// or their copies cannot answer.
    #[error("store '{store}' has no up-to-date task on this instance: {why}")]
    Stale {
        /// The store asked.
        store: String,
        /// Each task that has it, and why it was not read.
        why: String,
    },
    /// The application is not processing (not started, restoring, closed).
    #[error("the application is not running: no store can be queried")]
    NotRunning,
    /// The engine stopped or was replaced before the answer committed: ask
    /// again.
    #[error("the engine stopped before the answer committed; ask again")]
    Interrupted,
    /// No answer within the timeout.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}
