//! [`SessionWindowedKStream`]: a grouped stream windowed by
//! [`SessionWindows`], and its count, reduce and aggregate (with a merger)
//! into a table of `Windowed<K>` (window `[start, end]`, both inclusive).
//!
//! Owns the building of the session aggregation node, its session store
//! (retention `Materialized::with_retention`, else `gap + grace`) and its
//! emit-frontier companion; the operator itself is
//! `processors::session_aggregate`.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{InMemorySessionStore, SegmentedConfig, StoreConfig};

use crate::dsl::grouped::{
    aggregate_aggregation, count_aggregation, note_missing, reduce_aggregation,
};
use crate::dsl::kstream::{KStream, add_processor};
use crate::dsl::ktable::KTable;
use crate::dsl::materialized::Materialized;
use crate::dsl::sliding_windowed::{checked_retention, emit_frontier_for};
use crate::processors::session_aggregate::{SessionAggregation, SessionWindowAggregate};
use crate::processors::windowed::WindowedOutput;
use crate::record::Windowed;
use crate::serde::{BoxedCodec, codec};
use crate::serde::{I64Serde, SerdeRef, SessionWindowedSerde};
use crate::topology::graph::{Downstream, Instantiation, PortHandle};
use crate::windows::EmitStrategy;
use crate::windows::SessionWindows;

/// A grouped stream windowed by sessions, as Kafka Streams' `SessionWindowedKStream`.
#[must_use = "a windowed stream does nothing until aggregated"]
pub struct SessionWindowedKStream<K, V> {
    stream: KStream<K, V>,
    windows: SessionWindows,
    emit: EmitStrategy,
}

impl<K, V> std::fmt::Debug for SessionWindowedKStream<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionWindowedKStream")
            .field("windows", &self.windows)
            .field("emit", &self.emit)
            .finish()
    }
}

impl<K, V> SessionWindowedKStream<K, V>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    V: Clone + 'static,
{
    pub(crate) fn new(stream: KStream<K, V>, windows: SessionWindows) -> Self {
        SessionWindowedKStream {
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

    /// Counts records per session.
    pub fn count(&self) -> KTable<Windowed<K>, i64> {
        self.count_with(Materialized::default())
    }

    /// Counts into a named store.
    pub fn count_with(&self, materialized: Materialized<K, i64>) -> KTable<Windowed<K>, i64> {
        let m = materialized.or_value_serde(Some(Arc::new(I64Serde)));
        let aggregation = SessionAggregation {
            per_record: count_aggregation(),
            init: None,
            merge: Arc::new(|_, a, b| a + b),
        };
        self.aggregate_into("KSTREAM-AGGREGATE", aggregation, m)
    }

    /// Combines values per session; merging sessions combines their results
    /// with the same reducer, earlier session first.
    pub fn reduce(
        &self,
        reducer: impl Fn(V, V) -> V + Send + Sync + 'static,
        materialized: Materialized<K, V>,
    ) -> KTable<Windowed<K>, V> {
        let m = materialized.or_value_serde(self.stream.value_serde.clone());
        let reducer = Arc::new(reducer);
        let merge_reducer = reducer.clone();
        let aggregation = SessionAggregation {
            per_record: reduce_aggregation(move |a, b| reducer(a, b)),
            init: None,
            merge: Arc::new(move |_, a, b| merge_reducer(a, b)),
        };
        self.aggregate_into("KSTREAM-REDUCE", aggregation, m)
    }

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
        let init: Arc<dyn Fn() -> A + Send + Sync> = Arc::new(init);
        let first = init.clone();
        let aggregation = SessionAggregation {
            per_record: aggregate_aggregation(move || first(), aggregator),
            init: Some(init),
            merge: Arc::new(merger),
        };
        self.aggregate_into("KSTREAM-AGGREGATE", aggregation, materialized)
    }

    pub(crate) fn aggregate_into<A: Clone + 'static>(
        &self,
        prefix: &str,
        aggregation: SessionAggregation<K, V, A>,
        m: Materialized<K, A>,
    ) -> KTable<Windowed<K>, A> {
        let graph = &self.stream.graph;
        let store = m.name.clone().unwrap_or_else(|| {
            graph
                .borrow_mut()
                .next_name(&format!("{prefix}-STATE-STORE"))
        });
        let windows = self.windows;
        let retention = windows.validate(&store).and_then(|()| {
            checked_retention(
                &store,
                m.retention_ms,
                windows.default_retention_ms(),
                "inactivity gap + grace",
            )
        });
        let retention = retention.unwrap_or_else(|e| {
            graph.borrow_mut().errors.push(e);
            windows.default_retention_ms().max(0)
        });
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
            Some("session-window aggregation"),
            Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                let changelog = logging && cx.config.changelog_enabled;
                let config = StoreConfig::new(store_name.clone()).with_changelog_enabled(changelog);
                let ss = InMemorySessionStore::new(
                    config,
                    SegmentedConfig::new(retention),
                    BoxedCodec(codec(&ks, &store_name)),
                    BoxedCodec(codec(&vs, &store_name)),
                );
                let ss = Rc::new(RefCell::new(ss));
                cx.add_store(&store_name, ss.clone());
                let emit_frontier = (emit == EmitStrategy::OnWindowClose)
                    .then(|| emit_frontier_for(cx, &store_name));
                let op = Rc::new(RefCell::new(SessionWindowAggregate {
                    windows,
                    aggregation: aggregation.clone(),
                    store: ss,
                    out: WindowedOutput {
                        node: store_name.clone(),
                        store_name: store_name.clone(),
                        emit,
                        emit_frontier,
                        down: Downstream::from_children(ch),
                    },
                }));
                cx.add_frontier_op(op.clone());
                let port: crate::topology::graph::Port<K, V> = op;
                PortHandle::of(port)
            }),
        );
        graph
            .borrow_mut()
            .window_close_offsets
            .insert(id, windows.close_span());
        let key_serde_w: Option<SerdeRef<Windowed<K>>> =
            key_serde.map(|k| Arc::new(SessionWindowedSerde::new(k)) as SerdeRef<Windowed<K>>);
        KTable::new(graph.clone(), id, key_serde_w, m.value_serde, Some(store))
    }
}
