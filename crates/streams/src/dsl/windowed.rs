//! [`WindowedKStream`]: a grouped stream windowed by time, sliding or
//! session windows (`TimeWindowedKStream`, `SlidingWindowedKStream`,
//! `SessionWindowedKStream` are its names per kind), and its count, reduce
//! and aggregate into a table of `Windowed<K>`.
//!
//! One implementation builds every windowed aggregation node: the store
//! name, the retention check (`Materialized::with_retention`, else the
//! kind's default), the serdes a changelog needs, the emit-frontier
//! companion `<store>-emitfrontier` under on-window-close, and the close
//! offset `suppress(until_window_closes)` reads. A [`WindowKind`] says only
//! what differs: the fold (sessions also merge), the store and the operator
//! (`processors::window_aggregate`, `sliding_aggregate`, `session_aggregate`),
//! and the windowed key serde.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{
    InMemoryKeyValueStore, SegmentedConfig, StoreConfig, ValueAndTimestampCodec,
};

use crate::dsl::grouped::{
    aggregate_aggregation, aggregation_store, count_aggregation, reduce_aggregation,
};
use crate::dsl::kstream::{KStream, add_processor};
use crate::dsl::ktable::KTable;
use crate::dsl::materialized::Materialized;
use crate::error::TopologyError;
use crate::processors::session_aggregate::{SessionAggregation, SessionWindowAggregate};
use crate::processors::sliding_aggregate::SlidingWindowAggregate;
use crate::processors::window_aggregate::TimeWindowAggregate;
use crate::processors::windowed::{Aggregation, EmitFrontier, WindowedOutput};
use crate::record::Windowed;
use crate::serde::{BoxedCodec, I64Serde, SerdeRef, SessionWindowedSerde, codec};
use crate::topology::StoreShape;
use crate::topology::graph::{Downstream, FrontierOperator, Instantiation, Port, PortHandle, Push};
use crate::topology::store_choice::StoreRequest;
use crate::windows::{EmitStrategy, SessionWindows, SlidingWindows, TimeWindows};

/// A grouped stream windowed by `W`, as Kafka Streams' `TimeWindowedKStream`
/// and `SessionWindowedKStream`.
#[must_use = "a windowed stream does nothing until aggregated"]
pub struct WindowedKStream<K, V, W> {
    pub(crate) stream: KStream<K, V>,
    pub(crate) windows: W,
    pub(crate) emit: EmitStrategy,
}

/// A grouped stream windowed by [`TimeWindows`] (tumbling or hopping).
pub type TimeWindowedKStream<K, V> = WindowedKStream<K, V, TimeWindows>;
/// A grouped stream windowed by [`SlidingWindows`], as Kafka Streams'
/// `TimeWindowedKStream` over `SlidingWindows`.
pub type SlidingWindowedKStream<K, V> = WindowedKStream<K, V, SlidingWindows>;
/// A grouped stream windowed by [`SessionWindows`].
pub type SessionWindowedKStream<K, V> = WindowedKStream<K, V, SessionWindows>;

/// The parts of a windowed aggregation that differ per window kind. Only
/// the three kinds implement it.
pub(crate) trait WindowKind: Copy + std::fmt::Debug + Send + Sync + 'static {
    /// The stream's name in `Debug` output.
    const STREAM: &'static str;
    /// The store it aggregates into.
    const SHAPE: StoreShape;
    /// What makes the node watermark-driven (docs/validation.md#watermark-driven), named in
    /// validation errors.
    const AGGREGATION: &'static str;
    /// The default retention, in retention errors.
    const DEFAULT_RETENTION: &'static str;

    /// How values fold: [`Aggregation`], or for sessions also the merge.
    type Fold<K: 'static, V: 'static, A: 'static>: FoldOf<K, V, A>;
    /// The operator.
    type Operator<K: AggKey, V: Clone + 'static, A: Clone + 'static>: Push<K, V>
        + FrontierOperator
        + 'static;

    /// Checks the definition; `store` names the operator in errors.
    fn validate(&self, store: &str) -> Result<(), TopologyError>;

    /// The default retention (docs/state.md#retention).
    fn default_retention_ms(&self) -> i64;

    /// `close − window.end`, for `suppress(until_window_closes)`.
    fn close_offset(&self) -> i64;

    /// `window.end − window.start`, for a window of fixed size (time and
    /// sliding windows); `None` for sessions, whose store keeps each end.
    fn size_ms(&self) -> Option<i64>;

    fn key_serde<K: 'static>(&self, key: SerdeRef<K>) -> SerdeRef<Windowed<K>>;

    /// Creates and registers the store, and the operator over it.
    fn operator<K: AggKey, V: Clone + 'static, A: Clone + 'static>(
        self,
        cx: &mut Instantiation,
        store: StoreParts<'_, K, A>,
        fold: Self::Fold<K, V, A>,
        out: WindowedOutput<K, A>,
    ) -> Self::Operator<K, V, A>;
}

/// The key of a windowed aggregation.
pub(crate) trait AggKey: Ord + Clone + std::fmt::Debug + 'static {}

impl<K: Ord + Clone + std::fmt::Debug + 'static> AggKey for K {}

/// A fold built from the per-record aggregation and, for sessions, where a
/// merge starts (`init`, if given) and the merger, which the kinds that
/// never merge ignore.
pub(crate) trait FoldOf<K, V, A>: Clone + Send + Sync + 'static {
    fn of(
        per_record: Aggregation<K, V, A>,
        init: Option<Init<A>>,
        merge: Option<Merge<K, A>>,
    ) -> Self;
}

impl<K: 'static, V: 'static, A: 'static> FoldOf<K, V, A> for Aggregation<K, V, A> {
    fn of(per_record: Aggregation<K, V, A>, _: Option<Init<A>>, _: Option<Merge<K, A>>) -> Self {
        per_record
    }
}

impl<K: 'static, V: 'static, A: 'static> FoldOf<K, V, A> for SessionAggregation<K, V, A> {
    /// # Panics
    /// Without `merge`: every session aggregation passes one.
    fn of(
        per_record: Aggregation<K, V, A>,
        init: Option<Init<A>>,
        merge: Option<Merge<K, A>>,
    ) -> Self {
        SessionAggregation {
            per_record,
            init,
            merge: merge.expect("a session aggregation has a merger"),
        }
    }
}

/// A windowed aggregation's store, as the DSL configured it.
pub(crate) struct StoreParts<'a, K, A> {
    request: StoreRequest,
    retention: i64,
    key_serde: &'a Option<SerdeRef<K>>,
    value_serde: &'a Option<SerdeRef<A>>,
}

/// A session aggregation's initial aggregate.
pub(crate) type Init<A> = Arc<dyn Fn() -> A + Send + Sync>;
/// A session aggregation's merger.
pub(crate) type Merge<K, A> = Arc<dyn Fn(&K, A, A) -> A + Send + Sync>;

/// The window kinds that never merge windows (time, sliding): their
/// `aggregate` takes no merger.
pub(crate) trait UnmergedWindowKind: WindowKind {}

/// The retention of a windowed store: the configured one if it is at least
/// the default, else an error naming the store.
fn checked_retention(
    store: &str,
    configured: Option<i64>,
    default: i64,
    what: &str,
) -> Result<i64, TopologyError> {
    let retention = configured.unwrap_or(default);
    if retention < default {
        return Err(TopologyError::InvalidArgument {
            node: store.to_owned(),
            reason: format!("retention {retention} ms is shorter than {what} = {default} ms"),
        });
    }
    Ok(retention)
}

/// Registers `<store>-emitfrontier` and reads the emit frontier from it.
fn emit_frontier_for(cx: &mut Instantiation, store_name: &str) -> EmitFrontier {
    let name = format!("{store_name}-emitfrontier");
    let fs = InMemoryKeyValueStore::new(
        StoreConfig::new(name.clone()).with_changelog_enabled(cx.config.changelog_enabled),
        stoatflow_state::StringCodec,
        stoatflow_state::I64Codec,
    );
    let fs = Rc::new(RefCell::new(fs));
    cx.add_store(&name, fs.clone());
    EmitFrontier::new(store_name, fs)
}

/// The window store of a time or sliding aggregation, registered with `cx`.
fn window_store<K, A>(
    cx: &mut Instantiation,
    store: StoreParts<'_, K, A>,
) -> Rc<RefCell<crate::processors::windowed::WindowStoreOf<K, A>>>
where
    K: Ord + Clone + 'static,
    A: Clone + 'static,
{
    let name = &store.request.name;
    cx.window_store(
        &store.request,
        SegmentedConfig::new(store.retention),
        BoxedCodec(codec(store.key_serde, name)),
        ValueAndTimestampCodec::new(BoxedCodec(codec(store.value_serde, name))),
    )
}

impl WindowKind for TimeWindows {
    const STREAM: &'static str = "TimeWindowedKStream";
    const SHAPE: StoreShape = StoreShape::Window;
    const AGGREGATION: &'static str = "windowed aggregation";
    const DEFAULT_RETENTION: &'static str = "window size + grace";
    type Fold<K: 'static, V: 'static, A: 'static> = Aggregation<K, V, A>;
    type Operator<K: AggKey, V: Clone + 'static, A: Clone + 'static> = TimeWindowAggregate<K, V, A>;

    fn validate(&self, store: &str) -> Result<(), TopologyError> {
        TimeWindows::validate(self, store)
    }

    fn default_retention_ms(&self) -> i64 {
        TimeWindows::default_retention_ms(self)
    }

    fn close_offset(&self) -> i64 {
        self.grace_ms()
    }

    fn size_ms(&self) -> Option<i64> {
        Some(TimeWindows::size_ms(self))
    }

    fn key_serde<K: 'static>(&self, key: SerdeRef<K>) -> SerdeRef<Windowed<K>> {
        Arc::new(self.windowed_serde_of(key))
    }

    fn operator<K: AggKey, V: Clone + 'static, A: Clone + 'static>(
        self,
        cx: &mut Instantiation,
        store: StoreParts<'_, K, A>,
        fold: Aggregation<K, V, A>,
        out: WindowedOutput<K, A>,
    ) -> TimeWindowAggregate<K, V, A> {
        TimeWindowAggregate {
            windows: self,
            aggregation: fold,
            store: window_store(cx, store),
            out,
        }
    }
}

impl UnmergedWindowKind for TimeWindows {}

impl WindowKind for SlidingWindows {
    const STREAM: &'static str = "SlidingWindowedKStream";
    const SHAPE: StoreShape = StoreShape::Window;
    const AGGREGATION: &'static str = "sliding-window aggregation";
    const DEFAULT_RETENTION: &'static str = "2 x time difference + grace";
    type Fold<K: 'static, V: 'static, A: 'static> = Aggregation<K, V, A>;
    type Operator<K: AggKey, V: Clone + 'static, A: Clone + 'static> =
        SlidingWindowAggregate<K, V, A>;

    fn validate(&self, store: &str) -> Result<(), TopologyError> {
        SlidingWindows::validate(self, store)
    }

    fn default_retention_ms(&self) -> i64 {
        SlidingWindows::default_retention_ms(self)
    }

    fn close_offset(&self) -> i64 {
        1 + self.grace_ms()
    }

    fn size_ms(&self) -> Option<i64> {
        Some(self.time_difference_ms())
    }

    fn key_serde<K: 'static>(&self, key: SerdeRef<K>) -> SerdeRef<Windowed<K>> {
        Arc::new(self.windowed_serde_of(key))
    }

    fn operator<K: AggKey, V: Clone + 'static, A: Clone + 'static>(
        self,
        cx: &mut Instantiation,
        store: StoreParts<'_, K, A>,
        fold: Aggregation<K, V, A>,
        out: WindowedOutput<K, A>,
    ) -> SlidingWindowAggregate<K, V, A> {
        SlidingWindowAggregate {
            windows: self,
            aggregation: fold,
            store: window_store(cx, store),
            out,
            window_set: Vec::new(),
        }
    }
}

impl UnmergedWindowKind for SlidingWindows {}

impl WindowKind for SessionWindows {
    const STREAM: &'static str = "SessionWindowedKStream";
    const SHAPE: StoreShape = StoreShape::Session;
    const AGGREGATION: &'static str = "session-window aggregation";
    const DEFAULT_RETENTION: &'static str = "inactivity gap + grace";
    type Fold<K: 'static, V: 'static, A: 'static> = SessionAggregation<K, V, A>;
    type Operator<K: AggKey, V: Clone + 'static, A: Clone + 'static> =
        SessionWindowAggregate<K, V, A>;

    fn validate(&self, store: &str) -> Result<(), TopologyError> {
        SessionWindows::validate(self, store)
    }

    fn default_retention_ms(&self) -> i64 {
        SessionWindows::default_retention_ms(self)
    }

    fn close_offset(&self) -> i64 {
        self.close_span()
    }

    fn size_ms(&self) -> Option<i64> {
        None
    }

    fn key_serde<K: 'static>(&self, key: SerdeRef<K>) -> SerdeRef<Windowed<K>> {
        Arc::new(SessionWindowedSerde::new(key))
    }

    fn operator<K: AggKey, V: Clone + 'static, A: Clone + 'static>(
        self,
        cx: &mut Instantiation,
        store: StoreParts<'_, K, A>,
        fold: SessionAggregation<K, V, A>,
        out: WindowedOutput<K, A>,
    ) -> SessionWindowAggregate<K, V, A> {
        let name = &store.request.name;
        let ss = cx.session_store(
            &store.request,
            SegmentedConfig::new(store.retention),
            BoxedCodec(codec(store.key_serde, name)),
            BoxedCodec(codec(store.value_serde, name)),
        );
        SessionWindowAggregate {
            windows: self,
            aggregation: fold,
            store: ss,
            out,
        }
    }
}

impl<K, V, W: WindowKind> std::fmt::Debug for WindowedKStream<K, V, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(W::STREAM)
            .field("windows", &self.windows)
            .field("emit", &self.emit)
            .finish()
    }
}

// The bound is sealed: only the three window kinds implement `WindowKind`,
// and users name the streams by their aliases.
#[allow(private_bounds)]
impl<K, V, W> WindowedKStream<K, V, W>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    V: Clone + 'static,
    W: WindowKind,
{
    pub(crate) fn new(stream: KStream<K, V>, windows: W) -> Self {
        WindowedKStream {
            stream,
            windows,
            emit: EmitStrategy::default(),
        }
    }

    /// When results are forwarded.
    pub fn emit_strategy(mut self, emit: EmitStrategy) -> Self {
        self.emit = emit;
        self
    }

    /// Counts records per key and window (session).
    pub fn count(&self) -> KTable<Windowed<K>, i64> {
        self.count_with(Materialized::default())
    }

    /// Counts into a named store.
    pub fn count_with(&self, materialized: Materialized<K, i64>) -> KTable<Windowed<K>, i64> {
        let m = materialized.or_value_serde(Some(Arc::new(I64Serde)));
        let fold = W::Fold::of(count_aggregation(), None, Some(Arc::new(|_, a, b| a + b)));
        self.aggregate_into("KSTREAM-AGGREGATE", fold, m)
    }

    /// Combines values per key and window (session); merging sessions
    /// combines their results with the same reducer, earlier session first.
    pub fn reduce(
        &self,
        reducer: impl Fn(V, V) -> V + Send + Sync + 'static,
        materialized: Materialized<K, V>,
    ) -> KTable<Windowed<K>, V> {
        let m = materialized.or_value_serde(self.stream.value_serde.clone());
        let reducer = Arc::new(reducer);
        let merge_reducer = reducer.clone();
        let fold = W::Fold::of(
            reduce_aggregation(move |a, b| reducer(a, b)),
            None,
            Some(Arc::new(move |_, a, b| merge_reducer(a, b))),
        );
        self.aggregate_into("KSTREAM-REDUCE", fold, m)
    }

    pub(crate) fn aggregate_into<A: Clone + 'static>(
        &self,
        prefix: &str,
        fold: W::Fold<K, V, A>,
        m: Materialized<K, A>,
    ) -> KTable<Windowed<K>, A> {
        let graph = &self.stream.graph;
        let (store, key_serde, request) = aggregation_store(&self.stream, prefix, &m, W::SHAPE);
        let windows = self.windows;
        let retention = windows.validate(&store).and_then(|()| {
            let default = windows.default_retention_ms();
            checked_retention(&store, m.retention_ms, default, W::DEFAULT_RETENTION)
        });
        let retention = retention.unwrap_or_else(|e| {
            graph.borrow_mut().errors.push(e);
            windows.default_retention_ms().max(0)
        });
        let emit = self.emit;
        let mut stores = vec![store.clone()];
        if emit == EmitStrategy::OnWindowClose {
            stores.push(format!("{store}-emitfrontier"));
        }
        let (ks, vs) = (key_serde.clone(), m.value_serde.clone());
        let store_name = store.clone();
        let (id, _) = add_processor(
            graph,
            prefix,
            vec![self.stream.node],
            stores,
            Some(W::AGGREGATION),
            Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                let emit_frontier = (emit == EmitStrategy::OnWindowClose)
                    .then(|| emit_frontier_for(cx, &store_name));
                let out = WindowedOutput {
                    node: store_name.clone(),
                    drop_counted: std::cell::Cell::new(false),
                    store_name: store_name.clone(),
                    emit,
                    emit_frontier,
                    down: Downstream::from_children(ch),
                };
                let store = StoreParts {
                    request: request.clone(),
                    retention,
                    key_serde: &ks,
                    value_serde: &vs,
                };
                let op = windows.operator(cx, store, fold.clone(), out);
                cx.note_window_shape(&store_name, windows.size_ms(), windows.close_offset());
                let op = Rc::new(RefCell::new(op));
                cx.add_frontier_op(op.clone());
                let port: Port<K, V> = op;
                PortHandle::of(port)
            }),
        );
        graph
            .borrow_mut()
            .window_close_offsets
            .insert(id, windows.close_offset());
        let key_serde_w = key_serde.map(|k| windows.key_serde(k));
        KTable::new(graph.clone(), id, key_serde_w, m.value_serde, Some(store))
    }
}

#[allow(private_bounds)]
impl<K, V, W> WindowedKStream<K, V, W>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    V: Clone + 'static,
    W: UnmergedWindowKind,
{
    /// Folds values per key and window.
    pub fn aggregate<A: Clone + 'static>(
        &self,
        init: impl Fn() -> A + Send + Sync + 'static,
        aggregator: impl Fn(&K, &V, A) -> A + Send + Sync + 'static,
        materialized: Materialized<K, A>,
    ) -> KTable<Windowed<K>, A> {
        let fold = W::Fold::of(aggregate_aggregation(init, aggregator), None, None);
        let m = materialized.or_default_value_serde();
        self.aggregate_into("KSTREAM-AGGREGATE", fold, m)
    }
}

impl<K, V> SessionWindowedKStream<K, V>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    V: Clone + 'static,
{
    /// Folds values per session; `merger` combines two sessions' aggregates
    /// when a record joins them (the merge starts from `init()`, as in Kafka
    /// Streams).
    pub fn aggregate<A: Clone + 'static>(
        &self,
        init: impl Fn() -> A + Send + Sync + 'static,
        aggregator: impl Fn(&K, &V, A) -> A + Send + Sync + 'static,
        merger: impl Fn(&K, A, A) -> A + Send + Sync + 'static,
        materialized: Materialized<K, A>,
    ) -> KTable<Windowed<K>, A> {
        let init: Init<A> = Arc::new(init);
        let first = init.clone();
        let per_record = aggregate_aggregation(move || first(), aggregator);
        let fold = SessionAggregation::of(per_record, Some(init), Some(Arc::new(merger)));
        let m = materialized.or_default_value_serde();
        self.aggregate_into("KSTREAM-AGGREGATE", fold, m)
    }
}
