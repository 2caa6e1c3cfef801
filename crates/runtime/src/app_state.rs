//! [`AppState`]: the application's lifecycle, as Kafka Streams' `State`.
//!
//! Owns the states, their numeric codes (the `stoatflow_client_state`
//! metric) and which transitions are legal. Knows nothing of threads.

use std::fmt;

/// Where an application is in its life. The transitions are Kafka Streams':
/// `CREATED → REBALANCING → RUNNING`, any live state `→ PENDING_SHUTDOWN →
/// NOT_RUNNING`, and on a fatal error `→ PENDING_ERROR → ERROR` (also from
/// PENDING_SHUTDOWN: a final barrier that fails to commit is an error, not
/// a clean stop).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AppState {
    /// Built, not started.
    Created,
    /// Restoring state and seeding clocks (Kafka Streams names partition
    /// assignment and restore this way).
    Rebalancing,
    /// Processing.
    Running,
    /// `close()` called: the final flush barrier is on its way.
    PendingShutdown,
    /// Stopped cleanly.
    NotRunning,
    /// A fatal error: stopping without committing anything more.
    PendingError,
    /// Stopped by a fatal error.
    Error,
}

impl AppState {
    /// The numeric code exported as `stoatflow_client_state`: Kafka Streams'
    /// order, numbered so that `RUNNING` is 4 as the alerts expect
    /// (docs/operating.md#alerts).
    pub fn code(self) -> u8 {
        match self {
            AppState::Created => 2,
            AppState::Rebalancing => 3,
            AppState::Running => 4,
            AppState::PendingShutdown => 5,
            AppState::NotRunning => 6,
            AppState::PendingError => 7,
            AppState::Error => 8,
        }
    }

    /// The state for a code of [`AppState::code`].
    pub fn from_code(code: u8) -> Option<AppState> {
        Some(match code {
            2 => AppState::Created,
            3 => AppState::Rebalancing,
            4 => AppState::Running,
            5 => AppState::PendingShutdown,
            6 => AppState::NotRunning,
            7 => AppState::PendingError,
            8 => AppState::Error,
            _ => return None,
        })
    }

    /// Whether the application may move from `self` to `to`.
    pub fn can_become(self, to: AppState) -> bool {
        use AppState::*;
        matches!(
            (self, to),
            (Created, Rebalancing | PendingShutdown | PendingError)
                | (Rebalancing, Running | PendingShutdown | PendingError)
                | (Running, Rebalancing | PendingShutdown | PendingError)
                | (PendingShutdown, NotRunning | PendingError)
                | (PendingError, Error)
        )
    }

    /// Whether threads may still be running (neither stopped nor failed).
    pub fn is_alive(self) -> bool {
        matches!(
            self,
            AppState::Rebalancing | AppState::Running | AppState::PendingShutdown
        )
    }

    /// Whether the application has stopped or is stopping on an error.
    pub fn has_stopped(self) -> bool {
        matches!(
            self,
            AppState::NotRunning | AppState::PendingError | AppState::Error
        )
    }

    /// Kafka Streams' name.
    pub fn name(self) -> &'static str {
        match self {
            AppState::Created => "CREATED",
            AppState::Rebalancing => "REBALANCING",
            AppState::Running => "RUNNING",
            AppState::PendingShutdown => "PENDING_SHUTDOWN",
            AppState::NotRunning => "NOT_RUNNING",
            AppState::PendingError => "PENDING_ERROR",
            AppState::Error => "ERROR",
        }
    }
}

impl fmt::Display for AppState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::AppState::{self, *};

    const ALL: [AppState; 7] = [
        Created,
        Rebalancing,
        Running,
        PendingShutdown,
        NotRunning,
        PendingError,
        Error,
    ];

    #[test]
    fn running_is_four_and_codes_round_trip() {
        assert_eq!(Running.code(), 4);
        for s in ALL {
            assert_eq!(AppState::from_code(s.code()), Some(s));
        }
        assert_eq!(AppState::from_code(0), None);
    }

    #[test]
    fn lifecycle_transitions_are_kafka_streams() {
        assert!(Created.can_become(Rebalancing));
        assert!(Rebalancing.can_become(Running));
        assert!(Running.can_become(PendingShutdown));
        assert!(PendingShutdown.can_become(NotRunning));
        assert!(Running.can_become(PendingError));
        assert!(PendingError.can_become(Error));
        assert!(!Created.can_become(Running));
        assert!(!NotRunning.can_become(Running));
        // ERROR is terminal, as in Kafka Streams: a close after it changes
        // nothing.
        for to in (0..=u8::MAX).filter_map(AppState::from_code) {
            assert!(!Error.can_become(to), "ERROR -> {to:?}");
        }
        assert!(!Error.can_become(Running));
        assert!(!PendingShutdown.can_become(Running));
    }
}
