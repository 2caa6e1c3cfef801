//! # stoatflow-server
//!
//! The operating surface: what `GET /watermarks` and `GET /info` answer
//! (DESIGN 3.9, part 4 "Reading /watermarks"). This crate alone knows JSON
//! and HTTP status codes; it renders the read models other crates produce and
//! never computes a watermark itself.
//!
//! ```
//! use stoatflow_server::watermarks_response;
//! use stoatflow_time::{TrackerConfig, WatermarkTracker};
//!
//! let tracker = WatermarkTracker::new(TrackerConfig::default());
//! let (status, _body) = watermarks_response(&tracker.snapshot(), true);
//! assert_eq!(status, 503); // nothing registered, nothing emitted
//! ```

mod http;
mod watermarks;

pub use http::{Endpoints, EndpointsConfig, HttpServer, ServerError};
pub use watermarks::{info_json, watermarks_json, watermarks_response};
