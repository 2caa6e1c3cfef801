//! [`KStream`]: a typed record stream in the DSL, and its stateless operators.

use std::any::Any;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::dsl::builder::add_source;
use crate::dsl::grouped::KGroupedStream;
use crate::dsl::ktable::KTable;
use crate::dsl::materialized::{Grouped, Materialized, Produced};
use crate::dsl::repartitioned::Repartitioned;
use crate::processors::dynamic_sink::{DynamicSink, TopicExtractor};
use crate::processors::sink::Sink;
use crate::processors::stateless::{
    Branch, Filter, FlatMap, FlatMapValues, Map, MapValues, PassThrough, Peek, Pred,
    SelectKeyOrSkip, SkipTombstones,
};
use crate::record::RecordContext;
use crate::serde::SerdeRef;
use crate::topology::graph::{
    Downstream, Factory, Instantiation, NodeDef, NodeId, NodeKind, SharedGraph, port,
};

/// A stream of typed records, as Kafka Streams' `KStream<K, V>`.
#[must_use = "a stream does nothing until it reaches a sink or an aggregation"]
pub struct KStream<K, V> {
    pub(crate) graph: SharedGraph,
    pub(crate) node: NodeId,
    pub(crate) key_serde: Option<SerdeRef<K>>,
    pub(crate) value_serde: Option<SerdeRef<V>>,
    /// The key changed since the last repartition (Kafka Streams' `repartitionRequired`).
    pub(crate) repartition_required: bool,
    _p: PhantomData<fn() -> (K, V)>,
}

impl<K, V> Clone for KStream<K, V> {
    fn clone(&self) -> Self {
        KStream {
            graph: self.graph.clone(),
            node: self.node,
            key_serde: self.key_serde.clone(),
            value_serde: self.value_serde.clone(),
            repartition_required: self.repartition_required,
            _p: PhantomData,
        }
    }
}

impl<K, V> std::fmt::Debug for KStream<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KStream")
            .field("node", &self.graph.borrow().nodes[self.node].name)
            .finish()
    }
}

/// Adds a processor node under `parents` and returns its id.
pub(crate) fn add_processor(
    graph: &SharedGraph,
    prefix: &str,
    parents: Vec<NodeId>,
    stores: Vec<String>,
    watermark_driven: Option<&'static str>,
    factory: Factory,
) -> (NodeId, String) {
    let mut g = graph.borrow_mut();
    let name = g.next_name(prefix);
    let id = g.add(NodeDef {
        name: name.clone(),
        kind: NodeKind::Processor,
        parents,
        stores,
        watermark_driven,
        internal: false,
        factory,
    });
    (id, name)
}

impl<K: Clone + 'static, V: Clone + 'static> KStream<K, V> {
    pub(crate) fn new(
        graph: SharedGraph,
        node: NodeId,
        key_serde: Option<SerdeRef<K>>,
        value_serde: Option<SerdeRef<V>>,
    ) -> Self {
        KStream {
            graph,
            node,
            key_serde,
            value_serde,
            repartition_required: false,
            _p: PhantomData,
        }
    }

    fn child<K2: Clone + 'static, V2: Clone + 'static>(
        &self,
        prefix: &str,
        key_serde: Option<SerdeRef<K2>>,
        value_serde: Option<SerdeRef<V2>>,
        repartition_required: bool,
        factory: Factory,
    ) -> KStream<K2, V2> {
        let (id, _) = add_processor(&self.graph, prefix, vec![self.node], vec![], None, factory);
        KStream {
            graph: self.graph.clone(),
            node: id,
            key_serde,
            value_serde,
            repartition_required,
            _p: PhantomData,
        }
    }

    fn filtered(
        &self,
        prefix: &str,
        pred: impl Fn(&K, &V) -> bool + Send + Sync + 'static,
        keep: bool,
    ) -> Self {
        let pred: Pred<K, V> = Arc::new(pred);
        self.child(
            prefix,
            self.key_serde.clone(),
            self.value_serde.clone(),
            self.repartition_required,
            Arc::new(move |_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, V, _>(Filter {
                    pred: pred.clone(),
                    keep,
                    down: Downstream::from_children(ch),
                })
            }),
        )
    }

    /// Keeps records for which `pred` holds.
    pub fn filter(&self, pred: impl Fn(&K, &V) -> bool + Send + Sync + 'static) -> Self {
        self.filtered("KSTREAM-FILTER", pred, true)
    }

    /// Keeps records for which `pred` does not hold.
    pub fn filter_not(&self, pred: impl Fn(&K, &V) -> bool + Send + Sync + 'static) -> Self {
        self.filtered("KSTREAM-FILTER", pred, false)
    }

    /// Maps key and value; the key may change, so a later grouping repartitions.
    pub fn map<K2: Clone + 'static, V2: Clone + 'static>(
        &self,
        f: impl Fn(K, V) -> (K2, V2) + Send + Sync + 'static,
    ) -> KStream<K2, V2> {
        let f: Arc<dyn Fn(K, V) -> (K2, V2) + Send + Sync> = Arc::new(f);
        self.child(
            "KSTREAM-MAP",
            None,
            None,
            true,
            Arc::new(move |_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, V, _>(Map {
                    f: f.clone(),
                    down: Downstream::from_children(ch),
                })
            }),
        )
    }

    /// Maps the value; the key is kept.
    pub fn map_values<V2: Clone + 'static>(
        &self,
        f: impl Fn(&K, V) -> V2 + Send + Sync + 'static,
    ) -> KStream<K, V2> {
        let f: Arc<dyn Fn(&K, V) -> V2 + Send + Sync> = Arc::new(f);
        self.child(
            "KSTREAM-MAPVALUES",
            self.key_serde.clone(),
            None,
            self.repartition_required,
            Arc::new(move |_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, V, _>(MapValues {
                    f: f.clone(),
                    down: Downstream::from_children(ch),
                })
            }),
        )
    }

    /// Zero or more records per record; keys may change.
    pub fn flat_map<K2: Clone + 'static, V2: Clone + 'static>(
        &self,
        f: impl Fn(K, V) -> Vec<(K2, V2)> + Send + Sync + 'static,
    ) -> KStream<K2, V2> {
        let f: Arc<dyn Fn(K, V) -> Vec<(K2, V2)> + Send + Sync> = Arc::new(f);
        self.child(
            "KSTREAM-FLATMAP",
            None,
            None,
            true,
            Arc::new(move |_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, V, _>(FlatMap {
                    f: f.clone(),
                    down: Downstream::from_children(ch),
                })
            }),
        )
    }

    /// Zero or more values per record; the key is kept.
    pub fn flat_map_values<V2: Clone + 'static>(
        &self,
        f: impl Fn(&K, V) -> Vec<V2> + Send + Sync + 'static,
    ) -> KStream<K, V2> {
        let f: Arc<dyn Fn(&K, V) -> Vec<V2> + Send + Sync> = Arc::new(f);
        self.child(
            "KSTREAM-FLATMAPVALUES",
            self.key_serde.clone(),
            None,
            self.repartition_required,
            Arc::new(move |_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, V, _>(FlatMapValues {
                    f: f.clone(),
                    down: Downstream::from_children(ch),
                })
            }),
        )
    }

    /// A new key computed from key and value.
    pub fn select_key<K2: Clone + 'static>(
        &self,
        f: impl Fn(&K, &V) -> K2 + Send + Sync + 'static,
    ) -> KStream<K2, V> {
        let f: Arc<dyn Fn(K, V) -> (K2, V) + Send + Sync> = Arc::new(move |k, v| (f(&k, &v), v));
        self.child(
            "KSTREAM-KEY-SELECT",
            None,
            self.value_serde.clone(),
            true,
            Arc::new(move |_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, V, _>(Map {
                    f: f.clone(),
                    down: Downstream::from_children(ch),
                })
            }),
        )
    }

    /// Observes each record and passes it on.
    pub fn peek(&self, f: impl Fn(&K, &V) + Send + Sync + 'static) -> Self {
        let f: Arc<dyn Fn(&K, &V) + Send + Sync> = Arc::new(f);
        self.child(
            "KSTREAM-PEEK",
            self.key_serde.clone(),
            self.value_serde.clone(),
            self.repartition_required,
            Arc::new(move |_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, V, _>(Peek {
                    f: f.clone(),
                    down: Downstream::from_children(ch),
                })
            }),
        )
    }

    /// A terminal action per record.
    pub fn foreach(&self, f: impl Fn(&K, &V) + Send + Sync + 'static) {
        let f: Arc<dyn Fn(&K, &V) + Send + Sync> = Arc::new(f);
        let _: KStream<K, V> = self.child(
            "KSTREAM-FOREACH",
            None,
            None,
            false,
            Arc::new(move |_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, V, _>(Peek {
                    f: f.clone(),
                    down: Downstream::from_children(ch),
                })
            }),
        );
    }

    /// Splits the stream: each record goes to the first branch whose predicate holds.
    pub fn split(&self) -> BranchedKStream<K, V> {
        BranchedKStream {
            parent: self.clone(),
            prefix: "KSTREAM-BRANCH-".into(),
            branches: Vec::new(),
            default: None,
        }
    }

    /// Records of both streams, in arrival order.
    pub fn merge(&self, other: &KStream<K, V>) -> Self {
        let (id, _) = add_processor(
            &self.graph,
            "KSTREAM-MERGE",
            vec![self.node, other.node],
            vec![],
            None,
            Arc::new(|_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, V, _>(PassThrough {
                    down: Downstream::from_children(ch),
                })
            }),
        );
        KStream {
            graph: self.graph.clone(),
            node: id,
            key_serde: self.key_serde.clone(),
            value_serde: self.value_serde.clone(),
            repartition_required: self.repartition_required || other.repartition_required,
            _p: PhantomData,
        }
    }

    /// Writes the stream to `topic`. A stream of `Option<V>` (a table's
    /// updates) takes `Produced<K, V>` too and writes `None` as a null.
    pub fn to(&self, topic: &str, produced: impl Into<Produced<K, V>>) {
        let produced = produced.into();
        let topic: Arc<str> = topic.into();
        let mut g = self.graph.borrow_mut();
        let name = g.next_name("KSTREAM-SINK");
        let t = topic.clone();
        let factory: Factory = Arc::new(move |_: &mut Instantiation, _: Vec<Box<dyn Any>>| {
            port::<K, V, _>(Sink {
                topic: t.clone(),
                key_serde: produced.key_serde.clone(),
                value_serde: produced.value_serde.clone(),
            })
        });
        g.add(NodeDef {
            name,
            kind: NodeKind::Sink {
                topic: topic.to_string(),
                partitions: None,
            },
            parents: vec![self.node],
            stores: vec![],
            watermark_driven: None,
            internal: false,
            factory,
        });
    }

    /// Writes each record to the topic `extractor` picks from its key, value
    /// and [`RecordContext`] (Kafka Streams' `to(TopicNameExtractor,
    /// Produced)`). The topic must exist: on the runtime it is looked up on
    /// the log the first time a task meets it, and a record for a missing
    /// topic goes to the production handler ([`crate::ProductionHandler`]:
    /// fail names the topic and the record; continue drops and counts it).
    /// One of the application's internal topics (a repartition topic or a
    /// changelog) stops the task, whatever the handler. The test driver, as
    /// Kafka Streams', takes any topic.
    pub fn to_dynamic(
        &self,
        extractor: impl Fn(&K, &V, &RecordContext<'_>) -> String + Send + Sync + 'static,
        produced: impl Into<Produced<K, V>>,
    ) {
        let produced = produced.into();
        let extractor: TopicExtractor<K, V> = Arc::new(extractor);
        let mut g = self.graph.borrow_mut();
        let name = g.next_name("KSTREAM-SINK");
        let node = name.clone();
        let factory: Factory = Arc::new(move |cx: &mut Instantiation, _: Vec<Box<dyn Any>>| {
            port::<K, V, _>(DynamicSink {
                node: node.clone(),
                extractor: extractor.clone(),
                key_serde: produced.key_serde.clone(),
                value_serde: produced.value_serde.clone(),
                handler: cx.config.production_handler,
                internal: cx.internal_topics.clone(),
                known: std::collections::HashMap::new(),
            })
        });
        g.add(NodeDef {
            name,
            kind: NodeKind::DynamicSink,
            parents: vec![self.node],
            stores: vec![],
            watermark_driven: None,
            internal: false,
            factory,
        });
    }

    /// Through an internal repartition topic (`<application.id>-<name>-repartition`),
    /// which splits the topology into sub-topologies there. `Repartitioned`
    /// (or a `Grouped`, which converts into one) gives serdes, the name and
    /// the topic's partition count: the sub-topology reading it then runs that
    /// many tasks (Kafka Streams' `repartition(Repartitioned)`); without a
    /// count the topic has as many partitions as the sub-topology writing it.
    pub fn repartition(&self, repartitioned: impl Into<Repartitioned<K, V>>) -> Self {
        let repartitioned = repartitioned.into();
        let key_serde = repartitioned.key_serde.or_else(|| self.key_serde.clone());
        let value_serde = repartitioned
            .value_serde
            .or_else(|| self.value_serde.clone());
        let node = self.graph.borrow().nodes[self.node].name.clone();
        let invalid = |reason: &str| {
            self.graph
                .borrow_mut()
                .errors
                .push(crate::error::TopologyError::InvalidArgument {
                    node: node.clone(),
                    reason: reason.into(),
                });
            self.clone()
        };
        let (Some(ks), Some(vs)) = (key_serde, value_serde) else {
            return invalid(
                "repartition needs key and value serdes: give them with Repartitioned::with \
                 or Grouped::with",
            );
        };
        if repartitioned.partitions == Some(0) {
            return invalid("a repartition topic needs at least one partition, not 0");
        }
        let base = {
            let mut g = self.graph.borrow_mut();
            repartitioned
                .name
                .unwrap_or_else(|| g.next_name("KSTREAM-REPARTITION"))
        };
        let topic = format!("{base}-repartition");
        {
            let mut g = self.graph.borrow_mut();
            let name = format!("{base}-repartition-sink");
            let t: Arc<str> = topic.as_str().into();
            let (k2, v2) = (ks.clone(), vs.clone());
            let factory: Factory = Arc::new(move |_: &mut Instantiation, _: Vec<Box<dyn Any>>| {
                port::<K, V, _>(Sink {
                    topic: t.clone(),
                    key_serde: k2.clone(),
                    value_serde: v2.clone(),
                })
            });
            g.add(NodeDef {
                name,
                kind: NodeKind::Sink {
                    topic: topic.clone(),
                    partitions: repartitioned.partitions,
                },
                parents: vec![self.node],
                stores: vec![],
                watermark_driven: None,
                internal: true,
                factory,
            });
        }
        let node = add_source::<K, V>(
            &self.graph,
            &topic,
            ks.clone(),
            vs.clone(),
            None,
            Some(format!("{base}-repartition-source")),
            true,
        );
        KStream::new(self.graph.clone(), node, Some(ks), Some(vs))
    }

    /// Groups by the current key (repartitioning first if the key changed).
    pub fn group_by_key(&self) -> KGroupedStream<K, V>
    where
        K: Ord + std::fmt::Debug,
    {
        self.group_by_key_with(Grouped::default())
    }

    /// Groups by the current key with serdes / a name.
    pub fn group_by_key_with(&self, grouped: Grouped<K, V>) -> KGroupedStream<K, V>
    where
        K: Ord + std::fmt::Debug,
    {
        let stream = if self.repartition_required {
            self.repartition(grouped)
        } else {
            self.with_serdes(grouped)
        };
        KGroupedStream::new(stream)
    }

    /// Groups by a new key, through a repartition topic.
    pub fn group_by<K2>(
        &self,
        f: impl Fn(&K, &V) -> K2 + Send + Sync + 'static,
        grouped: Grouped<K2, V>,
    ) -> KGroupedStream<K2, V>
    where
        K2: Ord + Clone + std::fmt::Debug + 'static,
    {
        self.select_key(f).group_by_key_with(grouped)
    }

    /// Groups by a new key that `f` may decline to give: `None` drops the
    /// record (Kafka Streams' `groupBy` selector returning null). Named
    /// apart from [`KStream::group_by`] because Rust has no overloading on
    /// a closure's return type.
    pub fn group_by_opt<K2>(
        &self,
        f: impl Fn(&K, &V) -> Option<K2> + Send + Sync + 'static,
        grouped: Grouped<K2, V>,
    ) -> KGroupedStream<K2, V>
    where
        K2: Ord + Clone + std::fmt::Debug + 'static,
    {
        let f: Arc<dyn Fn(&K, &V) -> Option<K2> + Send + Sync> = Arc::new(f);
        self.child(
            "KSTREAM-KEY-SELECT",
            None,
            self.value_serde.clone(),
            true,
            Arc::new(move |_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, V, _>(SelectKeyOrSkip {
                    f: f.clone(),
                    down: Downstream::from_children(ch),
                })
            }),
        )
        .group_by_key_with(grouped)
    }

    fn with_serdes(&self, grouped: Grouped<K, V>) -> Self {
        let mut s = self.clone();
        if grouped.key_serde.is_some() {
            s.key_serde = grouped.key_serde;
        }
        if grouped.value_serde.is_some() {
            s.value_serde = grouped.value_serde;
        }
        s
    }

    /// The stream as a table (Kafka Streams' `toTable`): each record is the
    /// key's latest value, in a store with a generated name. A stream whose
    /// key changed is repartitioned first.
    ///
    /// Every record is a value here: a stream of `Option` values keeps its
    /// `None`s as rows. Where a null must delete the key, as in Kafka
    /// Streams, read the values with `Serdes::nullable` and call
    /// [`KStream::to_table_deleting`] on the `KStream<K, Option<V>>`.
    pub fn to_table(&self) -> KTable<K, V>
    where
        K: Ord,
    {
        self.to_table_with(Materialized::default())
    }

    /// As [`KStream::to_table`], into the store `materialized` names.
    pub fn to_table_with(&self, materialized: Materialized<K, V>) -> KTable<K, V>
    where
        K: Ord,
    {
        let (stream, store) = self.to_table_input(
            materialized.name.clone(),
            materialized.key_serde.clone(),
            materialized.value_serde.clone(),
        );
        let ks = materialized.key_serde.or(stream.key_serde.clone());
        let vs = materialized.value_serde.or(stream.value_serde.clone());
        crate::dsl::grouped::note_missing(&self.graph, &store, materialized.logging, &ks, &vs);
        crate::dsl::ktable::table_from::<K, V, V>(&self.graph, stream.node, &store, ks, vs)
    }

    /// What a `to_table` reads: the stream, repartitioned first (with these
    /// serdes) if its key changed, and its table's store, `name` or a
    /// generated one.
    fn to_table_input(
        &self,
        name: Option<String>,
        key_serde: Option<SerdeRef<K>>,
        value_serde: Option<SerdeRef<V>>,
    ) -> (Self, String)
    where
        K: Ord,
    {
        let stream = if self.repartition_required {
            self.repartition(Grouped {
                key_serde,
                value_serde,
                name: None,
            })
        } else {
            self.clone()
        };
        let store = name.unwrap_or_else(|| {
            self.graph
                .borrow_mut()
                .next_name("KSTREAM-TOTABLE-STATE-STORE")
        });
        (stream, store)
    }
}

impl<K: Clone + 'static, V: Clone + 'static> KStream<K, Option<V>> {
    /// The stream as a table whose nulls delete (Kafka Streams' `toTable`
    /// on a stream with null values): `Some(v)` makes `v` the key's row,
    /// `None` deletes the key's row, and every table operator after it
    /// (aggregations, joins, `to_stream`) sees the delete as a tombstone.
    ///
    /// What a null is, the source's value serde decides: a source read with
    /// `Serdes::nullable(serde)` gives `None` for a null value on the wire;
    /// one read with a plain serde fails on it (a deserialization error, for
    /// the handler), so read with the nullable serde a topic whose nulls are
    /// deletes. A stream whose key changed is repartitioned first, nulls
    /// kept.
    pub fn to_table_deleting(&self) -> KTable<K, V>
    where
        K: Ord,
    {
        self.to_table_deleting_with(Materialized::default())
    }

    /// As [`KStream::to_table_deleting`], into the store `materialized`
    /// names. Its value serde (of `V`, not `Option<V>`) serves the store; by
    /// default the stream's nullable serde does.
    pub fn to_table_deleting_with(&self, materialized: Materialized<K, V>) -> KTable<K, V>
    where
        K: Ord,
    {
        let (stream, store) = self.to_table_input(
            materialized.name.clone(),
            materialized.key_serde.clone(),
            materialized
                .value_serde
                .clone()
                .map(crate::serde::nullable_ref),
        );
        let ks = materialized.key_serde.or(stream.key_serde.clone());
        let vs = materialized
            .value_serde
            .or_else(|| stream.value_serde.clone().map(crate::serde::present_ref));
        crate::dsl::grouped::note_missing(&self.graph, &store, materialized.logging, &ks, &vs);
        crate::dsl::ktable::table_from::<K, V, Option<V>>(&self.graph, stream.node, &store, ks, vs)
    }

    /// The records that carry a value (a table's updates without its
    /// tombstones), unwrapped: Kafka Streams' `filter((k, v) -> v != null)`
    /// after `toStream()`. The value serde is not carried over.
    pub fn skip_tombstones(&self) -> KStream<K, V> {
        self.child(
            "KSTREAM-FILTER",
            self.key_serde.clone(),
            None,
            self.repartition_required,
            Arc::new(|_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, Option<V>, _>(SkipTombstones {
                    down: Downstream::from_children(ch),
                })
            }),
        )
    }
}

/// The branches of a [`KStream::split`], as Kafka Streams' `BranchedKStream`.
pub struct BranchedKStream<K, V> {
    parent: KStream<K, V>,
    prefix: String,
    branches: Vec<(String, Pred<K, V>)>,
    default: Option<String>,
}

impl<K, V> std::fmt::Debug for BranchedKStream<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BranchedKStream")
            .field("branches", &self.branches.len())
            .finish()
    }
}

impl<K: Clone + 'static, V: Clone + 'static> BranchedKStream<K, V> {
    /// Names the branches `prefix` + branch name (or number).
    #[must_use]
    pub fn named(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// A branch for records where `pred` holds (and no earlier branch's did).
    #[must_use]
    pub fn branch(
        mut self,
        pred: impl Fn(&K, &V) -> bool + Send + Sync + 'static,
        name: Option<&str>,
    ) -> Self {
        let name = name.map_or_else(
            || format!("{}{}", self.prefix, self.branches.len() + 1),
            |n| format!("{}{}", self.prefix, n),
        );
        self.branches.push((name, Arc::new(pred)));
        self
    }

    /// The remaining records, and the branches by name.
    pub fn default_branch(mut self) -> BTreeMap<String, KStream<K, V>> {
        self.default = Some(format!("{}0", self.prefix));
        self.finish()
    }

    /// The branches by name; records matching none are dropped.
    pub fn no_default_branch(self) -> BTreeMap<String, KStream<K, V>> {
        self.finish()
    }

    fn finish(mut self) -> BTreeMap<String, KStream<K, V>> {
        if let Some(d) = self.default.take() {
            self.branches.push((d, Arc::new(|_: &K, _: &V| true)));
        }
        let preds: Vec<Pred<K, V>> = self.branches.iter().map(|(_, p)| p.clone()).collect();
        let n = preds.len();
        let (branch_node, _) = add_processor(
            &self.parent.graph,
            "KSTREAM-BRANCH",
            vec![self.parent.node],
            vec![],
            None,
            Arc::new(move |_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, V, _>(Branch {
                    preds: preds.clone(),
                    down: Downstream::from_children(ch),
                    child_of_branch: (0..n).map(Some).collect(),
                })
            }),
        );
        let mut out = BTreeMap::new();
        for (name, _) in self.branches {
            let (id, _) = add_processor(
                &self.parent.graph,
                "KSTREAM-BRANCHCHILD",
                vec![branch_node],
                vec![],
                None,
                Arc::new(|_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                    port::<K, V, _>(PassThrough {
                        down: Downstream::from_children(ch),
                    })
                }),
            );
            let mut s = KStream::new(
                self.parent.graph.clone(),
                id,
                self.parent.key_serde.clone(),
                self.parent.value_serde.clone(),
            );
            s.repartition_required = self.parent.repartition_required;
            out.insert(name, s);
        }
        out
    }
}
