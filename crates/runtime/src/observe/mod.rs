//! What the runtime shows about itself: the plain numbers of `/metrics`
//! ([`metrics`]) and the timing of barriers and window closes ([`timeline`]).
//! Read by the app handle and the engine; knows no thread, log or server.

pub(crate) mod metrics;
pub(crate) mod timeline;
