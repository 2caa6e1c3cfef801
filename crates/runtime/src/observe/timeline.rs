//! The barrier timeline: per barrier, when it was cut, its stamps and when
//! its transaction committed; per sub-topology, when the watermark first
//! reached each value it took. Recorded per barrier and per watermark move
//! (at most once per poll), never per record.
//!
//! Owns the final-result latency of a window close: from the moment the
//! watermark (or the first barrier stamp) reached the close to the commit of
//! the transaction that carries the window's final result. Knows the barrier
//! pipeline (docs/barriers.md#emission-lag: a close first stamped by barrier
//! M is emitted by the pass at barrier M+1 and commits with transaction M+2;
//! a flush barrier emits and commits at once) and nothing of windows: the
//! caller says where its windows close.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use stoatflow_time::Watermark;

/// Entries kept per list; older ones are dropped.
const KEPT: usize = 100_000;

/// One committed barrier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BarrierTiming {
    /// The barrier (= epoch) number.
    pub barrier: u64,
    /// Its stamp per sub-topology.
    pub stamps: Vec<Watermark>,
    /// A flush barrier: the final one of a graceful close, or a rebalance's.
    pub flush: bool,
    /// When it was cut (offsets fixed, stamps taken).
    pub cut: Instant,
    /// When its transaction committed.
    pub committed: Instant,
}

/// The final-result latency of one window close, two ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultLatency {
    /// From the first barrier stamp at or past the close.
    pub from_stamp: Duration,
    /// From the moment the sub-topology's watermark first reached the close
    /// (as the poll loop saw it; never later than the stamp).
    pub from_watermark: Duration,
    /// The carrying transaction's own duration, its barrier's cut to its
    /// commit: the part of `from_stamp` that is not barrier intervals.
    pub carrier_commit: Duration,
}

/// What the engine recorded; a copy, read after or during a run.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    barriers: VecDeque<BarrierTiming>,
    /// Per sub-topology, (watermark, when first reached), ascending.
    reached: Vec<VecDeque<(Watermark, Instant)>>,
}

impl Timeline {
    /// Sub-topology `st`'s watermark moved to `w` at `at`.
    pub(crate) fn watermark_reached(&mut self, st: usize, w: Watermark, at: Instant) {
        if self.reached.len() <= st {
            self.reached.resize_with(st + 1, VecDeque::new);
        }
        let list = &mut self.reached[st];
        if list.back().is_some_and(|(last, _)| *last >= w) {
            return;
        }
        if list.len() == KEPT {
            list.pop_front();
        }
        list.push_back((w, at));
    }

    /// Barrier `timing.barrier` committed.
    pub(crate) fn barrier_committed(&mut self, timing: BarrierTiming) {
        for (st, &w) in timing.stamps.iter().enumerate() {
            self.watermark_reached(st, w, timing.cut);
        }
        if self.barriers.len() == KEPT {
            self.barriers.pop_front();
        }
        self.barriers.push_back(timing);
    }

    /// Appends what `other` recorded after everything here: its watermark
    /// moves first (they came before its barriers' stamps, which a
    /// watermark at or below them would otherwise shadow).
    pub(crate) fn append(&mut self, other: &mut Timeline) {
        for (st, list) in other.reached.iter_mut().enumerate() {
            for (w, at) in list.drain(..) {
                self.watermark_reached(st, w, at);
            }
        }
        for t in other.barriers.drain(..) {
            self.barrier_committed(t);
        }
    }

    /// The committed barriers kept, oldest first.
    pub fn barriers(&self) -> impl Iterator<Item = &BarrierTiming> {
        self.barriers.iter()
    }

    /// The longest time between `from`, each commit of a barrier after it
    /// and before `to`, and `to`: how long the instance went without
    /// committing over that span (the whole span if it committed nothing).
    #[must_use]
    pub fn longest_commit_gap(&self, from: Instant, to: Instant) -> Duration {
        let mut points = vec![from];
        points.extend(
            self.barriers
                .iter()
                .map(|b| b.committed)
                .filter(|t| *t > from && *t < to),
        );
        points.push(to);
        points.sort();
        points
            .windows(2)
            .map(|w| w[1].saturating_duration_since(w[0]))
            .max()
            .unwrap_or_default()
    }

    /// The final-result latency of a window of sub-topology `st` closing at
    /// `close` (ms): `None` if no committed barrier carries its result yet.
    #[must_use]
    pub fn final_result_latency(&self, st: usize, close: i64) -> Option<ResultLatency> {
        let close = Watermark::from_millis(close);
        let m = self
            .barriers
            .iter()
            .position(|b| b.stamps.get(st).is_some_and(|&w| w >= close))?;
        let stamped = self.barriers[m].cut;
        // Emitted by the pass at M+1 into transaction M+2, or at once by a
        // flush barrier.
        let carrier = self
            .barriers
            .iter()
            .skip(m)
            .take(3)
            .enumerate()
            .find(|(i, b)| b.flush || *i == 2)
            .map(|(_, b)| b)?;
        let reached = self.reached.get(st).and_then(|list| {
            list.iter()
                .find(|(w, _)| *w >= close)
                .map(|&(_, at)| at.min(stamped))
        })?;
        Some(ResultLatency {
            from_stamp: carrier.committed.saturating_duration_since(stamped),
            from_watermark: carrier.committed.saturating_duration_since(reached),
            carrier_commit: carrier.committed.saturating_duration_since(carrier.cut),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, ms: u64) -> Instant {
        base + Duration::from_millis(ms)
    }

    fn barrier(base: Instant, n: u64, stamp: i64, cut: u64, flush: bool) -> BarrierTiming {
        BarrierTiming {
            barrier: n,
            stamps: vec![Watermark::from_millis(stamp)],
            flush,
            cut: at(base, cut),
            committed: at(base, cut + 10),
        }
    }

    #[test]
    fn a_close_commits_two_barriers_after_its_first_stamp_or_at_a_flush() {
        let base = Instant::now();
        let mut t = Timeline::default();
        t.watermark_reached(0, Watermark::from_millis(900), at(base, 50));
        t.watermark_reached(0, Watermark::from_millis(1_000), at(base, 300));
        t.barrier_committed(barrier(base, 1, 500, 0, false));
        t.barrier_committed(barrier(base, 2, 1_200, 500, false));
        t.barrier_committed(barrier(base, 3, 1_900, 1_000, false));
        t.barrier_committed(barrier(base, 4, 2_500, 1_500, false));
        t.barrier_committed(barrier(base, 5, 2_600, 2_000, true));
        // Close 1000: first stamped by barrier 2 (cut at 500), reached at
        // 300, carried by barrier 4 (committed at 1510).
        let l = t.final_result_latency(0, 1_000).expect("committed");
        assert_eq!(l.from_stamp, Duration::from_millis(1_010));
        assert_eq!(l.from_watermark, Duration::from_millis(1_210));
        assert_eq!(l.carrier_commit, Duration::from_millis(10));
        // Close 2500: first stamped by barrier 4; barrier 5 flushes it.
        let l = t.final_result_latency(0, 2_500).expect("flushed");
        assert_eq!(l.from_stamp, Duration::from_millis(510));
        // Never stamped, or stamped but not yet carried: none.
        assert_eq!(t.final_result_latency(0, 3_000), None);
        let mut open = Timeline::default();
        open.barrier_committed(barrier(base, 1, 1_000, 0, false));
        open.barrier_committed(barrier(base, 2, 1_500, 500, false));
        assert_eq!(open.final_result_latency(0, 1_000), None);
    }

    #[test]
    fn the_longest_commit_gap_counts_the_span_edges_and_only_commits_inside() {
        let base = Instant::now();
        let mut t = Timeline::default();
        // Committed at 10, 510, 1 310 and 1 510.
        for (n, cut) in [(1, 0), (2, 500), (3, 1_300), (4, 1_500)] {
            t.barrier_committed(barrier(base, n, 1_000, cut, false));
        }
        let gap = |from, to| t.longest_commit_gap(at(base, from), at(base, to));
        assert_eq!(gap(0, 2_000), Duration::from_millis(800));
        // From the span's start to the first commit in it, from the last
        // one to its end.
        assert_eq!(gap(400, 600), Duration::from_millis(110));
        assert_eq!(gap(1_400, 2_400), Duration::from_millis(890));
        // No commit inside: the whole span.
        assert_eq!(gap(600, 900), Duration::from_millis(300));
    }

    #[test]
    fn the_watermark_is_reached_no_later_than_its_stamp() {
        let base = Instant::now();
        let mut t = Timeline::default();
        for n in 1..=3 {
            t.barrier_committed(barrier(base, n, 1_000 * n as i64, 500 * n, false));
        }
        // No poll-time record: the stamp's cut is when it was reached.
        let l = t.final_result_latency(0, 1_000).expect("committed");
        assert_eq!(l.from_stamp, l.from_watermark);
        // Published in batches, watermark moves keep their own times.
        let mut local = Timeline::default();
        local.watermark_reached(0, Watermark::from_millis(3_500), at(base, 1_600));
        for n in 4..=6 {
            local.barrier_committed(barrier(base, n, 1_000 * n as i64, 500 * n, false));
        }
        t.append(&mut local);
        assert!(t.reached[0].contains(&(Watermark::from_millis(3_500), at(base, 1_600))));
        let l = t
            .final_result_latency(0, 3_500)
            .expect("carried by barrier 6");
        assert_eq!(l.from_stamp, Duration::from_millis(1_010));
        assert_eq!(l.from_watermark, Duration::from_millis(1_410));
        let mut older = Timeline::default();
        older.watermark_reached(0, Watermark::from_millis(5), at(base, 0));
        older.watermark_reached(0, Watermark::from_millis(4), at(base, 1));
        assert_eq!(older.reached[0].len(), 1, "a watermark never moves back");
    }
}
