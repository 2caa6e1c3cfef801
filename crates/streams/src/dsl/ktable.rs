//! [`KTable`]: a changelog stream, the latest value per key.
//!
//! Inside the topology a table flows as `Record<K, Option<V>>`, `None` being
//! a tombstone. [`KTable::to_stream`] forwards both, a tombstone as a `None`
//! value (Kafka Streams forwards a null).

use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{KeyValueStore, ValueAndTimestamp, ValueAndTimestampCodec};

use crate::dsl::kstream::{KStream, add_processor};
use crate::error::ProcessError;
use crate::record::Record;
use crate::serde::SerdeRef;
use crate::serde::{BoxedCodec, codec};
use crate::topology::context::TaskContext;
use crate::topology::graph::{Downstream, Instantiation, NodeId, Push, SharedGraph, port};
use crate::topology::store_choice::StoreRequest;

/// A table, as Kafka Streams' `KTable<K, V>`.
#[must_use = "a table does nothing until turned into a stream or joined"]
pub struct KTable<K, V> {
    pub(crate) graph: SharedGraph,
    pub(crate) node: NodeId,
    pub(crate) key_serde: Option<SerdeRef<K>>,
    pub(crate) value_serde: Option<SerdeRef<V>>,
    pub(crate) store: Option<String>,
    _p: PhantomData<fn() -> (K, V)>,
}

impl<K, V> Clone for KTable<K, V> {
    fn clone(&self) -> Self {
        KTable {
            graph: self.graph.clone(),
            node: self.node,
            key_serde: self.key_serde.clone(),
            value_serde: self.value_serde.clone(),
            store: self.store.clone(),
            _p: PhantomData,
        }
    }
}

impl<K, V> std::fmt::Debug for KTable<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KTable")
            .field("store", &self.store)
            .finish()
    }
}

struct TableFilter<K, V> {
    pred: Arc<dyn Fn(&K, &V) -> bool + Send + Sync>,
    keep: bool,
    down: Downstream<K, Option<V>>,
}

impl<K: Clone, V: Clone> Push<K, Option<V>> for TableFilter<K, V> {
    fn push(
        &mut self,
        cx: &mut TaskContext,
        rec: Record<K, Option<V>>,
    ) -> Result<(), ProcessError> {
        let value = rec.value.filter(|v| (self.pred)(&rec.key, v) == self.keep);
        self.down.forward(
            cx,
            Record {
                key: rec.key,
                value,
                timestamp: rec.timestamp,
                headers: rec.headers,
            },
        )
    }
}

struct TableMapValues<K, V, V2> {
    f: Arc<dyn Fn(&K, V) -> V2 + Send + Sync>,
    down: Downstream<K, Option<V2>>,
}

impl<K: Clone, V, V2: Clone> Push<K, Option<V>> for TableMapValues<K, V, V2> {
    fn push(
        &mut self,
        cx: &mut TaskContext,
        rec: Record<K, Option<V>>,
    ) -> Result<(), ProcessError> {
        let value = rec.value.map(|v| (self.f)(&rec.key, v));
        self.down.forward(
            cx,
            Record {
                key: rec.key,
                value,
                timestamp: rec.timestamp,
                headers: rec.headers,
            },
        )
    }
}

struct Passthrough<K, V> {
    down: Downstream<K, Option<V>>,
}

impl<K: Clone, V: Clone> Push<K, Option<V>> for Passthrough<K, V> {
    fn push(
        &mut self,
        cx: &mut TaskContext,
        rec: Record<K, Option<V>>,
    ) -> Result<(), ProcessError> {
        self.down.forward(cx, rec)
    }
}

/// Materializes a stream of values as a table (the source of
/// `StreamsBuilder::table` and `KStream::to_table`): a value is put, a null
/// value deletes, and every update is forwarded (a delete of an absent key
/// too, as Kafka Streams' table source does).
pub(crate) struct TableSource<K, V> {
    store_name: String,
    store: Rc<RefCell<crate::KeyValueStoreOf<K, V>>>,
    down: Downstream<K, Option<V>>,
}

impl<K: Ord + Clone, V: Clone> Push<K, Option<V>> for TableSource<K, V> {
    fn push(
        &mut self,
        cx: &mut TaskContext,
        rec: Record<K, Option<V>>,
    ) -> Result<(), ProcessError> {
        let err = |source| ProcessError::State {
            store: self.store_name.clone(),
            source: Box::new(source),
        };
        let mut store = self.store.borrow_mut();
        match &rec.value {
            Some(v) => store.put(
                rec.key.clone(),
                ValueAndTimestamp::new(v.clone(), rec.timestamp),
                rec.timestamp,
            ),
            None => store.delete(&rec.key, rec.timestamp).map(drop),
        }
        .map_err(err)?;
        drop(store);
        self.down.forward(cx, rec)
    }
}

impl<K: Ord + Clone, V: Clone> Push<K, V> for TableSource<K, V> {
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        let Record {
            key,
            value,
            timestamp,
            headers,
        } = rec;
        Push::<K, Option<V>>::push(
            self,
            cx,
            Record {
                key,
                value: Some(value),
                timestamp,
                headers,
            },
        )
    }
}

/// The store of table `name`, created by whichever of its users is
/// instantiated first (the table itself, or a stream-table join that reads it).
pub(crate) fn table_store<K, V>(
    cx: &mut Instantiation,
    name: &str,
    ks: &Option<SerdeRef<K>>,
    vs: &Option<SerdeRef<V>>,
) -> Rc<RefCell<crate::KeyValueStoreOf<K, V>>>
where
    K: Ord + Clone + 'static,
    V: Clone + 'static,
{
    cx.key_value_store(
        &StoreRequest::new(name, None, true).with_serdes(ks.is_some(), vs.is_some()),
        BoxedCodec(codec(ks, name)),
        ValueAndTimestampCodec::new(BoxedCodec(codec(vs, name))),
    )
}

/// A table materializing `parent`'s records into `store`; `In` is `V` for a
/// stream of values and `Option<V>` for one whose nulls delete.
pub(crate) fn table_from<K, V, In>(
    graph: &SharedGraph,
    parent: NodeId,
    store: &str,
    key_serde: Option<SerdeRef<K>>,
    value_serde: Option<SerdeRef<V>>,
) -> KTable<K, V>
where
    K: Ord + Clone + 'static,
    V: Clone + 'static,
    In: 'static,
    TableSource<K, V>: Push<K, In>,
{
    let (ks, vs) = (key_serde.clone(), value_serde.clone());
    let name = store.to_owned();
    let (id, _) = add_processor(
        graph,
        "KTABLE-SOURCE",
        vec![parent],
        vec![store.to_owned()],
        None,
        Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
            let kv = table_store(cx, &name, &ks, &vs);
            port::<K, In, _>(TableSource {
                store_name: name.clone(),
                store: kv,
                down: Downstream::from_children(ch),
            })
        }),
    );
    KTable::new(
        graph.clone(),
        id,
        key_serde,
        value_serde,
        Some(store.to_owned()),
    )
}

impl<K: Clone + 'static, V: Clone + 'static> KTable<K, V> {
    pub(crate) fn new(
        graph: SharedGraph,
        node: NodeId,
        key_serde: Option<SerdeRef<K>>,
        value_serde: Option<SerdeRef<V>>,
        store: Option<String>,
    ) -> Self {
        KTable {
            graph,
            node,
            key_serde,
            value_serde,
            store,
            _p: PhantomData,
        }
    }

    /// The name of the store that materializes this table, if any.
    pub fn queryable_store_name(&self) -> Option<&str> {
        self.store.as_deref()
    }

    /// The table's updates as a stream (Kafka Streams' `toStream`): a
    /// tombstone is a `None` value, as Kafka Streams forwards a null. A sink
    /// takes the value's own serde (`Produced<K, V>`) and writes `None` as a
    /// null; [`KStream::skip_tombstones`] drops tombstones where a ported
    /// application expects none.
    pub fn to_stream(&self) -> KStream<K, Option<V>> {
        let (id, _) = add_processor(
            &self.graph,
            "KTABLE-TOSTREAM",
            vec![self.node],
            vec![],
            None,
            Arc::new(|_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, Option<V>, _>(Passthrough {
                    down: Downstream::<K, Option<V>>::from_children(ch),
                })
            }),
        );
        let vs = self.value_serde.clone().map(crate::serde::nullable_ref);
        KStream::new(self.graph.clone(), id, self.key_serde.clone(), vs)
    }

    /// Keeps rows for which `pred` holds; a row that stops matching becomes a tombstone.
    pub fn filter(&self, pred: impl Fn(&K, &V) -> bool + Send + Sync + 'static) -> Self {
        self.filtered(pred, true)
    }

    /// Keeps rows for which `pred` does not hold.
    pub fn filter_not(&self, pred: impl Fn(&K, &V) -> bool + Send + Sync + 'static) -> Self {
        self.filtered(pred, false)
    }

    fn filtered(&self, pred: impl Fn(&K, &V) -> bool + Send + Sync + 'static, keep: bool) -> Self {
        let pred: Arc<dyn Fn(&K, &V) -> bool + Send + Sync> = Arc::new(pred);
        let (id, _) = add_processor(
            &self.graph,
            "KTABLE-FILTER",
            vec![self.node],
            vec![],
            None,
            Arc::new(move |_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, Option<V>, _>(TableFilter {
                    pred: pred.clone(),
                    keep,
                    down: Downstream::from_children(ch),
                })
            }),
        );
        KTable::new(
            self.graph.clone(),
            id,
            self.key_serde.clone(),
            self.value_serde.clone(),
            None,
        )
    }

    /// Maps each row's value.
    pub fn map_values<V2: Clone + 'static>(
        &self,
        f: impl Fn(&K, V) -> V2 + Send + Sync + 'static,
    ) -> KTable<K, V2> {
        let f: Arc<dyn Fn(&K, V) -> V2 + Send + Sync> = Arc::new(f);
        let (id, _) = add_processor(
            &self.graph,
            "KTABLE-MAPVALUES",
            vec![self.node],
            vec![],
            None,
            Arc::new(move |_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, Option<V>, _>(TableMapValues {
                    f: f.clone(),
                    down: Downstream::from_children(ch),
                })
            }),
        );
        KTable::new(self.graph.clone(), id, self.key_serde.clone(), None, None)
    }

    /// This table materialized into the store `materialized` names (a
    /// generated `<prefix>-STATE-STORE-n` without a name), with its serdes,
    /// else this table's key serde and the standard serde of `V` if it has
    /// one: a joined table's rows, readable as a store and kept for the
    /// operators after it.
    pub(crate) fn materialize_as(
        &self,
        materialized: crate::dsl::materialized::Materialized<K, V>,
        prefix: &str,
    ) -> Self
    where
        K: Ord,
    {
        let store = materialized.name.clone().unwrap_or_else(|| {
            self.graph
                .borrow_mut()
                .next_name(&format!("{prefix}-STATE-STORE"))
        });
        let ks = materialized.key_serde.or_else(|| self.key_serde.clone());
        let vs = materialized
            .value_serde
            .or_else(|| self.value_serde.clone())
            .or_else(crate::serde::default_serde);
        crate::dsl::grouped::note_missing(&self.graph, &store, materialized.logging, &ks, &vs);
        table_from::<K, V, Option<V>>(&self.graph, self.node, &store, ks, vs)
    }

    /// Maps each row's value into a table materialized as `materialized`
    /// says (Kafka Streams' `mapValues(mapper, Materialized)`): its value
    /// serde serves the store and the operators after it that keep state
    /// (a join's side store, a sink's default).
    pub fn map_values_with<V2: Clone + 'static>(
        &self,
        f: impl Fn(&K, V) -> V2 + Send + Sync + 'static,
        materialized: crate::dsl::materialized::Materialized<K, V2>,
    ) -> KTable<K, V2>
    where
        K: Ord,
    {
        let mapped = self.map_values(f);
        let store = materialized.name.clone().unwrap_or_else(|| {
            self.graph
                .borrow_mut()
                .next_name("KTABLE-MAPVALUES-STATE-STORE")
        });
        let ks = materialized.key_serde.or_else(|| self.key_serde.clone());
        let vs = materialized.value_serde;
        crate::dsl::grouped::note_missing(&self.graph, &store, true, &ks, &vs);
        table_from::<K, V2, Option<V2>>(&self.graph, mapped.node, &store, ks, vs)
    }
}
