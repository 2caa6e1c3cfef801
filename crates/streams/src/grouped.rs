//! [`KGroupedStream`] and [`TimeWindowedKStream`]: grouped streams and their
//! aggregations into tables.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{
    Codec, CodecError, InMemoryKeyValueStore, InMemoryWindowStore, SegmentedConfig, StoreConfig,
    ValueAndTimestampCodec,
};

use crate::graph::{Downstream, Instantiation};
use crate::kstream::{KStream, add_processor};
use crate::ktable::KTable;
use crate::materialized::Materialized;
use crate::processors::table_aggregate::TableAggregate;
use crate::processors::window_aggregate::{Aggregation, EmitFrontier, TimeWindowAggregate};
use crate::record::Windowed;
use crate::serde::{I64Serde, SerdeCodec, SerdeRef};
use crate::windows::{EmitStrategy, TimeWindows};

/// A codec for a store whose serde was not given; only reached if the
/// topology was validated with changelogs on, which validation refuses.
#[derive(Debug)]
pub(crate) struct MissingCodec(pub(crate) String);

impl<T> Codec<T> for MissingCodec {
    fn encode(&self, _: &T, _: &mut Vec<u8>) -> Result<(), CodecError> {
        Err(CodecError::new(format!(
            "store {} has no serde to encode its changelog",
            self.0
        )))
    }
    fn decode(&self, _: &[u8]) -> Result<T, CodecError> {
        Err(CodecError::new(format!(
            "store {} has no serde to decode its changelog",
            self.0
        )))
    }
}

pub(crate) fn codec<T: 'static>(serde: &Option<SerdeRef<T>>, store: &str) -> Box<dyn Codec<T>> {
    match serde {
        Some(s) => Box::new(SerdeCodec::new(s.clone(), format!("{store}-changelog"))),
        None => Box::new(MissingCodec(store.to_owned())),
    }
}

/// Adapts a boxed codec back into `impl Codec`.
pub(crate) struct BoxedCodec<T>(pub(crate) Box<dyn Codec<T>>);

impl<T> Codec<T> for BoxedCodec<T> {
    fn encode(&self, v: &T, out: &mut Vec<u8>) -> Result<(), CodecError> {
        self.0.encode(v, out)
    }
    fn decode(&self, b: &[u8]) -> Result<T, CodecError> {
        self.0.decode(b)
    }
}

/// A stream grouped by key, ready to aggregate.
#[must_use = "a grouped stream does nothing until aggregated"]
pub struct KGroupedStream<K, V> {
    pub(crate) stream: KStream<K, V>,
}

impl<K, V> std::fmt::Debug for KGroupedStream<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KGroupedStream")
            .field("stream", &self.stream)
            .finish()
    }
}

pub(crate) fn count_aggregation<K, V>() -> Aggregation<K, V, i64> {
    Aggregation {
        initial: Arc::new(|_, _| 1),
        add: Arc::new(|_, _, a| a + 1),
    }
}

pub(crate) fn reduce_aggregation<K, V: Clone + 'static>(
    reducer: impl Fn(V, V) -> V + Send + Sync + 'static,
) -> Aggregation<K, V, V> {
    Aggregation {
        initial: Arc::new(|_, v: &V| v.clone()),
        add: Arc::new(move |_, v: &V, a| reducer(a, v.clone())),
    }
}

pub(crate) fn aggregate_aggregation<K, V, A: 'static>(
    init: impl Fn() -> A + Send + Sync + 'static,
    agg: impl Fn(&K, &V, A) -> A + Send + Sync + 'static,
) -> Aggregation<K, V, A> {
    let agg = Arc::new(agg);
    let first = agg.clone();
    Aggregation {
        initial: Arc::new(move |k, v| first(k, v, init())),
        add: Arc::new(move |k, v, a| agg(k, v, a)),
    }
}

impl<K, V> KGroupedStream<K, V>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    V: Clone + 'static,
{
    pub(crate) fn new(stream: KStream<K, V>) -> Self {
        KGroupedStream { stream }
    }

    /// Windows the grouped stream: by [`TimeWindows`], `SlidingWindows` or
    /// `SessionWindows` (see the `windowing` module for why this is generic).
    pub fn windowed_by<W: crate::windowing::Windowing>(&self, windows: W) -> W::Stream<K, V> {
        windows.stream(self.stream.clone())
    }

    /// Counts records per key.
    pub fn count(&self) -> KTable<K, i64> {
        self.count_with(Materialized::default())
    }

    /// Counts records per key into a named store.
    pub fn count_with(&self, materialized: Materialized<K, i64>) -> KTable<K, i64> {
        let m = materialized.or_value_serde(Some(Arc::new(I64Serde)));
        self.aggregate_into("KSTREAM-AGGREGATE", count_aggregation(), m)
    }

    /// Combines values per key.
    pub fn reduce(
        &self,
        reducer: impl Fn(V, V) -> V + Send + Sync + 'static,
        materialized: Materialized<K, V>,
    ) -> KTable<K, V> {
        let m = materialized.or_value_serde(self.stream.value_serde.clone());
        self.aggregate_into("KSTREAM-REDUCE", reduce_aggregation(reducer), m)
    }

    /// Folds values per key into an aggregate.
    pub fn aggregate<A: Clone + 'static>(
        &self,
        init: impl Fn() -> A + Send + Sync + 'static,
        aggregator: impl Fn(&K, &V, A) -> A + Send + Sync + 'static,
        materialized: Materialized<K, A>,
    ) -> KTable<K, A> {
        self.aggregate_into(
            "KSTREAM-AGGREGATE",
            aggregate_aggregation(init, aggregator),
            materialized,
        )
    }

    pub(crate) fn aggregate_into<A: Clone + 'static>(
        &self,
        prefix: &str,
        aggregation: Aggregation<K, V, A>,
        m: Materialized<K, A>,
    ) -> KTable<K, A> {
        let graph = &self.stream.graph;
        let store = m.name.clone().unwrap_or_else(|| {
            graph
                .borrow_mut()
                .next_name(&format!("{prefix}-STATE-STORE"))
        });
        let key_serde = m
            .key_serde
            .clone()
            .or_else(|| self.stream.key_serde.clone());
        note_missing(graph, &store, m.logging, &key_serde, &m.value_serde);
        let (ks, vs, logging) = (key_serde.clone(), m.value_serde.clone(), m.logging);
        let store_name = store.clone();
        let (id, _) = add_processor(
            graph,
            prefix,
            vec![self.stream.node],
            vec![store.clone()],
            None,
            Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                let config = StoreConfig::new(store_name.clone())
                    .with_changelog_enabled(logging && cx.config.changelog_enabled);
                let kv = InMemoryKeyValueStore::new(
                    config,
                    BoxedCodec(codec(&ks, &store_name)),
                    ValueAndTimestampCodec::new(BoxedCodec(codec(&vs, &store_name))),
                );
                let kv = Rc::new(RefCell::new(kv));
                cx.add_store(&store_name, kv.clone());
                crate::graph::port::<K, V, _>(TableAggregate {
                    store_name: store_name.clone(),
                    aggregation: aggregation.clone(),
                    store: kv,
                    down: Downstream::from_children(ch),
                })
            }),
        );
        KTable::new(graph.clone(), id, key_serde, m.value_serde, Some(store))
    }
}

pub(crate) fn note_missing<K, A>(
    graph: &crate::graph::SharedGraph,
    store: &str,
    logging: bool,
    ks: &Option<SerdeRef<K>>,
    vs: &Option<SerdeRef<A>>,
) {
    if !logging {
        return;
    }
    let mut g = graph.borrow_mut();
    if ks.is_none() {
        g.missing_serdes.push((store.to_owned(), "key"));
    }
    if vs.is_none() {
        g.missing_serdes.push((store.to_owned(), "value"));
    }
}

/// A grouped stream windowed by time, as Kafka Streams' `TimeWindowedKStream`.
#[must_use = "a windowed stream does nothing until aggregated"]
pub struct TimeWindowedKStream<K, V> {
    pub(crate) stream: KStream<K, V>,
    pub(crate) windows: TimeWindows,
    pub(crate) emit: EmitStrategy,
}

impl<K, V> std::fmt::Debug for TimeWindowedKStream<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimeWindowedKStream")
            .field("windows", &self.windows)
            .field("emit", &self.emit)
            .finish()
    }
}

impl<K, V> TimeWindowedKStream<K, V>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    V: Clone + 'static,
{
    /// When results are forwarded.
    pub fn emit_strategy(mut self, emit: EmitStrategy) -> Self {
        self.emit = emit;
        self
    }

    /// Counts records per key and window.
    pub fn count(&self) -> KTable<Windowed<K>, i64> {
        self.count_with(Materialized::default())
    }

    /// Counts into a named store.
    pub fn count_with(&self, materialized: Materialized<K, i64>) -> KTable<Windowed<K>, i64> {
        let m = materialized.or_value_serde(Some(Arc::new(I64Serde)));
        self.aggregate_into("KSTREAM-AGGREGATE", count_aggregation(), m)
    }

    /// Combines values per key and window.
    pub fn reduce(
        &self,
        reducer: impl Fn(V, V) -> V + Send + Sync + 'static,
        materialized: Materialized<K, V>,
    ) -> KTable<Windowed<K>, V> {
        let m = materialized.or_value_serde(self.stream.value_serde.clone());
        self.aggregate_into("KSTREAM-REDUCE", reduce_aggregation(reducer), m)
    }

    /// Folds values per key and window.
    pub fn aggregate<A: Clone + 'static>(
        &self,
        init: impl Fn() -> A + Send + Sync + 'static,
        aggregator: impl Fn(&K, &V, A) -> A + Send + Sync + 'static,
        materialized: Materialized<K, A>,
    ) -> KTable<Windowed<K>, A> {
        self.aggregate_into(
            "KSTREAM-AGGREGATE",
            aggregate_aggregation(init, aggregator),
            materialized,
        )
    }

    pub(crate) fn aggregate_into<A: Clone + 'static>(
        &self,
        prefix: &str,
        aggregation: Aggregation<K, V, A>,
        m: Materialized<K, A>,
    ) -> KTable<Windowed<K>, A> {
        let graph = &self.stream.graph;
        let store = m.name.clone().unwrap_or_else(|| {
            graph
                .borrow_mut()
                .next_name(&format!("{prefix}-STATE-STORE"))
        });
        let windows = self.windows;
        let retention = m
            .retention_ms
            .unwrap_or_else(|| windows.default_retention_ms());
        {
            let problem = windows.validate(&store).err().or_else(|| {
                (retention < windows.default_retention_ms()).then(|| {
                    crate::error::TopologyError::InvalidArgument {
                        node: store.clone(),
                        reason: format!(
                            "retention {retention} ms is shorter than window size + grace = {} ms",
                            windows.default_retention_ms()
                        ),
                    }
                })
            });
            if let Some(e) = problem {
                graph.borrow_mut().errors.push(e);
            }
        }
        let key_serde = m
            .key_serde
            .clone()
            .or_else(|| self.stream.key_serde.clone());
        note_missing(graph, &store, m.logging, &key_serde, &m.value_serde);
        let emit = self.emit;
        let mut stores = vec![store.clone()];
        if emit == EmitStrategy::OnWindowClose {
            stores.push(format!("{store}-emitfrontier"));
        }
        let (ks, vs, logging) = (key_serde.clone(), m.value_serde.clone(), m.logging);
        let store_name = store.clone();
        let (id, _) = add_processor(
            graph,
            prefix,
            vec![self.stream.node],
            stores,
            Some("windowed aggregation"),
            Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                let changelog = logging && cx.config.changelog_enabled;
                let config = StoreConfig::new(store_name.clone()).with_changelog_enabled(changelog);
                let ws = InMemoryWindowStore::new(
                    config,
                    SegmentedConfig::new(retention),
                    BoxedCodec(codec(&ks, &store_name)),
                    ValueAndTimestampCodec::new(BoxedCodec(codec(&vs, &store_name))),
                );
                let ws = Rc::new(RefCell::new(ws));
                cx.add_store(&store_name, ws.clone());
                let emit_frontier = (emit == EmitStrategy::OnWindowClose).then(|| {
                    let name = format!("{store_name}-emitfrontier");
                    let fs = InMemoryKeyValueStore::new(
                        StoreConfig::new(name.clone())
                            .with_changelog_enabled(cx.config.changelog_enabled),
                        stoatflow_state::StringCodec,
                        stoatflow_state::I64Codec,
                    );
                    let fs = Rc::new(RefCell::new(fs));
                    cx.add_store(&name, fs.clone());
                    EmitFrontier::new(&store_name, fs)
                });
                let op = Rc::new(RefCell::new(TimeWindowAggregate {
                    node: store_name.clone(),
                    store_name: store_name.clone(),
                    windows,
                    aggregation: aggregation.clone(),
                    store: ws,
                    emit,
                    emit_frontier,
                    down: Downstream::from_children(ch),
                }));
                cx.add_frontier_op(op.clone());
                let port: crate::graph::Port<K, V> = op;
                crate::graph::PortHandle::of(port)
            }),
        );
        graph
            .borrow_mut()
            .window_close_offsets
            .insert(id, windows.grace_ms());
        let key_serde_w: Option<SerdeRef<Windowed<K>>> = key_serde.map(|k| {
            Arc::new(crate::serde::TimeWindowedSerde::new(k, windows.size_ms()))
                as SerdeRef<Windowed<K>>
        });
        KTable::new(graph.clone(), id, key_serde_w, m.value_serde, Some(store))
    }
}

impl<T> std::fmt::Debug for BoxedCodec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BoxedCodec")
    }
}
