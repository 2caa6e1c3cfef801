//! A log that loses power at a chosen durable operation: a wrapper over the
//! in-memory embedded log counting every operation that changes durable
//! state — creating a topic, taking a producer epoch, committing or aborting
//! a transaction (sends and offsets are buffered in the producer until the
//! commit, so a crash between them is a crash before the commit). At
//! operation k the power goes, before or after it: that operation and every
//! later call fail. It knows nothing of topologies or of what is checked.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use stoatflow_log::{ErrorKind, LogError};

use crate::hooked_log::{Durable, HookedLog, Hooks};

/// When the power goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// Operation k does not happen.
    Before,
    /// Operation k happens; the process dies before it learns so.
    After,
}

#[derive(Debug, Default)]
pub(crate) struct Power {
    pub(crate) ops: AtomicU64,
    pub(crate) cut: Option<(u64, Cut)>,
    pub(crate) dead: AtomicBool,
}

fn lost() -> LogError {
    LogError::Broker {
        op: "anything".into(),
        message: "power lost (injected)".into(),
        kind: ErrorKind::Fatal,
    }
}

impl Power {
    /// Whether the power has gone.
    pub(crate) fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }
}

impl Hooks for Power {
    fn alive(&self) -> Result<(), LogError> {
        if self.dead.load(Ordering::Acquire) {
            Err(lost())
        } else {
            Ok(())
        }
    }

    /// A durable operation: counted, and the power may go around it.
    fn durable<T>(
        &self,
        _: Durable,
        op: impl FnOnce() -> Result<T, LogError>,
    ) -> Result<T, LogError> {
        self.alive()?;
        let k = self.ops.fetch_add(1, Ordering::AcqRel) + 1;
        match self.cut {
            Some((at, cut)) if at == k => {
                self.dead.store(true, Ordering::Release);
                if cut == Cut::After {
                    let _ = op();
                }
                Err(lost())
            }
            _ => op(),
        }
    }
}

/// The in-memory embedded log behind a [`Power`].
pub(crate) type FaultyLog = HookedLog<Power>;
