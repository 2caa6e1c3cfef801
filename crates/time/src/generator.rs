//! Watermark generators: the [`WatermarkGenerator`] trait for custom logic and
//! the built-in generators behind the strategy constructors.
//!
//! A generator turns one partition's event times into that partition's
//! watermark. It owns nothing else: idleness timeouts, the global minimum and
//! alignment belong to the tracker.
//!
//! # The one-millisecond difference from Flink
//! Flink's `forBoundedOutOfOrderness(d)` emits `max seen − d − 1` and
//! `forMonotonousTimestamps()` emits `max seen − 1`. stoatflow emits
//! `max seen − d` and `max seen`: with zero lag, "the watermark passed
//! `end + grace`" then means exactly what it means in the test driver, whose
//! clock is the largest timestamp piped. A window whose close equals the
//! watermark is closed (docs/late.md#late-rule), so a record stamped at the watermark is
//! on time and one stamped below it is late, in both.

use std::fmt;

use crate::{EventTime, Watermark};

/// What a generator writes to: its partition's watermark and an idleness flag.
///
/// Emitted watermarks are monotonic: a lower value than the current one is ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatermarkOutput {
    watermark: Watermark,
    idle: bool,
}

impl Default for WatermarkOutput {
    fn default() -> Self {
        WatermarkOutput {
            watermark: Watermark::MIN,
            idle: false,
        }
    }
}

impl WatermarkOutput {
    /// Proposes a new watermark for the partition; it also marks it active.
    pub fn emit_watermark(&mut self, watermark: Watermark) {
        self.watermark.advance_to(watermark);
        self.idle = false;
    }

    /// Declares the partition idle until its next record or watermark.
    pub fn mark_idle(&mut self) {
        self.idle = true;
    }

    /// Declares the partition active again.
    pub fn mark_active(&mut self) {
        self.idle = false;
    }

    /// The partition's current watermark.
    pub fn watermark(&self) -> Watermark {
        self.watermark
    }

    /// Whether the generator declared the partition idle.
    pub fn is_idle(&self) -> bool {
        self.idle
    }
}

/// Custom per-partition watermark logic, as in Flink's `WatermarkGenerator`.
///
/// One instance runs per source partition. `on_event` sees every dispatched
/// record's event time; `on_periodic_emit` runs whenever the tracker
/// recomputes the global watermark (every `auto-interval-ms`, and before each
/// commit barrier).
pub trait WatermarkGenerator: Send + fmt::Debug {
    /// Called for every record dispatched from the partition.
    fn on_event(&mut self, event_time: EventTime, output: &mut WatermarkOutput);

    /// Called on every recompute of the global watermark.
    fn on_periodic_emit(&mut self, output: &mut WatermarkOutput);

    /// The watermark this generator would emit once a record stamped `head`
    /// is dispatched, if it can say. Built-in generators can; a custom one
    /// returns `None` (the default), and then a partition whose head waits
    /// contributes no preview (docs/time.md#future-heads).
    fn preview(&self, head: EventTime) -> Option<Watermark> {
        let _ = head;
        None
    }
}

/// A running generator: the built-ins inline (no dynamic call per record), or a custom one.
#[derive(Debug)]
pub(crate) enum GeneratorState {
    Bounded { max_seen: i64, bound_ms: i64 },
    Monotonous { max_seen: i64 },
    NoWatermarks,
    Custom(Box<dyn WatermarkGenerator>),
}

impl GeneratorState {
    #[inline]
    pub(crate) fn on_event(&mut self, t: EventTime, out: &mut WatermarkOutput) {
        match self {
            GeneratorState::Bounded { max_seen, .. } | GeneratorState::Monotonous { max_seen } => {
                if t.as_millis() > *max_seen {
                    *max_seen = t.as_millis();
                }
            }
            GeneratorState::NoWatermarks => {}
            GeneratorState::Custom(g) => g.on_event(t, out),
        }
    }

    pub(crate) fn on_periodic_emit(&mut self, out: &mut WatermarkOutput) {
        match self {
            GeneratorState::Bounded { max_seen, bound_ms } => {
                if *max_seen != i64::MIN {
                    out.emit_watermark(Watermark::from_millis(*max_seen - *bound_ms));
                }
            }
            GeneratorState::Monotonous { max_seen } => {
                if *max_seen != i64::MIN {
                    out.emit_watermark(Watermark::from_millis(*max_seen));
                }
            }
            GeneratorState::NoWatermarks => {}
            GeneratorState::Custom(g) => g.on_periodic_emit(out),
        }
    }

    pub(crate) fn preview(&self, head: EventTime) -> Option<Watermark> {
        match self {
            GeneratorState::Bounded { max_seen, bound_ms } => Some(Watermark::from_millis(
                (*max_seen).max(head.as_millis()) - *bound_ms,
            )),
            GeneratorState::Monotonous { max_seen } => {
                Some(Watermark::from_millis((*max_seen).max(head.as_millis())))
            }
            GeneratorState::NoWatermarks => None,
            GeneratorState::Custom(g) => g.preview(head),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn et(ms: i64) -> EventTime {
        EventTime::new(ms).unwrap()
    }

    fn run(mut g: GeneratorState, events: &[i64]) -> Watermark {
        let mut out = WatermarkOutput::default();
        for &e in events {
            g.on_event(et(e), &mut out);
        }
        g.on_periodic_emit(&mut out);
        out.watermark()
    }

    #[test]
    fn bounded_is_max_seen_minus_bound_without_flinks_extra_millisecond() {
        let g = GeneratorState::Bounded {
            max_seen: i64::MIN,
            bound_ms: 30,
        };
        assert_eq!(run(g, &[100, 250, 180]), Watermark::from_millis(220));
    }

    #[test]
    fn monotonous_is_max_seen() {
        let g = GeneratorState::Monotonous { max_seen: i64::MIN };
        assert_eq!(run(g, &[100, 250, 180]), Watermark::from_millis(250));
    }

    #[test]
    fn generators_emit_nothing_before_the_first_event() {
        assert!(
            run(
                GeneratorState::Bounded {
                    max_seen: i64::MIN,
                    bound_ms: 5
                },
                &[]
            )
            .is_none_yet()
        );
        assert!(run(GeneratorState::Monotonous { max_seen: i64::MIN }, &[]).is_none_yet());
        assert!(run(GeneratorState::NoWatermarks, &[1, 2, 3]).is_none_yet());
    }

    #[test]
    fn output_ignores_a_lower_watermark() {
        let mut out = WatermarkOutput::default();
        out.emit_watermark(Watermark::from_millis(10));
        out.emit_watermark(Watermark::from_millis(3));
        assert_eq!(out.watermark(), Watermark::from_millis(10));
    }

    #[test]
    fn builtins_preview_the_watermark_after_their_head() {
        let g = GeneratorState::Bounded {
            max_seen: 100,
            bound_ms: 10,
        };
        assert_eq!(g.preview(et(500)), Some(Watermark::from_millis(490)));
        assert_eq!(g.preview(et(50)), Some(Watermark::from_millis(90)));
        assert_eq!(GeneratorState::NoWatermarks.preview(et(500)), None);
    }
}
