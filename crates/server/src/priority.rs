//! The listener yields to the engine: its thread runs at a lower scheduling
//! priority ([`LISTENER_NICE`] above the process's), so when requests and
//! the engine's threads compete for a core (a request flood on a small
//! machine) the scheduler runs the engine first and the operating surface
//! takes what is left. Owns only that one setting; knows nothing of HTTP.

/// How much lower than the process the listener thread runs (Linux nice
/// steps: each is about 10% less CPU share under contention).
pub const LISTENER_NICE: i32 = 10;

/// Lowers the calling thread's priority by `steps` (the listener's
/// default is [`LISTENER_NICE`]). Where the system refuses (or has no
/// per-thread priority), the thread keeps its priority and a warning says
/// so: serving matters more than yielding.
pub(crate) fn yield_to_engine(steps: i32) {
    #[cfg(target_os = "linux")]
    if steps > 0 {
        let tid = rustix::thread::gettid();
        let lowered = rustix::process::getpriority_process(Some(tid))
            .and_then(|now| rustix::process::setpriority_process(Some(tid), now + steps));
        if let Err(e) = lowered {
            tracing::warn!(error = %e, "the endpoints' thread keeps the engine's priority");
        }
    }
}
