//! [`Finality`]: how final one window of an answer is, from the task's clocks
//! at the moment the answer was read ([`TaskClock`]) and the store's
//! [`WindowShape`] (docs/queries.md#finality).
//!
//! Pure arithmetic: knows no store, no lane and no thread.

use stoatflow_streams::WindowShape;
use stoatflow_time::Watermark;

/// The clocks of the task an answer was read from, at that moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskClock {
    /// The watermark: a committed answer's barrier stamp, a latest answer's
    /// last watermark event.
    pub watermark: Watermark,
    /// The floor the read state's records were judged against: every
    /// window closing at or before it can never change again (the late
    /// rule drops whatever record comes for it).
    pub floor: Watermark,
}

impl TaskClock {
    /// The clocks of a copy that may be behind (a standby, a task
    /// restoring): it judged no record, so it knows no floor, and no window
    /// of it is final.
    pub const UNKNOWN: TaskClock = TaskClock {
        watermark: Watermark::MIN,
        floor: Watermark::MIN,
    };
}

/// How final a window of an answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finality {
    /// Its close is at or before the floor: no record can change it any
    /// more. An on-window-close result for it is emitted by the emission
    /// pass on that floor, at the next barrier at the latest.
    Final,
    /// It can still change.
    Open {
        /// Its close minus the watermark, ms: how far event time still has
        /// to go before it closes (zero or less: the watermark is past its
        /// close and the next barriers make it final).
        watermark_to_close_ms: i64,
    },
    /// Its retention has passed: the store drops it at its next expiry and
    /// answers nothing for it after that.
    Expired,
}

impl Finality {
    /// The finality of the window `[start, end]` of a store of `shape`
    /// (for a session, `start` and `end` are the session's), read at `clock`.
    pub fn of(shape: &WindowShape, start: i64, end: i64, clock: TaskClock) -> Finality {
        let floor = clock.floor.as_millis();
        // The store's expiry rule (docs/state.md#expiry) on the floor, which
        // the frontier the store expires by reaches one barrier later: the
        // entry's time (a window's start, a session's end) plus the
        // retention strictly below it.
        let time = if shape.size_ms.is_some() { start } else { end };
        if time.saturating_add(shape.retention_ms) < floor {
            return Finality::Expired;
        }
        let close = shape.close_of(end);
        if close <= floor && clock.floor != Watermark::MIN {
            return Finality::Final;
        }
        Finality::Open {
            watermark_to_close_ms: close.saturating_sub(clock.watermark.as_millis()),
        }
    }

    /// Its name in JSON and the CLI: `final`, `open` or `expired`.
    pub fn name(&self) -> &'static str {
        match self {
            Finality::Final => "final",
            Finality::Open { .. } => "open",
            Finality::Expired => "expired",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tumbling(size: i64, grace: i64) -> WindowShape {
        WindowShape {
            size_ms: Some(size),
            close_offset_ms: grace,
            retention_ms: size + grace,
        }
    }

    fn at(watermark: i64, floor: i64) -> TaskClock {
        TaskClock {
            watermark: Watermark::from_millis(watermark),
            floor: Watermark::from_millis(floor),
        }
    }

    #[test]
    fn a_window_is_final_once_the_floor_reaches_its_close() {
        let shape = tumbling(10, 2);
        // [0, 10) closes at 12.
        assert_eq!(
            Finality::of(&shape, 0, 10, at(30, 11)),
            Finality::Open {
                watermark_to_close_ms: -18
            }
        );
        assert_eq!(Finality::of(&shape, 0, 10, at(30, 12)), Finality::Final);
        assert_eq!(
            Finality::of(&shape, 10, 20, at(15, 12)),
            Finality::Open {
                watermark_to_close_ms: 7
            }
        );
    }

    #[test]
    fn a_window_past_its_retention_is_expired() {
        let shape = tumbling(10, 2);
        // Start 0 + retention 12 < 13.
        assert_eq!(Finality::of(&shape, 0, 10, at(30, 12)), Finality::Final);
        assert_eq!(Finality::of(&shape, 0, 10, at(30, 13)), Finality::Expired);
    }

    #[test]
    fn a_session_closes_and_expires_by_its_end() {
        // Gap 5, no grace, kept 50 ms past its end.
        let shape = WindowShape {
            size_ms: None,
            close_offset_ms: 5 + 1,
            retention_ms: 50,
        };
        // The session [0, 100] closes at 106.
        assert_eq!(Finality::of(&shape, 0, 100, at(200, 106)), Finality::Final);
        assert_eq!(
            Finality::of(&shape, 0, 100, at(104, 105)),
            Finality::Open {
                watermark_to_close_ms: 2
            }
        );
        assert_eq!(Finality::of(&shape, 0, 100, at(200, 150)).name(), "final");
        // End 100 + retention 50 < 151, whatever its start.
        assert_eq!(
            Finality::of(&shape, 0, 100, at(200, 151)),
            Finality::Expired
        );
        assert_eq!(
            Finality::of(&shape, 99, 100, at(200, 151)).name(),
            "expired"
        );
    }

    #[test]
    fn nothing_is_final_before_the_first_barrier() {
        let shape = tumbling(10, 0);
        let clock = TaskClock {
            watermark: Watermark::MIN,
            floor: Watermark::MIN,
        };
        assert!(matches!(
            Finality::of(&shape, i64::MIN, i64::MIN + 10, clock),
            Finality::Open { .. }
        ));
    }
}
