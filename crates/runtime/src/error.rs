//! [`RuntimeError`]: what can stop an application, each naming the topic,
//! partition, store, key or setting at fault.

use stoatflow_log::LogError;
use stoatflow_state::StateError;
use stoatflow_streams::{ProcessError, TopologyError};
use stoatflow_time::TrackerError;

/// Why the runtime refused to start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// A setting has a bad value.
    #[error("configuration key {key} = {value:?}: {reason}")]
    Config {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The topology is refused (docs/validation.md#refusals).
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A source topic does not exist.
    #[error("source topic {topic} does not exist (create it before starting the application)")]
    MissingSourceTopic {
        /// The topic.
        topic: String,
    },
    /// A sink topic does not exist.
    #[error("sink topic {topic} does not exist (create it before starting the application)")]
    MissingSinkTopic {
        /// The topic.
        topic: String,
    },
    /// Topics one sub-topology reads together have different partition counts.
    #[error(
        "topics {first} ({first_partitions} partitions) and {second} ({second_partitions} partitions) are read by one sub-topology and must have the same number of partitions"
    )]
    NotCopartitioned {
        /// One topic.
        first: String,
        /// Its partitions.
        first_partitions: u32,
        /// The other.
        second: String,
        /// Its partitions.
        second_partitions: u32,
    },
    /// The topology needs something this runtime does not run yet.
    #[error("{what} is not supported by the runtime yet")]
    Unsupported {
        /// What, naming the node or topic.
        what: String,
    },
    /// The log failed.
    #[error("log: {0}")]
    Log(#[from] LogError),
    /// A processor failed.
    #[error("task {task}: {source}")]
    Process {
        /// The task (`subtopology_partition`).
        task: String,
        /// Why.
        #[source]
        source: ProcessError,
    },
    /// A store failed outside a task (restore, the watermark store).
    #[error("store {store}: {source}")]
    State {
        /// The store.
        store: String,
        /// Why.
        #[source]
        source: Box<StateError>,
    },
    /// The watermark tracker refused a partition.
    #[error("watermark tracker: {0}")]
    Tracker(#[from] TrackerError),
    /// A committed offset carries metadata that is not Kafka Streams' format.
    #[error("committed offset of {partition} has bad metadata: {reason}")]
    OffsetMetadata {
        /// The partition.
        partition: String,
        /// Why.
        reason: String,
    },
    /// A record of a repartition topic carries the marker header but no
    /// watermark.
    #[error("repartition topic {partition} offset {offset}: {reason}")]
    BadMarker {
        /// The partition.
        partition: String,
        /// The offset.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// User code (a processor, a serde, a store supplier) panicked on a
    /// record lane; the lane stopped.
    #[error("task {task} panicked on record lane {lane}: {message}")]
    TaskPanicked {
        /// The lane.
        lane: usize,
        /// The task being worked on (`subtopology_partition`), or `none`
        /// between tasks (a restore).
        task: String,
        /// What the panic said.
        message: String,
    },
    /// User code the runtime calls outside a task's processing panicked:
    /// the state listener, the uncaught-error handler, or on the poll
    /// thread a timestamp assigner (or a deserializer it reads with) or a
    /// watermark generator. The engine stops without committing the epoch
    /// in progress; the uncaught-error handler decides what follows (by
    /// default, and always for its own panic: ERROR). A panic in a
    /// processor or a punctuator, on a record lane, is
    /// [`RuntimeError::TaskPanicked`] or a processor error naming its node.
    #[error("{callback} panicked: {message}")]
    CallbackPanicked {
        /// Which callback (`the state listener`, `the uncaught-error
        /// handler`, `the timestamp assigner of topic clicks ...`, `a
        /// watermark generator ...`).
        callback: String,
        /// What the panic said (for the uncaught-error handler, followed by
        /// the error it was handed).
        message: String,
    },
    /// A thread of the runtime died.
    #[error("runtime thread {thread} stopped unexpectedly: {reason}")]
    ThreadDied {
        /// Which thread.
        thread: String,
        /// What it said.
        reason: String,
    },
    /// The application stopped on an error (its message, as the error
    /// handler saw it).
    #[error("{reason}")]
    Stopped {
        /// The error's message.
        reason: String,
    },
    /// This instance's producer was fenced: another instance took over its
    /// transactional id. Never replaced in place (that would fence the other).
    #[error(
        "producer {transactional_id} (epoch {epoch}) was fenced: another instance with the same application.id and instance id took over its transactional id; this instance stops (give each instance its own instance id)"
    )]
    Fenced {
        /// The transactional id.
        transactional_id: String,
        /// The fenced producer's epoch.
        epoch: u32,
    },
    /// `start()` on an application that is not in CREATED.
    #[error("cannot start an application in state {state}")]
    NotStartable {
        /// Its state.
        state: crate::AppState,
    },
}
