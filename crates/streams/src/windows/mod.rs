//! Window definitions: [`TimeWindows`] (tumbling and hopping, in `time`),
//! [`SlidingWindows`] and [`SessionWindows`], and the [`EmitStrategy`] of a
//! windowed aggregation. Each says which windows a record touches and when
//! each closes; the operators run this arithmetic and the DSL hands it to
//! them.
//!
//! Closes (docs/late.md#closes): a sliding window `[start, start + D]` (both ends
//! inclusive) closes at `start + D + 1 + grace`; a session `[start, end]`
//! (both inclusive) at `end + gap + 1 + grace`. Every close is
//! `window.end + offset` for a per-operator constant offset, which
//! `suppress(until_window_closes)` learns from the graph at build time.
//!
//! This module owns window arithmetic (and the key serde a window's size
//! determines); it never sees records, stores or the DSL's streams (how `windowed_by` picks a stream per window kind is
//! `dsl::windowing`).

use std::sync::Arc;
use std::time::Duration;

use stoatflow_time::duration_ms;

use crate::error::TopologyError;
use crate::record::Window;
use crate::serde::{Serde, SerdeRef, TimeWindowedSerde};

mod time;

pub use time::{EmitStrategy, TimeWindows};

/// Sliding windows of Kafka Streams: `[start, start + D]`, both ends
/// inclusive, one per distinct set of records within `D` of each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlidingWindows {
    diff_ms: i64,
    grace_ms: i64,
}

impl SlidingWindows {
    /// Windows spanning `time_difference` that accept records up to `grace` after their end.
    pub fn of_time_difference_and_grace(time_difference: Duration, grace: Duration) -> Self {
        SlidingWindows {
            diff_ms: duration_ms(time_difference),
            grace_ms: duration_ms(grace),
        }
    }

    /// Sliding windows with no grace.
    pub fn of_time_difference_with_no_grace(time_difference: Duration) -> Self {
        Self::of_time_difference_and_grace(time_difference, Duration::ZERO)
    }

    /// The time difference `D`, ms.
    pub fn time_difference_ms(&self) -> i64 {
        self.diff_ms
    }

    /// Grace, ms.
    pub fn grace_ms(&self) -> i64 {
        self.grace_ms
    }

    /// The serde of these windows' keys: Kafka Streams' time-windowed
    /// layout, the end read back as `start + D`, the operator's own end.
    pub fn windowed_serde<K, S: Serde<K> + 'static>(&self, inner: S) -> TimeWindowedSerde<K> {
        self.windowed_serde_of(Arc::new(inner))
    }

    /// [`SlidingWindows::windowed_serde`] over a shared key serde.
    pub(crate) fn windowed_serde_of<K>(&self, inner: SerdeRef<K>) -> TimeWindowedSerde<K> {
        TimeWindowedSerde::new(inner, self.diff_ms)
    }

    /// The window starting at `start`: `[start, start + D]`.
    #[inline]
    pub fn window(&self, start: i64) -> Window {
        Window::new(start, start.saturating_add(self.diff_ms))
    }

    /// The close of the window starting at `start`: `start + D + 1 + grace`.
    #[inline]
    pub fn close_of(&self, start: i64) -> i64 {
        start.saturating_add(self.close_span())
    }

    /// `close − start`: `D + 1 + grace`.
    #[inline]
    pub(crate) fn close_span(&self) -> i64 {
        self.diff_ms.saturating_add(1).saturating_add(self.grace_ms)
    }

    /// Default retention: `2·D + grace`.
    pub fn default_retention_ms(&self) -> i64 {
        self.diff_ms.saturating_mul(2).saturating_add(self.grace_ms)
    }

    pub(crate) fn validate(&self, node: &str) -> Result<(), TopologyError> {
        if self.diff_ms <= 0 {
            return Err(TopologyError::InvalidArgument {
                node: node.into(),
                reason: format!(
                    "sliding window time difference must be > 0 ms, got {}",
                    self.diff_ms
                ),
            });
        }
        Ok(())
    }
}

/// Session windows: records of a key closer than the inactivity gap (the
/// gap itself included) form one session `[first, last]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionWindows {
    gap_ms: i64,
    grace_ms: i64,
}

impl SessionWindows {
    /// Sessions split by `gap` of inactivity, accepting records up to `grace` after their close.
    pub fn of_inactivity_gap_and_grace(gap: Duration, grace: Duration) -> Self {
        SessionWindows {
            gap_ms: duration_ms(gap),
            grace_ms: duration_ms(grace),
        }
    }

    /// Sessions with no grace.
    pub fn of_inactivity_gap_with_no_grace(gap: Duration) -> Self {
        Self::of_inactivity_gap_and_grace(gap, Duration::ZERO)
    }

    /// The inactivity gap, ms.
    pub fn inactivity_gap_ms(&self) -> i64 {
        self.gap_ms
    }

    /// Grace, ms.
    pub fn grace_ms(&self) -> i64 {
        self.grace_ms
    }

    /// The close of a session ending at `end`: `end + gap + 1 + grace`.
    #[inline]
    pub fn close_of_end(&self, end: i64) -> i64 {
        end.saturating_add(self.close_span())
    }

    /// `close − end`: `gap + 1 + grace`.
    #[inline]
    pub(crate) fn close_span(&self) -> i64 {
        self.gap_ms.saturating_add(1).saturating_add(self.grace_ms)
    }

    /// Default retention: `gap + grace`.
    pub fn default_retention_ms(&self) -> i64 {
        self.gap_ms.saturating_add(self.grace_ms)
    }

    pub(crate) fn validate(&self, node: &str) -> Result<(), TopologyError> {
        if self.gap_ms <= 0 {
            return Err(TopologyError::InvalidArgument {
                node: node.into(),
                reason: format!("session inactivity gap must be > 0 ms, got {}", self.gap_ms),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sliding_key_serde_reads_back_the_windows_real_end() {
        let w = SlidingWindows::of_time_difference_with_no_grace(Duration::from_millis(10));
        let serde = w.windowed_serde(crate::serde::Serdes::string());
        let key = crate::record::Windowed::new("k".to_owned(), w.window(90));
        assert_eq!(key.window.end, 100);
        let mut bytes = Vec::new();
        serde.serialize("t", &key, &mut bytes).unwrap();
        assert_eq!(serde.deserialize("t", &bytes).unwrap(), key);
    }

    #[test]
    fn sliding_close_is_start_plus_difference_plus_one_plus_grace() {
        let w = SlidingWindows::of_time_difference_and_grace(
            Duration::from_millis(10),
            Duration::from_millis(5),
        );
        assert_eq!(w.window(3), Window::new(3, 13));
        assert_eq!(w.close_of(3), 19);
        assert_eq!(w.default_retention_ms(), 25);
    }

    #[test]
    fn session_close_is_end_plus_gap_plus_one_plus_grace() {
        let w =
            SessionWindows::of_inactivity_gap_and_grace(Duration::from_millis(5), Duration::ZERO);
        assert_eq!(w.close_of_end(5), 11);
        assert_eq!(w.default_retention_ms(), 5);
        assert!(
            SessionWindows::of_inactivity_gap_with_no_grace(Duration::ZERO)
                .validate("s")
                .is_err()
        );
    }
}
