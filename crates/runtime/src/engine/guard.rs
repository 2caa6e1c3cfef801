//! Panic guards around user code the runtime calls outside a task's
//! processing: the state listener, the uncaught-error handler, and on the
//! poll thread the timestamp assigners (with the deserializers they read
//! with) and the watermark generators.
//!
//! A panic there must not kill the thread that runs it (the poll thread
//! dying left the application RUNNING with nothing running) nor poison a
//! lock: it becomes [`RuntimeError::CallbackPanicked`] naming the callback,
//! which stops the engine like any error (then the uncaught-error handler
//! decides, by default ERROR). Owns the guard and the reading of a panic's
//! message; knows nothing of what the callbacks do.

use std::panic::{self, AssertUnwindSafe};

use crate::error::RuntimeError;

/// The state listener, as errors name it.
pub(crate) const STATE_LISTENER: &str = "the state listener";
/// The uncaught-error handler, as errors name it.
pub(crate) const ERROR_HANDLER: &str = "the uncaught-error handler";
/// The watermark generators, as errors name them.
pub(crate) const WATERMARK_GENERATOR: &str = "a watermark generator";

/// A panic caught by [`guarded`]: what it said.
#[derive(Debug)]
pub(crate) struct Panicked(pub(crate) String);

impl Panicked {
    /// The error of this panic in `callback`.
    pub(crate) fn naming(self, callback: impl Into<String>) -> RuntimeError {
        RuntimeError::CallbackPanicked {
            callback: callback.into(),
            message: self.0,
        }
    }
}

/// Runs `f`, catching a panic in it.
///
/// Unwind safety: after a panic, nothing `f` touched is used again by the
/// engine that called it (the error stops that engine), so state it left
/// half-changed is never observed.
pub(crate) fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, Panicked> {
    panic::catch_unwind(AssertUnwindSafe(f)).map_err(|payload| Panicked(panic_message(&*payload)))
}

/// What a panic said, when it said it with a string.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_naming_the_callback_and_its_message() {
        assert_eq!(guarded(|| 7).unwrap(), 7);
        let e = guarded(|| panic!("no {}", 42))
            .unwrap_err()
            .naming(STATE_LISTENER);
        assert_eq!(e.to_string(), "the state listener panicked: no 42");
        let e = guarded(|| std::panic::panic_any(3u8))
            .unwrap_err()
            .naming("x");
        assert_eq!(e.to_string(), "x panicked: a panic without a message");
    }
}
