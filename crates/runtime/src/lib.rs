//! # stoatflow-runtime
//!
//! Runs a topology on a log: the poll loop, ordered dispatch across source
//! partitions, record lanes, commit barriers stamped with the one
//! application-wide watermark, one transaction per epoch, recovery and
//! shutdown (docs/barriers.md, docs/state.md#restart).
//!
//! A short tour:
//! - [`StreamsApp`]: `new` (the embedded log of the config) or `with_log`
//!   (any [`stoatflow_log::Log`]), `start`, `state`, `close`, `run`, and
//!   `query` ([`StateQueryRequest`]: interactive queries, docs/queries.md).
//! - [`RuntimeConfig`]: backend, processing guarantee, barrier cadence
//!   ([`CommitBarrierConfig`]), lanes, the tracker's knobs.
//! - [`AppState`]: Kafka Streams' lifecycle; `RUNNING` is 4.
//! - [`BarrierCadence`]: when the next barrier is due.
//! - [`AppHandle`]: a read-only view for the operating surface; its
//!   [`MetricsSnapshot`] holds every figure `/metrics` exports.
//! - [`Timeline`]: when barriers were cut and committed and when the
//!   watermark moved: the final-result latency of a window close.
//!
//! ```
//! use std::time::Duration;
//! use stoatflow_log::{Log, TopicSpec};
//! use stoatflow_runtime::{Backend, RuntimeConfig, StreamsApp};
//! use stoatflow_streams::*;
//!
//! let mut builder = StreamsBuilder::new();
//! builder
//!     .stream("words", Consumed::with(Serdes::string(), Serdes::string()))
//!     .map_values(|_k: &String, v: String| v.len() as i64)
//!     .to("lengths", Produced::with(Serdes::string(), Serdes::i64()));
//! let config = RuntimeConfig::new("doc-app", Backend::InMemory).with_lanes(1);
//! let mut app = StreamsApp::new(builder.build()?, config)?;
//! app.log().create_topic(&TopicSpec::new("words", 1))?;
//! app.log().create_topic(&TopicSpec::new("lengths", 1))?;
//! app.start()?;
//! assert!(app.close(Duration::from_secs(10)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod app;
mod app_state;
mod config;
mod discovery;
mod engine;
mod error;
mod host_info;
mod observe;
mod query;
mod signals;
mod task_id;

pub use app::{AppHandle, RUN_CLOSE_TIMEOUT, StreamsApp};
pub use app_state::AppState;
pub use config::cadence::BarrierCadence;
pub use config::layout::WATERMARK_MARKER_HEADER;
pub use config::{
    Backend, CommitBarrierConfig, ProcessingGuarantee, RuntimeConfig,
    WINDOWSTORE_CHANGELOG_ADDITIONAL_RETENTION,
};
pub use discovery::{InstanceInfo, KeyQueryMetadata, MetadataError};
pub use engine::error_response::{HandlerOutcome, StreamThreadExceptionResponse};
pub use engine::partitioner::{murmur2, partition_for_key};
pub use engine::{Assignment, ErrorHandler, StateListener};
pub use error::RuntimeError;
pub use host_info::HostInfo;
pub use observe::metrics::{
    BARRIER_BUCKETS_MS, BarrierFigures, DurationHistogram, MetricsSnapshot, RestoreFigures,
    StoreSegments, UpkeepFigures,
};
pub use observe::summary::RunSummary;
pub use observe::timeline::{BarrierTiming, ResultLatency, Timeline};
pub use query::{
    ChangelogLag, DEFAULT_LIMIT, DEFAULT_QUERY_TIMEOUT, Finality, KeyQuery, QueryAnswer,
    QueryError, RangeAnswer, RangeQuery, ReadMode, SessionQuery, SourcePosition, StaleRead,
    StaleSource, StateQueryRequest, StoreQuery, TaskClock, WindowEntry, WindowQuery,
};
pub use signals::stop_on_signals;
pub use task_id::TaskId;
