//! # stoatflow-server
//!
//! The operating surface (docs/operating.md#endpoints): what
//! `GET /watermarks`, `/info`, `/metrics` and the health probes answer, the
//! live watermark page at `/`, and the listener that serves them. This crate
//! alone knows JSON, HTTP and the Prometheus exposition; it renders the read
//! models other crates produce and never computes a watermark or a figure
//! itself.
//!
//! A short tour:
//! - [`HttpServer`] (built with [`HttpServer::builder`]): the listener;
//!   loopback only unless allowed explicitly. [`HttpServerBuilder::bind`]
//!   binds without serving ([`BoundListener`]), so an application learns
//!   that its address is taken before it creates anything.
//! - [`Endpoints`]: what it reads from an application (the runtime's
//!   `AppHandle` implements it).
//! - [`LogAccess`]: the application's log as the log routes
//!   (`/log/topics`, `/log/records`) read and append to it.
//! - [`MetricsRegistry`] and [`Metric`]: the Prometheus registry and its
//!   catalogue, at a [`RecordingLevel`].
//! - [`watermarks_response`], [`info_json`]: the JSON of
//!   docs/operating.md#watermarks-endpoint.
//!
//! ```
//! use stoatflow_server::watermarks_response;
//! use stoatflow_time::{TrackerConfig, WatermarkTracker};
//!
//! let tracker = WatermarkTracker::new(TrackerConfig::default());
//! let (status, _body) = watermarks_response(&tracker.snapshot(), true);
//! assert_eq!(status, 503); // nothing registered, nothing emitted
//! ```

mod cache;
mod connection;
mod endpoints;
#[cfg(test)]
mod fuzz;
mod head;
mod history;
mod http;
mod log_access;
mod log_routes;
mod metrics;
mod priority;
mod response;
mod routing;
mod shedding;
mod store_access;
mod store_routes;
mod watermarks;

pub use connection::MAX_BODY;
pub use endpoints::Endpoints;
pub use history::WatermarkHistory;
pub use http::{
    BoundListener, EndpointsConfig, HttpServer, HttpServerBuilder, OPENAPI, ServerError,
};
pub use log_access::{
    LogAccess, LogAccessError, NewRecord, PartitionOffsets, ReadBatch, StoredRecord, TopicInfo,
};
pub use log_routes::{MAX_APPEND_RECORDS, MAX_READ_RECORDS, put_bytes};
pub use metrics::{
    BadRecordingLevel, METRICS_CONTENT_TYPE, Metric, MetricKind, MetricsRegistry, RecordingLevel,
};
pub use priority::LISTENER_NICE;
pub use store_access::{
    KeyHolder, KeyMetadata, StaleChangelog, StaleCopy, StoreAccess, StoreAccessError, StoreAnswer,
    StoreEntry, StoreInfo, StoreRead, StoreRequest, WindowFinality,
};
pub use store_routes::MAX_STORE_ENTRIES;
pub use watermarks::{info_json, watermarks_json, watermarks_response};
