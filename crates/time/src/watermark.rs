//! The [`Watermark`]: a monotonic claim that no later record has an event time below it.
//!
//! Owns the value and its comparisons against event times and window closes.
//! It knows nothing of partitions, strategies or who publishes it.

use std::fmt;

use crate::EventTime;

/// A watermark in event-time milliseconds, or [`Watermark::MIN`] ("none yet").
///
/// A watermark may be below zero (a bounded-out-of-orderness generator that
/// has only seen small timestamps); it is a claim, not an event time.
/// `Watermark::MIN` is the explicit "no watermark yet" state: every event time
/// is at or above it, so nothing is late and nothing is closed.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Watermark(i64);

impl Watermark {
    /// No watermark yet (`i64::MIN`).
    pub const MIN: Watermark = Watermark(i64::MIN);
    /// The end of time: everything is closed. Used for final flushes.
    pub const MAX: Watermark = Watermark(i64::MAX);

    /// A watermark at `ms` event-time milliseconds (`i64::MIN` means none yet).
    #[inline]
    pub const fn from_millis(ms: i64) -> Self {
        Watermark(ms)
    }

    /// A watermark exactly at an event time.
    #[inline]
    pub const fn at(t: EventTime) -> Self {
        Watermark(t.as_millis())
    }

    /// Raw milliseconds (`i64::MIN` when none yet).
    #[inline]
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// True before the first watermark was produced.
    #[inline]
    pub const fn is_none_yet(self) -> bool {
        self.0 == i64::MIN
    }

    /// Raises `self` to `to` if `to` is larger; returns whether it moved.
    /// A watermark never goes backwards.
    #[inline]
    pub fn advance_to(&mut self, to: Watermark) -> bool {
        if to.0 > self.0 {
            self.0 = to.0;
            true
        } else {
            false
        }
    }

    /// Timely-style partial order: `self <= other`.
    #[inline]
    pub const fn less_equal(self, other: Watermark) -> bool {
        self.0 <= other.0
    }

    /// A record stamped `t` is late against this watermark when `t` is below it.
    #[inline]
    pub const fn is_late(self, t: EventTime) -> bool {
        t.as_millis() < self.0
    }

    /// Whether a window (or session, or join null side) whose close is at
    /// `close_ms` is closed: the close is at or before the watermark
    /// (the inclusive boundary of docs/late.md#late-rule).
    #[inline]
    pub const fn has_closed(self, close_ms: i64) -> bool {
        close_ms <= self.0
    }

    /// ISO-8601 rendering, or `"N/A"` when none yet.
    pub fn to_iso8601(self) -> String {
        if self.is_none_yet() {
            "N/A".to_owned()
        } else {
            crate::iso::format_iso8601_millis(self.0)
        }
    }
}

impl Default for Watermark {
    fn default() -> Self {
        Watermark::MIN
    }
}

impl fmt::Debug for Watermark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none_yet() {
            f.write_str("Watermark(MIN)")
        } else {
            write!(f, "Watermark({})", self.0)
        }
    }
}

impl fmt::Display for Watermark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none_yet() {
            f.write_str("none yet")
        } else {
            write!(f, "{}ms", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn et(ms: i64) -> EventTime {
        EventTime::new(ms).unwrap()
    }

    #[test]
    fn starts_at_none_yet_where_nothing_is_late_or_closed() {
        let w = Watermark::default();
        assert!(w.is_none_yet());
        assert!(!w.is_late(EventTime::ZERO));
        assert!(!w.has_closed(0));
        assert_eq!(w.to_iso8601(), "N/A");
    }

    #[test]
    fn advance_to_only_moves_forward() {
        let mut w = Watermark::MIN;
        assert!(w.advance_to(Watermark::from_millis(10)));
        assert!(!w.advance_to(Watermark::from_millis(5)));
        assert!(!w.advance_to(Watermark::from_millis(10)));
        assert_eq!(w, Watermark::from_millis(10));
    }

    #[test]
    fn late_is_strictly_below_and_close_is_inclusive() {
        let w = Watermark::from_millis(100);
        assert!(w.is_late(et(99)));
        assert!(!w.is_late(et(100)));
        assert!(
            w.has_closed(100),
            "a close equal to the watermark is closed"
        );
        assert!(!w.has_closed(101));
    }
}
