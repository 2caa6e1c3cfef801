//! The tracker's read model: what `GET /watermarks` shows
//! (docs/operating.md#watermarks-endpoint).
//!
//! Plain data, with the same fields as the endpoint's JSON; rendering to JSON
//! belongs to the server crate, which alone knows HTTP/JSON.

use std::collections::BTreeMap;

use crate::{EventTime, SourcePartition, WallTime, Watermark, WatermarkHolder};

/// One partition's row of `/watermarks`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionSnapshot {
    /// Which partition.
    pub partition: SourcePartition,
    /// `watermarkMs`: its generator's watermark at the last recompute.
    pub watermark: Watermark,
    /// `idle`: excluded from the minimum.
    pub idle: bool,
    /// `lastEventTimeMs`: event time of its last dispatched record.
    pub last_event_time: Option<EventTime>,
    /// `alignmentGroup`.
    pub alignment_group: Option<String>,
    /// `alignmentHeld`: paused by alignment.
    pub alignment_held: bool,
    /// `driftFromGroupMinMs`.
    pub drift_from_group_min_ms: i64,
    /// `idlenessTimeoutMs`: the timeout in force (the source's, else the global key; 0 = disabled).
    pub idleness_timeout_ms: i64,
    /// `previewWatermarkMs`: shown while a waiting head contributes a preview.
    pub preview_watermark: Option<Watermark>,
    /// `headHeldSinceMs`: since when that head has waited.
    pub head_held_since: Option<WallTime>,
}

/// The whole of `/watermarks`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatermarksSnapshot {
    /// `globalMs` / `globalIso`.
    pub global: Watermark,
    /// `alignmentGroupMins`.
    pub alignment_group_mins: BTreeMap<String, Watermark>,
    /// `alignmentBinding`: the lagging partition an alignment hold is waiting
    /// on while it has nothing buffered.
    pub alignment_binding: Option<String>,
    /// `partitions`, keyed `topic:partition`.
    pub partitions: BTreeMap<String, PartitionSnapshot>,
    /// `holder`: the partition the global watermark waits on and why,
    /// named even while there is no watermark; `None` with no partition.
    pub holder: Option<WatermarkHolder>,
    /// Whether any partition registered (the endpoint answers 503 when none
    /// did and no watermark was emitted).
    pub registered: bool,
}
