//! Errors of building and running a topology.

use stoatflow_state::StateError;
use stoatflow_time::{StrategyError, TimeError};

use crate::serde::SerdeError;

/// A topology the engine refuses (docs/validation.md), or a bad DSL argument.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// Something the watermark drives, in a topology whose watermark can never move.
    #[error(
        "{node} ({what}) needs a watermark, but source {source_node} uses no_watermarks(): the application-wide watermark would never pass it"
    )]
    NoWatermarksSource {
        /// The watermark-driven node.
        node: String,
        /// What it is.
        what: &'static str,
        /// The offending source node and topic.
        source_node: String,
    },
    /// Something the watermark drives, under DISABLED coordination.
    #[error(
        "{node} ({what}) needs a watermark, but timestamp-coordination-mode is DISABLED (source {source_node}); use AUTO or ENABLED"
    )]
    CoordinationDisabled {
        /// The watermark-driven node.
        node: String,
        /// What it is.
        what: &'static str,
        /// A source of its sub-topology.
        source_node: String,
    },
    /// Something the watermark drives, with no source topic to read.
    #[error("{node} ({what}) needs a watermark, but the topology reads no source topic")]
    NoSourceTopic {
        /// The watermark-driven node.
        node: String,
        /// What it is.
        what: &'static str,
    },
    /// DIRECT dispatch with event time.
    #[error(
        "dispatch mode DIRECT has no watermarks, but {node} ({what}) needs one (source {source_node}); use LANE or AUTO"
    )]
    DirectDispatch {
        /// The watermark-driven node.
        node: String,
        /// What it is.
        what: &'static str,
        /// A source.
        source_node: String,
    },
    /// A bad window, retention or other DSL argument.
    #[error("invalid argument for {node}: {reason}")]
    InvalidArgument {
        /// Where.
        node: String,
        /// What is wrong.
        reason: String,
    },
    /// A topic read by two sources.
    #[error("topic {topic} is already read by source {existing}")]
    TopicAlreadyRead {
        /// The topic.
        topic: String,
        /// The node that reads it.
        existing: String,
    },
    /// Two stores with one name.
    #[error("store name {store} is used twice")]
    DuplicateStore {
        /// The store.
        store: String,
    },
    /// A store needs a serde for its changelog.
    #[error(
        "store {store} needs a {what} serde for its changelog: give one with Materialized::with_{what}_serde, or disable logging"
    )]
    MissingSerde {
        /// The store.
        store: String,
        /// `key` or `value`.
        what: &'static str,
    },
    /// A strategy misconfiguration.
    #[error("source {source_node}: {error}")]
    Strategy {
        /// The source topic.
        source_node: String,
        /// What is wrong.
        error: StrategyError,
    },
}

/// A failure while processing a record or a barrier.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProcessError {
    /// A key or value that does not deserialize, under the fail handler.
    #[error("cannot deserialize the {part} of a record from topic {topic}{position}: {source}")]
    Deserialization {
        /// `key` or `value`.
        part: &'static str,
        /// The topic.
        topic: String,
        /// `partition P offset O`, when known.
        position: String,
        /// The serde's error (names the serde).
        #[source]
        source: Box<SerdeError>,
    },
    /// A value a sink could not serialize.
    #[error("cannot serialize a record for topic {topic}: {source}")]
    Serialization {
        /// The topic.
        topic: String,
        /// The serde's error.
        #[source]
        source: Box<SerdeError>,
    },
    /// A record's event time is invalid.
    #[error("record from topic {topic}{position} has an invalid event time: {source}")]
    InvalidTimestamp {
        /// The topic.
        topic: String,
        /// Its position.
        position: String,
        /// Why.
        #[source]
        source: TimeError,
    },
    /// A store failed.
    #[error("store {store}: {source}")]
    State {
        /// The store.
        store: String,
        /// Why.
        #[source]
        source: Box<StateError>,
    },
    /// A strict suppress buffer is full: the application stops.
    #[error("suppress buffer {store} is full ({bound}) and is configured to shut down when full")]
    BufferFull {
        /// The buffer's store.
        store: String,
        /// The bound that was hit.
        bound: String,
    },
    /// A custom processor misused its context, or failed.
    #[error("processor {node}: {reason}")]
    Processor {
        /// The processor node.
        node: String,
        /// What went wrong.
        reason: String,
    },
    /// A dynamic sink picked a topic that does not exist (or whose name the
    /// log refuses), under the fail production handler.
    #[error("sink {node}: topic {topic} for {record} {reason}")]
    MissingTopic {
        /// The sink node.
        node: String,
        /// The topic its extractor picked.
        topic: String,
        /// The record: its key, source position and timestamp.
        record: String,
        /// `does not exist`, or why the log refuses the name.
        reason: String,
    },
    /// A dynamic sink picked one of the application's internal topics.
    #[error(
        "sink {node}: topic {topic} for {record} is an internal topic of this application \
         (a repartition topic or a changelog); a dynamic sink never writes one"
    )]
    InternalTopic {
        /// The sink node.
        node: String,
        /// The topic its extractor picked.
        topic: String,
        /// The record: its key, source position and timestamp.
        record: String,
    },
    /// A dynamic sink could not look its topic up.
    #[error("sink {node}: cannot look topic {topic} up: {reason}")]
    TopicLookup {
        /// The sink node.
        node: String,
        /// The topic.
        topic: String,
        /// Why.
        reason: String,
    },
    /// A record for a topic no source reads.
    #[error("no source reads topic {topic}")]
    UnknownTopic {
        /// The topic.
        topic: String,
    },
}

pub(crate) fn position(partition: Option<i32>, offset: Option<i64>) -> String {
    match (partition, offset) {
        (Some(p), Some(o)) => format!(" partition {p} offset {o}"),
        (Some(p), None) => format!(" partition {p}"),
        _ => String::new(),
    }
}
