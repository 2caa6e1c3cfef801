//! What the runtime shows about itself: the plain numbers of `/metrics`
//! ([`metrics`]), the timing of barriers and window closes ([`timeline`]),
//! and the end-of-run summary ([`summary`]).
//! Read by the app handle and the engine; knows no thread, log or server.

pub(crate) mod metrics;
pub(crate) mod summary;
pub(crate) mod timeline;
