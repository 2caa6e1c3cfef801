//! [`GlobalKTable`]: a table of a whole topic, held on every instance, and the
//! stream joins that look it up by a key mapper (Kafka Streams'
//! `globalTable(..)` and `KStream.join/leftJoin(GlobalKTable, ..)`); and
//! `add_global_store`, a global store kept by user code (`addGlobalStore`).
//!
//! A global store is no node of any sub-topology: its topic is read apart from
//! the tasks (docs/global-tables.md), so it needs no co-partitioning and a join
//! with it no repartition. This module adds the stores' definitions to the graph
//! and the join nodes that read them; it knows nothing of who fills the stores.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::dsl::builder::StreamsBuilder;
use crate::dsl::kstream::{KStream, add_processor};
use crate::dsl::materialized::{Consumed, Materialized};
use crate::error::{ProcessError, TopologyError};
use crate::processor::global_update::{GlobalStoreWriter, GlobalUpdateFn, ProcessedUpdate};
use crate::processors::global_join::{GlobalJoiner, GlobalTableJoin, KeyMapper};
use crate::record::Record;
use crate::serde::nullable_ref;
use crate::topology::global::{GlobalKeyValueStore, GlobalStoreDef, GlobalStoreMaker, TableUpdate};
use crate::topology::graph::{Downstream, Instantiation, port};

/// A table of every partition of a topic, as Kafka Streams' `GlobalKTable<K, V>`:
/// restored in full before processing starts and kept current apart from the
/// tasks; streams join it with [`KStream::join_global`] and
/// [`KStream::left_join_global`].
pub struct GlobalKTable<K, V> {
    store: String,
    _p: PhantomData<fn() -> (K, V)>,
}

impl<K, V> Clone for GlobalKTable<K, V> {
    fn clone(&self) -> Self {
        GlobalKTable {
            store: self.store.clone(),
            _p: PhantomData,
        }
    }
}

impl<K, V> std::fmt::Debug for GlobalKTable<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GlobalKTable")
            .field("store", &self.store)
            .finish()
    }
}

impl<K, V> GlobalKTable<K, V> {
    /// The name of its store (the driver reads it with `global_store`).
    pub fn queryable_store_name(&self) -> &str {
        &self.store
    }
}

impl StreamsBuilder {
    /// A global table of `topic` (Kafka Streams' `globalTable`): the latest value
    /// of each key of every partition, a null value deleting the key. The store is
    /// named by `materialized` (else `<topic>-STATE-STORE-<n>`), whose serdes, if
    /// given, replace `consumed`'s; it is kept in memory and never changelogged.
    /// Global tables take no part in event time: a watermark strategy on
    /// `consumed` is refused.
    pub fn global_table<K, V>(
        &mut self,
        topic: &str,
        consumed: Consumed<K, V>,
        materialized: Materialized<K, V>,
    ) -> GlobalKTable<K, V>
    where
        K: Ord + Clone + Send + Sync + 'static,
        V: Clone + Send + Sync + 'static,
    {
        let mut g = self.graph.borrow_mut();
        let store = match materialized.name {
            Some(name) => name,
            None => g.next_name(&format!("{topic}-STATE-STORE")),
        };
        refuse_strategy(&mut g.errors, &store, topic, consumed.strategy.is_some());
        let ks = materialized.key_serde.unwrap_or(consumed.key_serde);
        let vs = nullable_ref(materialized.value_serde.unwrap_or(consumed.value_serde));
        let name = store.clone();
        let make: GlobalStoreMaker = Arc::new(move || {
            Arc::new(TableUpdate {
                store: Arc::new(GlobalKeyValueStore::<K, V>::new(&name)),
                key_serde: ks.clone(),
                value_serde: vs.clone(),
            })
        });
        g.globals.push(GlobalStoreDef {
            name: store.clone(),
            topic: topic.to_owned(),
            make,
        });
        GlobalKTable {
            store,
            _p: PhantomData,
        }
    }
}

impl StreamsBuilder {
    /// A global store kept by user code (Kafka Streams' `addGlobalStore`): each
    /// record of `topic` (every partition, on every instance; a null value as
    /// `None`, a null key skipped) is handed to `update` with a
    /// [`GlobalStoreWriter`] on the store `store`. Restored, kept current and read
    /// as a global table's store (docs/global-tables.md); processors read it with
    /// `ProcessorContext::global_store`. `update` must be deterministic: a restart
    /// runs it again over the whole topic.
    pub fn add_global_store<KIn, VIn, K, V>(
        &mut self,
        store: &str,
        topic: &str,
        consumed: Consumed<KIn, VIn>,
        update: impl Fn(
            &mut GlobalStoreWriter<'_, K, V>,
            Record<KIn, Option<VIn>>,
        ) -> Result<(), ProcessError>
        + Send
        + Sync
        + 'static,
    ) where
        KIn: 'static,
        VIn: 'static,
        K: Ord + Clone + Send + Sync + 'static,
        V: Clone + Send + Sync + 'static,
    {
        let mut g = self.graph.borrow_mut();
        refuse_strategy(&mut g.errors, store, topic, consumed.strategy.is_some());
        let ks = consumed.key_serde;
        let vs = nullable_ref(consumed.value_serde);
        let update: GlobalUpdateFn<KIn, VIn, K, V> = Arc::new(update);
        let name = store.to_owned();
        let make: GlobalStoreMaker = Arc::new(move || {
            Arc::new(ProcessedUpdate {
                store: Arc::new(GlobalKeyValueStore::<K, V>::new(&name)),
                key_serde: ks.clone(),
                value_serde: vs.clone(),
                update: update.clone(),
            })
        });
        g.globals.push(GlobalStoreDef {
            name: store.to_owned(),
            topic: topic.to_owned(),
            make,
        });
    }
}

/// A watermark strategy on a global topic would have no effect: refused.
fn refuse_strategy(errors: &mut Vec<TopologyError>, store: &str, topic: &str, has: bool) {
    if has {
        errors.push(TopologyError::InvalidArgument {
            node: store.to_owned(),
            reason: format!(
                "global store of topic {topic}: a watermark strategy or timestamp extractor has no effect (global stores take no part in event time)"
            ),
        });
    }
}

impl<K: Clone + 'static, V: Clone + 'static> KStream<K, V> {
    /// Inner join with a global table (Kafka Streams' `join(GlobalKTable,
    /// KeyValueMapper, ValueJoiner)`): `key_mapper` gives each record's look-up key
    /// (`None`: no match); a record whose key has a row forwards
    /// `joiner(value, row)` under its own key and time, one without is dropped.
    /// Global-table updates forward nothing. No co-partitioning, no repartition.
    pub fn join_global<GK, GV, VR>(
        &self,
        table: &GlobalKTable<GK, GV>,
        key_mapper: impl Fn(&K, &V) -> Option<GK> + Send + Sync + 'static,
        joiner: impl Fn(&V, &GV) -> VR + Send + Sync + 'static,
    ) -> KStream<K, VR>
    where
        GK: Ord + Clone + Send + Sync + 'static,
        GV: Clone + Send + Sync + 'static,
        VR: Clone + 'static,
    {
        let j: GlobalJoiner<K, V, GV, VR> = Arc::new(move |_: &K, v: &V, g: Option<&GV>| {
            joiner(v, g.expect("inner global-table join: row present"))
        });
        self.global_join(table, Arc::new(key_mapper), j, false)
    }

    /// Left join with a global table (Kafka Streams' `leftJoin(GlobalKTable, ..)`):
    /// as [`KStream::join_global`], and a record without a row (or whose mapper
    /// gives `None`) forwards `joiner(value, None)`.
    pub fn left_join_global<GK, GV, VR>(
        &self,
        table: &GlobalKTable<GK, GV>,
        key_mapper: impl Fn(&K, &V) -> Option<GK> + Send + Sync + 'static,
        joiner: impl Fn(&V, Option<&GV>) -> VR + Send + Sync + 'static,
    ) -> KStream<K, VR>
    where
        GK: Ord + Clone + Send + Sync + 'static,
        GV: Clone + Send + Sync + 'static,
        VR: Clone + 'static,
    {
        let j: GlobalJoiner<K, V, GV, VR> =
            Arc::new(move |_: &K, v: &V, g: Option<&GV>| joiner(v, g));
        self.global_join(table, Arc::new(key_mapper), j, true)
    }

    fn global_join<GK, GV, VR>(
        &self,
        table: &GlobalKTable<GK, GV>,
        key_mapper: KeyMapper<K, V, GK>,
        joiner: GlobalJoiner<K, V, GV, VR>,
        left: bool,
    ) -> KStream<K, VR>
    where
        GK: Ord + Clone + Send + Sync + 'static,
        GV: Clone + Send + Sync + 'static,
        VR: Clone + 'static,
    {
        let store = table.store.clone();
        if !self.graph.borrow().globals.iter().any(|d| d.name == store) {
            let node = self.graph.borrow().nodes[self.node].name.clone();
            self.graph
                .borrow_mut()
                .errors
                .push(TopologyError::InvalidArgument {
                    node,
                    reason: format!("global table {store} was made by another StreamsBuilder"),
                });
        }
        let (id, _) = add_processor(
            &self.graph,
            "KSTREAM-JOIN",
            vec![self.node],
            vec![],
            None,
            Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                let store = match cx.globals.store::<GK, GV>(&store) {
                    Ok(Some(s)) => s,
                    // The builder made both the store and this node with the same types.
                    _ => unreachable!("global store {store} exists with the join's types"),
                };
                port::<K, V, _>(GlobalTableJoin {
                    store,
                    key_mapper: key_mapper.clone(),
                    joiner: joiner.clone(),
                    left,
                    down: Downstream::<K, VR>::from_children(ch),
                })
            }),
        );
        let mut joined = KStream::new(self.graph.clone(), id, self.key_serde.clone(), None);
        // The key is the stream's: a key changed upstream still needs a repartition.
        joined.repartition_required = self.repartition_required;
        joined
    }
}
