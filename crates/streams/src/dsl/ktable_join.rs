//! Table-table joins: [`KTable::join`], [`KTable::left_join`] and
//! [`KTable::outer_join`], with Kafka Streams' output rules (a result is
//! recomputed when either side updates; a removed row is a tombstone), and
//! their `_with` forms, which materialize the joined rows into a named store.
//!
//! Wiring only: a node per side (`processors::table_join`), both reading and
//! writing the join's two side stores, and a merge node whose output is the
//! joined table. The side stores use the tables' value serdes (inferred for
//! the standard types; `KTable::map_values_with` gives one to a mapped
//! table).

use std::any::Any;
use std::sync::Arc;

use crate::dsl::grouped::note_missing;
use crate::dsl::kstream::add_processor;
use crate::dsl::ktable::{KTable, table_store};
use crate::dsl::materialized::Materialized;
use crate::processors::stateless::PassThrough;
use crate::processors::table_join::{Optional, SideJoiner, SideStore, TableJoinSide};
use crate::serde::{SerdeRef, default_serde};
use crate::topology::graph::{Downstream, Instantiation, port};

impl<K: Ord + Clone + 'static, V: Clone + 'static> KTable<K, V> {
    /// The inner join: a row where both tables have the key.
    pub fn join<VO: Clone + 'static, R: Clone + 'static>(
        &self,
        other: &KTable<K, VO>,
        joiner: impl Fn(&V, &VO) -> R + Send + Sync + 'static,
    ) -> KTable<K, R> {
        let joiner: SideJoiner<V, VO, R> = Arc::new(move |v, o| {
            joiner(
                v.expect("an inner join has this side"),
                o.expect("an inner join has the other side"),
            )
        });
        self.join_tables(other, joiner, false, false, "KTABLE-JOIN")
    }

    /// The left join: a row wherever this table has the key, the other
    /// side `None` where it has not.
    pub fn left_join<VO: Clone + 'static, R: Clone + 'static>(
        &self,
        other: &KTable<K, VO>,
        joiner: impl Fn(&V, Option<&VO>) -> R + Send + Sync + 'static,
    ) -> KTable<K, R> {
        let joiner: SideJoiner<V, VO, R> =
            Arc::new(move |v, o| joiner(v.expect("a left join has its left side"), o));
        self.join_tables(other, joiner, true, false, "KTABLE-LEFTJOIN")
    }

    /// The outer join: a row wherever either table has the key.
    pub fn outer_join<VO: Clone + 'static, R: Clone + 'static>(
        &self,
        other: &KTable<K, VO>,
        joiner: impl Fn(Option<&V>, Option<&VO>) -> R + Send + Sync + 'static,
    ) -> KTable<K, R> {
        self.join_tables(other, Arc::new(joiner), true, true, "KTABLE-OUTERJOIN")
    }

    /// [`KTable::join`] into the store `materialized` names (Kafka Streams'
    /// `join(other, joiner, Materialized)`): the joined rows are readable as
    /// a key-value store and the table after it reads them. The store's value
    /// serde is `materialized`'s, else the standard one of `R`.
    pub fn join_with<VO: Clone + 'static, R: Clone + 'static>(
        &self,
        other: &KTable<K, VO>,
        joiner: impl Fn(&V, &VO) -> R + Send + Sync + 'static,
        materialized: Materialized<K, R>,
    ) -> KTable<K, R> {
        self.join(other, joiner)
            .materialize_as(materialized, "KTABLE-JOIN")
    }

    /// [`KTable::left_join`] into the store `materialized` names, as
    /// [`KTable::join_with`].
    pub fn left_join_with<VO: Clone + 'static, R: Clone + 'static>(
        &self,
        other: &KTable<K, VO>,
        joiner: impl Fn(&V, Option<&VO>) -> R + Send + Sync + 'static,
        materialized: Materialized<K, R>,
    ) -> KTable<K, R> {
        self.left_join(other, joiner)
            .materialize_as(materialized, "KTABLE-LEFTJOIN")
    }

    /// [`KTable::outer_join`] into the store `materialized` names, as
    /// [`KTable::join_with`].
    pub fn outer_join_with<VO: Clone + 'static, R: Clone + 'static>(
        &self,
        other: &KTable<K, VO>,
        joiner: impl Fn(Option<&V>, Option<&VO>) -> R + Send + Sync + 'static,
        materialized: Materialized<K, R>,
    ) -> KTable<K, R> {
        self.outer_join(other, joiner)
            .materialize_as(materialized, "KTABLE-OUTERJOIN")
    }

    /// Adds the two side nodes and their merge. `keep_this` / `keep_other`:
    /// a result exists without the other / this side's value.
    fn join_tables<VO: Clone + 'static, R: Clone + 'static>(
        &self,
        other: &KTable<K, VO>,
        joiner: SideJoiner<V, VO, R>,
        keep_this: bool,
        keep_other: bool,
        prefix: &str,
    ) -> KTable<K, R> {
        let base = self.graph.borrow_mut().next_name(prefix);
        let (this_store, other_store) =
            (format!("{base}-this-store"), format!("{base}-other-store"));
        let ks = self.key_serde.clone().or_else(|| other.key_serde.clone());
        let vs = self.value_serde.clone().or_else(default_serde);
        let vo = other.value_serde.clone().or_else(default_serde);
        note_missing(&self.graph, &this_store, true, &ks, &vs);
        note_missing(&self.graph, &other_store, true, &ks, &vo);
        let this_side = SideStores {
            key_serde: ks.clone(),
            this: (this_store.clone(), vs),
            other: (other_store.clone(), vo),
        };
        let other_side = this_side.flipped();
        let flipped: SideJoiner<VO, V, R> = {
            let joiner = joiner.clone();
            Arc::new(move |o, v| joiner(v, o))
        };
        let stores = vec![this_store, other_store];
        let this_id = side_node(
            self,
            &format!("{prefix}-THIS"),
            stores.clone(),
            this_side,
            Optional {
                this: keep_other,
                other: keep_this,
            },
            joiner,
        );
        let other_id = side_node(
            other,
            &format!("{prefix}-OTHER"),
            stores,
            other_side,
            Optional {
                this: keep_this,
                other: keep_other,
            },
            flipped,
        );
        let (merge, _) = add_processor(
            &self.graph,
            "KTABLE-MERGE",
            vec![this_id, other_id],
            vec![],
            None,
            Arc::new(|_: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, Option<R>, _>(PassThrough {
                    down: Downstream::from_children(ch),
                })
            }),
        );
        KTable::new(self.graph.clone(), merge, ks, None, None)
    }
}

/// The names and serdes of a side's own store and the other side's.
struct SideStores<K, V, VO> {
    key_serde: Option<SerdeRef<K>>,
    this: (String, Option<SerdeRef<V>>),
    other: (String, Option<SerdeRef<VO>>),
}

impl<K, V, VO> SideStores<K, V, VO> {
    fn flipped(&self) -> SideStores<K, VO, V> {
        SideStores {
            key_serde: self.key_serde.clone(),
            this: self.other.clone(),
            other: self.this.clone(),
        }
    }
}

/// The node joining `table`'s updates against the other side's store.
fn side_node<K, V, VO, R>(
    table: &KTable<K, V>,
    prefix: &str,
    stores: Vec<String>,
    names: SideStores<K, V, VO>,
    optional: Optional,
    joiner: SideJoiner<V, VO, R>,
) -> usize
where
    K: Ord + Clone + 'static,
    V: Clone + 'static,
    VO: Clone + 'static,
    R: Clone + 'static,
{
    let (id, _) = add_processor(
        &table.graph,
        prefix,
        vec![table.node],
        stores,
        None,
        Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
            let ks = &names.key_serde;
            let (this, vs) = &names.this;
            let (other, vo) = &names.other;
            port::<K, Option<V>, _>(TableJoinSide {
                this: SideStore {
                    name: this.clone(),
                    store: table_store(cx, this, ks, vs),
                },
                other: SideStore {
                    name: other.clone(),
                    store: table_store(cx, other, ks, vo),
                },
                optional,
                joiner: joiner.clone(),
                down: Downstream::from_children(ch),
            })
        }),
    );
    id
}
