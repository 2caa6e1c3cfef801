//! Retention segments: which time falls in which segment, and when a segment may go.
//!
//! Owns [`SegmentedConfig`] (retention and segment interval), the arithmetic both engines
//! use, and [`Retention`], a segmented store's expiry state: the committed frontier it has
//! been expired to (monotonic) and the writes it ignored because their time had expired. An
//! entry's time is its window start (window stores) or its session end (session stores). An
//! entry has expired at frontier `F` when `time + retention < F`; a segment may be dropped
//! once its latest possible time has expired (docs/state.md#expiry). With the default
//! retentions (size + grace, gap + grace: docs/state.md#retention) the strict comparison
//! means nothing goes before its close (end + grace, end + gap + 1 + grace) is at or below
//! the frontier.
//!
//! This module never knows where the frontier comes from.

/// Retention and segment interval of a window or session store, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentedConfig {
    retention_ms: i64,
    segment_interval_ms: i64,
}

/// Kafka Streams keeps windowed changelog records this much longer than the store.
pub const CHANGELOG_ADDITIONAL_RETENTION_MS: i64 = 24 * 60 * 60 * 1000;

impl SegmentedConfig {
    /// Retention `retention_ms` with Kafka Streams' default segment interval,
    /// `max(retention / 2, 60 000)`.
    ///
    /// # Panics
    /// If `retention_ms` is negative (a broken caller invariant).
    pub fn new(retention_ms: i64) -> Self {
        assert!(
            retention_ms >= 0,
            "retention must not be negative, got {retention_ms}"
        );
        Self {
            retention_ms,
            segment_interval_ms: (retention_ms / 2).max(60_000),
        }
    }

    /// Retention `retention_ms` with segments as wide as the retention (at least 1 ms),
    /// for an in-memory store whose memory should follow its live data: an entry is gone
    /// at most one retention after it expires (with Kafka Streams' 60 s minimum interval,
    /// up to 60 s after). Segments are a RocksDB artifact; expiry per entry is the same
    /// either way, so what a read can see does not change.
    ///
    /// # Panics
    /// If `retention_ms` is negative (a broken caller invariant).
    pub fn sized_to_retention(retention_ms: i64) -> Self {
        Self::new(retention_ms).with_segment_interval(retention_ms.max(1))
    }

    /// Overrides the segment interval.
    ///
    /// # Panics
    /// If `interval_ms` is not positive.
    #[must_use]
    pub fn with_segment_interval(mut self, interval_ms: i64) -> Self {
        assert!(
            interval_ms > 0,
            "segment interval must be positive, got {interval_ms}"
        );
        self.segment_interval_ms = interval_ms;
        self
    }

    /// The retention.
    pub fn retention_ms(&self) -> i64 {
        self.retention_ms
    }

    /// The segment interval.
    pub fn segment_interval_ms(&self) -> i64 {
        self.segment_interval_ms
    }

    /// `retention.ms` for the store's changelog topic (Kafka Streams adds a day).
    pub fn changelog_retention_ms(&self) -> i64 {
        self.retention_ms
            .saturating_add(CHANGELOG_ADDITIONAL_RETENTION_MS)
    }

    /// The segment holding entries of time `time`.
    #[inline]
    pub fn segment_id(&self, time: i64) -> i64 {
        time.div_euclid(self.segment_interval_ms)
    }

    /// Whether an entry of time `time` has expired at `frontier`.
    #[inline]
    pub fn is_expired(&self, time: i64, frontier: i64) -> bool {
        i128::from(time) + i128::from(self.retention_ms) < i128::from(frontier)
    }

    /// Whether every entry of segment `segment` has expired at `frontier`.
    #[inline]
    pub fn segment_expired(&self, segment: i64, frontier: i64) -> bool {
        let last_time = (i128::from(segment) + 1) * i128::from(self.segment_interval_ms) - 1;
        last_time + i128::from(self.retention_ms) < i128::from(frontier)
    }

    /// The first segment that is not expired at `frontier`: all segments below it may go.
    pub fn first_live_segment(&self, frontier: i64) -> i64 {
        // The smallest g with (g+1)*I - 1 + R >= F, i.e. g >= (F - R + 1)/I - 1.
        let need = i128::from(frontier) - i128::from(self.retention_ms) + 1;
        let interval = i128::from(self.segment_interval_ms);
        let g = need.div_euclid(interval) + i128::from(need.rem_euclid(interval) != 0) - 1;
        i64::try_from(g.clamp(i128::from(i64::MIN), i128::from(i64::MAX))).unwrap_or(i64::MIN)
    }
}

/// The expiry state of one segmented store, the same for both engines: the configuration,
/// the committed frontier (monotonic: an older one passed to [`Retention::advance`] changes
/// nothing) and the count of writes ignored because their time had expired at it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retention {
    config: SegmentedConfig,
    frontier: i64,
    expired_writes: u64,
}

impl Retention {
    /// Nothing expired yet.
    pub(crate) fn new(config: SegmentedConfig) -> Self {
        Self {
            config,
            frontier: i64::MIN,
            expired_writes: 0,
        }
    }

    /// The configuration.
    pub(crate) fn config(&self) -> SegmentedConfig {
        self.config
    }

    /// Writes ignored because their time had expired.
    pub(crate) fn expired_writes(&self) -> u64 {
        self.expired_writes
    }

    /// The segment holding entries of time `time`.
    #[inline]
    pub(crate) fn segment_id(&self, time: i64) -> i64 {
        self.config.segment_id(time)
    }

    /// The segments that may hold times `from..=to` (call only with `from <= to`).
    #[inline]
    pub(crate) fn segments_between(&self, from: i64, to: i64) -> std::ops::RangeInclusive<i64> {
        self.segment_id(from)..=self.segment_id(to)
    }

    /// Moves the frontier to `committed_frontier` if that is later; returns the first
    /// segment still live, every one below it may go.
    pub(crate) fn advance(&mut self, committed_frontier: i64) -> i64 {
        self.frontier = self.frontier.max(committed_frontier);
        self.config.first_live_segment(self.frontier)
    }

    /// Whether an entry of time `time` has expired.
    #[inline]
    pub(crate) fn is_expired(&self, time: i64) -> bool {
        self.config.is_expired(time, self.frontier)
    }

    /// The earliest time not expired at the frontier: `frontier - retention`
    /// (`i64::MIN` before the first expiry).
    #[inline]
    pub(crate) fn first_live_time(&self) -> i64 {
        self.frontier.saturating_sub(self.config.retention_ms)
    }

    /// Whether a write at `time` to `store` is admitted: one to an expired time is
    /// ignored, counted and logged (Kafka's "skipping record for expired segment").
    #[inline]
    pub(crate) fn admit(&mut self, store: &str, time: i64) -> bool {
        if !self.is_expired(time) {
            return true;
        }
        self.ignored(store, 1);
        false
    }

    /// Counts and logs `n` writes to `store` ignored because their time had expired.
    pub(crate) fn ignored(&mut self, store: &str, n: u64) {
        self.expired_writes += n;
        tracing::debug!(
            store,
            ignored = n,
            frontier = self.frontier,
            "ignored writes to expired windows"
        );
    }

    /// Whether a restored entry of time `time` is kept. Only a whole expired segment is
    /// skipped: an entry of a live segment existed in the committed state even if its own
    /// time has expired, so a store rebuilt and expired to the same frontier equals the
    /// original.
    #[inline]
    pub(crate) fn restores(&self, time: i64) -> bool {
        !self
            .config
            .segment_expired(self.config.segment_id(time), self.frontier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_interval_follows_kafka_streams() {
        assert_eq!(SegmentedConfig::new(10_000).segment_interval_ms(), 60_000);
        assert_eq!(SegmentedConfig::new(600_000).segment_interval_ms(), 300_000);
        assert_eq!(
            SegmentedConfig::sized_to_retention(2_000).segment_interval_ms(),
            2_000
        );
        assert_eq!(
            SegmentedConfig::sized_to_retention(0).segment_interval_ms(),
            1
        );
        assert_eq!(
            SegmentedConfig::new(1).changelog_retention_ms(),
            1 + CHANGELOG_ADDITIONAL_RETENTION_MS
        );
    }

    #[test]
    fn segment_ids_floor_negative_times() {
        let c = SegmentedConfig::new(100).with_segment_interval(10);
        assert_eq!(c.segment_id(0), 0);
        assert_eq!(c.segment_id(9), 0);
        assert_eq!(c.segment_id(10), 1);
        assert_eq!(c.segment_id(-1), -1);
    }

    #[test]
    fn expiry_is_strict() {
        let c = SegmentedConfig::new(100).with_segment_interval(10);
        assert!(!c.is_expired(0, 100));
        assert!(c.is_expired(0, 101));
        // Segment 0 holds times 0..=9; the last expires at 110.
        assert!(!c.segment_expired(0, 109));
        assert!(c.segment_expired(0, 110));
    }

    #[test]
    fn first_live_segment_agrees_with_segment_expired() {
        for interval in [1i64, 3, 10, 60_000] {
            for retention in [0i64, 1, 7, 100] {
                let c = SegmentedConfig::new(retention).with_segment_interval(interval);
                for frontier in -50i64..250 {
                    let g = c.first_live_segment(frontier);
                    assert!(
                        !c.segment_expired(g, frontier),
                        "i={interval} r={retention} f={frontier}"
                    );
                    assert!(
                        c.segment_expired(g - 1, frontier),
                        "i={interval} r={retention} f={frontier}"
                    );
                }
            }
        }
    }

    #[test]
    fn retention_frontier_is_monotonic_and_counts_ignored_writes() {
        let mut r = Retention::new(SegmentedConfig::new(100).with_segment_interval(10));
        assert!(r.admit("s", i64::MIN));
        assert_eq!(r.advance(196), 9);
        assert_eq!(r.advance(50), 9, "an older frontier changes nothing");
        assert!(!r.admit("s", 95));
        assert!(r.admit("s", 96));
        assert_eq!(r.expired_writes(), 1);
        // Time 95 has expired, but its segment (90..=99) has not: restore keeps it.
        assert!(r.is_expired(95) && r.restores(95));
        assert!(!r.restores(89));
    }

    #[test]
    fn extreme_frontiers_do_not_overflow() {
        let c = SegmentedConfig::new(i64::MAX).with_segment_interval(1);
        assert!(!c.segment_expired(i64::MAX, i64::MAX));
        let _ = c.first_live_segment(i64::MIN);
        let _ = c.first_live_segment(i64::MAX);
    }
}
