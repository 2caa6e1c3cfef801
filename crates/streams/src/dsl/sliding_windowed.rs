//! [`SlidingWindowedKStream`]: a grouped stream windowed by
//! [`SlidingWindows`], and its count, reduce and aggregate into a table of
//! `Windowed<K>` (window `[start, start + D]`).
//!
//! Owns the building of the sliding aggregation node, its window store
//! (retention `Materialized::with_retention`, else `2·D + grace`) and its
//! emit-frontier companion; the operator itself is
//! `processors::sliding_aggregate`.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{
    InMemoryKeyValueStore, InMemoryWindowStore, SegmentedConfig, StoreConfig,
    ValueAndTimestampCodec,
};

use crate::dsl::grouped::{
    aggregate_aggregation, count_aggregation, note_missing, reduce_aggregation,
};
use crate::dsl::kstream::{KStream, add_processor};
use crate::dsl::ktable::KTable;
use crate::dsl::materialized::Materialized;
use crate::error::TopologyError;
use crate::processors::sliding_aggregate::SlidingWindowAggregate;
use crate::processors::windowed::{Aggregation, EmitFrontier, WindowedOutput};
use crate::record::Windowed;
use crate::serde::{BoxedCodec, codec};
use crate::serde::{I64Serde, SerdeRef, TimeWindowedSerde};
use crate::topology::graph::{Downstream, Instantiation, PortHandle};
use crate::windows::EmitStrategy;
use crate::windows::SlidingWindows;

/// Registers `<store>-emitfrontier` and reads the emit frontier from it.
pub(crate) fn emit_frontier_for(cx: &mut Instantiation, store_name: &str) -> EmitFrontier {
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

/// The retention of a windowed store: the configured one if it is at least
/// the default, else an error naming the store.
pub(crate) fn checked_retention(
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

/// A grouped stream windowed by sliding windows, as Kafka Streams'
/// `TimeWindowedKStream` over `SlidingWindows`.
#[must_use = "a windowed stream does nothing until aggregated"]
pub struct SlidingWindowedKStream<K, V> {
    stream: KStream<K, V>,
    windows: SlidingWindows,
    emit: EmitStrategy,
}

impl<K, V> std::fmt::Debug for SlidingWindowedKStream<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlidingWindowedKStream")
            .field("windows", &self.windows)
            .field("emit", &self.emit)
            .finish()
    }
}

impl<K, V> SlidingWindowedKStream<K, V>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    V: Clone + 'static,
{
    pub(crate) fn new(stream: KStream<K, V>, windows: SlidingWindows) -> Self {
        SlidingWindowedKStream {
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
        let retention = windows.validate(&store).and_then(|()| {
            checked_retention(
                &store,
                m.retention_ms,
                windows.default_retention_ms(),
                "2 x time difference + grace",
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
            Some("sliding-window aggregation"),
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
                let emit_frontier = (emit == EmitStrategy::OnWindowClose)
                    .then(|| emit_frontier_for(cx, &store_name));
                let op = Rc::new(RefCell::new(SlidingWindowAggregate {
                    windows,
                    aggregation: aggregation.clone(),
                    store: ws,
                    out: WindowedOutput {
                        node: store_name.clone(),
                        store_name: store_name.clone(),
                        emit,
                        emit_frontier,
                        down: Downstream::from_children(ch),
                    },
                    window_set: Vec::new(),
                }));
                cx.add_frontier_op(op.clone());
                let port: crate::topology::graph::Port<K, V> = op;
                PortHandle::of(port)
            }),
        );
        graph
            .borrow_mut()
            .window_close_offsets
            .insert(id, 1 + windows.grace_ms());
        let key_serde_w: Option<SerdeRef<Windowed<K>>> = key_serde.map(|k| {
            Arc::new(TimeWindowedSerde::new(k, windows.time_difference_ms()))
                as SerdeRef<Windowed<K>>
        });
        KTable::new(graph.clone(), id, key_serde_w, m.value_serde, Some(store))
    }
}
