//! [`BarrierCadence`]: when the next commit barrier is due
//! (docs/barriers.md#cadence).
//!
//! Owns the self-tuning interval and the idle throttle. Pure: it is told the
//! wall time and the measured commit durations; it never reads a clock.

use std::time::{Duration, Instant};

use crate::config::CommitBarrierConfig;

/// The barrier schedule: `interval-ms` seeds the interval; each measured
/// commit duration scales it by `interval-factor` (so a slow log gets fewer,
/// larger epochs); `min-interval-ms` and `max-interval-ms` clamp it.
///
/// The interval after a commit that took `d` is
/// `clamp(max(interval-ms, interval-factor × d), min-interval-ms, max-interval-ms)`,
/// counted from the previous barrier's **cut**, not from its commit: with a
/// fast log barriers are cut every `interval-ms`, and a final result commits
/// about two intervals plus one commit after the stamp that made it final
/// (docs/barriers.md#emission-lag). Counted from the commit, every interval
/// would also carry the commit's duration.
#[derive(Debug, Clone)]
pub struct BarrierCadence {
    config: CommitBarrierConfig,
    interval: Duration,
    /// When the last barrier was cut (when the cadence started, before any).
    last_cut: Instant,
}

impl BarrierCadence {
    /// A cadence at its seed interval, counting from `started`.
    pub fn new(config: CommitBarrierConfig, started: Instant) -> Self {
        let interval = config.clamp(config.interval);
        BarrierCadence {
            config,
            interval,
            last_cut: started,
        }
    }

    /// The current interval between barriers.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Barrier cut at `cut` committed, after `took` from cut to commit:
    /// the next one counts from `cut`, and the interval is retuned.
    pub fn on_commit(&mut self, cut: Instant, took: Duration) {
        let scaled = took.mul_f64(self.config.interval_factor);
        self.interval = self.config.clamp(self.config.interval.max(scaled));
        self.last_cut = self.last_cut.max(cut);
    }

    /// Whether a barrier is due at `now`, given whether the epoch did any
    /// work (docs/barriers.md#cadence: an epoch is empty only if no record
    /// was dispatched, the punctuation lane did nothing and no sub-topology
    /// still has final results to emit or commit; an empty epoch is
    /// throttled: no barrier is cut for it). The caller cuts the next barrier
    /// only once the previous one has committed.
    pub fn is_due(&self, now: Instant, epoch_has_work: bool) -> bool {
        epoch_has_work && now.saturating_duration_since(self.last_cut) >= self.interval
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cadence() -> BarrierCadence {
        BarrierCadence::new(CommitBarrierConfig::default(), Instant::now())
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn seeded_at_interval_ms() {
        assert_eq!(cadence().interval(), Duration::from_millis(500));
    }

    #[test]
    fn fast_commits_keep_the_seed_slow_commits_stretch_it_within_the_clamp() {
        let mut c = cadence();
        let now = Instant::now();
        c.on_commit(now, ms(10));
        assert_eq!(c.interval(), ms(500));
        c.on_commit(now, ms(1_000));
        assert_eq!(c.interval(), ms(1_500));
        c.on_commit(now, Duration::from_secs(60));
        assert_eq!(c.interval(), Duration::from_millis(5_000));
    }

    #[test]
    fn a_seed_below_the_minimum_is_clamped() {
        let config = CommitBarrierConfig {
            interval: Duration::from_millis(10),
            ..CommitBarrierConfig::default()
        };
        assert_eq!(
            BarrierCadence::new(config, Instant::now()).interval(),
            Duration::from_millis(150)
        );
    }

    #[test]
    fn an_empty_epoch_is_throttled() {
        let start = Instant::now();
        let c = BarrierCadence::new(CommitBarrierConfig::default(), start);
        assert!(!c.is_due(start + Duration::from_secs(10), false));
        assert!(!c.is_due(start + ms(499), true));
        assert!(c.is_due(start + ms(500), true));
    }

    /// A barrier cut at t committed at t + 120 ms: the next is due at
    /// t + 500 ms, not t + 620 ms, so the commit's duration does not
    /// stretch the interval a final result waits through.
    #[test]
    fn the_interval_counts_from_the_previous_cut_not_its_commit() {
        let start = Instant::now();
        let mut c = BarrierCadence::new(CommitBarrierConfig::default(), start);
        let cut = start + ms(700);
        c.on_commit(cut, ms(120));
        assert!(!c.is_due(cut + ms(499), true));
        assert!(c.is_due(cut + ms(500), true));
        // A commit slower than two thirds of the interval stretches it, still
        // from the cut.
        c.on_commit(cut + ms(500), ms(400));
        assert!(!c.is_due(cut + ms(1_099), true));
        assert!(c.is_due(cut + ms(1_100), true));
    }
}
