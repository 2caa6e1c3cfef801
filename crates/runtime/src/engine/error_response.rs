//! What happens after an error stops the engine: Kafka Streams'
//! `StreamThreadExceptionResponse`. The uncaught-error handler decides
//! ([`StreamThreadExceptionResponse::ReplaceThread`]: a fresh engine in the
//! same process resumes from the last commit; [`ShutdownClient`]: the
//! application stops in ERROR); a handler that returns nothing leaves the
//! default, which replaces the engine after an error the log says a new
//! transaction may not meet again (an aborted or retriable commit) and shuts
//! down otherwise. A fenced producer always shuts down: another instance took
//! over its transactional id, and replacing the engine would fence that one.
//!
//! Owns the response, the default rule and the backoff between replacements;
//! knows nothing of how an engine is built.
//!
//! [`ShutdownClient`]: StreamThreadExceptionResponse::ShutdownClient

use std::time::Duration;

use stoatflow_log::{ErrorKind, LogError};

use crate::engine::backoff::Backoff;
use crate::error::RuntimeError;

/// What the application does after an error stopped its engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamThreadExceptionResponse {
    /// Build a fresh engine in this process and resume from the last commit:
    /// the open epoch is aborted, stores are rebuilt from their changelogs
    /// (or their verified local copies), floors and frontiers are seeded from
    /// the watermark store (Kafka Streams' `REPLACE_THREAD`).
    ReplaceThread,
    /// Stop the application in ERROR (Kafka Streams' `SHUTDOWN_CLIENT`).
    ShutdownClient,
}

/// What an uncaught-error handler returns: a response, or `()` for the
/// default one.
pub trait HandlerOutcome {
    /// The response chosen, `None` for the default.
    fn response(self) -> Option<StreamThreadExceptionResponse>;
}

impl HandlerOutcome for () {
    fn response(self) -> Option<StreamThreadExceptionResponse> {
        None
    }
}

impl HandlerOutcome for StreamThreadExceptionResponse {
    fn response(self) -> Option<StreamThreadExceptionResponse> {
        Some(self)
    }
}

/// The response when the handler gives none: replace the engine after an
/// aborted or retriable log error, shut down after anything else.
pub(crate) fn default_response(error: &RuntimeError) -> StreamThreadExceptionResponse {
    match error {
        RuntimeError::Log(e) if e.kind() != ErrorKind::Fatal => {
            StreamThreadExceptionResponse::ReplaceThread
        }
        _ => StreamThreadExceptionResponse::ShutdownClient,
    }
}

/// A fenced producer's error, made plain: it is never replaced.
pub(crate) fn fenced(error: &RuntimeError) -> Option<RuntimeError> {
    match error {
        RuntimeError::Log(LogError::Fenced {
            transactional_id,
            epoch,
        }) => Some(RuntimeError::Fenced {
            transactional_id: transactional_id.clone(),
            epoch: *epoch,
        }),
        _ => None,
    }
}

/// The wait before each replacement in a row: 100 ms, doubling, at most
/// 5 s, jittered, so an error that comes back at once does not spin.
pub(crate) const REPLACEMENT_BACKOFF: Backoff =
    Backoff::new(Duration::from_millis(100), Duration::from_secs(5));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aborted_and_retriable_log_errors_replace_the_engine_by_default_and_nothing_else() {
        let broker = |kind| {
            RuntimeError::Log(LogError::Broker {
                op: "commit".into(),
                message: "x".into(),
                kind,
            })
        };
        use StreamThreadExceptionResponse::*;
        assert_eq!(
            default_response(&broker(ErrorKind::AbortTransaction)),
            ReplaceThread
        );
        assert_eq!(
            default_response(&broker(ErrorKind::Retriable)),
            ReplaceThread
        );
        assert_eq!(default_response(&broker(ErrorKind::Fatal)), ShutdownClient);
        let fenced_error = RuntimeError::Log(LogError::Fenced {
            transactional_id: "app-0".into(),
            epoch: 3,
        });
        assert_eq!(default_response(&fenced_error), ShutdownClient);
        let plain = fenced(&fenced_error).unwrap().to_string();
        assert!(
            plain.contains("app-0") && plain.contains("fenced"),
            "{plain}"
        );
        assert_eq!(
            default_response(&RuntimeError::Stopped { reason: "x".into() }),
            ShutdownClient
        );
    }

    #[test]
    fn the_backoff_doubles_up_to_five_seconds() {
        assert_eq!(REPLACEMENT_BACKOFF.ceiling(1), Duration::from_millis(100));
        assert_eq!(REPLACEMENT_BACKOFF.ceiling(2), Duration::from_millis(200));
        assert_eq!(REPLACEMENT_BACKOFF.ceiling(30), Duration::from_secs(5));
    }
}
