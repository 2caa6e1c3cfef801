//! [`KGroupedStream`]: a grouped stream and its aggregations into a table,
//! and the folds of count, reduce and aggregate every aggregation uses. The
//! windowed forms are `windowed`.

use std::any::Any;
use std::sync::Arc;

use stoatflow_state::ValueAndTimestampCodec;

use crate::dsl::kstream::{KStream, add_processor};
use crate::dsl::ktable::KTable;
use crate::dsl::materialized::Materialized;
use crate::processors::table_aggregate::TableAggregate;
use crate::processors::windowed::Aggregation;
use crate::serde::{BoxedCodec, I64Serde, SerdeRef, codec};
use crate::topology::StoreShape;
use crate::topology::graph::{Downstream, Instantiation};
use crate::topology::store_choice::StoreRequest;

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

    /// Windows the grouped stream: by [`crate::TimeWindows`], `SlidingWindows` or
    /// `SessionWindows` (see the `windowing` module for why this is generic).
    pub fn windowed_by<W: crate::dsl::windowing::Windowing>(&self, windows: W) -> W::Stream<K, V> {
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
            materialized.or_default_value_serde(),
        )
    }

    pub(crate) fn aggregate_into<A: Clone + 'static>(
        &self,
        prefix: &str,
        aggregation: Aggregation<K, V, A>,
        m: Materialized<K, A>,
    ) -> KTable<K, A> {
        let graph = &self.stream.graph;
        let (store, key_serde, request) =
            aggregation_store(&self.stream, prefix, &m, StoreShape::KeyValue);
        let (ks, vs) = (key_serde.clone(), m.value_serde.clone());
        let store_name = store.clone();
        let (id, _) = add_processor(
            graph,
            prefix,
            vec![self.stream.node],
            vec![store.clone()],
            None,
            Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                let kv = cx.key_value_store(
                    &request,
                    BoxedCodec(codec(&ks, &store_name)),
                    ValueAndTimestampCodec::new(BoxedCodec(codec(&vs, &store_name))),
                );
                crate::topology::graph::port::<K, V, _>(TableAggregate {
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

/// The store of an aggregation of `stream` materialized as `m`: its name
/// (given, or generated from `prefix`) and its key serde (given, or the
/// stream's). A changelogged store without serdes is noted for validation.
pub(crate) fn aggregation_store<K, V, A>(
    stream: &KStream<K, V>,
    prefix: &str,
    m: &Materialized<K, A>,
    shape: StoreShape,
) -> (String, Option<SerdeRef<K>>, StoreRequest) {
    let graph = &stream.graph;
    let store = m.name.clone().unwrap_or_else(|| {
        graph
            .borrow_mut()
            .next_name(&format!("{prefix}-STATE-STORE"))
    });
    let key_serde = m.key_serde.clone().or_else(|| stream.key_serde.clone());
    note_missing(graph, &store, m.logging, &key_serde, &m.value_serde);
    let store_type = m.store_type(&store, shape).unwrap_or_else(|e| {
        graph.borrow_mut().errors.push(e);
        None
    });
    let request = StoreRequest::new(store.clone(), store_type, m.logging)
        .with_serdes(key_serde.is_some(), m.value_serde.is_some());
    (store, key_serde, request)
}

pub(crate) fn note_missing<K, A>(
    graph: &crate::topology::graph::SharedGraph,
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
