//! [`TaskContext`]: what every processor sees while it runs: the lane floor,
//! the current watermark, the record's metadata, the epoch's pending output
//! and the task's counters.
//!
//! It is owned by one task and passed by `&mut` down the processor chain; it
//! knows nothing of threads or brokers.

use std::sync::Arc;

use stoatflow_time::Watermark;

use crate::record::Headers;

/// Why a record was dropped (`stoatflow.dropped.records.total{reason}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum DropReason {
    /// Its window had closed (docs/late.md#late-rule).
    LateWindow,
    /// Its session had closed.
    LateSession,
    /// Its key or value could not be deserialized and the handler continued.
    DeserializationError,
    /// A null key reached an aggregation or join.
    NullKey,
    /// A dynamic sink picked a topic that does not exist and the production
    /// handler continued.
    MissingTopic,
}

impl DropReason {
    /// All reasons, in label order.
    pub const ALL: [DropReason; 5] = [
        DropReason::LateWindow,
        DropReason::LateSession,
        DropReason::DeserializationError,
        DropReason::NullKey,
        DropReason::MissingTopic,
    ];

    /// The Prometheus label value.
    pub fn label(self) -> &'static str {
        match self {
            DropReason::LateWindow => "late_window",
            DropReason::LateSession => "late_session",
            DropReason::DeserializationError => "deserialization_error",
            DropReason::NullKey => "null_key",
            DropReason::MissingTopic => "missing_topic",
        }
    }
}

/// One drop, as data: where the record came from, its key, why, and the
/// window or session it missed.
///
/// A record that misses several windows (hopping windows, a sliding record's
/// left and right windows) gives one event per window missed: that is the
/// per-window detail, also logged at debug level. The metric counts records,
/// not windows: exactly the events with `counted` set (one per record and
/// dropping node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropEvent {
    /// Source topic, partition and offset of the record (empty topic and
    /// `None` for one an emission pass or punctuator created).
    pub source: RecordMetadata,
    /// The key, rendered with `Debug` (`None` when it did not deserialize).
    pub key: Option<String>,
    /// The record's event time.
    pub timestamp: i64,
    /// Why.
    pub reason: DropReason,
    /// The window or session the record missed, and its close (docs/late.md#closes);
    /// `None` for a drop that is not about time.
    pub window: Option<(crate::record::Window, i64)>,
    /// The node that dropped it.
    pub node: String,
    /// Whether the metric counted this event: true for the first window a
    /// record missed at a node (and for every drop that is not about a
    /// window), false for each further window the same record missed.
    pub counted: bool,
}

/// The task's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskMetrics {
    dropped: [u64; DropReason::ALL.len()],
    /// Records that entered through a source.
    pub records_in: u64,
    /// Records that left through a sink.
    pub records_out: u64,
    /// Early emissions of eager suppress buffers that were full.
    pub suppress_early_emits: u64,
}

impl TaskMetrics {
    /// `dropped.records.total{reason}`.
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.dropped[reason as usize]
    }

    pub(crate) fn drop_record(&mut self, reason: DropReason) {
        self.dropped[reason as usize] += 1;
    }

    /// Adds another task's counters.
    pub fn merge(&mut self, other: &TaskMetrics) {
        for (a, b) in self.dropped.iter_mut().zip(other.dropped) {
            *a += b;
        }
        self.records_in += other.records_in;
        self.records_out += other.records_out;
        self.suppress_early_emits += other.suppress_early_emits;
    }
}

/// A record leaving through a sink, serialized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputRecord {
    /// Destination topic.
    pub topic: Arc<str>,
    /// Key bytes (`None` = null).
    pub key: Option<Vec<u8>>,
    /// Value bytes (`None` = null, a tombstone).
    pub value: Option<Vec<u8>>,
    /// Timestamp, ms.
    pub timestamp: i64,
    /// Headers.
    pub headers: Headers,
    /// Set when an emission pass produced it: the close and start of the
    /// window (or join null side, or suppressed record) whose final result
    /// it is. A runner merges the final results of several tasks by
    /// (close, key, start), so an output partition's sequence does not
    /// depend on which epoch each was emitted in.
    pub emitted: Option<Emitted>,
}

/// The window a final result closes, as an emission pass forwarded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Emitted {
    /// The window's close (docs/late.md#closes).
    pub close: i64,
    /// The window's start (a join null side's or a suppressed record's
    /// timestamp).
    pub start: i64,
}

/// Where the record being processed came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordMetadata {
    /// Source topic (empty for records a punctuator or emission pass created).
    pub topic: Arc<str>,
    /// Partition, if from a log.
    pub partition: Option<i32>,
    /// Offset, if from a log.
    pub offset: Option<i64>,
}

/// Per-task state every processor can read.
#[derive(Debug)]
pub struct TaskContext {
    pub(crate) floor: Watermark,
    pub(crate) watermark: Watermark,
    pub(crate) outputs: Vec<OutputRecord>,
    pub(crate) metrics: TaskMetrics,
    pub(crate) meta: RecordMetadata,
    /// The task's wall clock, as of its last tick (never read from the system).
    pub(crate) wall_clock: stoatflow_time::WallTime,
    /// Dropped records as data, when someone collects them (the test
    /// driver); `None` otherwise, so nothing accumulates in the engine.
    pub(crate) drop_events: Option<Vec<DropEvent>>,
    /// While an emission pass forwards a final result: its window.
    pub(crate) emitting: Option<Emitted>,
    /// Where dynamic sinks look their topics up (`None`: every topic
    /// exists, as under the test driver).
    pub(crate) topics: Option<Arc<dyn super::topic_catalog::TopicCatalog>>,
}

impl Default for TaskContext {
    fn default() -> Self {
        TaskContext {
            floor: Watermark::MIN,
            watermark: Watermark::MIN,
            outputs: Vec::new(),
            metrics: TaskMetrics::default(),
            meta: RecordMetadata::default(),
            wall_clock: stoatflow_time::WallTime::EPOCH,
            drop_events: None,
            emitting: None,
            topics: None,
        }
    }
}

impl TaskContext {
    /// Runs `forward` with the records it produces marked as the final
    /// result of the window `emitted`.
    #[inline]
    pub(crate) fn as_final<R>(
        &mut self,
        emitted: Emitted,
        forward: impl FnOnce(&mut Self) -> R,
    ) -> R {
        let outer = self.emitting.replace(emitted);
        let result = forward(self);
        self.emitting = outer;
        result
    }

    /// Counts a dropped record under its reason when `counted` (once per
    /// record: a caller passes false for each further window the same record
    /// missed) and, when drop events are collected, records the drop (the
    /// key rendered only then).
    pub(crate) fn drop_record<K: std::fmt::Debug>(
        &mut self,
        node: &str,
        key: Option<&K>,
        timestamp: i64,
        reason: DropReason,
        window: Option<(crate::record::Window, i64)>,
        counted: bool,
    ) {
        if counted {
            self.metrics.drop_record(reason);
        }
        if let Some(events) = &mut self.drop_events {
            events.push(DropEvent {
                source: self.meta.clone(),
                key: key.map(|k| format!("{k:?}")),
                timestamp,
                reason,
                window,
                node: node.to_owned(),
                counted,
            });
        }
    }

    /// The floor the current record is judged against (docs/barriers.md#floors).
    pub fn floor(&self) -> Watermark {
        self.floor
    }

    /// The application-wide watermark (`current_watermark_ms`).
    pub fn watermark(&self) -> Watermark {
        self.watermark
    }

    /// The current record's source metadata.
    pub fn metadata(&self) -> &RecordMetadata {
        &self.meta
    }

    /// The task's wall clock as of its last tick.
    pub fn wall_clock(&self) -> stoatflow_time::WallTime {
        self.wall_clock
    }

    /// The task's counters.
    pub fn metrics(&self) -> &TaskMetrics {
        &self.metrics
    }
}
