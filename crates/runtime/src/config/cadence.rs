//! [`BarrierCadence`]: when the next commit barrier is due
//! (docs/barriers.md#cadence).
//!
//! Owns the self-tuning interval and the idle throttle. Pure: it is told the
//! wall time and the measured commit durations; it never reads a clock.

use std::time::Duration;

use crate::config::CommitBarrierConfig;

/// The barrier schedule: `interval-ms` seeds the interval; each measured
/// commit duration scales it by `interval-factor` (so a slow log gets fewer,
/// larger epochs); `min-interval-ms` and `max-interval-ms` clamp it.
///
/// The interval after a commit that took `d` is
/// `clamp(max(interval-ms, interval-factor × d), min-interval-ms, max-interval-ms)`:
/// with a fast log barriers come every `interval-ms`, and the frontier lag
/// stays about two intervals (docs/barriers.md#emission-lag).
#[derive(Debug, Clone)]
pub struct BarrierCadence {
    config: CommitBarrierConfig,
    interval: Duration,
}

impl BarrierCadence {
    /// A cadence at its seed interval.
    pub fn new(config: CommitBarrierConfig) -> Self {
        let interval = config.clamp(config.interval);
        BarrierCadence { config, interval }
    }

    /// The current interval between barriers.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Records how long the last commit took and retunes the interval.
    pub fn on_commit(&mut self, took: Duration) {
        let scaled = took.mul_f64(self.config.interval_factor);
        self.interval = self.config.clamp(self.config.interval.max(scaled));
    }

    /// Whether a barrier is due `since_last` after the previous one, given
    /// whether the epoch did any work (docs/barriers.md#cadence: an epoch is
    /// empty only if no record was dispatched, the punctuation lane did
    /// nothing and no sub-topology still has final results to emit or commit;
    /// an empty epoch is throttled: no barrier is cut for it).
    pub fn is_due(&self, since_last: Duration, epoch_has_work: bool) -> bool {
        epoch_has_work && since_last >= self.interval
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cadence() -> BarrierCadence {
        BarrierCadence::new(CommitBarrierConfig::default())
    }

    #[test]
    fn seeded_at_interval_ms() {
        assert_eq!(cadence().interval(), Duration::from_millis(500));
    }

    #[test]
    fn fast_commits_keep_the_seed_slow_commits_stretch_it_within_the_clamp() {
        let mut c = cadence();
        c.on_commit(Duration::from_millis(10));
        assert_eq!(c.interval(), Duration::from_millis(500));
        c.on_commit(Duration::from_millis(1_000));
        assert_eq!(c.interval(), Duration::from_millis(1_500));
        c.on_commit(Duration::from_secs(60));
        assert_eq!(c.interval(), Duration::from_millis(5_000));
    }

    #[test]
    fn a_seed_below_the_minimum_is_clamped() {
        let config = CommitBarrierConfig {
            interval: Duration::from_millis(10),
            ..CommitBarrierConfig::default()
        };
        assert_eq!(
            BarrierCadence::new(config).interval(),
            Duration::from_millis(150)
        );
    }

    #[test]
    fn an_empty_epoch_is_throttled() {
        let c = cadence();
        assert!(!c.is_due(Duration::from_secs(10), false));
        assert!(!c.is_due(Duration::from_millis(499), true));
        assert!(c.is_due(Duration::from_millis(500), true));
    }
}
