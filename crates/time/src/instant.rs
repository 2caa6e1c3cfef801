//! Points in time: [`EventTime`] (what a record says happened) and
//! [`WallTime`] (what the machine's clock says now).
//!
//! The two are different newtypes on purpose and never convert silently: event
//! time drives windows and watermarks, wall-clock time drives idleness,
//! punctuators and throttling. Spans are [`std::time::Duration`].
//!
//! This module owns validation of raw millisecond values; it knows nothing of
//! watermarks, partitions or clocks.

use std::fmt;
use std::time::Duration;

use crate::iso::format_iso8601_millis;

/// The largest event time accepted: 9999-12-31T23:59:59.999Z.
///
/// Anything above is treated as a unit mistake (micro- or nanoseconds passed
/// as milliseconds), not as a date.
pub const MAX_EVENT_TIME_MS: i64 = 253_402_300_799_999;

/// Why a raw millisecond value is not a valid event time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimeError {
    /// Kafka uses -1 for "no timestamp"; any negative value is refused.
    #[error("negative event time {ms} ms: event time must be milliseconds since the epoch, >= 0")]
    Negative {
        /// The offending value.
        ms: i64,
    },
    /// Beyond year 9999: almost always micro- or nanoseconds given as milliseconds.
    #[error(
        "absurd event time {ms} ms (after year 9999): is the timestamp in micro- or nanoseconds?"
    )]
    Absurd {
        /// The offending value.
        ms: i64,
    },
}

/// Event time: milliseconds since the Unix epoch, as carried by a record.
///
/// Always within `0..=MAX_EVENT_TIME_MS`; construct with [`EventTime::new`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EventTime(i64);

impl EventTime {
    /// The epoch itself, the smallest valid event time.
    pub const ZERO: EventTime = EventTime(0);
    /// The largest valid event time.
    pub const MAX: EventTime = EventTime(MAX_EVENT_TIME_MS);

    /// Validates a raw millisecond value.
    pub fn new(ms: i64) -> Result<Self, TimeError> {
        if ms < 0 {
            Err(TimeError::Negative { ms })
        } else if ms > MAX_EVENT_TIME_MS {
            Err(TimeError::Absurd { ms })
        } else {
            Ok(EventTime(ms))
        }
    }

    /// Milliseconds since the epoch.
    #[inline]
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// ISO-8601 rendering with millisecond precision when needed, e.g. `2026-09-22T10:06:00Z`.
    pub fn to_iso8601(self) -> String {
        format_iso8601_millis(self.0)
    }

    /// `self - span`, clamped at the epoch.
    #[inline]
    pub fn saturating_sub(self, span: Duration) -> EventTime {
        EventTime((self.0 - duration_ms(span)).max(0))
    }

    /// `self + span`, clamped at [`EventTime::MAX`].
    #[inline]
    pub fn saturating_add(self, span: Duration) -> EventTime {
        EventTime(
            self.0
                .saturating_add(duration_ms(span))
                .min(MAX_EVENT_TIME_MS),
        )
    }
}

impl fmt::Debug for EventTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EventTime({})", self.0)
    }
}

impl fmt::Display for EventTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}

impl TryFrom<i64> for EventTime {
    type Error = TimeError;
    fn try_from(ms: i64) -> Result<Self, TimeError> {
        EventTime::new(ms)
    }
}

/// Wall-clock time: milliseconds since the Unix epoch, as read from a [`crate::Clock`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct WallTime(i64);

impl WallTime {
    /// The epoch.
    pub const EPOCH: WallTime = WallTime(0);

    /// Wraps a millisecond reading.
    #[inline]
    pub const fn from_millis(ms: i64) -> Self {
        WallTime(ms)
    }

    /// Milliseconds since the epoch.
    #[inline]
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// Time elapsed since `earlier`; zero if `earlier` is in the future.
    #[inline]
    pub fn since(self, earlier: WallTime) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0).max(0) as u64)
    }

    /// `self + span`, saturating.
    #[inline]
    pub fn saturating_add(self, span: Duration) -> WallTime {
        WallTime(self.0.saturating_add(duration_ms(span)))
    }

    /// ISO-8601 rendering.
    pub fn to_iso8601(self) -> String {
        format_iso8601_millis(self.0)
    }
}

impl fmt::Debug for WallTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WallTime({})", self.0)
    }
}

/// A span in whole milliseconds, saturating at `i64::MAX`.
#[inline]
pub fn duration_ms(span: Duration) -> i64 {
    i64::try_from(span.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_time_refuses_negative_values_naming_them() {
        let err = EventTime::new(-1).unwrap_err();
        assert_eq!(err, TimeError::Negative { ms: -1 });
        assert!(err.to_string().contains("-1"));
    }

    #[test]
    fn event_time_refuses_microseconds_passed_as_millis() {
        let micros = 1_790_071_560_000_000;
        let err = EventTime::new(micros).unwrap_err();
        assert!(matches!(err, TimeError::Absurd { ms } if ms == micros));
        assert!(err.to_string().contains("micro"));
    }

    #[test]
    fn event_time_accepts_its_bounds() {
        assert_eq!(EventTime::new(0).unwrap(), EventTime::ZERO);
        assert_eq!(EventTime::new(MAX_EVENT_TIME_MS).unwrap(), EventTime::MAX);
    }

    #[test]
    fn event_time_arithmetic_saturates_at_its_bounds() {
        let t = EventTime::new(5).unwrap();
        assert_eq!(t.saturating_sub(Duration::from_millis(10)), EventTime::ZERO);
        assert_eq!(
            EventTime::MAX.saturating_add(Duration::from_secs(1)),
            EventTime::MAX
        );
    }

    #[test]
    fn wall_time_since_is_never_negative() {
        let a = WallTime::from_millis(1_000);
        let b = WallTime::from_millis(400);
        assert_eq!(a.since(b), Duration::from_millis(600));
        assert_eq!(b.since(a), Duration::ZERO);
    }
}
