//! [`MetricsSnapshot`]: the figures the runtime records for the operating
//! surface (docs/operating.md#metrics): the `stoatflow.watermark.*` family,
//! dropped records by reason, records in and out, store segments,
//! commit-barrier interval and duration, restore progress, the passes of the
//! log's upkeep.
//!
//! Owns the cells the engine and the lanes write and the read model the
//! server reads. Cells are written at barrier time, at the 100 ms snapshot
//! refresh, during restore and by the upkeep thread after each pass: never
//! per record (each lane sums its tasks' own counters when it crosses a
//! barrier). Knows no exposition format and no metric names: the server
//! crate turns a snapshot into Prometheus text.
//!
//! The record counters (records in and out, drops, late arrivals) count
//! what committed: a lane's figures at its crossing of barrier N, and the
//! trackers' late arrivals at N's cut, show once transaction N committed.
//! An epoch that aborts (its engine replaced, the application halted) is
//! processed again by the next engine, which counts it then; counted at
//! once, it would be counted twice. When an engine ends, what it committed
//! moves to retired totals, so a counter never goes back.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use stoatflow_streams::{DropReason, TaskMetrics};
use stoatflow_time::{TrackerMetrics, Watermark};

use crate::app_state::AppState;
use crate::task_id::TaskId;

/// Upper bounds (ms) of the commit-barrier histograms' buckets.
pub const BARRIER_BUCKETS_MS: [f64; 12] = [
    5.0, 10.0, 25.0, 50.0, 100.0, 150.0, 250.0, 500.0, 1_000.0, 2_500.0, 5_000.0, 10_000.0,
];

/// A histogram of durations with the fixed [`BARRIER_BUCKETS_MS`] bounds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DurationHistogram {
    /// Observations per bucket (not cumulative); the last slot counts those
    /// above every bound.
    counts: [u64; BARRIER_BUCKETS_MS.len() + 1],
    /// Sum of the observations, ms.
    pub sum_ms: f64,
    /// Number of observations.
    pub count: u64,
    /// The last observation.
    pub last: Option<Duration>,
}

impl DurationHistogram {
    fn observe(&mut self, d: Duration) {
        let ms = d.as_secs_f64() * 1_000.0;
        let slot = BARRIER_BUCKETS_MS
            .iter()
            .position(|&b| ms <= b)
            .unwrap_or(BARRIER_BUCKETS_MS.len());
        self.counts[slot] += 1;
        self.sum_ms += ms;
        self.count += 1;
        self.last = Some(d);
    }

    /// `(upper bound ms, observations in that bucket)`, `+Inf` last (the
    /// exposition accumulates them).
    pub fn buckets(&self) -> Vec<(f64, u64)> {
        BARRIER_BUCKETS_MS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(self.counts)
            .collect()
    }
}

/// Commit barriers since start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BarrierFigures {
    /// From one barrier's cut to the next one's.
    pub interval: DurationHistogram,
    /// From a barrier's cut to its transaction's commit.
    pub duration: DurationHistogram,
}

/// The passes of the log's upkeep (repartition purges, the log's
/// compaction and retention) on the upkeep thread, since start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpkeepFigures {
    /// Passes run to their end.
    pub passes: u64,
    /// Steps of those passes that failed (a purge, the log's upkeep): each
    /// is logged and tried again at the next pass.
    pub failures: u64,
    /// Passes due while the last one was still running, skipped.
    pub skipped: u64,
    /// How long each pass took, on the upkeep thread (no commit waits for it).
    pub duration: DurationHistogram,
    /// What a pass that panicked said: the upkeep thread ended there, and no
    /// pass has run since.
    pub panicked: Option<String>,
}

/// One store's live segments (`store.segments`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSegments {
    /// The task owning the store.
    pub task: TaskId,
    /// The store's name.
    pub store: String,
    /// Its live segments.
    pub segments: usize,
}

/// What one lane reported at its barrier crossings.
#[derive(Debug, Clone, Default)]
pub(crate) struct LaneFigures {
    /// Its tasks' counters at the last crossing whose barrier committed.
    committed: TaskMetrics,
    /// Its tasks' counters at a crossing whose barrier has not committed yet.
    crossed: Option<(u64, TaskMetrics)>,
    segments: Vec<StoreSegments>,
}

/// The trackers' counters and gauges beyond the live engine's own.
#[derive(Debug, Clone, Default)]
struct TrackerTotals {
    /// Late arrivals the live engine dispatched before its last committed cut.
    committed_late: u64,
    /// Of engines that ended: late arrivals committed, time held by alignment,
    /// the largest out-of-orderness.
    retired_late: u64,
    retired_held_ms: i64,
    retired_out_of_orderness_ms: i64,
}

/// Restore of the changelogs at start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RestoreFigures {
    /// Changelog records read for restore so far (the total once every lane
    /// has read its changelogs).
    pub records_total: u64,
    /// Of those, applied to the stores.
    pub records_restored: u64,
}

/// The cells shared by the engine, the lanes and the readers.
#[derive(Debug, Default)]
pub(crate) struct MetricsCells {
    watermark: Mutex<Option<TrackerMetrics>>,
    tracker_totals: Mutex<TrackerTotals>,
    barriers: Mutex<BarrierFigures>,
    lanes: Mutex<Vec<LaneFigures>>,
    /// The committed task counters of engines that ended (a rebalance, an
    /// in-place replacement): counters never go back when an engine is rebuilt.
    retired: Mutex<TaskMetrics>,
    restore_total: AtomicU64,
    restored: AtomicU64,
    upkeep: Mutex<UpkeepFigures>,
}

impl MetricsCells {
    /// The tracker's figures (every snapshot refresh).
    pub(crate) fn set_watermark(&self, m: TrackerMetrics) {
        *self.watermark.lock().expect("metrics lock") = Some(m);
    }

    /// Barrier `barrier` committed: the interval since the previous cut, how
    /// long this one took from cut to commit, and `late_at_cut`, the late
    /// arrivals the engine's trackers had counted when it was cut. What the
    /// lanes counted up to their crossing of it counts from now on.
    pub(crate) fn on_barrier(
        &self,
        barrier: u64,
        late_at_cut: u64,
        interval: Option<Duration>,
        duration: Duration,
    ) {
        {
            let mut b = self.barriers.lock().expect("metrics lock");
            if let Some(i) = interval {
                b.interval.observe(i);
            }
            b.duration.observe(duration);
        }
        for lane in self.lanes.lock().expect("metrics lock").iter_mut() {
            if lane.crossed.as_ref().is_some_and(|(n, _)| *n <= barrier)
                && let Some((_, tasks)) = lane.crossed.take()
            {
                lane.committed = tasks;
            }
        }
        self.tracker_totals
            .lock()
            .expect("metrics lock")
            .committed_late = late_at_cut;
    }

    /// Lane `lane` crossed barrier `barrier`: its tasks' counters (shown
    /// once the barrier commits) and segments now.
    pub(crate) fn set_lane<'a>(
        &self,
        lane: usize,
        barrier: u64,
        tasks: impl Iterator<Item = (TaskId, &'a stoatflow_streams::StreamTask)>,
    ) {
        let mut counters = TaskMetrics::default();
        let mut segments = Vec::new();
        for (id, task) in tasks {
            counters.merge(task.metrics());
            for store in task.store_names() {
                let live = task
                    .state_store(store)
                    .and_then(|s| s.borrow().live_segments());
                if let Some(live) = live {
                    segments.push(StoreSegments {
                        task: id,
                        store: store.to_owned(),
                        segments: live,
                    });
                }
            }
        }
        let mut lanes = self.lanes.lock().expect("metrics lock");
        if lanes.len() <= lane {
            lanes.resize_with(lane + 1, LaneFigures::default);
        }
        lanes[lane].crossed = Some((barrier, counters));
        lanes[lane].segments = segments;
    }

    /// The engine ended: what its lanes and trackers counted up to its last
    /// committed barrier moves to the retired totals (what they counted
    /// after it is counted again by the next engine, which processes it
    /// again), and its gauges (store segments) go with it.
    pub(crate) fn retire_lanes(&self) {
        let mut lanes = self.lanes.lock().expect("metrics lock");
        let mut retired = self.retired.lock().expect("metrics lock");
        for lane in lanes.drain(..) {
            retired.merge(&lane.committed);
        }
        let mut totals = self.tracker_totals.lock().expect("metrics lock");
        totals.retired_late += std::mem::take(&mut totals.committed_late);
        if let Some(live) = self.watermark.lock().expect("metrics lock").as_mut() {
            totals.retired_held_ms += std::mem::take(&mut live.alignment_held_time_total_ms);
            totals.retired_out_of_orderness_ms = totals
                .retired_out_of_orderness_ms
                .max(std::mem::take(&mut live.out_of_orderness_max_ms));
        }
    }

    /// Records about to be restored.
    pub(crate) fn restore_expected(&self, n: u64) {
        self.restore_total.fetch_add(n, Ordering::Relaxed);
    }

    /// Records just restored.
    pub(crate) fn restored(&self, n: u64) {
        self.restored.fetch_add(n, Ordering::Relaxed);
    }

    /// A pass of the log's upkeep ended after `took`, `failures` of its
    /// steps failed.
    pub(crate) fn on_upkeep_pass(&self, took: Duration, failures: u64) {
        let mut u = self.upkeep.lock().expect("metrics lock");
        u.passes += 1;
        u.failures += failures;
        u.duration.observe(took);
    }

    /// A pass of the log's upkeep panicked with `message`, ending the thread.
    pub(crate) fn on_upkeep_panicked(&self, message: String) {
        self.upkeep.lock().expect("metrics lock").panicked = Some(message);
    }

    /// A pass of the log's upkeep was due and skipped.
    pub(crate) fn on_upkeep_skipped(&self) {
        self.upkeep.lock().expect("metrics lock").skipped += 1;
    }

    pub(crate) fn snapshot(&self, state: AppState, event_time_tracking: bool) -> MetricsSnapshot {
        let lanes = self.lanes.lock().expect("metrics lock");
        let mut tasks = self.retired.lock().expect("metrics lock").clone();
        let mut store_segments = Vec::new();
        for lane in lanes.iter() {
            tasks.merge(&lane.committed);
            store_segments.extend(lane.segments.iter().cloned());
        }
        drop(lanes);
        store_segments.sort_by(|a, b| (a.task, &a.store).cmp(&(b.task, &b.store)));
        let totals = self.tracker_totals.lock().expect("metrics lock").clone();
        let watermark = self
            .watermark
            .lock()
            .expect("metrics lock")
            .clone()
            .map(|live| TrackerMetrics {
                late_records_total: totals.retired_late + totals.committed_late,
                alignment_held_time_total_ms: totals.retired_held_ms
                    + live.alignment_held_time_total_ms,
                out_of_orderness_max_ms: totals
                    .retired_out_of_orderness_ms
                    .max(live.out_of_orderness_max_ms),
                ..live
            });
        MetricsSnapshot {
            client_state: state,
            event_time_tracking,
            watermark,
            dropped: DropReason::ALL.map(|r| (r, tasks.dropped(r))),
            records_in: tasks.records_in,
            records_out: tasks.records_out,
            store_segments,
            barriers: self.barriers.lock().expect("metrics lock").clone(),
            restore: RestoreFigures {
                records_total: self.restore_total.load(Ordering::Relaxed),
                records_restored: self.restored.load(Ordering::Relaxed),
            },
            // The application's handle fills it in (the copies report to it).
            standby_lag: None,
            upkeep: self.upkeep.lock().expect("metrics lock").clone(),
        }
    }
}

/// Everything the runtime reports for `/metrics`, read at once.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsSnapshot {
    /// `stoatflow.client.state`.
    pub client_state: AppState,
    /// `stoatflow.topology.event.time.tracking`: whether the tracker runs
    /// (`ENABLED`, or `AUTO` with a topology that needs event time).
    pub event_time_tracking: bool,
    /// The `stoatflow.watermark.*` family (the global figures: the least
    /// watermark over sub-topologies, sums of counts); `None` before the
    /// engine published one. `lag_ms` is against the wall clock when read.
    /// `late_records_total` counts the records dispatched below the global
    /// watermark of their sub-topology (late arrivals, most of them still
    /// inside their window's grace; the drops are `dropped`), each once:
    /// those of committed epochs.
    pub watermark: Option<TrackerMetrics>,
    /// `stoatflow.dropped.records.total{reason}`, every reason, in
    /// committed epochs.
    pub dropped: [(DropReason, u64); DropReason::ALL.len()],
    /// Records that entered the tasks through a source, in committed epochs.
    pub records_in: u64,
    /// Records that left the tasks through a sink, in committed epochs.
    pub records_out: u64,
    /// `store.segments` of every segmented store, by task and store.
    pub store_segments: Vec<StoreSegments>,
    /// Commit-barrier interval and duration.
    pub barriers: BarrierFigures,
    /// Restore progress.
    pub restore: RestoreFigures,
    /// Offsets the standby copies are behind their changelogs' ends
    /// (`num.standby.replicas`); `None` until they measured it.
    pub standby_lag: Option<u64>,
    /// The passes of the log's upkeep.
    pub upkeep: UpkeepFigures,
}

/// The tracker figures of several sub-topologies as one: the least current
/// watermark, the summed counts, the largest out-of-orderness.
pub(crate) fn combine(figures: impl Iterator<Item = TrackerMetrics>) -> Option<TrackerMetrics> {
    figures.reduce(|a, b| TrackerMetrics {
        current: a.current.min(b.current),
        lag_ms: match (a.lag_ms, b.lag_ms) {
            (Some(x), Some(y)) => Some(x.max(y)),
            _ => None,
        },
        late_records_total: a.late_records_total + b.late_records_total,
        out_of_orderness_max_ms: a.out_of_orderness_max_ms.max(b.out_of_orderness_max_ms),
        alignment_held_time_total_ms: a.alignment_held_time_total_ms
            + b.alignment_held_time_total_ms,
    })
}

/// `lag_ms` of `current` against the wall clock `now_ms`.
pub(crate) fn lag_at(current: Watermark, now_ms: i64) -> Option<i64> {
    (!current.is_none_yet()).then(|| now_ms.saturating_sub(current.as_millis()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_counts_each_observation_in_its_own_bucket() {
        let mut h = DurationHistogram::default();
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_millis(120));
        h.observe(Duration::from_secs(60));
        let b = h.buckets();
        assert_eq!(b.len(), BARRIER_BUCKETS_MS.len() + 1);
        assert_eq!(b[0], (5.0, 1));
        assert_eq!(b[5], (150.0, 1), "120 ms falls in the 150 ms bucket");
        assert_eq!(b.iter().map(|(_, n)| n).sum::<u64>(), 3);
        assert_eq!(
            *b.last().unwrap(),
            (f64::INFINITY, 1),
            "60 s is above every bound"
        );
        assert_eq!(h.count, 3);
        assert_eq!(h.sum_ms, 60_123.0);
        assert_eq!(h.last, Some(Duration::from_secs(60)));
    }

    #[test]
    fn sub_topologies_combine_to_the_least_watermark_and_summed_counts() {
        let a = TrackerMetrics {
            current: Watermark::from_millis(100),
            lag_ms: Some(900),
            late_records_total: 2,
            out_of_orderness_max_ms: 5,
            alignment_held_time_total_ms: 10,
        };
        let b = TrackerMetrics {
            current: Watermark::from_millis(50),
            lag_ms: Some(950),
            late_records_total: 3,
            out_of_orderness_max_ms: 7,
            alignment_held_time_total_ms: 1,
        };
        let c = combine([a, b].into_iter()).unwrap();
        assert_eq!(c.current, Watermark::from_millis(50));
        assert_eq!(c.late_records_total, 5);
        assert_eq!(c.out_of_orderness_max_ms, 7);
        assert_eq!(c.alignment_held_time_total_ms, 11);
        assert_eq!(lag_at(Watermark::MIN, 1_000), None);
        assert_eq!(lag_at(Watermark::from_millis(400), 1_000), Some(600));
    }
}
