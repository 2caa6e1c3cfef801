//! Window definitions and emit strategies.
//!
//! [`TimeWindows`] are tumbling or hopping, `[start, start + size)`, aligned
//! to the epoch, never starting below 0. A window's **close** is
//! `end + grace` (docs/late.md#closes): grace added to the first watermark
//! after which no record still to come could fall in the window.

use std::time::Duration;

use stoatflow_time::duration_ms;

use crate::error::TopologyError;
use crate::record::Window;

/// Tumbling (`advance == size`) or hopping time windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeWindows {
    size_ms: i64,
    advance_ms: i64,
    grace_ms: i64,
}

impl TimeWindows {
    /// Tumbling windows of `size` that accept records up to `grace` after their end.
    pub fn of_size_and_grace(size: Duration, grace: Duration) -> Self {
        let size_ms = duration_ms(size);
        TimeWindows {
            size_ms,
            advance_ms: size_ms,
            grace_ms: duration_ms(grace),
        }
    }

    /// Tumbling windows with no grace.
    pub fn of_size_with_no_grace(size: Duration) -> Self {
        Self::of_size_and_grace(size, Duration::ZERO)
    }

    /// Hopping windows: a new window every `advance`.
    #[must_use]
    pub fn advance_by(mut self, advance: Duration) -> Self {
        self.advance_ms = duration_ms(advance);
        self
    }

    /// Window size, ms.
    pub fn size_ms(&self) -> i64 {
        self.size_ms
    }

    /// The serde of these windows' keys: Kafka Streams' time-windowed
    /// layout, the end read back as `start + size`.
    pub fn windowed_serde<K, S: crate::serde::Serde<K> + 'static>(
        &self,
        inner: S,
    ) -> crate::serde::TimeWindowedSerde<K> {
        self.windowed_serde_of(std::sync::Arc::new(inner))
    }

    /// [`TimeWindows::windowed_serde`] over a shared key serde.
    pub(crate) fn windowed_serde_of<K>(
        &self,
        inner: crate::serde::SerdeRef<K>,
    ) -> crate::serde::TimeWindowedSerde<K> {
        crate::serde::TimeWindowedSerde::new(inner, self.size_ms)
    }

    /// Advance, ms.
    pub fn advance_ms(&self) -> i64 {
        self.advance_ms
    }

    /// Grace, ms.
    pub fn grace_ms(&self) -> i64 {
        self.grace_ms
    }

    /// Checks the definition; `node` names the operator in errors.
    pub(crate) fn validate(&self, node: &str) -> Result<(), TopologyError> {
        let bad = |reason: String| {
            Err(TopologyError::InvalidArgument {
                node: node.into(),
                reason,
            })
        };
        if self.size_ms <= 0 {
            return bad(format!("window size must be > 0 ms, got {}", self.size_ms));
        }
        if self.advance_ms <= 0 || self.advance_ms > self.size_ms {
            return bad(format!(
                "window advance must be in (0, size = {}] ms, got {}",
                self.size_ms, self.advance_ms
            ));
        }
        Ok(())
    }

    /// Starts of the windows containing `ts`, ascending (Kafka Streams' `windowsFor`).
    #[inline]
    pub fn window_starts(&self, ts: i64) -> impl Iterator<Item = i64> + use<> {
        let advance = self.advance_ms;
        let first = ((ts - self.size_ms + advance).max(0) / advance) * advance;
        (0..)
            .map(move |i| first + i * advance)
            .take_while(move |s| *s <= ts)
    }

    /// The window starting at `start`.
    #[inline]
    pub fn window(&self, start: i64) -> Window {
        Window::new(start, start.saturating_add(self.size_ms))
    }

    /// The close of the window starting at `start`: `end + grace`.
    #[inline]
    pub fn close_of(&self, start: i64) -> i64 {
        start
            .saturating_add(self.size_ms)
            .saturating_add(self.grace_ms)
    }

    /// Default retention: size + grace.
    pub fn default_retention_ms(&self) -> i64 {
        self.size_ms.saturating_add(self.grace_ms)
    }
}

/// When a windowed aggregation forwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EmitStrategy {
    /// On every update (the default).
    #[default]
    OnWindowUpdate,
    /// Once, when the committed frontier reaches the window's close.
    OnWindowClose,
}

impl EmitStrategy {
    /// Forward on every record.
    pub fn on_window_update() -> Self {
        EmitStrategy::OnWindowUpdate
    }

    /// Forward each window's final result once.
    pub fn on_window_close() -> Self {
        EmitStrategy::OnWindowClose
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tumbling_window_of_a_record() {
        let w = TimeWindows::of_size_with_no_grace(Duration::from_millis(10));
        assert_eq!(w.window_starts(0).collect::<Vec<_>>(), [0]);
        assert_eq!(w.window_starts(9).collect::<Vec<_>>(), [0]);
        assert_eq!(w.window_starts(10).collect::<Vec<_>>(), [10]);
    }

    #[test]
    fn hopping_windows_never_start_below_zero() {
        let w = TimeWindows::of_size_with_no_grace(Duration::from_millis(10))
            .advance_by(Duration::from_millis(5));
        assert_eq!(w.window_starts(3).collect::<Vec<_>>(), [0]);
        assert_eq!(w.window_starts(12).collect::<Vec<_>>(), [5, 10]);
        assert_eq!(w.window_starts(15).collect::<Vec<_>>(), [10, 15]);
    }

    #[test]
    fn close_is_end_plus_grace() {
        let w = TimeWindows::of_size_and_grace(Duration::from_millis(10), Duration::from_millis(3));
        assert_eq!(w.close_of(20), 33);
        assert_eq!(w.window(20), Window::new(20, 30));
    }

    #[test]
    fn bad_definitions_are_refused_naming_the_node() {
        let zero = TimeWindows::of_size_with_no_grace(Duration::ZERO);
        assert!(
            zero.validate("agg")
                .unwrap_err()
                .to_string()
                .contains("agg")
        );
        let wide = TimeWindows::of_size_with_no_grace(Duration::from_millis(10))
            .advance_by(Duration::from_millis(11));
        assert!(wide.validate("agg").is_err());
    }
}
