//! The foreign-key table join: [`KTable::join_on_foreign_key`] and
//! [`KTable::left_join_on_foreign_key`] (Kafka Streams' `join` / `leftJoin`
//! with a foreign-key extractor), and their `_with` forms, which materialize
//! the joined rows into a named store.
//!
//! Wiring only (the operators are `processors::fk_join`): the left table
//! feeds `SubscriptionSend`, whose subscriptions go through the internal
//! topic `<name>-SUBSCRIPTION-REGISTRATION-repartition` (keyed by foreign
//! key) to a `RightSide` node; it and a second `RightSide` node (on the right
//! table)
//! share the subscription store and the right rows, and their responses go
//! through `<name>-SUBSCRIPTION-RESPONSE-repartition` (keyed by primary
//! key) to `ResponseResolve`, which reads the left rows `SubscriptionSend`
//! keeps. Every serde must be known (given or inferred for the standard
//! types): both topics and all three stores need them.

use std::any::Any;
use std::sync::Arc;

use crate::dsl::grouped::note_missing;
use crate::dsl::kstream::{KStream, add_processor};
use crate::dsl::ktable::{KTable, table_store};
use crate::dsl::materialized::{Grouped, Materialized};
use crate::processors::fk_join::{
    FkExtractor, FkJoiner, NamedStore, ResponseResolve, RightSide, RightStores, SubscriptionSend,
};
use crate::processors::stateless::PassThrough;
use crate::serde::subscription::{
    Response, ResponseSerde, Subscription, SubscriptionKey, SubscriptionKeySerde, SubscriptionSerde,
};
use crate::serde::{I64Serde, SerdeRef, default_serde};
use crate::topology::graph::{Downstream, Instantiation, NodeId, port};

impl<K: Ord + Clone + 'static, V: Clone + 'static> KTable<K, V> {
    /// The inner foreign-key join: each row of this table joins the row of
    /// `other` whose key `fk` extracts from its value; a row whose foreign
    /// key has no match has no result (a tombstone if it had one).
    pub fn join_on_foreign_key<FK, VO, R>(
        &self,
        other: &KTable<FK, VO>,
        fk: impl Fn(&V) -> FK + Send + Sync + 'static,
        joiner: impl Fn(&V, &VO) -> R + Send + Sync + 'static,
    ) -> KTable<K, R>
    where
        FK: Ord + Clone + 'static,
        VO: Clone + 'static,
        R: Clone + 'static,
    {
        let joiner: FkJoiner<V, VO, R> =
            Arc::new(move |v, o| joiner(v, o.expect("an inner join has the right side")));
        self.foreign_key_join(other, Arc::new(fk), joiner, false)
    }

    /// The left foreign-key join: every row of this table has a result, the
    /// right side `None` where its foreign key has no match.
    pub fn left_join_on_foreign_key<FK, VO, R>(
        &self,
        other: &KTable<FK, VO>,
        fk: impl Fn(&V) -> FK + Send + Sync + 'static,
        joiner: impl Fn(&V, Option<&VO>) -> R + Send + Sync + 'static,
    ) -> KTable<K, R>
    where
        FK: Ord + Clone + 'static,
        VO: Clone + 'static,
        R: Clone + 'static,
    {
        self.foreign_key_join(other, Arc::new(fk), Arc::new(joiner), true)
    }

    /// [`KTable::join_on_foreign_key`] into the store `materialized` names
    /// (Kafka Streams' `join(other, extractor, joiner, Materialized)`): the
    /// joined rows are readable as a key-value store and the table after it
    /// reads them. The store's value serde is `materialized`'s, else the
    /// standard one of `R`.
    pub fn join_on_foreign_key_with<FK, VO, R>(
        &self,
        other: &KTable<FK, VO>,
        fk: impl Fn(&V) -> FK + Send + Sync + 'static,
        joiner: impl Fn(&V, &VO) -> R + Send + Sync + 'static,
        materialized: Materialized<K, R>,
    ) -> KTable<K, R>
    where
        FK: Ord + Clone + 'static,
        VO: Clone + 'static,
        R: Clone + 'static,
    {
        self.join_on_foreign_key(other, fk, joiner)
            .materialize_as(materialized, "KTABLE-FK-JOIN")
    }

    /// [`KTable::left_join_on_foreign_key`] into the store `materialized`
    /// names, as [`KTable::join_on_foreign_key_with`].
    pub fn left_join_on_foreign_key_with<FK, VO, R>(
        &self,
        other: &KTable<FK, VO>,
        fk: impl Fn(&V) -> FK + Send + Sync + 'static,
        joiner: impl Fn(&V, Option<&VO>) -> R + Send + Sync + 'static,
        materialized: Materialized<K, R>,
    ) -> KTable<K, R>
    where
        FK: Ord + Clone + 'static,
        VO: Clone + 'static,
        R: Clone + 'static,
    {
        self.left_join_on_foreign_key(other, fk, joiner)
            .materialize_as(materialized, "KTABLE-FK-LEFTJOIN")
    }

    fn foreign_key_join<FK, VO, R>(
        &self,
        other: &KTable<FK, VO>,
        fk: FkExtractor<V, FK>,
        joiner: FkJoiner<V, VO, R>,
        left_join: bool,
    ) -> KTable<K, R>
    where
        FK: Ord + Clone + 'static,
        VO: Clone + 'static,
        R: Clone + 'static,
    {
        let plan = self.fk_plan(other, left_join);
        self.check_fk_serdes(&plan);

        // Left table → subscriptions → the subscription topic.
        let send = self.add_subscription_send(&plan, fk, left_join);
        let subscriptions =
            KStream::<FK, Subscription<K>>::new(self.graph.clone(), send, None, None).repartition(
                Grouped {
                    key_serde: plan.fks.clone(),
                    value_serde: plan
                        .ks
                        .clone()
                        .map(|k| Arc::new(SubscriptionSerde::new(k)) as SerdeRef<Subscription<K>>),
                    name: Some(format!("{}-SUBSCRIPTION-REGISTRATION", plan.base)),
                },
            );

        // The right side: subscriptions and right rows → responses.
        let merge = self.add_right_side(other, &plan, subscriptions.node);
        let responses = KStream::<K, Response<VO>>::new(self.graph.clone(), merge, None, None)
            .repartition(Grouped {
                key_serde: plan.ks.clone(),
                value_serde: plan
                    .vos
                    .clone()
                    .map(|v| Arc::new(ResponseSerde::new(v)) as SerdeRef<Response<VO>>),
                name: Some(format!("{}-SUBSCRIPTION-RESPONSE", plan.base)),
            });

        // Responses → the joined table, against the current left rows.
        let resolve = self.add_response_resolve(&plan, responses.node, joiner, left_join);
        KTable::new(self.graph.clone(), resolve, plan.ks, None, None)
    }

    /// Names the join and its three stores, and gathers the serdes they need.
    fn fk_plan<FK, VO>(&self, other: &KTable<FK, VO>, left_join: bool) -> FkPlan<K, V, FK, VO>
    where
        FK: Ord + Clone + 'static,
        VO: Clone + 'static,
    {
        let prefix = if left_join {
            "KTABLE-FK-LEFTJOIN"
        } else {
            "KTABLE-FK-JOIN"
        };
        let base = self.graph.borrow_mut().next_name(prefix);
        let ks = self.key_serde.clone();
        let fks = other.key_serde.clone();
        let sub_keys = fks.clone().zip(ks.clone()).map(|(f, k)| {
            Arc::new(SubscriptionKeySerde::new(f, k)) as SerdeRef<SubscriptionKey<FK, K>>
        });
        FkPlan {
            prefix,
            left_store: format!("{base}-LEFT-STORE"),
            sub_store: format!("{base}-SUBSCRIPTION-STORE"),
            right_store: format!("{base}-RIGHT-STORE"),
            base,
            ks,
            vs: self.value_serde.clone().or_else(default_serde),
            fks,
            vos: other.value_serde.clone().or_else(default_serde),
            sub_keys,
            hashes: Some(Arc::new(I64Serde)),
        }
    }

    /// Records a topology error when the left values have no serde (the join hashes them), and
    /// notes each store's missing serdes.
    fn check_fk_serdes<FK, VO>(&self, plan: &FkPlan<K, V, FK, VO>) {
        if plan.vs.is_none() {
            let node = self.graph.borrow().nodes[self.node].name.clone();
            self.graph
                .borrow_mut()
                .errors
                .push(crate::error::TopologyError::InvalidArgument {
                node,
                reason:
                    "a foreign-key join hashes the left values: give the left table a value serde"
                        .into(),
            });
        }
        note_missing(&self.graph, &plan.left_store, true, &plan.ks, &plan.vs);
        note_missing(
            &self.graph,
            &plan.sub_store,
            true,
            &plan.sub_keys,
            &plan.hashes,
        );
        note_missing(&self.graph, &plan.right_store, true, &plan.fks, &plan.vos);
    }

    /// Adds the node that keeps the left rows and sends a subscription per left change.
    fn add_subscription_send<FK, VO>(
        &self,
        plan: &FkPlan<K, V, FK, VO>,
        fk: FkExtractor<V, FK>,
        left_join: bool,
    ) -> NodeId
    where
        FK: Ord + Clone + 'static,
    {
        let (name, ks, vs) = (plan.left_store.clone(), plan.ks.clone(), plan.vs.clone());
        add_processor(
            &self.graph,
            &format!("{}-SUBSCRIPTION-SEND", plan.prefix),
            vec![self.node],
            vec![plan.left_store.clone()],
            None,
            Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, Option<V>, _>(SubscriptionSend {
                    left: NamedStore {
                        name: name.clone(),
                        store: table_store(cx, &name, &ks, &vs),
                    },
                    value_serde: vs.clone().expect("checked at build"),
                    fk: fk.clone(),
                    left_join,
                    down: Downstream::from_children(ch),
                })
            }),
        )
        .0
    }

    /// Adds the two right-side nodes (on the subscription topic and on the right table), which
    /// share the subscription store and the right rows, and the node merging their responses;
    /// returns the merge node.
    fn add_right_side<FK, VO>(
        &self,
        other: &KTable<FK, VO>,
        plan: &FkPlan<K, V, FK, VO>,
        subscriptions: NodeId,
    ) -> NodeId
    where
        FK: Ord + Clone + 'static,
        VO: Clone + 'static,
    {
        let prefix = plan.prefix;
        let right_stores = vec![plan.sub_store.clone(), plan.right_store.clone()];
        let stores = {
            let (sub_store, right_store) = (plan.sub_store.clone(), plan.right_store.clone());
            let (sub_keys, hashes) = (plan.sub_keys.clone(), plan.hashes.clone());
            let (fks, vos) = (plan.fks.clone(), plan.vos.clone());
            move |cx: &mut Instantiation| RightStores {
                subscriptions: NamedStore {
                    name: sub_store.clone(),
                    store: table_store(cx, &sub_store, &sub_keys, &hashes),
                },
                right: NamedStore {
                    name: right_store.clone(),
                    store: table_store(cx, &right_store, &fks, &vos),
                },
            }
        };
        let stores = Arc::new(stores);
        let receive = {
            let stores = stores.clone();
            add_processor(
                &self.graph,
                &format!("{prefix}-SUBSCRIPTION-RECEIVE"),
                vec![subscriptions],
                right_stores.clone(),
                None,
                Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                    port::<FK, Subscription<K>, _>(RightSide {
                        stores: stores(cx),
                        down: Downstream::from_children(ch),
                    })
                }),
            )
            .0
        };
        let update = add_processor(
            &other.graph,
            &format!("{prefix}-FOREIGN-UPDATE"),
            vec![other.node],
            right_stores,
            None,
            Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<FK, Option<VO>, _>(RightSide {
                    stores: stores(cx),
                    down: Downstream::from_children(ch),
                })
            }),
        )
        .0;
        add_processor(
            &self.graph,
            &format!("{prefix}-RESPONSE-MERGE"),
            vec![receive, update],
            vec![],
            None,
            Arc::new(|_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, Response<VO>, _>(PassThrough {
                    down: Downstream::from_children(ch),
                })
            }),
        )
        .0
    }

    /// Adds the node that joins each response with the current left row.
    fn add_response_resolve<FK, VO, R>(
        &self,
        plan: &FkPlan<K, V, FK, VO>,
        responses: NodeId,
        joiner: FkJoiner<V, VO, R>,
        left_join: bool,
    ) -> NodeId
    where
        VO: Clone + 'static,
        R: Clone + 'static,
    {
        let (name, ks2, vs2) = (plan.left_store.clone(), plan.ks.clone(), plan.vs.clone());
        add_processor(
            &self.graph,
            &format!("{}-RESPONSE-RESOLVE", plan.prefix),
            vec![responses],
            vec![plan.left_store.clone()],
            None,
            Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, Response<VO>, _>(ResponseResolve {
                    left: NamedStore {
                        name: name.clone(),
                        store: table_store(cx, &name, &ks2, &vs2),
                    },
                    value_serde: vs2.clone().expect("checked at build"),
                    joiner: joiner.clone(),
                    left_join,
                    down: Downstream::from_children(ch),
                })
            }),
        )
        .0
    }
}

/// A foreign-key join's names and the serdes of its stores and topics.
struct FkPlan<K, V, FK, VO> {
    /// The node names' prefix: which join this is.
    prefix: &'static str,
    /// The join's own name, which its stores and internal topics start with.
    base: String,
    left_store: String,
    sub_store: String,
    right_store: String,
    ks: Option<SerdeRef<K>>,
    vs: Option<SerdeRef<V>>,
    fks: Option<SerdeRef<FK>>,
    vos: Option<SerdeRef<VO>>,
    sub_keys: Option<SerdeRef<SubscriptionKey<FK, K>>>,
    hashes: Option<SerdeRef<i64>>,
}
