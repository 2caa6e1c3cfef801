//! The process's stop signals: SIGINT and SIGTERM, set up once for every
//! command that runs until one (`StreamsApp::run`, the command line's
//! `stoatflow run`).
//!
//! Owns the signal registration only; it knows nothing of what stops.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use signal_hook::consts::{SIGINT, SIGTERM};

use crate::error::RuntimeError;

/// Registers SIGINT and SIGTERM: the flag returned turns true at the first
/// of them; a second while it is set (during the close that the first
/// began) exits the process at once, with status 1.
///
/// # Errors
/// [`RuntimeError::ThreadDied`] naming the signal handler when a signal
/// cannot be registered.
pub fn stop_on_signals() -> Result<Arc<AtomicBool>, RuntimeError> {
    let signalled = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM] {
        // The conditional exit first: it sees the flag the first signal set.
        let registered =
            signal_hook::flag::register_conditional_shutdown(signal, 1, signalled.clone())
                .and_then(|_| signal_hook::flag::register(signal, signalled.clone()));
        registered.map_err(|e| RuntimeError::ThreadDied {
            thread: "signal handler".into(),
            reason: format!("registering signal {signal}: {e}"),
        })?;
    }
    Ok(signalled)
}
