//! [`WatermarkStrategy`]: how one source says what time it is.
//!
//! The API is Flink's (`for_bounded_out_of_orderness`, `for_monotonous_timestamps`,
//! `no_watermarks`, `with_timestamp_assigner`, `with_idleness`,
//! `with_watermark_alignment`), plus an adapter from a Kafka Streams-style
//! [`TimestampExtractor`] onto a monotonous strategy. Both share the one
//! strategy slot a source has.
//!
//! A strategy splits in two: the typed [`TimestampAssigner`], which runs where
//! records are deserialized, and the untyped [`SourceTimePolicy`] (generator,
//! idleness, alignment), which the tracker runs per partition. This module
//! owns their construction and validation; it knows nothing of partitions.
//!
//! See [`crate::generator`] for the one-millisecond difference from Flink.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::generator::{GeneratorState, WatermarkGenerator};
use crate::instant::duration_ms;
use crate::{EventTime, MAX_EVENT_TIME_MS, TimeError};

/// A misconfigured strategy or time setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StrategyError {
    /// A negative out-of-orderness bound (from configuration).
    #[error("negative out-of-orderness bound {ms} ms for {what}: the bound must be >= 0")]
    NegativeBound {
        /// Which setting or source.
        what: String,
        /// The offending value.
        ms: i64,
    },
    /// A bound so large no watermark would ever pass a real event time.
    #[error(
        "out-of-orderness bound {ms} ms for {what} is absurd (larger than the whole event-time range)"
    )]
    AbsurdBound {
        /// Which setting or source.
        what: String,
        /// The offending value.
        ms: i64,
    },
    /// Alignment with a zero maximum drift would hold every source forever.
    #[error("watermark alignment group '{group}' has max_drift 0: give it a positive drift")]
    ZeroAlignmentDrift {
        /// The alignment group.
        group: String,
    },
    /// Alignment must be re-evaluated on some cadence.
    #[error(
        "watermark alignment group '{group}' has update_interval 0: give it a positive interval"
    )]
    ZeroAlignmentInterval {
        /// The alignment group.
        group: String,
    },
    /// Alignment groups are named.
    #[error("watermark alignment group name is empty")]
    EmptyAlignmentGroup,
}

/// Extracts a record's event time, as in Flink's `TimestampAssigner`.
///
/// Closures `Fn(&K, &V, i64) -> i64` (key, value, the record's own timestamp)
/// implement it.
pub trait TimestampAssigner<K, V>: Send + Sync {
    /// The event time in ms; `record_timestamp` is the log's timestamp,
    /// `partition_time` the largest event time this partition has produced.
    fn extract_timestamp(
        &self,
        key: &K,
        value: &V,
        record_timestamp: i64,
        partition_time: Option<EventTime>,
    ) -> i64;
}

impl<K, V, F> TimestampAssigner<K, V> for F
where
    F: Fn(&K, &V, i64) -> i64 + Send + Sync,
{
    fn extract_timestamp(
        &self,
        key: &K,
        value: &V,
        record_timestamp: i64,
        _: Option<EventTime>,
    ) -> i64 {
        self(key, value, record_timestamp)
    }
}

/// An assigner over `V`, applied to `Option<V>` (a null keeps the record's timestamp).
struct NullableAssigner<K, V>(Arc<dyn TimestampAssigner<K, V>>);

impl<K, V> TimestampAssigner<K, Option<V>> for NullableAssigner<K, V> {
    fn extract_timestamp(
        &self,
        key: &K,
        value: &Option<V>,
        record_timestamp: i64,
        partition_time: Option<EventTime>,
    ) -> i64 {
        match value {
            Some(v) => self
                .0
                .extract_timestamp(key, v, record_timestamp, partition_time),
            None => record_timestamp,
        }
    }
}

/// A Kafka Streams-style `TimestampExtractor`: given the record and its
/// partition's time (`-1` when unknown), returns the record's event time.
pub trait TimestampExtractor<K, V>: Send + Sync {
    /// The event time in ms.
    fn extract(&self, key: &K, value: &V, record_timestamp: i64, partition_time: i64) -> i64;
}

/// Kafka Streams' default: the record's own timestamp.
#[derive(Debug, Clone, Copy, Default)]
pub struct RecordTimestampExtractor;

impl<K, V> TimestampExtractor<K, V> for RecordTimestampExtractor {
    fn extract(&self, _: &K, _: &V, record_timestamp: i64, _: i64) -> i64 {
        record_timestamp
    }
}

struct ExtractorAssigner<E>(E);

impl<K, V, E: TimestampExtractor<K, V>> TimestampAssigner<K, V> for ExtractorAssigner<E> {
    fn extract_timestamp(&self, key: &K, value: &V, record_ts: i64, pt: Option<EventTime>) -> i64 {
        self.0
            .extract(key, value, record_ts, pt.map_or(-1, EventTime::as_millis))
    }
}

/// Builds a custom generator for each partition.
#[derive(Clone)]
pub struct GeneratorFactory(Arc<dyn Fn() -> Box<dyn WatermarkGenerator> + Send + Sync>);

impl fmt::Debug for GeneratorFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GeneratorFactory(..)")
    }
}

/// Which generator a source's partitions run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum GeneratorSpec {
    /// `max seen − bound`.
    BoundedOutOfOrderness(Duration),
    /// `max seen`.
    Monotonous,
    /// Never advances: a source that holds the application-wide watermark still.
    NoWatermarks,
    /// User logic through [`WatermarkGenerator`].
    Custom(GeneratorFactory),
}

impl GeneratorSpec {
    /// Whether the generator can ever advance the watermark.
    pub fn produces_watermarks(&self) -> bool {
        !matches!(self, GeneratorSpec::NoWatermarks)
    }

    pub(crate) fn instantiate(&self) -> GeneratorState {
        match self {
            GeneratorSpec::BoundedOutOfOrderness(d) => GeneratorState::Bounded {
                max_seen: i64::MIN,
                bound_ms: duration_ms(*d),
            },
            GeneratorSpec::Monotonous => GeneratorState::Monotonous { max_seen: i64::MIN },
            GeneratorSpec::NoWatermarks => GeneratorState::NoWatermarks,
            GeneratorSpec::Custom(f) => GeneratorState::Custom((f.0)()),
        }
    }
}

/// FLIP-217 watermark alignment of a source within a named group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlignmentSpec {
    /// Sources in one group are held against the group's minimum.
    pub group: String,
    /// How far ahead of the group minimum a partition may run before it is paused.
    pub max_drift: Duration,
    /// How often the group minimum and the holds are re-evaluated.
    pub update_interval: Duration,
}

/// The untyped half of a strategy: what the tracker runs for each partition.
#[derive(Debug, Clone)]
pub struct SourceTimePolicy {
    generator: GeneratorSpec,
    idleness: Option<Duration>,
    alignment: Option<AlignmentSpec>,
}

impl SourceTimePolicy {
    /// A policy with the given generator, no idleness override, no alignment.
    pub fn new(generator: GeneratorSpec) -> Self {
        SourceTimePolicy {
            generator,
            idleness: None,
            alignment: None,
        }
    }

    /// The default for a source that declares no strategy: bounded
    /// out-of-orderness with `stoatflow.watermark.max-out-of-orderness-ms`.
    /// A negative or absurd value is refused, naming the key.
    pub fn from_max_out_of_orderness_ms(ms: i64) -> Result<Self, StrategyError> {
        let what = "stoatflow.watermark.max-out-of-orderness-ms";
        if ms < 0 {
            return Err(StrategyError::NegativeBound {
                what: what.into(),
                ms,
            });
        }
        let policy = SourceTimePolicy::new(GeneratorSpec::BoundedOutOfOrderness(
            Duration::from_millis(ms as u64),
        ));
        policy.validate(what)?;
        Ok(policy)
    }

    /// The generator spec.
    pub fn generator(&self) -> &GeneratorSpec {
        &self.generator
    }

    /// The source's own idleness timeout, if it set one (`ZERO` disables).
    pub fn idleness(&self) -> Option<Duration> {
        self.idleness
    }

    /// The alignment, if any.
    pub fn alignment(&self) -> Option<&AlignmentSpec> {
        self.alignment.as_ref()
    }

    /// Checks bounds and alignment; `what` names the source in errors.
    pub fn validate(&self, what: &str) -> Result<(), StrategyError> {
        if let GeneratorSpec::BoundedOutOfOrderness(d) = &self.generator {
            let ms = duration_ms(*d);
            if ms > MAX_EVENT_TIME_MS {
                return Err(StrategyError::AbsurdBound {
                    what: what.into(),
                    ms,
                });
            }
        }
        if let Some(a) = &self.alignment {
            if a.group.is_empty() {
                return Err(StrategyError::EmptyAlignmentGroup);
            }
            if a.max_drift.is_zero() {
                return Err(StrategyError::ZeroAlignmentDrift {
                    group: a.group.clone(),
                });
            }
            if a.update_interval.is_zero() {
                return Err(StrategyError::ZeroAlignmentInterval {
                    group: a.group.clone(),
                });
            }
        }
        Ok(())
    }
}

/// How a source assigns event time and generates its partitions' watermarks.
///
/// ```
/// use std::time::Duration;
/// use stoatflow_time::WatermarkStrategy;
///
/// struct Order { placed_at: i64 }
/// let strategy = WatermarkStrategy::<String, Order>::for_bounded_out_of_orderness(Duration::from_secs(30))
///     .with_timestamp_assigner(|_k: &String, o: &Order, _ts| o.placed_at)
///     .with_idleness(Duration::from_secs(120));
/// assert_eq!(strategy.policy().idleness(), Some(Duration::from_secs(120)));
/// ```
pub struct WatermarkStrategy<K, V> {
    policy: SourceTimePolicy,
    assigner: Option<Arc<dyn TimestampAssigner<K, V>>>,
}

impl<K, V> Clone for WatermarkStrategy<K, V> {
    fn clone(&self) -> Self {
        WatermarkStrategy {
            policy: self.policy.clone(),
            assigner: self.assigner.clone(),
        }
    }
}

impl<K, V> fmt::Debug for WatermarkStrategy<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatermarkStrategy")
            .field("policy", &self.policy)
            .field("assigner", &self.assigner.as_ref().map(|_| ".."))
            .finish()
    }
}

impl<K, V> WatermarkStrategy<K, V> {
    fn with_generator(generator: GeneratorSpec) -> Self {
        WatermarkStrategy {
            policy: SourceTimePolicy::new(generator),
            assigner: None,
        }
    }

    /// Watermark = max event time seen − `bound`.
    pub fn for_bounded_out_of_orderness(bound: Duration) -> Self {
        Self::with_generator(GeneratorSpec::BoundedOutOfOrderness(bound))
    }

    /// Watermark = max event time seen (timestamps never go backwards within a partition).
    pub fn for_monotonous_timestamps() -> Self {
        Self::with_generator(GeneratorSpec::Monotonous)
    }

    /// No watermark at all. The engine refuses this beside anything a watermark drives.
    pub fn no_watermarks() -> Self {
        Self::with_generator(GeneratorSpec::NoWatermarks)
    }

    /// A custom generator, created once per partition by `factory`.
    pub fn for_generator<G, F>(factory: F) -> Self
    where
        G: WatermarkGenerator + 'static,
        F: Fn() -> G + Send + Sync + 'static,
    {
        let f = move || Box::new(factory()) as Box<dyn WatermarkGenerator>;
        Self::with_generator(GeneratorSpec::Custom(GeneratorFactory(Arc::new(f))))
    }

    /// Kafka Streams' `TimestampExtractor` adapted onto a monotonous strategy,
    /// so the source contributes Kafka Streams stream time to the watermark.
    pub fn from_timestamp_extractor<E>(extractor: E) -> Self
    where
        E: TimestampExtractor<K, V> + 'static,
        K: 'static,
        V: 'static,
    {
        WatermarkStrategy {
            policy: SourceTimePolicy::new(GeneratorSpec::Monotonous),
            assigner: Some(Arc::new(ExtractorAssigner(extractor))),
        }
    }

    /// Takes event time from the record's key and value instead of its log timestamp.
    #[must_use]
    pub fn with_timestamp_assigner<A>(mut self, assigner: A) -> Self
    where
        A: TimestampAssigner<K, V> + 'static,
    {
        self.assigner = Some(Arc::new(assigner));
        self
    }

    /// The same strategy over nullable values (a table's source, where a
    /// null value deletes): the assigner sees every non-null value; a null
    /// value keeps the record's own timestamp.
    pub fn for_nullable_values(self) -> WatermarkStrategy<K, Option<V>>
    where
        K: 'static,
        V: 'static,
    {
        WatermarkStrategy {
            policy: self.policy,
            assigner: self
                .assigner
                .map(|a| Arc::new(NullableAssigner(a)) as Arc<dyn TimestampAssigner<K, Option<V>>>),
        }
    }

    /// A partition with no record for `timeout` (wall clock) is idle and left
    /// out of the minimum until its next record. `Duration::ZERO` disables.
    #[must_use]
    pub fn with_idleness(mut self, timeout: Duration) -> Self {
        self.policy.idleness = Some(timeout);
        self
    }

    /// Pauses a partition whose watermark runs more than `max_drift` ahead of
    /// its group's minimum; re-evaluated every `update_interval`.
    #[must_use]
    pub fn with_watermark_alignment(
        mut self,
        group: impl Into<String>,
        max_drift: Duration,
        update_interval: Duration,
    ) -> Self {
        self.policy.alignment = Some(AlignmentSpec {
            group: group.into(),
            max_drift,
            update_interval,
        });
        self
    }

    /// The untyped policy the tracker runs.
    pub fn policy(&self) -> &SourceTimePolicy {
        &self.policy
    }

    /// Whether a custom assigner (or extractor) is set.
    pub fn has_timestamp_assigner(&self) -> bool {
        self.assigner.is_some()
    }

    /// The event time of a record: the assigner's answer, or the record's own
    /// timestamp, validated.
    pub fn assign(
        &self,
        key: &K,
        value: &V,
        record_timestamp: i64,
        partition_time: Option<EventTime>,
    ) -> Result<EventTime, TimeError> {
        let ms = match &self.assigner {
            Some(a) => a.extract_timestamp(key, value, record_timestamp, partition_time),
            None => record_timestamp,
        };
        EventTime::new(ms)
    }

    /// Checks the configuration; `source` names the source in errors.
    pub fn validate(&self, source: &str) -> Result<(), StrategyError> {
        self.policy.validate(source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type S = WatermarkStrategy<String, i64>;

    #[test]
    fn a_nullable_strategy_assigns_values_and_keeps_a_nulls_own_timestamp() {
        let s = WatermarkStrategy::<String, i64>::for_monotonous_timestamps()
            .with_timestamp_assigner(|_k: &String, v: &i64, _ts| *v)
            .for_nullable_values();
        let k = "k".to_owned();
        assert_eq!(s.assign(&k, &Some(40), 7, None).unwrap().as_millis(), 40);
        assert_eq!(s.assign(&k, &None, 7, None).unwrap().as_millis(), 7);
    }

    #[test]
    fn assigner_replaces_the_record_timestamp() {
        let s =
            S::for_monotonous_timestamps().with_timestamp_assigner(|_k: &String, v: &i64, _ts| *v);
        assert_eq!(s.assign(&"k".into(), &42, 7, None).unwrap().as_millis(), 42);
        let plain = S::for_monotonous_timestamps();
        assert_eq!(
            plain.assign(&"k".into(), &42, 7, None).unwrap().as_millis(),
            7
        );
    }

    #[test]
    fn assigned_negative_time_is_an_error_naming_the_value() {
        let s =
            S::for_monotonous_timestamps().with_timestamp_assigner(|_k: &String, _v: &i64, _| -5);
        let err = s.assign(&"k".into(), &0, 0, None).unwrap_err();
        assert_eq!(err, TimeError::Negative { ms: -5 });
    }

    struct Ks;
    impl TimestampExtractor<String, i64> for Ks {
        fn extract(&self, _: &String, v: &i64, _: i64, partition_time: i64) -> i64 {
            if *v < 0 { partition_time } else { *v }
        }
    }

    #[test]
    fn extractor_adapts_onto_a_monotonous_strategy_and_sees_partition_time() {
        let s = S::from_timestamp_extractor(Ks);
        assert!(matches!(s.policy().generator(), GeneratorSpec::Monotonous));
        let pt = EventTime::new(900).ok();
        assert_eq!(s.assign(&"k".into(), &-1, 0, pt).unwrap().as_millis(), 900);
        assert_eq!(s.assign(&"k".into(), &5, 0, pt).unwrap().as_millis(), 5);
    }

    #[test]
    fn default_policy_from_config_refuses_a_negative_bound_naming_the_key() {
        let err = SourceTimePolicy::from_max_out_of_orderness_ms(-10).unwrap_err();
        assert!(err.to_string().contains("max-out-of-orderness-ms"));
        assert!(err.to_string().contains("-10"));
        assert!(SourceTimePolicy::from_max_out_of_orderness_ms(10_000).is_ok());
    }

    #[test]
    fn absurd_bound_is_refused() {
        let s = S::for_bounded_out_of_orderness(Duration::from_secs(u64::MAX / 4));
        assert!(matches!(
            s.validate("orders"),
            Err(StrategyError::AbsurdBound { .. })
        ));
    }

    #[test]
    fn zero_alignment_drift_or_interval_is_refused_naming_the_group() {
        let s = S::for_monotonous_timestamps().with_watermark_alignment(
            "g1",
            Duration::ZERO,
            Duration::from_secs(1),
        );
        let err = s.validate("orders").unwrap_err();
        assert_eq!(
            err,
            StrategyError::ZeroAlignmentDrift { group: "g1".into() }
        );
        assert!(err.to_string().contains("g1"));
        let s = S::for_monotonous_timestamps().with_watermark_alignment(
            "g2",
            Duration::from_secs(1),
            Duration::ZERO,
        );
        assert_eq!(
            s.validate("orders").unwrap_err(),
            StrategyError::ZeroAlignmentInterval { group: "g2".into() }
        );
        let s = S::for_monotonous_timestamps().with_watermark_alignment(
            "",
            Duration::from_secs(1),
            Duration::from_secs(1),
        );
        assert_eq!(
            s.validate("orders").unwrap_err(),
            StrategyError::EmptyAlignmentGroup
        );
    }

    #[test]
    fn decorators_compose() {
        let s = S::no_watermarks()
            .with_idleness(Duration::from_secs(5))
            .with_watermark_alignment("g", Duration::from_secs(2), Duration::from_millis(100));
        assert!(!s.policy().generator().produces_watermarks());
        assert_eq!(s.policy().idleness(), Some(Duration::from_secs(5)));
        assert_eq!(s.policy().alignment().unwrap().group, "g");
        assert!(s.validate("src").is_ok());
    }
}
