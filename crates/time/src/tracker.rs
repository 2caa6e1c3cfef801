//! The [`WatermarkTracker`]: per-partition generators and the one
//! application-wide watermark (docs/time.md#generation,
//! docs/time.md#global-watermark).
//!
//! The tracker owns, for every registered source partition, its generator,
//! its idleness state, its waiting head (told by the dispatcher) and its
//! alignment hold; and for the application, the published global watermark:
//! the minimum over non-idle partitions, published only when it increases,
//! held when every partition is idle. It counts late arrivals and the largest
//! out-of-orderness seen, and says which partition holds the watermark and
//! why (docs/time.md#holder).
//!
//! It knows nothing of Kafka, threads, records' payloads or windows: wall time
//! comes in as [`WallTime`] arguments read from an injected clock by the caller.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::generator::{GeneratorState, WatermarkOutput};
use crate::holder::{HoldReason, WatermarkHolder};
use crate::instant::duration_ms;
use crate::snapshot::{PartitionSnapshot, WatermarksSnapshot};
use crate::strategy::{AlignmentSpec, SourceTimePolicy, StrategyError};
use crate::{EventTime, PartitionIndex, SourcePartition, WallTime, Watermark};

/// Engine-wide event-time settings (`stoatflow.watermark.*`).
#[derive(Debug, Clone)]
pub struct TrackerConfig {
    /// Policy for sources that declare no strategy (`max-out-of-orderness-ms`, default 10 000).
    pub default_policy: SourceTimePolicy,
    /// Fallback idleness for sources without `with_idleness` (`idleness-timeout-ms`,
    /// default 300 000); zero disables.
    pub default_idleness: Duration,
    /// Publication cadence (`auto-interval-ms`, default 200).
    pub auto_interval: Duration,
    /// How long a head must wait before its partition contributes a preview watermark.
    pub preview_after: Duration,
    /// A head this far ahead of wall clock is warned about.
    pub future_head_warning: Duration,
    /// An alignment hold longer than this is warned about, once per hold.
    pub alignment_hold_warning: Duration,
}

impl Default for TrackerConfig {
    fn default() -> Self {
        TrackerConfig {
            default_policy: SourceTimePolicy::new(crate::GeneratorSpec::BoundedOutOfOrderness(
                Duration::from_millis(10_000),
            )),
            default_idleness: Duration::from_millis(300_000),
            auto_interval: Duration::from_millis(200),
            preview_after: Duration::from_millis(1_000),
            future_head_warning: Duration::from_secs(60),
            alignment_hold_warning: Duration::from_secs(60),
        }
    }
}

/// The setting a configuration error is about.
const KEY_MAX_OOO: &str = "stoatflow.watermark.max-out-of-orderness-ms";
const KEY_IDLENESS: &str = "stoatflow.watermark.idleness-timeout-ms";
const KEY_AUTO: &str = "stoatflow.watermark.auto-interval-ms";

impl TrackerConfig {
    /// Builds the configuration from the three YAML keys, refusing bad values by name.
    pub fn from_millis(
        max_out_of_orderness_ms: i64,
        idleness_timeout_ms: i64,
        auto_interval_ms: i64,
    ) -> Result<Self, TrackerError> {
        let default_policy =
            SourceTimePolicy::from_max_out_of_orderness_ms(max_out_of_orderness_ms)?;
        let non_negative = |key: &'static str, ms: i64| {
            u64::try_from(ms)
                .map(Duration::from_millis)
                .map_err(|_| TrackerError::BadSetting {
                    key,
                    value: ms,
                    reason: "must be >= 0",
                })
        };
        let default_idleness = non_negative(KEY_IDLENESS, idleness_timeout_ms)?;
        let auto_interval = non_negative(KEY_AUTO, auto_interval_ms)?;
        if auto_interval.is_zero() {
            return Err(TrackerError::BadSetting {
                key: KEY_AUTO,
                value: 0,
                reason: "must be > 0",
            });
        }
        let _ = KEY_MAX_OOO;
        Ok(TrackerConfig {
            default_policy,
            default_idleness,
            auto_interval,
            ..TrackerConfig::default()
        })
    }
}

/// Errors of the tracker's API: bad input, never broken invariants.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TrackerError {
    /// A partition handle or name the tracker never registered.
    #[error(
        "unknown source partition {partition}: it was never registered with the watermark tracker"
    )]
    UnknownPartition {
        /// The partition, as `topic:partition` or `#index`.
        partition: String,
    },
    /// The same partition registered twice.
    #[error("source partition {partition} is already registered with the watermark tracker")]
    DuplicatePartition {
        /// The partition.
        partition: String,
    },
    /// A strategy misconfiguration.
    #[error(transparent)]
    Strategy(#[from] StrategyError),
    /// A setting out of range.
    #[error("bad value {value} for {key}: {reason}")]
    BadSetting {
        /// The YAML key.
        key: &'static str,
        /// The offending value.
        value: i64,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// Something an operator should read, produced once per occurrence.
/// Each is also logged at warn level when it is produced.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrackerWarning {
    /// Sources whose partitions never idle out (idleness disabled).
    IdlenessDisabled {
        /// Topic names.
        sources: Vec<String>,
    },
    /// A partition's waiting head is stamped far ahead of wall clock.
    FutureHead {
        /// The partition.
        partition: SourcePartition,
        /// How far ahead.
        ahead_ms: i64,
    },
    /// A source has been held by alignment for longer than a minute.
    AlignmentHeldTooLong {
        /// The held source.
        source: String,
        /// Its alignment group.
        group: String,
        /// How long, so far.
        held_ms: i64,
        /// Its configured drift.
        max_drift_ms: i64,
    },
}

/// The counters and gauges of the `stoatflow.watermark.*` family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackerMetrics {
    /// `stoatflow.watermark.current`.
    pub current: Watermark,
    /// `stoatflow.watermark.lag.ms`: wall clock minus the watermark (None before one).
    pub lag_ms: Option<i64>,
    /// `stoatflow.watermark.late.records.total`.
    pub late_records_total: u64,
    /// `stoatflow.watermark.out.of.orderness.max`: the largest amount by which a
    /// dispatched record was older than the newest record dispatched before it.
    pub out_of_orderness_max_ms: i64,
    /// `stoatflow.watermark.alignment.held.time.total`, summed over sources.
    pub alignment_held_time_total_ms: i64,
}

/// A partition's waiting head record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Its event time.
    pub event_time: EventTime,
    /// Since when it has been the partition's head.
    pub since: WallTime,
}

#[derive(Debug)]
struct PartitionState {
    id: SourcePartition,
    source: usize,
    generator: GeneratorState,
    output: WatermarkOutput,
    watermark: Watermark,
    idleness_timeout: Duration,
    last_activity: WallTime,
    last_event_time: Option<EventTime>,
    timed_out: bool,
    head: Option<Head>,
    future_warned: bool,
    preview: Option<Watermark>,
    group: Option<usize>,
    held: bool,
    drift_ms: i64,
}

impl PartitionState {
    fn is_idle(&self) -> bool {
        self.timed_out || self.output.is_idle()
    }

    fn effective(&self) -> Watermark {
        match self.preview {
            Some(p) if p > self.watermark => p,
            _ => self.watermark,
        }
    }
}

#[derive(Debug)]
struct SourceState {
    topic: String,
    alignment: Option<AlignmentSpec>,
    idleness_disabled: bool,
    held_total: Duration,
    held_since: Option<WallTime>,
    hold_warned: bool,
}

#[derive(Debug)]
struct GroupState {
    name: String,
    update_interval: Duration,
    last_update: Option<WallTime>,
    min: Watermark,
    binding: Option<usize>,
}

/// Per-partition watermarks and the application-wide minimum.
///
/// ```
/// use std::time::Duration;
/// use stoatflow_time::{EventTime, SourcePartition, TrackerConfig, WallTime, Watermark,
///     WatermarkStrategy, WatermarkTracker};
///
/// let mut tracker = WatermarkTracker::new(TrackerConfig::default());
/// let strategy = WatermarkStrategy::<(), ()>::for_bounded_out_of_orderness(Duration::from_millis(10));
/// let now = WallTime::from_millis(0);
/// let p0 = tracker.register(SourcePartition::new("orders", 0), strategy.policy(), now)?;
/// let p1 = tracker.register(SourcePartition::new("orders", 1), strategy.policy(), now)?;
/// tracker.on_record(p0, EventTime::new(100)?, now)?;
/// tracker.on_record(p1, EventTime::new(60)?, now)?;
/// assert_eq!(tracker.force_watermark(now), Watermark::from_millis(50));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct WatermarkTracker {
    config: TrackerConfig,
    partitions: Vec<PartitionState>,
    by_name: HashMap<SourcePartition, PartitionIndex>,
    sources: Vec<SourceState>,
    source_by_topic: HashMap<String, usize>,
    groups: Vec<GroupState>,
    group_by_name: HashMap<String, usize>,
    published: Watermark,
    last_recompute: Option<WallTime>,
    late_records: u64,
    max_dispatched: i64,
    out_of_orderness_max: i64,
    warnings: Vec<TrackerWarning>,
    startup_reported: bool,
}

impl WatermarkTracker {
    /// An empty tracker.
    pub fn new(config: TrackerConfig) -> Self {
        WatermarkTracker {
            config,
            partitions: Vec::new(),
            by_name: HashMap::new(),
            sources: Vec::new(),
            source_by_topic: HashMap::new(),
            groups: Vec::new(),
            group_by_name: HashMap::new(),
            published: Watermark::MIN,
            last_recompute: None,
            late_records: 0,
            max_dispatched: i64::MIN,
            out_of_orderness_max: 0,
            warnings: Vec::new(),
            startup_reported: false,
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &TrackerConfig {
        &self.config
    }

    /// Registers a partition with its source's policy (or the default policy
    /// when `None`). Its idleness clock starts at `now`.
    pub fn register(
        &mut self,
        partition: SourcePartition,
        policy: &SourceTimePolicy,
        now: WallTime,
    ) -> Result<PartitionIndex, TrackerError> {
        self.register_with(partition, Some(policy), now)
    }

    /// Registers a partition of a source that declared no strategy.
    pub fn register_default(
        &mut self,
        partition: SourcePartition,
        now: WallTime,
    ) -> Result<PartitionIndex, TrackerError> {
        self.register_with(partition, None, now)
    }

    fn register_with(
        &mut self,
        partition: SourcePartition,
        policy: Option<&SourceTimePolicy>,
        now: WallTime,
    ) -> Result<PartitionIndex, TrackerError> {
        if self.by_name.contains_key(&partition) {
            return Err(TrackerError::DuplicatePartition {
                partition: partition.to_string(),
            });
        }
        let policy = policy.unwrap_or(&self.config.default_policy).clone();
        policy.validate(partition.topic())?;
        let idleness_timeout = policy.idleness().unwrap_or(self.config.default_idleness);
        let source = self.source_index(partition.topic(), &policy, idleness_timeout.is_zero());
        let group = policy.alignment().map(|a| self.group_index(a));
        let index = PartitionIndex(self.partitions.len() as u32);
        self.partitions.push(PartitionState {
            id: partition.clone(),
            source,
            generator: policy.generator().instantiate(),
            output: WatermarkOutput::default(),
            watermark: Watermark::MIN,
            idleness_timeout,
            last_activity: now,
            last_event_time: None,
            timed_out: false,
            head: None,
            future_warned: false,
            preview: None,
            group,
            held: false,
            drift_ms: 0,
        });
        self.by_name.insert(partition, index);
        Ok(index)
    }

    fn source_index(
        &mut self,
        topic: &str,
        policy: &SourceTimePolicy,
        idleness_disabled: bool,
    ) -> usize {
        if let Some(&i) = self.source_by_topic.get(topic) {
            self.sources[i].idleness_disabled |= idleness_disabled;
            return i;
        }
        self.sources.push(SourceState {
            topic: topic.to_owned(),
            alignment: policy.alignment().cloned(),
            idleness_disabled,
            held_total: Duration::ZERO,
            held_since: None,
            hold_warned: false,
        });
        self.source_by_topic
            .insert(topic.to_owned(), self.sources.len() - 1);
        self.sources.len() - 1
    }

    fn group_index(&mut self, a: &AlignmentSpec) -> usize {
        if let Some(&g) = self.group_by_name.get(&a.group) {
            let gs = &mut self.groups[g];
            gs.update_interval = gs.update_interval.min(a.update_interval);
            return g;
        }
        self.groups.push(GroupState {
            name: a.group.clone(),
            update_interval: a.update_interval,
            last_update: None,
            min: Watermark::MIN,
            binding: None,
        });
        self.group_by_name
            .insert(a.group.clone(), self.groups.len() - 1);
        self.groups.len() - 1
    }

    /// Seeds a partition from the partition time committed with its offset,
    /// so the watermark resumes without re-reading records (docs/state.md#restart).
    pub fn seed_partition_time(
        &mut self,
        index: PartitionIndex,
        partition_time: EventTime,
    ) -> Result<(), TrackerError> {
        let p = self.partition_mut(index)?;
        p.generator.on_event(partition_time, &mut p.output);
        p.generator.on_periodic_emit(&mut p.output);
        p.watermark = p.output.watermark();
        p.last_event_time = Some(partition_time);
        Ok(())
    }

    /// The handle of a registered partition.
    pub fn index_of(&self, partition: &SourcePartition) -> Result<PartitionIndex, TrackerError> {
        self.by_name
            .get(partition)
            .copied()
            .ok_or_else(|| TrackerError::UnknownPartition {
                partition: partition.to_string(),
            })
    }

    /// The name of a registered partition.
    #[inline]
    pub fn partition(&self, index: PartitionIndex) -> Result<&SourcePartition, TrackerError> {
        self.partitions
            .get(index.as_usize())
            .map(|p| &p.id)
            .ok_or_else(|| unknown(index))
    }

    /// Number of registered partitions.
    pub fn len(&self) -> usize {
        self.partitions.len()
    }

    /// True when nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty()
    }

    fn partition_mut(
        &mut self,
        index: PartitionIndex,
    ) -> Result<&mut PartitionState, TrackerError> {
        self.partitions
            .get_mut(index.as_usize())
            .ok_or_else(|| unknown(index))
    }

    /// Logs, once, the sources whose idleness is disabled (they pin the
    /// watermark forever if a partition is never written). Returns the warning.
    pub fn report_startup(&mut self) -> Option<TrackerWarning> {
        if self.startup_reported {
            return None;
        }
        self.startup_reported = true;
        let sources: Vec<String> = self
            .sources
            .iter()
            .filter(|s| s.idleness_disabled)
            .map(|s| s.topic.clone())
            .collect();
        if sources.is_empty() {
            return None;
        }
        let w = TrackerWarning::IdlenessDisabled { sources };
        self.warn(w.clone());
        Some(w)
    }

    fn warn(&mut self, w: TrackerWarning) {
        match &w {
            TrackerWarning::IdlenessDisabled { sources } => tracing::warn!(
                ?sources,
                "idleness is disabled for these sources: a partition that is never written holds the watermark forever; set with_idleness or stoatflow.watermark.idleness-timeout-ms"
            ),
            TrackerWarning::FutureHead {
                partition,
                ahead_ms,
            } => tracing::warn!(
                %partition,
                ahead_ms,
                "the next record of {partition} is stamped {ahead_ms} ms ahead of wall clock; check the producer's clock or the timestamp unit"
            ),
            TrackerWarning::AlignmentHeldTooLong {
                source,
                group,
                held_ms,
                max_drift_ms,
            } => tracing::warn!(
                source = %source,
                group = %group,
                held_ms,
                max_drift_ms,
                "source {source} has been held by watermark alignment group {group} for {held_ms} ms; size max_drift to at least that source's normal gap plus the difference in out-of-orderness bounds, or give the lagging source a shorter with_idleness"
            ),
        }
        self.warnings.push(w);
    }

    /// Takes the warnings produced since the last call.
    pub fn take_warnings(&mut self) -> Vec<TrackerWarning> {
        std::mem::take(&mut self.warnings)
    }

    /// Advances a partition with a dispatched record. Returns whether the
    /// record is a late arrival (below the published global watermark); late
    /// arrivals are counted, never dropped here.
    #[inline]
    pub fn on_record(
        &mut self,
        index: PartitionIndex,
        event_time: EventTime,
        now: WallTime,
    ) -> Result<bool, TrackerError> {
        let p = self
            .partitions
            .get_mut(index.as_usize())
            .ok_or_else(|| unknown(index))?;
        p.output.mark_active();
        p.generator.on_event(event_time, &mut p.output);
        p.timed_out = false;
        p.last_activity = now;
        p.last_event_time = Some(event_time);
        let t = event_time.as_millis();
        if t < self.max_dispatched {
            self.out_of_orderness_max = self.out_of_orderness_max.max(self.max_dispatched - t);
        } else {
            self.max_dispatched = t;
        }
        let late = self.published.is_late(event_time);
        if late {
            self.late_records += 1;
            tracing::debug!(partition = %p.id, event_time = t, watermark = self.published.as_millis(), "late arrival");
        }
        Ok(late)
    }

    /// Tells the tracker about a partition's waiting head (or that its buffer
    /// is empty). Called by the dispatcher; warns once about a head stamped
    /// more than a minute ahead of wall clock.
    #[inline]
    pub fn set_head(
        &mut self,
        index: PartitionIndex,
        head: Option<Head>,
    ) -> Result<(), TrackerError> {
        let limit = duration_ms(self.config.future_head_warning);
        let p = self
            .partitions
            .get_mut(index.as_usize())
            .ok_or_else(|| unknown(index))?;
        p.head = head;
        let mut warning = None;
        match head {
            Some(h) => {
                let ahead = h.event_time.as_millis() - h.since.as_millis();
                if ahead > limit {
                    if !p.future_warned {
                        p.future_warned = true;
                        warning = Some(TrackerWarning::FutureHead {
                            partition: p.id.clone(),
                            ahead_ms: ahead,
                        });
                    }
                } else {
                    p.future_warned = false;
                }
            }
            None => p.preview = None,
        }
        if let Some(w) = warning {
            self.warn(w);
        }
        Ok(())
    }

    /// Whether alignment holds this partition (the dispatcher must not serve it).
    #[inline]
    pub fn is_held(&self, index: PartitionIndex) -> bool {
        self.partitions
            .get(index.as_usize())
            .is_some_and(|p| p.held)
    }

    /// The partitions alignment holds.
    pub fn held_partitions(&self) -> impl Iterator<Item = PartitionIndex> + '_ {
        self.partitions
            .iter()
            .enumerate()
            .filter(|(_, p)| p.held)
            .map(|(i, _)| PartitionIndex(i as u32))
    }

    /// The last published global watermark.
    #[inline]
    pub fn current(&self) -> Watermark {
        self.published
    }

    /// Recomputes after a poll, at most every `auto-interval-ms`. Returns the
    /// new global watermark if it increased.
    pub fn poll_watermark(&mut self, now: WallTime) -> Option<Watermark> {
        if let Some(last) = self.last_recompute
            && now.since(last) < self.config.auto_interval
        {
            return None;
        }
        let before = self.published;
        self.recompute(now, false);
        (self.published > before).then_some(self.published)
    }

    /// Recomputes now, ignoring the throttle: before a commit barrier is
    /// fixed, and at shutdown. Returns the global watermark (maybe unchanged).
    pub fn force_watermark(&mut self, now: WallTime) -> Watermark {
        self.recompute(now, true);
        self.published
    }

    fn recompute(&mut self, now: WallTime, force: bool) {
        self.last_recompute = Some(now);
        let preview_after = self.config.preview_after;
        let mut candidate: Option<Watermark> = None;
        for p in &mut self.partitions {
            p.generator.on_periodic_emit(&mut p.output);
            p.watermark = p.output.watermark();
            if p.held {
                // A paused partition is waiting on us, not quiet: its idleness clock stands still.
                p.last_activity = now;
            } else if !p.idleness_timeout.is_zero()
                && now.since(p.last_activity) >= p.idleness_timeout
            {
                p.timed_out = true;
            }
            p.preview = match p.head {
                Some(h) if now.since(h.since) >= preview_after => p.generator.preview(h.event_time),
                _ => None,
            };
            if !p.is_idle() {
                let w = p.effective();
                candidate = Some(candidate.map_or(w, |c| c.min(w)));
            }
        }
        if let Some(c) = candidate
            && self.published.advance_to(c)
        {
            tracing::trace!(watermark = c.as_millis(), "global watermark advanced");
        }
        self.update_alignment(now, force);
    }

    fn update_alignment(&mut self, now: WallTime, force: bool) {
        if self.groups.is_empty() {
            return;
        }
        for (g, group) in self.groups.iter_mut().enumerate() {
            let due = force
                || group
                    .last_update
                    .is_none_or(|t| now.since(t) >= group.update_interval);
            if !due {
                continue;
            }
            group.last_update = Some(now);
            let mut min: Option<(Watermark, usize)> = None;
            for (i, p) in self.partitions.iter().enumerate() {
                if p.group == Some(g) && !p.is_idle() && !p.watermark.is_none_yet() {
                    let w = p.effective();
                    if min.is_none_or(|(m, _)| w < m) {
                        min = Some((w, i));
                    }
                }
            }
            group.min = min.map_or(Watermark::MIN, |(m, _)| m);
            let mut any_held = false;
            for p in self.partitions.iter_mut().filter(|p| p.group == Some(g)) {
                let max_drift = self.sources[p.source]
                    .alignment
                    .as_ref()
                    .map_or(i64::MAX, |a| duration_ms(a.max_drift));
                if group.min.is_none_yet() || p.watermark.is_none_yet() {
                    p.drift_ms = 0;
                    p.held = false;
                } else {
                    p.drift_ms = p
                        .effective()
                        .as_millis()
                        .saturating_sub(group.min.as_millis());
                    p.held = p.drift_ms > max_drift;
                }
                any_held |= p.held;
            }
            group.binding = match min {
                Some((_, i)) if any_held && self.partitions[i].head.is_none() => Some(i),
                _ => None,
            };
        }
        self.account_holds(now);
    }

    fn account_holds(&mut self, now: WallTime) {
        let limit = self.config.alignment_hold_warning;
        let mut warnings = Vec::new();
        for (s, source) in self.sources.iter_mut().enumerate() {
            let held = self.partitions.iter().any(|p| p.source == s && p.held);
            match (held, source.held_since) {
                (true, None) => source.held_since = Some(now),
                (false, Some(since)) => {
                    source.held_total += now.since(since);
                    source.held_since = None;
                    source.hold_warned = false;
                }
                (true, Some(since)) if !source.hold_warned && now.since(since) > limit => {
                    source.hold_warned = true;
                    let a = source.alignment.as_ref();
                    warnings.push(TrackerWarning::AlignmentHeldTooLong {
                        source: source.topic.clone(),
                        group: a.map(|a| a.group.clone()).unwrap_or_default(),
                        held_ms: duration_ms(now.since(since)),
                        max_drift_ms: a.map_or(0, |a| duration_ms(a.max_drift)),
                    });
                }
                _ => {}
            }
        }
        for w in warnings {
            self.warn(w);
        }
    }

    /// Total time a source has spent held by alignment, including a hold in progress.
    pub fn alignment_held_time(&self, topic: &str, now: WallTime) -> Duration {
        self.source_by_topic
            .get(topic)
            .map_or(Duration::ZERO, |&s| {
                let src = &self.sources[s];
                src.held_total + src.held_since.map_or(Duration::ZERO, |t| now.since(t))
            })
    }

    /// The `stoatflow.watermark.*` figures.
    pub fn metrics(&self, now: WallTime) -> TrackerMetrics {
        let held: Duration = self
            .sources
            .iter()
            .map(|s| self.alignment_held_time(&s.topic, now))
            .sum();
        TrackerMetrics {
            current: self.published,
            lag_ms: (!self.published.is_none_yet())
                .then(|| now.as_millis().saturating_sub(self.published.as_millis())),
            late_records_total: self.late_records,
            out_of_orderness_max_ms: self.out_of_orderness_max,
            alignment_held_time_total_ms: duration_ms(held),
        }
    }

    /// Everything `GET /watermarks` shows (docs/operating.md#watermarks-endpoint),
    /// as of the latest wall time the tracker was told (the last recompute or
    /// record): the holder's countdowns are measured then.
    pub fn snapshot(&self) -> WatermarksSnapshot {
        let as_of = self
            .partitions
            .iter()
            .map(|p| p.last_activity)
            .chain(self.last_recompute)
            .max()
            .unwrap_or(WallTime::EPOCH);
        self.snapshot_at(as_of)
    }

    /// The partition the global watermark waits on and why, at wall time
    /// `now` (docs/time.md#holder): the lowest effective watermark among the
    /// partitions that count (the first registered on a tie), or, with
    /// every partition idle, the lowest of all. `None` with no partition.
    pub fn holder(&self, now: WallTime) -> Option<WatermarkHolder> {
        let lowest = |idle: bool| {
            self.partitions
                .iter()
                .enumerate()
                .filter(|(_, p)| p.is_idle() == idle)
                .min_by_key(|(i, p)| (p.effective(), *i))
        };
        let (i, p) = match lowest(false) {
            Some(found) => found,
            None => {
                let (_, p) = lowest(true)?;
                return Some(WatermarkHolder {
                    partition: p.id.clone(),
                    reason: HoldReason::Idle,
                });
            }
        };
        let quiet_for = now.since(p.last_activity);
        let idle_in =
            (!p.idleness_timeout.is_zero()).then(|| p.idleness_timeout.saturating_sub(quiet_for));
        let head_waits = p
            .head
            .is_some_and(|h| now.since(h.since) >= self.config.preview_after);
        let binding = self.groups.iter().find(|g| g.binding == Some(i));
        let reason = if head_waits {
            HoldReason::FutureHead {
                preview: p.preview.is_some(),
            }
        } else if p.watermark.is_none_yet() && p.last_event_time.is_none() {
            HoldReason::NeverReceived { idle_in }
        } else if let Some(g) = binding {
            HoldReason::AlignmentHold {
                group: g.name.clone(),
            }
        } else if p.watermark.is_none_yet() {
            HoldReason::NoWatermarkYet
        } else {
            HoldReason::Lowest { quiet_for, idle_in }
        };
        Some(WatermarkHolder {
            partition: p.id.clone(),
            reason,
        })
    }

    /// [`WatermarkTracker::snapshot`] with the holder's countdowns measured
    /// at wall time `now`.
    pub fn snapshot_at(&self, now: WallTime) -> WatermarksSnapshot {
        let partitions: BTreeMap<String, PartitionSnapshot> = self
            .partitions
            .iter()
            .map(|p| {
                let group = p.group.map(|g| self.groups[g].name.clone());
                let snap = PartitionSnapshot {
                    partition: p.id.clone(),
                    watermark: p.watermark,
                    idle: p.is_idle(),
                    last_event_time: p.last_event_time,
                    alignment_group: group,
                    alignment_held: p.held,
                    drift_from_group_min_ms: p.drift_ms,
                    idleness_timeout_ms: duration_ms(p.idleness_timeout),
                    preview_watermark: p.preview,
                    head_held_since: p.preview.and(p.head.map(|h| h.since)),
                };
                (p.id.to_string(), snap)
            })
            .collect();
        let alignment_group_mins = self
            .groups
            .iter()
            .map(|g| (g.name.clone(), g.min))
            .collect();
        let alignment_binding = self
            .groups
            .iter()
            .find_map(|g| g.binding)
            .map(|i| self.partitions[i].id.to_string());
        WatermarksSnapshot {
            global: self.published,
            alignment_group_mins,
            alignment_binding,
            partitions,
            holder: self.holder(now),
            registered: !self.partitions.is_empty(),
        }
    }
}

fn unknown(index: PartitionIndex) -> TrackerError {
    TrackerError::UnknownPartition {
        partition: format!("#{}", index.0),
    }
}
