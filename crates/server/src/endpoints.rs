//! [`Endpoints`]: what the server reads from the application. A leaf: the
//! HTTP layer and the metrics registry both read through it; it knows neither.
//! The runtime's `AppHandle` implements it here.

use stoatflow_runtime::MetricsSnapshot;
use stoatflow_time::WatermarksSnapshot;

/// What the server reads from the application.
pub trait Endpoints: Send + Sync + 'static {
    /// The tracker's snapshot, or `None` before the engine is initialised.
    fn watermarks(&self) -> Option<WatermarksSnapshot>;
    /// The client state's name and code (`RUNNING` is 4).
    fn client_state(&self) -> (&'static str, u8);
    /// The application id.
    fn application_id(&self) -> String;
    /// The figures of `/metrics`; `None` exports the client state alone.
    fn metrics(&self) -> Option<MetricsSnapshot> {
        None
    }
    /// The tasks the instance runs and those it keeps standby copies of
    /// (Kafka Streams' `0_3` form); `None` leaves them out of `/info`.
    fn tasks(&self) -> Option<(Vec<String>, Vec<String>)> {
        None
    }
}

impl Endpoints for stoatflow_runtime::AppHandle {
    fn watermarks(&self) -> Option<WatermarksSnapshot> {
        stoatflow_runtime::AppHandle::watermarks(self)
    }
    fn client_state(&self) -> (&'static str, u8) {
        let s = self.state();
        (s.name(), s.code())
    }
    fn application_id(&self) -> String {
        stoatflow_runtime::AppHandle::application_id(self).to_owned()
    }
    fn metrics(&self) -> Option<MetricsSnapshot> {
        Some(stoatflow_runtime::AppHandle::metrics(self))
    }
    fn tasks(&self) -> Option<(Vec<String>, Vec<String>)> {
        let a = self.assignment();
        let names = |ts: &[stoatflow_runtime::TaskId]| ts.iter().map(ToString::to_string).collect();
        Some((names(&a.active), names(&a.standby)))
    }
}
