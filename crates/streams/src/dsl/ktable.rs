//! [`KTable`]: a changelog stream, the latest value per key.
//!
//! Inside the topology a table flows as `Record<K, Option<V>>`, `None` being
//! a tombstone. [`KTable::to_stream`] forwards the values and leaves
//! tombstones out (typed Rust has no null `V`);
//! [`KTable::to_stream_with_tombstones`] keeps them as `None`.

use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{KeyValueStore, ValueAndTimestamp, ValueAndTimestampCodec};

use crate::dsl::kstream::{KStream, add_processor};
use crate::error::ProcessError;
use crate::record::Record;
use crate::serde::{BoxedCodec, codec};
use crate::serde::{Serde, SerdeError, SerdeRef};
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

struct ToStream<K, V> {
    down: Downstream<K, V>,
}

impl<K: Clone, V: Clone> Push<K, Option<V>> for ToStream<K, V> {
    #[inline]
    fn push(
        &mut self,
        cx: &mut TaskContext,
        rec: Record<K, Option<V>>,
    ) -> Result<(), ProcessError> {
        match rec.value {
            Some(v) => self.down.forward(
                cx,
                Record {
                    key: rec.key,
                    value: v,
                    timestamp: rec.timestamp,
                    headers: rec.headers,
                },
            ),
            None => Ok(()),
        }
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

/// Materializes a stream of values as a table (the source of `StreamsBuilder::table`).
struct TableSource<K, V> {
    store_name: String,
    store: Rc<RefCell<crate::KeyValueStoreOf<K, V>>>,
    down: Downstream<K, Option<V>>,
}

impl<K: Ord + Clone, V: Clone> Push<K, V> for TableSource<K, V> {
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        let err = |source| ProcessError::State {
            store: self.store_name.clone(),
            source: Box::new(source),
        };
        self.store
            .borrow_mut()
            .put(
                rec.key.clone(),
                ValueAndTimestamp::new(rec.value.clone(), rec.timestamp),
                rec.timestamp,
            )
            .map_err(err)?;
        self.down.forward(
            cx,
            Record {
                key: rec.key,
                value: Some(rec.value),
                timestamp: rec.timestamp,
                headers: rec.headers,
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
        &StoreRequest::new(name, None, true),
        BoxedCodec(codec(ks, name)),
        ValueAndTimestampCodec::new(BoxedCodec(codec(vs, name))),
    )
}

pub(crate) fn table_from_stream<K, V>(stream: &KStream<K, V>, store: &str) -> KTable<K, V>
where
    K: Ord + Clone + 'static,
    V: Clone + 'static,
{
    let (ks, vs) = (stream.key_serde.clone(), stream.value_serde.clone());
    let name = store.to_owned();
    let (id, _) = add_processor(
        &stream.graph,
        "KTABLE-SOURCE",
        vec![stream.node],
        vec![store.to_owned()],
        None,
        Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
            let kv = table_store(cx, &name, &ks, &vs);
            port::<K, V, _>(TableSource {
                store_name: name.clone(),
                store: kv,
                down: Downstream::from_children(ch),
            })
        }),
    );
    KTable::new(
        stream.graph.clone(),
        id,
        stream.key_serde.clone(),
        stream.value_serde.clone(),
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

    /// The table's updates as a stream of values (tombstones left out).
    pub fn to_stream(&self) -> KStream<K, V> {
        let (id, _) = add_processor(
            &self.graph,
            "KTABLE-TOSTREAM",
            vec![self.node],
            vec![],
            None,
            Arc::new(|_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, Option<V>, _>(ToStream {
                    down: Downstream::<K, V>::from_children(ch),
                })
            }),
        );
        KStream::new(
            self.graph.clone(),
            id,
            self.key_serde.clone(),
            self.value_serde.clone(),
        )
    }

    /// The table's updates including tombstones, as `None`.
    pub fn to_stream_with_tombstones(&self) -> KStream<K, Option<V>>
    where
        V: Send + Sync,
    {
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
        let vs = self
            .value_serde
            .clone()
            .map(|s| Arc::new(NullableRef(s)) as SerdeRef<Option<V>>);
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
}

/// `Option<V>` over a shared serde.
struct NullableRef<V>(SerdeRef<V>);

impl<V> Serde<Option<V>> for NullableRef<V> {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn serialize(&self, topic: &str, v: &Option<V>, out: &mut Vec<u8>) -> Result<(), SerdeError> {
        match v {
            Some(v) => self.0.serialize(topic, v, out),
            None => Ok(()),
        }
    }
    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<Option<V>, SerdeError> {
        self.0.deserialize(topic, b).map(Some)
    }
    fn serialize_nullable(
        &self,
        topic: &str,
        v: &Option<V>,
    ) -> Result<Option<Vec<u8>>, SerdeError> {
        match v {
            Some(v) => self.0.serialize_nullable(topic, v),
            None => Ok(None),
        }
    }
    fn deserialize_nullable(&self, topic: &str, b: Option<&[u8]>) -> Result<Option<V>, SerdeError> {
        b.map(|b| self.0.deserialize(topic, b)).transpose()
    }
}

impl<T> std::fmt::Debug for NullableRef<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NullableRef")
    }
}
