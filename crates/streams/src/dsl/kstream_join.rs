//! The join operators of [`KStream`]: stream-stream `join`, `left_join`,
//! `outer_join` (windowed, docs/emission.md#stream-stream-joins) and stream-table `join_table`,
//! `left_join_table`.
//!
//! Rust has no overloading, so the stream-table forms of Kafka Streams'
//! `join(KTable, ..)` / `leftJoin(KTable, ..)` are named `join_table` /
//! `left_join_table`. Joiners take values by reference; a missing side is
//! `None` (Kafka Streams passes `null`).
//!
//! This module wires nodes and stores; what a join does per record is in
//! `processors::stream_join` and `processors::stream_table_join`.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{InMemoryKeyValueStore, SegmentedConfig, StoreConfig};

use crate::dsl::joins::{JoinWindows, Joined, StreamJoined};
use crate::dsl::kstream::{KStream, add_processor};
use crate::dsl::ktable::{KTable, table_store};
use crate::dsl::materialized::Grouped;
use crate::error::TopologyError;
use crate::processors::stateless::PassThrough;
use crate::processors::stream_join::{
    JoinFrontierStore, JoinSide, JoinWindowStore, Joiner, LEFT, LeftOrRight, LeftOrRightListCodec,
    ListCodec, OuterKeyCodec, OuterState, OuterStore, RIGHT,
};
use crate::processors::stream_table_join::StreamTableJoin;
use crate::processors::windowed::EmitFrontier;
use crate::serde::SerdeRef;
use crate::serde::{BoxedCodec, codec};
use crate::topology::graph::{
    Downstream, Factory, Instantiation, NodeId, PortHandle, SharedGraph, port,
};
use crate::topology::store_choice::StoreRequest;
use crate::topology::{StoreShape, StoreType};

fn note_missing<T>(
    graph: &SharedGraph,
    store: &str,
    serde: &Option<SerdeRef<T>>,
    what: &'static str,
) {
    if serde.is_none() {
        graph
            .borrow_mut()
            .missing_serdes
            .push((store.to_owned(), what));
    }
}

/// Names and settings shared by the two sides' factories.
#[derive(Clone)]
struct JoinPlan {
    left_store: String,
    right_store: String,
    outer_store: Option<String>,
    windows: JoinWindows,
    logging: bool,
    /// The engines the `StreamJoined`'s suppliers chose for this side's and the other side's
    /// stores (`None`: the configured default).
    left_type: Option<StoreType>,
    right_type: Option<StoreType>,
}

fn side_store<K, V>(
    cx: &mut Instantiation,
    name: &str,
    plan: &JoinPlan,
    ks: &Option<SerdeRef<K>>,
    vs: &Option<SerdeRef<V>>,
) -> Rc<RefCell<JoinWindowStore<K, V>>>
where
    K: Ord + Clone + 'static,
    V: Clone + 'static,
{
    let store_type = if name == plan.left_store {
        plan.left_type
    } else {
        plan.right_type
    };
    cx.window_store(
        &StoreRequest::new(name, store_type, plan.logging).with_serdes(ks.is_some(), vs.is_some()),
        // Memory follows the live arrivals (window + grace), not 60 s segments.
        SegmentedConfig::sized_to_retention(plan.windows.retention_ms()),
        BoxedCodec(codec(ks, name)),
        ListCodec(codec(vs, name)),
    )
}

fn outer_state<K, V1, V2>(
    cx: &mut Instantiation,
    name: &str,
    plan: &JoinPlan,
    ks: &Option<SerdeRef<K>>,
    v1: &Option<SerdeRef<V1>>,
    v2: &Option<SerdeRef<V2>>,
) -> OuterState<K, V1, V2>
where
    K: Ord + Clone + 'static,
    V1: Clone + 'static,
    V2: Clone + 'static,
{
    let frontier_name = format!("{name}-emitfrontier");
    // The shared store follows the engine of the join's own stores (Kafka Streams keeps it
    // beside them).
    let store: Rc<RefCell<OuterStore<K, V1, V2>>> = cx.key_value_store(
        &StoreRequest::new(name, plan.left_type, plan.logging)
            .with_serdes(ks.is_some(), v1.is_some() && v2.is_some()),
        OuterKeyCodec(codec(ks, name)),
        LeftOrRightListCodec(codec(v1, name), codec(v2, name)),
    );
    let frontier: Rc<RefCell<JoinFrontierStore>> = match cx.typed_store(&frontier_name) {
        Some(s) => s,
        None => {
            let s = Rc::new(RefCell::new(InMemoryKeyValueStore::new(
                StoreConfig::new(frontier_name.clone())
                    .with_changelog_enabled(cx.config.changelog_enabled),
                stoatflow_state::StringCodec,
                stoatflow_state::I64Codec,
            )));
            cx.add_store(&frontier_name, s.clone());
            s
        }
    };
    OuterState {
        name: name.to_owned(),
        store,
        frontier: EmitFrontier::new(name, frontier),
    }
}

/// The serdes of a stream-stream join's stores: the `StreamJoined`'s, else the streams' own.
#[derive(Clone)]
struct JoinSerdes<K, V1, V2> {
    ks: Option<SerdeRef<K>>,
    v1s: Option<SerdeRef<V1>>,
    v2s: Option<SerdeRef<V2>>,
}

/// The join's base name: the `StreamJoined`'s store name, else a fresh name whose prefix says
/// which join it is.
fn join_base_name<K, V1, V2>(
    graph: &SharedGraph,
    joined: &StreamJoined<K, V1, V2>,
    (left_outer, right_outer): (bool, bool),
) -> String {
    joined.store_name.clone().unwrap_or_else(|| {
        let prefix = match (left_outer, right_outer) {
            (false, false) => "KSTREAM-JOIN",
            (true, false) => "KSTREAM-LEFTJOIN",
            _ => "KSTREAM-OUTERJOIN",
        };
        graph.borrow_mut().next_name(prefix)
    })
}

/// The join's store names and settings, from its base name and the `StreamJoined`'s suppliers.
fn join_plan<K, V1, V2>(
    base: &str,
    joined: &StreamJoined<K, V1, V2>,
    (left_outer, right_outer): (bool, bool),
    windows: JoinWindows,
) -> JoinPlan {
    JoinPlan {
        left_store: joined.this_store.as_ref().map_or_else(
            || format!("{base}-this-join-store"),
            |s| s.name().to_owned(),
        ),
        right_store: joined.other_store.as_ref().map_or_else(
            || format!("{base}-other-join-store"),
            |s| s.name().to_owned(),
        ),
        outer_store: (left_outer || right_outer).then(|| {
            format!(
                "{base}-{}-shared-join-store",
                if right_outer { "outer" } else { "left" }
            )
        }),
        windows,
        logging: joined.logging,
        left_type: joined.this_store.as_ref().map(|s| s.store_type()),
        right_type: joined.other_store.as_ref().map(|s| s.store_type()),
    }
}

/// Records a topology error for each store supplier that is not a window store, and for
/// invalid windows.
fn check_join_arguments<K, V1, V2>(
    graph: &SharedGraph,
    joined: &StreamJoined<K, V1, V2>,
    windows: JoinWindows,
    base: &str,
) {
    for supplier in [&joined.this_store, &joined.other_store]
        .into_iter()
        .flatten()
    {
        if supplier.shape() != StoreShape::Window {
            graph
                .borrow_mut()
                .errors
                .push(TopologyError::InvalidArgument {
                    node: supplier.name().to_owned(),
                    reason: format!(
                        "a {} store supplier cannot back a stream-stream join's window store",
                        supplier.shape()
                    ),
                });
        }
    }
    if let Err(e) = windows.validate(base) {
        graph.borrow_mut().errors.push(e);
    }
}

/// Notes each logged join store whose key or value serde is missing.
fn note_missing_join_serdes<K, V1, V2>(
    graph: &SharedGraph,
    plan: &JoinPlan,
    serdes: &JoinSerdes<K, V1, V2>,
) {
    for store in [&plan.left_store, &plan.right_store]
        .into_iter()
        .chain(plan.outer_store.as_ref())
    {
        note_missing(graph, store, &serdes.ks, "key");
    }
    note_missing(graph, &plan.left_store, &serdes.v1s, "value");
    note_missing(graph, &plan.right_store, &serdes.v2s, "value");
    if let Some(o) = &plan.outer_store {
        note_missing(graph, o, &serdes.v1s, "value");
        note_missing(graph, o, &serdes.v2s, "value");
    }
}

impl JoinPlan {
    /// The stores both sides connect to: the two window stores, and the outer store with its
    /// emit frontier.
    fn store_names(&self) -> Vec<String> {
        let mut stores = vec![self.left_store.clone(), self.right_store.clone()];
        if let Some(o) = &self.outer_store {
            stores.push(o.clone());
            stores.push(format!("{o}-emitfrontier"));
        }
        stores
    }
}

/// The outer store's state for one side's instance, when the join is left or outer.
fn side_outer_state<K, V1, V2>(
    cx: &mut Instantiation,
    plan: &JoinPlan,
    serdes: &JoinSerdes<K, V1, V2>,
) -> Option<OuterState<K, V1, V2>>
where
    K: Ord + Clone + 'static,
    V1: Clone + 'static,
    V2: Clone + 'static,
{
    plan.outer_store
        .as_ref()
        .map(|o| outer_state::<K, V1, V2>(cx, o, plan, &serdes.ks, &serdes.v1s, &serdes.v2s))
}

/// The factory of the this (left) side, which also runs the emission pass of the null sides.
fn this_side_factory<K, V1, V2, VR>(
    name: String,
    plan: &JoinPlan,
    serdes: &JoinSerdes<K, V1, V2>,
    full: &Joiner<K, V1, V2, VR>,
    (left_outer, right_outer): (bool, bool),
) -> Factory
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    V1: Clone + 'static,
    V2: Clone + 'static,
    VR: Clone + 'static,
{
    let (plan, serdes, full) = (plan.clone(), serdes.clone(), full.clone());
    Arc::new(
        move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| -> PortHandle {
            let this_store =
                side_store::<K, V1>(cx, &plan.left_store, &plan, &serdes.ks, &serdes.v1s);
            let other_store =
                side_store::<K, V2>(cx, &plan.right_store, &plan, &serdes.ks, &serdes.v2s);
            let outer = side_outer_state(cx, &plan, &serdes);
            let f = full.clone();
            let side = JoinSide {
                node: name.clone(),
                side: LEFT,
                before_ms: plan.windows.before_ms(),
                after_ms: plan.windows.after_ms(),
                grace_ms: plan.windows.grace_ms(),
                this_store_name: plan.left_store.clone(),
                this_store,
                other_store_name: plan.right_store.clone(),
                other_store,
                outer,
                this_outer: left_outer,
                other_outer: right_outer,
                joined: Arc::new(move |k: &K, l: &V1, r: Option<&V2>| f(k, Some(l), r)),
                wrap: Arc::new(LeftOrRight::Left),
                full: full.clone(),
                down: Downstream::<K, VR>::from_children(ch),
            };
            let op = Rc::new(RefCell::new(side));
            cx.add_frontier_op(op.clone());
            PortHandle::of::<K, V1>(op)
        },
    )
}

/// The factory of the other (right) side: the left side's mirror.
fn other_side_factory<K, V1, V2, VR>(
    name: String,
    plan: &JoinPlan,
    serdes: &JoinSerdes<K, V1, V2>,
    full: &Joiner<K, V1, V2, VR>,
    (left_outer, right_outer): (bool, bool),
) -> Factory
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    V1: Clone + 'static,
    V2: Clone + 'static,
    VR: Clone + 'static,
{
    let (plan, serdes, full) = (plan.clone(), serdes.clone(), full.clone());
    Arc::new(
        move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| -> PortHandle {
            let this_store =
                side_store::<K, V2>(cx, &plan.right_store, &plan, &serdes.ks, &serdes.v2s);
            let other_store =
                side_store::<K, V1>(cx, &plan.left_store, &plan, &serdes.ks, &serdes.v1s);
            let outer = side_outer_state(cx, &plan, &serdes);
            let f = full.clone();
            port::<K, V2, _>(JoinSide {
                node: name.clone(),
                side: RIGHT,
                // Mirrored: a right record at t joins left records in [t - after, t + before].
                before_ms: plan.windows.after_ms(),
                after_ms: plan.windows.before_ms(),
                grace_ms: plan.windows.grace_ms(),
                this_store_name: plan.right_store.clone(),
                this_store,
                other_store_name: plan.left_store.clone(),
                other_store,
                outer,
                this_outer: right_outer,
                other_outer: left_outer,
                joined: Arc::new(move |k: &K, r: &V2, l: Option<&V1>| f(k, l, Some(r))),
                wrap: Arc::new(LeftOrRight::Right),
                full: full.clone(),
                down: Downstream::<K, VR>::from_children(ch),
            })
        },
    )
}

/// Adds the node that merges both sides' results into one stream.
fn add_merge<K, VR>(graph: &SharedGraph, this_id: NodeId, other_id: NodeId) -> NodeId
where
    K: Clone + 'static,
    VR: Clone + 'static,
{
    let (merge, _) = add_processor(
        graph,
        "KSTREAM-MERGE",
        vec![this_id, other_id],
        vec![],
        None,
        Arc::new(|_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
            port::<K, VR, _>(PassThrough {
                down: Downstream::from_children(ch),
            })
        }),
    );
    merge
}

impl<K, V1> KStream<K, V1>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    V1: Clone + 'static,
{
    /// Inner windowed join: each pair of records with the same key at most
    /// the window apart (both edges inclusive) is joined once, at the larger
    /// of the two times.
    pub fn join<V2, VR>(
        &self,
        other: &KStream<K, V2>,
        joiner: impl Fn(&V1, &V2) -> VR + Send + Sync + 'static,
        windows: JoinWindows,
        joined: StreamJoined<K, V1, V2>,
    ) -> KStream<K, VR>
    where
        V2: Clone + 'static,
        VR: Clone + 'static,
    {
        let full: Joiner<K, V1, V2, VR> = Arc::new(move |_k, l, r| {
            joiner(
                l.expect("inner join: left present"),
                r.expect("inner join: right present"),
            )
        });
        self.stream_join(other, full, (false, false), windows, joined)
    }

    /// Left windowed join: as [`KStream::join`], and each left record that
    /// matched nothing is joined with `None` once the frontier reaches its
    /// close, `t + after + 1 + grace` (docs/late.md#closes).
    pub fn left_join<V2, VR>(
        &self,
        other: &KStream<K, V2>,
        joiner: impl Fn(&V1, Option<&V2>) -> VR + Send + Sync + 'static,
        windows: JoinWindows,
        joined: StreamJoined<K, V1, V2>,
    ) -> KStream<K, VR>
    where
        V2: Clone + 'static,
        VR: Clone + 'static,
    {
        let full: Joiner<K, V1, V2, VR> =
            Arc::new(move |_k, l, r| joiner(l.expect("left join: left present"), r));
        self.stream_join(other, full, (true, false), windows, joined)
    }

    /// Outer windowed join: unmatched records of either side are joined
    /// with `None` once the frontier reaches their close (right records:
    /// `t + before + 1 + grace`).
    pub fn outer_join<V2, VR>(
        &self,
        other: &KStream<K, V2>,
        joiner: impl Fn(Option<&V1>, Option<&V2>) -> VR + Send + Sync + 'static,
        windows: JoinWindows,
        joined: StreamJoined<K, V1, V2>,
    ) -> KStream<K, VR>
    where
        V2: Clone + 'static,
        VR: Clone + 'static,
    {
        let full: Joiner<K, V1, V2, VR> = Arc::new(move |_k, l, r| joiner(l, r));
        self.stream_join(other, full, (true, true), windows, joined)
    }

    fn co_partitioned(&self, ks: &Option<SerdeRef<K>>, vs: &Option<SerdeRef<V1>>) -> Self {
        if self.repartition_required {
            self.repartition(Grouped {
                key_serde: ks.clone(),
                value_serde: vs.clone(),
                name: None,
            })
        } else {
            self.clone()
        }
    }

    fn stream_join<V2, VR>(
        &self,
        other: &KStream<K, V2>,
        full: Joiner<K, V1, V2, VR>,
        outer_sides: (bool, bool),
        windows: JoinWindows,
        joined: StreamJoined<K, V1, V2>,
    ) -> KStream<K, VR>
    where
        V2: Clone + 'static,
        VR: Clone + 'static,
    {
        let graph = self.graph.clone();
        let serdes = JoinSerdes {
            ks: joined.key_serde.clone().or_else(|| self.key_serde.clone()),
            v1s: joined
                .value_serde
                .clone()
                .or_else(|| self.value_serde.clone()),
            v2s: joined
                .other_value_serde
                .clone()
                .or_else(|| other.value_serde.clone()),
        };
        let left_stream = self.co_partitioned(&serdes.ks, &serdes.v1s);
        let right_stream = other.co_partitioned(&serdes.ks, &serdes.v2s);
        let base = join_base_name(&graph, &joined, outer_sides);
        let plan = join_plan(&base, &joined, outer_sides, windows);
        check_join_arguments(&graph, &joined, windows, &base);
        if plan.logging {
            note_missing_join_serdes(&graph, &plan, &serdes);
        }
        let stores = plan.store_names();
        let (this_prefix, other_prefix) = if plan.outer_store.is_some() {
            ("KSTREAM-OUTERTHIS", "KSTREAM-OUTEROTHER")
        } else {
            ("KSTREAM-JOINTHIS", "KSTREAM-JOINOTHER")
        };
        let (this_id, _) = add_processor(
            &graph,
            this_prefix,
            vec![left_stream.node],
            stores.clone(),
            Some("stream-stream join"),
            this_side_factory(format!("{base}-this"), &plan, &serdes, &full, outer_sides),
        );
        let (other_id, _) = add_processor(
            &graph,
            other_prefix,
            vec![right_stream.node],
            stores,
            None,
            other_side_factory(format!("{base}-other"), &plan, &serdes, &full, outer_sides),
        );
        let merge = add_merge::<K, VR>(&graph, this_id, other_id);
        KStream::new(graph, merge, serdes.ks, None)
    }

    /// Inner stream-table join: each stream record joins the table's current
    /// row for its key; records without a row produce nothing. Table updates
    /// produce nothing. No grace (docs/emission.md#stream-table-joins).
    pub fn join_table<VT, VR>(
        &self,
        table: &KTable<K, VT>,
        joiner: impl Fn(&V1, &VT) -> VR + Send + Sync + 'static,
        joined: Joined<K, V1, VT>,
    ) -> KStream<K, VR>
    where
        VT: Clone + 'static,
        VR: Clone + 'static,
    {
        let j = Arc::new(move |_: &K, v: &V1, t: Option<&VT>| {
            joiner(v, t.expect("inner stream-table join: row present"))
        });
        self.table_join(table, j, false, joined)
    }

    /// Left stream-table join: as [`KStream::join_table`], and a record
    /// without a row joins `None`.
    pub fn left_join_table<VT, VR>(
        &self,
        table: &KTable<K, VT>,
        joiner: impl Fn(&V1, Option<&VT>) -> VR + Send + Sync + 'static,
        joined: Joined<K, V1, VT>,
    ) -> KStream<K, VR>
    where
        VT: Clone + 'static,
        VR: Clone + 'static,
    {
        let j = Arc::new(move |_: &K, v: &V1, t: Option<&VT>| joiner(v, t));
        self.table_join(table, j, true, joined)
    }

    fn table_join<VT, VR>(
        &self,
        table: &KTable<K, VT>,
        joiner: Arc<dyn Fn(&K, &V1, Option<&VT>) -> VR + Send + Sync>,
        left: bool,
        joined: Joined<K, V1, VT>,
    ) -> KStream<K, VR>
    where
        VT: Clone + 'static,
        VR: Clone + 'static,
    {
        let graph = self.graph.clone();
        let ks = joined.key_serde.clone().or_else(|| self.key_serde.clone());
        let vs = joined
            .value_serde
            .clone()
            .or_else(|| self.value_serde.clone());
        let stream = self.co_partitioned(&ks, &vs);
        let Some(store) = table.store.clone() else {
            let node = graph.borrow().nodes[table.node].name.clone();
            graph.borrow_mut().errors.push(TopologyError::InvalidArgument {
                node,
                reason: "a stream-table join needs a materialized table (one read with StreamsBuilder::table)".into(),
            });
            return KStream::new(graph, self.node, ks, None);
        };
        let tks = table.key_serde.clone();
        let tvs = joined
            .other_value_serde
            .clone()
            .or_else(|| table.value_serde.clone());
        let store_name = store.clone();
        let (id, _) = add_processor(
            &graph,
            "KSTREAM-JOIN",
            vec![stream.node],
            vec![store],
            None,
            Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                let t = table_store::<K, VT>(cx, &store_name, &tks, &tvs);
                port::<K, V1, _>(StreamTableJoin {
                    store_name: store_name.clone(),
                    table: t,
                    joiner: joiner.clone(),
                    left,
                    down: Downstream::<K, VR>::from_children(ch),
                })
            }),
        );
        KStream::new(graph, id, ks, None)
    }
}
