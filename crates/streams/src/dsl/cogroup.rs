//! Cogroup: several grouped streams, each with its own aggregator, folded
//! into one aggregate per key (and window), as Kafka Streams'
//! `CogroupedKStream`.
//!
//! Each input is turned into a [`CogroupValue`], a value that knows how to
//! fold itself into the aggregate with its stream's aggregator, and the
//! inputs are merged into one stream; the ordinary non-windowed, time,
//! sliding and session aggregations then run over it. So cogroup adds no
//! operator of its own and no second implementation of the late rule,
//! emission or retention. The merged value stream is never serialized (the
//! inputs were grouped, hence co-partitioned, before they were cogrouped).

use std::rc::Rc;
use std::sync::Arc;

use crate::dsl::grouped::KGroupedStream;
use crate::dsl::kstream::KStream;
use crate::dsl::ktable::KTable;
use crate::dsl::materialized::Materialized;
use crate::dsl::windowed::{FoldOf, Init, UnmergedWindowKind, WindowKind, WindowedKStream};
use crate::dsl::windowing::Windowing;
use crate::processors::session_aggregate::SessionAggregation;
use crate::processors::windowed::Aggregation;
use crate::record::Windowed;
use crate::windows::{EmitStrategy, SessionWindows, SlidingWindows, TimeWindows};

/// A record of one cogrouped input, ready to fold into the aggregate.
pub struct CogroupValue<K, A>(Rc<dyn Fn(&K, A) -> A>);

impl<K, A> Clone for CogroupValue<K, A> {
    fn clone(&self) -> Self {
        CogroupValue(self.0.clone())
    }
}

impl<K, A> std::fmt::Debug for CogroupValue<K, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CogroupValue")
    }
}

impl<K, A> CogroupValue<K, A> {
    fn apply(&self, key: &K, agg: A) -> A {
        (self.0)(key, agg)
    }
}

fn cogroup_aggregation<K: 'static, A: 'static>(
    init: Arc<dyn Fn() -> A + Send + Sync>,
) -> Aggregation<K, CogroupValue<K, A>, A> {
    Aggregation {
        initial: Arc::new(move |k, v: &CogroupValue<K, A>| v.apply(k, init())),
        add: Arc::new(|k, v: &CogroupValue<K, A>, a| v.apply(k, a)),
    }
}

fn as_cogroup_values<K, V, A>(
    grouped: &KGroupedStream<K, V>,
    aggregator: impl Fn(&K, &V, A) -> A + Send + Sync + 'static,
) -> KStream<K, CogroupValue<K, A>>
where
    K: Clone + 'static,
    V: Clone + 'static,
    A: 'static,
{
    let aggregator = Arc::new(aggregator);
    grouped.stream.map_values(move |_, v: V| {
        let aggregator = aggregator.clone();
        CogroupValue(Rc::new(move |k: &K, a: A| aggregator(k, &v, a)))
    })
}

impl<K, V> KGroupedStream<K, V>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    V: Clone + 'static,
{
    /// Starts a cogroup with this stream and its aggregator.
    pub fn cogroup<A: Clone + 'static>(
        &self,
        aggregator: impl Fn(&K, &V, A) -> A + Send + Sync + 'static,
    ) -> CogroupedKStream<K, A> {
        CogroupedKStream {
            merged: as_cogroup_values(self, aggregator),
        }
    }
}

/// Grouped streams cogrouped into one aggregate type `A`.
#[must_use = "a cogrouped stream does nothing until aggregated"]
pub struct CogroupedKStream<K, A> {
    merged: KStream<K, CogroupValue<K, A>>,
}

impl<K, A> std::fmt::Debug for CogroupedKStream<K, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CogroupedKStream")
    }
}

impl<K, A> CogroupedKStream<K, A>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    A: Clone + 'static,
{
    /// Adds another grouped stream with its own aggregator.
    pub fn cogroup<V: Clone + 'static>(
        self,
        grouped: &KGroupedStream<K, V>,
        aggregator: impl Fn(&K, &V, A) -> A + Send + Sync + 'static,
    ) -> Self {
        let other = as_cogroup_values(grouped, aggregator);
        CogroupedKStream {
            merged: self.merged.merge(&other),
        }
    }

    /// Aggregates per key into a table.
    pub fn aggregate(
        &self,
        init: impl Fn() -> A + Send + Sync + 'static,
        materialized: Materialized<K, A>,
    ) -> KTable<K, A> {
        KGroupedStream::new(self.merged.clone()).aggregate_into(
            "COGROUPKSTREAM-AGGREGATE",
            cogroup_aggregation(Arc::new(init)),
            materialized.or_default_value_serde(),
        )
    }

    /// Windows the cogrouped stream by time, sliding or session windows.
    pub fn windowed_by<W: Windowing>(&self, windows: W) -> W::Cogrouped<K, A> {
        windows.cogrouped(self.merged.clone())
    }
}

/// A cogrouped stream windowed by `W` (`TimeWindowedCogroupedKStream`,
/// `SlidingWindowedCogroupedKStream`, `SessionWindowedCogroupedKStream`).
#[must_use = "a windowed stream does nothing until aggregated"]
pub struct WindowedCogroupedKStream<K, A, W> {
    pub(crate) inner: WindowedKStream<K, CogroupValue<K, A>, W>,
}

/// A cogrouped stream windowed by [`crate::TimeWindows`].
pub type TimeWindowedCogroupedKStream<K, A> = WindowedCogroupedKStream<K, A, TimeWindows>;
/// A cogrouped stream windowed by [`crate::SlidingWindows`].
pub type SlidingWindowedCogroupedKStream<K, A> = WindowedCogroupedKStream<K, A, SlidingWindows>;
/// A cogrouped stream windowed by [`crate::SessionWindows`].
pub type SessionWindowedCogroupedKStream<K, A> = WindowedCogroupedKStream<K, A, SessionWindows>;

impl<K, A, W: WindowKind> std::fmt::Debug for WindowedCogroupedKStream<K, A, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // TimeWindowedKStream -> TimeWindowedCogroupedKStream
        let kind = W::STREAM.trim_end_matches("KStream");
        write!(f, "{kind}CogroupedKStream")
    }
}

// Sealed bounds, as on `WindowedKStream`.
#[allow(private_bounds)]
impl<K, A, W> WindowedCogroupedKStream<K, A, W>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    A: Clone + 'static,
    W: WindowKind,
{
    /// When results are forwarded.
    pub fn emit_strategy(self, emit: EmitStrategy) -> Self {
        WindowedCogroupedKStream {
            inner: self.inner.emit_strategy(emit),
        }
    }
}

#[allow(private_bounds)]
impl<K, A, W> WindowedCogroupedKStream<K, A, W>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    A: Clone + 'static,
    W: UnmergedWindowKind,
{
    /// Aggregates per key and window.
    pub fn aggregate(
        &self,
        init: impl Fn() -> A + Send + Sync + 'static,
        materialized: Materialized<K, A>,
    ) -> KTable<Windowed<K>, A> {
        self.inner.aggregate_into(
            "COGROUPKSTREAM-AGGREGATE",
            W::Fold::of(cogroup_aggregation(Arc::new(init)), None, None),
            materialized.or_default_value_serde(),
        )
    }
}

impl<K, A> SessionWindowedCogroupedKStream<K, A>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    A: Clone + 'static,
{
    /// Aggregates per session; `merger` combines sessions a record joins
    /// (starting from `init()`, as in Kafka Streams).
    pub fn aggregate(
        &self,
        init: impl Fn() -> A + Send + Sync + 'static,
        merger: impl Fn(&K, A, A) -> A + Send + Sync + 'static,
        materialized: Materialized<K, A>,
    ) -> KTable<Windowed<K>, A> {
        let init: Init<A> = Arc::new(init);
        let per_record = cogroup_aggregation(init.clone());
        let fold = SessionAggregation::of(per_record, Some(init), Some(Arc::new(merger)));
        let m = materialized.or_default_value_serde();
        self.inner
            .aggregate_into("COGROUPKSTREAM-AGGREGATE", fold, m)
    }
}
