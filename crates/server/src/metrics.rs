//! [`MetricsRegistry`]: the Prometheus registry of `GET /metrics`
//! (docs/operating.md#metrics).
//!
//! Owns the metric catalogue ([`Metric`]: every exported name, its type, its
//! recording level and its help text) and the exposition through
//! `prometheus-client`. The figures come from the application's
//! [`stoatflow_runtime::MetricsSnapshot`], read once per scrape by a
//! collector: the runtime records cheap numbers and never knows a metric
//! name or a text format; this module never computes a figure, it only
//! converts the runtime's milliseconds to seconds.
//!
//! Prometheus conventions, checked by `promtool check metrics` in the tests:
//! base units (seconds; an event time is seconds since the epoch), the unit
//! last in the name before `_total`, `_total` on counters and only there.
//! The application id is a label of one info metric,
//! `stoatflow_app_info{application_id,version} 1`, not of every series: it
//! is constant for a process, as Prometheus' guidance for such labels
//! has it, and a query that needs it joins on `instance`
//! (docs/operating.md#metrics).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use stoatflow_runtime::{DurationHistogram, MetricsSnapshot};
use stoatflow_time::WatermarksSnapshot;

use crate::endpoints::Endpoints;

/// `metrics.recording.level`: which metrics are recorded and exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
#[non_exhaustive]
pub enum RecordingLevel {
    /// The default: everything but the debug-level metrics.
    #[default]
    Info,
    /// Adds `stoatflow_watermark_late_records_total`.
    Debug,
}

/// A `metrics.recording.level` value that is not a level.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("metrics.recording.level: {value:?} is not a recording level (expected INFO or DEBUG)")]
#[non_exhaustive]
pub struct BadRecordingLevel {
    /// The value given.
    pub value: String,
}

impl FromStr for RecordingLevel {
    type Err = BadRecordingLevel;

    /// `INFO` or `DEBUG`, in any case (Kafka Streams' `TRACE` records no
    /// more here than `DEBUG`, and is accepted as it).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_uppercase().as_str() {
            "INFO" => Ok(RecordingLevel::Info),
            "DEBUG" | "TRACE" => Ok(RecordingLevel::Debug),
            _ => Err(BadRecordingLevel {
                value: s.to_owned(),
            }),
        }
    }
}

/// How a metric is exposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetricKind {
    /// A value that goes up and down.
    Gauge,
    /// A monotonic count (`_total`).
    Counter,
    /// Bucketed observations (`_bucket`, `_sum`, `_count`).
    Histogram,
}

/// Every metric `/metrics` exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Metric {
    /// The application's id and the server's version as labels of a
    /// constant 1.
    AppInfo,
    /// The global watermark, event-time seconds since the epoch.
    WatermarkCurrent,
    /// Wall clock minus the global watermark, seconds.
    WatermarkLag,
    /// Whether the application has a global watermark (1) or none yet (0).
    WatermarkPresent,
    /// `stoatflow.watermark.late.records.total` (debug).
    WatermarkLateRecords,
    /// The largest out-of-orderness seen, seconds.
    WatermarkOutOfOrdernessMax,
    /// Seconds sources spent held by watermark alignment.
    WatermarkAlignmentHeldTime,
    /// `stoatflow.topology.event.time.tracking`.
    EventTimeTracking,
    /// `stoatflow.dropped.records.total{reason}`.
    DroppedRecords,
    /// `store.segments{task,store}`.
    StoreSegments,
    /// `stoatflow.client.state`.
    ClientState,
    /// The commit-barrier interval, seconds.
    BarrierInterval,
    /// The commit-barrier duration (cut to commit), seconds.
    BarrierDuration,
    /// Records in through the sources.
    RecordsIn,
    /// Records out through the sinks.
    RecordsOut,
    /// Changelog records restored at start.
    RestoreRestored,
    /// Changelog records read and not yet restored.
    RestoreRemaining,
    /// Offsets the standby copies are behind their changelogs.
    StandbyLag,
    /// Each source partition's watermark, seconds, by topic and partition.
    PartitionWatermark,
}

impl Metric {
    /// Every metric, in exposition order.
    pub const ALL: [Metric; 19] = [
        Metric::AppInfo,
        Metric::WatermarkCurrent,
        Metric::WatermarkLag,
        Metric::WatermarkPresent,
        Metric::WatermarkLateRecords,
        Metric::WatermarkOutOfOrdernessMax,
        Metric::WatermarkAlignmentHeldTime,
        Metric::EventTimeTracking,
        Metric::DroppedRecords,
        Metric::StoreSegments,
        Metric::ClientState,
        Metric::BarrierInterval,
        Metric::BarrierDuration,
        Metric::RecordsIn,
        Metric::RecordsOut,
        Metric::RestoreRestored,
        Metric::RestoreRemaining,
        Metric::StandbyLag,
        Metric::PartitionWatermark,
    ];

    /// The family name as exposed (counters end in `_total`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::AppInfo => "stoatflow_app_info",
            Metric::WatermarkCurrent => "stoatflow_watermark_seconds",
            Metric::WatermarkLag => "stoatflow_watermark_lag_seconds",
            Metric::WatermarkPresent => "stoatflow_watermark_present",
            Metric::WatermarkLateRecords => "stoatflow_watermark_late_records_total",
            Metric::WatermarkOutOfOrdernessMax => {
                "stoatflow_watermark_out_of_orderness_max_seconds"
            }
            Metric::WatermarkAlignmentHeldTime => {
                "stoatflow_watermark_alignment_held_seconds_total"
            }
            Metric::EventTimeTracking => "stoatflow_topology_event_time_tracking",
            Metric::DroppedRecords => "stoatflow_dropped_records_total",
            Metric::StoreSegments => "stoatflow_store_segments",
            Metric::ClientState => "stoatflow_client_state",
            Metric::BarrierInterval => "stoatflow_commit_barrier_interval_seconds",
            Metric::BarrierDuration => "stoatflow_commit_barrier_duration_seconds",
            Metric::RecordsIn => "stoatflow_records_in_total",
            Metric::RecordsOut => "stoatflow_records_out_total",
            Metric::RestoreRestored => "stoatflow_restore_records_restored_total",
            Metric::RestoreRemaining => "stoatflow_restore_records_remaining",
            Metric::StandbyLag => "stoatflow_standby_lag_records",
            Metric::PartitionWatermark => "stoatflow_partition_watermark_seconds",
        }
    }

    /// Its type.
    pub fn kind(self) -> MetricKind {
        match self {
            Metric::WatermarkLateRecords
            | Metric::WatermarkAlignmentHeldTime
            | Metric::DroppedRecords
            | Metric::RecordsIn
            | Metric::RecordsOut
            | Metric::RestoreRestored => MetricKind::Counter,
            Metric::BarrierInterval | Metric::BarrierDuration => MetricKind::Histogram,
            _ => MetricKind::Gauge,
        }
    }

    /// The level from which it is recorded.
    pub fn level(self) -> RecordingLevel {
        match self {
            Metric::WatermarkLateRecords => RecordingLevel::Debug,
            _ => RecordingLevel::Info,
        }
    }

    /// Its labels.
    pub fn labels(self) -> &'static [&'static str] {
        match self {
            Metric::AppInfo => &["application_id", "version"],
            Metric::DroppedRecords => &["reason"],
            Metric::StoreSegments => &["task", "store"],
            Metric::PartitionWatermark => &["topic", "partition"],
            _ => &[],
        }
    }

    /// The help line.
    pub fn help(self) -> &'static str {
        match self {
            Metric::AppInfo => {
                "Always 1: the application id and the server's version as labels (join on instance)."
            }
            Metric::WatermarkCurrent => {
                "The application's global watermark, event time in seconds since the epoch (absent before the first)."
            }
            Metric::WatermarkLag => "Wall clock minus the global watermark, seconds.",
            Metric::WatermarkPresent => {
                "1 when the application has a global watermark, 0 while it has none (absent without event-time tracking); /watermarks names the partition holding it back."
            }
            Metric::WatermarkLateRecords => {
                "Records dispatched with an event time below the global watermark (most are folded in within grace)."
            }
            Metric::WatermarkOutOfOrdernessMax => {
                "The largest amount, seconds, by which a dispatched record was older than the newest dispatched before it."
            }
            Metric::WatermarkAlignmentHeldTime => {
                "Total wall-clock seconds sources spent paused by watermark alignment."
            }
            Metric::EventTimeTracking => {
                "1 when the engine tracks watermarks for this topology, 0 when it decided it has no event time."
            }
            Metric::DroppedRecords => {
                "Records dropped, by reason (late_* is Kafka Streams' parity)."
            }
            Metric::StoreSegments => "Live segments of each segmented store.",
            Metric::ClientState => {
                "The application state: 2 CREATED, 3 REBALANCING, 4 RUNNING, 5 PENDING_SHUTDOWN, 6 NOT_RUNNING, 7 PENDING_ERROR, 8 ERROR."
            }
            Metric::BarrierInterval => {
                "Wall-clock seconds from one commit barrier's cut to the next."
            }
            Metric::BarrierDuration => {
                "Wall-clock seconds from a commit barrier's cut to its transaction's commit."
            }
            Metric::RecordsIn => "Records that entered the tasks through a source.",
            Metric::RecordsOut => "Records that left the tasks through a sink.",
            Metric::RestoreRestored => "Changelog records applied to the stores at start.",
            Metric::RestoreRemaining => "Changelog records read for restore and not yet applied.",
            Metric::PartitionWatermark => {
                "Each source partition's watermark, event time in seconds since the epoch (absent before its first); the global watermark is the least of those not idle."
            }
            Metric::StandbyLag => {
                "Offsets the standby copies (num.standby.replicas) are behind their changelogs' ends: what a promotion would restore (absent until measured)."
            }
        }
    }

    /// The family name given to the encoder (it appends `_total` to counters).
    fn registered_name(self) -> &'static str {
        let name = self.name();
        match self.kind() {
            MetricKind::Counter => name.strip_suffix("_total").unwrap_or(name),
            _ => name,
        }
    }

    fn metric_type(self) -> MetricType {
        match self.kind() {
            MetricKind::Gauge => MetricType::Gauge,
            MetricKind::Counter => MetricType::Counter,
            MetricKind::Histogram => MetricType::Histogram,
        }
    }

    /// The sample names a scrape may contain for this family.
    pub fn sample_names(self) -> Vec<String> {
        match self.kind() {
            MetricKind::Histogram => ["_bucket", "_sum", "_count"]
                .iter()
                .map(|s| format!("{}{s}", self.name()))
                .collect(),
            _ => vec![self.name().to_owned()],
        }
    }

    /// The metrics exported at `level`.
    pub fn at(level: RecordingLevel) -> impl Iterator<Item = Metric> {
        Metric::ALL.into_iter().filter(move |m| m.level() <= level)
    }
}

/// The registry behind `GET /metrics`: a collector over the application
/// that reads its figures once per scrape.
#[derive(Debug)]
pub struct MetricsRegistry {
    registry: Registry,
}

/// The `Content-Type` of [`MetricsRegistry::render`]'s text.
pub const METRICS_CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

impl MetricsRegistry {
    /// A registry exporting `app`'s figures at `level`.
    pub fn new(app: Arc<dyn Endpoints>, level: RecordingLevel) -> Self {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(AppCollector { app, level }));
        MetricsRegistry { registry }
    }

    /// The Prometheus text exposition (format 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)
            .expect("writing to a String does not fail");
        out
    }
}

struct AppCollector {
    app: Arc<dyn Endpoints>,
    level: RecordingLevel,
}

impl fmt::Debug for AppCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppCollector")
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

impl Collector for AppCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let snapshot = self.app.metrics();
        let (_, state_code) = self.app.client_state();
        let application_id = self.app.application_id();
        for metric in Metric::at(self.level) {
            let e = encoder.encode_descriptor(
                metric.registered_name(),
                metric.help(),
                None,
                metric.metric_type(),
            )?;
            match &snapshot {
                _ if metric == Metric::AppInfo => app_info(e, &application_id)?,
                _ if metric == Metric::PartitionWatermark => {
                    partition_watermarks(e, self.app.watermarks().as_ref())?;
                }
                Some(s) => encode_figures(metric, s, e)?,
                // An application without a runtime behind it (tests) has a
                // state and nothing else.
                None if metric == Metric::ClientState => gauge(e, i64::from(state_code))?,
                None => {}
            }
        }
        Ok(())
    }
}

fn gauge(mut e: MetricEncoder, v: i64) -> fmt::Result {
    e.encode_gauge(&v)
}

/// Milliseconds as seconds.
fn seconds(ms: i64) -> f64 {
    ms as f64 / 1_000.0
}

fn gauge_seconds(mut e: MetricEncoder, ms: i64) -> fmt::Result {
    e.encode_gauge(&seconds(ms))
}

fn app_info(mut e: MetricEncoder, application_id: &str) -> fmt::Result {
    e.encode_family(&[
        ("application_id", application_id),
        ("version", env!("CARGO_PKG_VERSION")),
    ])?
    .encode_gauge(&1i64)
}

/// One sample a source partition with a watermark, labelled by topic and
/// partition (a partition that never had one has no sample).
fn partition_watermarks(mut e: MetricEncoder, view: Option<&WatermarksSnapshot>) -> fmt::Result {
    for p in view.map(|v| v.partitions.values()).into_iter().flatten() {
        if p.watermark.is_none_yet() {
            continue;
        }
        let partition = p.partition.partition().to_string();
        e.encode_family(&[
            ("topic", p.partition.topic()),
            ("partition", partition.as_str()),
        ])?
        .encode_gauge(&seconds(p.watermark.as_millis()))?;
    }
    Ok(())
}

fn counter(mut e: MetricEncoder, v: u64) -> fmt::Result {
    e.encode_counter::<NoLabelSet, _, u64>(&v, None)
}

/// The runtime's millisecond histogram with its bounds and sum in seconds.
fn histogram_seconds(mut e: MetricEncoder, h: &DurationHistogram) -> fmt::Result {
    let buckets: Vec<(f64, u64)> = h
        .buckets()
        .into_iter()
        .map(|(upper_ms, n)| (upper_ms / 1_000.0, n))
        .collect();
    e.encode_histogram::<NoLabelSet>(h.sum_ms / 1_000.0, h.count, &buckets, None)
}

fn encode_figures(metric: Metric, s: &MetricsSnapshot, mut e: MetricEncoder) -> fmt::Result {
    let w = s.watermark.as_ref();
    match metric {
        Metric::WatermarkCurrent => match w.filter(|w| !w.current.is_none_yet()) {
            Some(w) => gauge_seconds(e, w.current.as_millis()),
            None => Ok(()),
        },
        Metric::WatermarkLag => match w.and_then(|w| w.lag_ms) {
            Some(lag) => gauge_seconds(e, lag),
            None => Ok(()),
        },
        // Exported only where a watermark is expected: the stall alert's "none for N minutes".
        Metric::WatermarkPresent if s.event_time_tracking => {
            gauge(e, i64::from(w.is_some_and(|w| !w.current.is_none_yet())))
        }
        Metric::WatermarkPresent => Ok(()),
        Metric::WatermarkLateRecords => counter(e, w.map_or(0, |w| w.late_records_total)),
        Metric::WatermarkOutOfOrdernessMax => {
            gauge_seconds(e, w.map_or(0, |w| w.out_of_orderness_max_ms))
        }
        Metric::WatermarkAlignmentHeldTime => e.encode_counter::<NoLabelSet, _, u64>(
            &seconds(w.map_or(0, |w| w.alignment_held_time_total_ms.max(0))),
            None,
        ),
        Metric::EventTimeTracking => gauge(e, i64::from(s.event_time_tracking)),
        Metric::DroppedRecords => {
            for (reason, n) in s.dropped {
                e.encode_family(&[("reason", reason.label())])?
                    .encode_counter::<NoLabelSet, _, u64>(&n, None)?;
            }
            Ok(())
        }
        Metric::StoreSegments => {
            for seg in &s.store_segments {
                e.encode_family(&[("task", seg.task.to_string()), ("store", seg.store.clone())])?
                    .encode_gauge(&(seg.segments as u64))?;
            }
            Ok(())
        }
        Metric::ClientState => gauge(e, i64::from(s.client_state.code())),
        // Encoded by the collector, snapshot or not.
        Metric::AppInfo | Metric::PartitionWatermark => Ok(()),
        Metric::BarrierInterval => histogram_seconds(e, &s.barriers.interval),
        Metric::BarrierDuration => histogram_seconds(e, &s.barriers.duration),
        Metric::RecordsIn => counter(e, s.records_in),
        Metric::RecordsOut => counter(e, s.records_out),
        Metric::RestoreRestored => counter(e, s.restore.records_restored),
        Metric::RestoreRemaining => gauge(
            e,
            s.restore
                .records_total
                .saturating_sub(s.restore.records_restored) as i64,
        ),
        Metric::StandbyLag => match s.standby_lag {
            Some(lag) => gauge(e, i64::try_from(lag).unwrap_or(i64::MAX)),
            None => Ok(()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recording_levels_parse_in_any_case_and_name_a_bad_value() {
        assert_eq!("info".parse(), Ok(RecordingLevel::Info));
        assert_eq!("DEBUG".parse(), Ok(RecordingLevel::Debug));
        assert_eq!("Trace".parse(), Ok(RecordingLevel::Debug));
        let err = "verbose".parse::<RecordingLevel>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "metrics.recording.level: \"verbose\" is not a recording level (expected INFO or DEBUG)"
        );
    }

    #[test]
    fn the_catalogue_has_one_entry_per_name_and_only_late_records_is_debug() {
        let mut names: Vec<_> = Metric::ALL.iter().map(|m| m.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Metric::ALL.len());
        let debug: Vec<_> = Metric::ALL
            .iter()
            .filter(|m| m.level() == RecordingLevel::Debug)
            .collect();
        assert_eq!(debug, [&Metric::WatermarkLateRecords]);
        for m in Metric::ALL {
            assert_eq!(
                m.kind() == MetricKind::Counter,
                m.name().ends_with("_total"),
                "{}: counters and only counters end in _total",
                m.name()
            );
        }
    }

    /// An application with a watermark on one source partition and none yet
    /// on another.
    struct TwoPartitions;

    impl Endpoints for TwoPartitions {
        fn watermarks(&self) -> Option<WatermarksSnapshot> {
            use stoatflow_time::{PartitionSnapshot, SourcePartition, Watermark};
            let row = |p: i32, w: Watermark| PartitionSnapshot {
                partition: SourcePartition::new("clicks", p),
                watermark: w,
                idle: false,
                last_event_time: None,
                alignment_group: None,
                alignment_held: false,
                drift_from_group_min_ms: 0,
                idleness_timeout_ms: 300_000,
                preview_watermark: None,
                head_held_since: None,
            };
            Some(WatermarksSnapshot {
                global: Watermark::MIN,
                alignment_group_mins: Default::default(),
                alignment_binding: None,
                partitions: [
                    ("clicks:0".to_owned(), row(0, Watermark::from_millis(1_500))),
                    ("clicks:1".to_owned(), row(1, Watermark::MIN)),
                ]
                .into(),
                holder: None,
                registered: true,
            })
        }
        fn client_state(&self) -> (&'static str, u8) {
            ("RUNNING", 4)
        }
        fn application_id(&self) -> String {
            "app".into()
        }
    }

    #[test]
    fn each_partition_with_a_watermark_has_its_gauge_in_seconds_and_one_without_has_none() {
        let text = MetricsRegistry::new(Arc::new(TwoPartitions), RecordingLevel::Info).render();
        let samples: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("stoatflow_partition_watermark_seconds"))
            .collect();
        assert_eq!(
            samples,
            ["stoatflow_partition_watermark_seconds{topic=\"clicks\",partition=\"0\"} 1.5"],
            "{text}"
        );
    }

    #[test]
    fn names_carry_base_units_and_no_abbreviation() {
        for m in Metric::ALL {
            let words: Vec<&str> = m.name().split('_').collect();
            for abbreviated in [
                "ms",
                "millis",
                "milliseconds",
                "us",
                "ns",
                "sec",
                "secs",
                "min",
            ] {
                assert!(
                    !words.contains(&abbreviated),
                    "{}: {abbreviated} is not a base unit (seconds)",
                    m.name()
                );
            }
        }
        let timed = [
            Metric::PartitionWatermark,
            Metric::WatermarkCurrent,
            Metric::WatermarkLag,
            Metric::WatermarkOutOfOrdernessMax,
            Metric::WatermarkAlignmentHeldTime,
            Metric::BarrierInterval,
            Metric::BarrierDuration,
        ];
        for m in timed {
            let unit = m.name().strip_suffix("_total").unwrap_or(m.name());
            assert!(unit.ends_with("_seconds"), "{}: the unit is last", m.name());
        }
    }
}
