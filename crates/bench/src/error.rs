//! [`BenchError`]: what a benchmark run can fail at, naming the query.

use stoatflow_streams::{ProcessError, TopologyError};

/// What a run can fail at.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The query's topology was refused.
    #[error("query {query}: {source}")]
    Topology {
        /// The query.
        query: &'static str,
        /// Why.
        #[source]
        source: TopologyError,
    },
    /// Processing failed.
    #[error("query {query}: {source}")]
    Process {
        /// The query.
        query: &'static str,
        /// Why.
        #[source]
        source: ProcessError,
    },
    /// The engine (the runtime on the log) failed.
    #[error("query {query}: {reason}")]
    Engine {
        /// The query.
        query: &'static str,
        /// What failed.
        reason: String,
    },
    /// The run's options cannot be run (a zero rate, a sample period longer
    /// than the run, ...).
    #[error("query {query}: {reason}")]
    Options {
        /// The query.
        query: &'static str,
        /// What is wrong with them.
        reason: String,
    },
    /// The topology does not read the topic with the expected types.
    #[error("query {query} does not read topic {topic} with the expected key and value types")]
    Input {
        /// The query.
        query: &'static str,
        /// The topic.
        topic: &'static str,
    },
}
