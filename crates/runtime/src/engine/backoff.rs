//! The wait before a retry: one doubling backoff with jitter, for every
//! retry of the engine (a failed fetch, a failed commit, a replaced engine).
//!
//! Owns the formula only (a ceiling that doubles from a first wait up to a
//! bound, and the random part below it). A leaf: it never sleeps, and knows
//! nothing of what is retried or how often.

use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

/// A doubling backoff: the `n`th wait in a row (from 1) is at most `first`
/// × 2^(n−1), never more than `max`, and at least half of that ("equal
/// jitter"), so instances that failed together do not retry in lockstep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backoff {
    first: Duration,
    max: Duration,
}

impl Backoff {
    pub(crate) const fn new(first: Duration, max: Duration) -> Self {
        Self { first, max }
    }

    /// The longest `n`th wait (from 1; 0 counts as 1): `first`, doubling,
    /// at most `max`.
    pub(crate) fn ceiling(&self, n: u32) -> Duration {
        let doublings = n.saturating_sub(1).min(31);
        self.first
            .checked_mul(1 << doublings)
            .map_or(self.max, |d| d.min(self.max))
    }

    /// The `n`th wait: a random point between half the ceiling and the
    /// ceiling.
    pub(crate) fn wait(&self, n: u32) -> Duration {
        self.jittered(n, RandomState::new().hash_one(n))
    }

    /// The `n`th wait for the random draw `draw`.
    fn jittered(&self, n: u32, draw: u64) -> Duration {
        let ceiling = self.ceiling(n);
        let half = ceiling / 2;
        let spread = u64::try_from((ceiling - half).as_nanos()).unwrap_or(u64::MAX);
        half + Duration::from_nanos(draw % spread.saturating_add(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn the_ceiling_doubles_from_the_first_wait_up_to_the_bound() {
        let b = Backoff::new(MS(50), MS(1_000));
        let ceilings: Vec<Duration> = (1..=7).map(|n| b.ceiling(n)).collect();
        assert_eq!(
            ceilings,
            [50, 100, 200, 400, 800, 1_000, 1_000].map(MS),
            "50 ms, doubling, at most 1 s"
        );
        assert_eq!(b.ceiling(0), MS(50), "0 counts as the first");
        assert_eq!(b.ceiling(u32::MAX), MS(1_000), "no overflow");
        let huge = Backoff::new(Duration::from_secs(u64::MAX / 4), Duration::MAX);
        assert_eq!(
            huge.ceiling(40),
            Duration::MAX,
            "a product past Duration::MAX is the bound"
        );
    }

    #[test]
    fn a_jittered_wait_lies_between_half_the_ceiling_and_the_ceiling() {
        let b = Backoff::new(MS(100), MS(5_000));
        for n in 1..=10 {
            let ceiling = b.ceiling(n);
            assert_eq!(b.jittered(n, 0), ceiling / 2, "the least draw");
            let spread = (ceiling - ceiling / 2).as_nanos() as u64;
            assert_eq!(b.jittered(n, spread), ceiling, "the greatest draw");
            assert_eq!(b.jittered(n, spread + 1), ceiling / 2, "draws wrap");
            for _ in 0..100 {
                let w = b.wait(n);
                assert!(
                    ceiling / 2 <= w && w <= ceiling,
                    "wait {n}: {w:?} of {ceiling:?}"
                );
            }
        }
    }

    #[test]
    fn waits_are_spread_not_all_equal() {
        let b = Backoff::new(MS(100), MS(5_000));
        let waits: std::collections::BTreeSet<Duration> = (0..50).map(|_| b.wait(3)).collect();
        assert!(waits.len() > 10, "{} distinct waits of 50", waits.len());
    }

    #[test]
    fn a_zero_first_wait_is_no_wait() {
        let b = Backoff::new(Duration::ZERO, MS(10));
        assert_eq!(b.wait(5), Duration::ZERO);
    }
}
