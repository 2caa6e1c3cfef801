//! [`KTable::group_by`] and [`KGroupedTable`]: a table regrouped under a new
//! key, and its count, reduce and aggregate with an adder and a subtractor
//! (Kafka Streams' `KGroupedTable`).
//!
//! The regrouping node (`processors::table_regroup`) turns each update into
//! a [`Change`] under the selected key and always writes it through a
//! repartition topic (`<name>-repartition`, as Kafka Streams does); the
//! aggregation is the grouped stream's (`grouped`), folding changes: the
//! subtractor takes the old value out, then the adder puts the new one in.

use std::any::Any;
use std::sync::Arc;

use crate::dsl::grouped::{KGroupedStream, note_missing};
use crate::dsl::kstream::{KStream, add_processor};
use crate::dsl::ktable::{KTable, table_store};
use crate::dsl::materialized::{Grouped, Materialized};
use crate::processors::table_regroup::{Selector, TableRegroup};
use crate::processors::windowed::Aggregation;
use crate::record::Change;
use crate::serde::{ChangeSerde, I64Serde, PairSerde, SerdeRef};
use crate::topology::graph::{Downstream, Instantiation, port};

/// A table regrouped by [`KTable::group_by`], ready to aggregate.
#[must_use = "a grouped table does nothing until aggregated"]
pub struct KGroupedTable<K, V> {
    changes: KStream<K, Change<V>>,
    value_serde: Option<SerdeRef<V>>,
}

impl<K, V> std::fmt::Debug for KGroupedTable<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KGroupedTable")
            .field("changes", &self.changes)
            .finish()
    }
}

impl<K: Ord + Clone + 'static, V: Clone + 'static> KTable<K, V> {
    /// Regroups the table: `selector` gives each row a new key and value
    /// (Kafka Streams' `groupBy(KeyValueMapper)`). The rows go through a
    /// repartition topic, for which `grouped` gives the serdes and the name
    /// (they also serve the store that remembers each row's selected pair).
    /// A row that changes or is deleted is subtracted from its old group.
    pub fn group_by<K2, V2>(
        &self,
        selector: impl Fn(&K, &V) -> (K2, V2) + Send + Sync + 'static,
        grouped: Grouped<K2, V2>,
    ) -> KGroupedTable<K2, V2>
    where
        K2: Ord + Clone + std::fmt::Debug + 'static,
        V2: Clone + 'static,
    {
        self.group_by_opt(move |k, v| Some(selector(k, v)), grouped)
    }

    /// As [`KTable::group_by`], with a selector that may put a row in no
    /// group: `None` (Kafka Streams' selector returning null, or a pair with
    /// a null key) skips the row, and a row that was in a group leaves it
    /// (its old value is subtracted there, nothing is added anywhere).
    pub fn group_by_opt<K2, V2>(
        &self,
        selector: impl Fn(&K, &V) -> Option<(K2, V2)> + Send + Sync + 'static,
        grouped: Grouped<K2, V2>,
    ) -> KGroupedTable<K2, V2>
    where
        K2: Ord + Clone + std::fmt::Debug + 'static,
        V2: Clone + 'static,
    {
        let selector: Selector<K, V, K2, V2> = Arc::new(selector);
        let prior = self
            .graph
            .borrow_mut()
            .next_name("KTABLE-SELECT-STATE-STORE");
        let ks = self.key_serde.clone();
        let pairs = grouped
            .key_serde
            .clone()
            .zip(grouped.value_serde.clone())
            .map(|(k, v)| Arc::new(PairSerde::new(k, v)) as SerdeRef<(K2, V2)>);
        note_missing(&self.graph, &prior, true, &ks, &pairs);
        let store_name = prior.clone();
        let (id, _) = add_processor(
            &self.graph,
            "KTABLE-SELECT",
            vec![self.node],
            vec![prior],
            None,
            Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                port::<K, Option<V>, _>(TableRegroup {
                    prior: table_store(cx, &store_name, &ks, &pairs),
                    store_name: store_name.clone(),
                    selector: selector.clone(),
                    down: Downstream::from_children(ch),
                })
            }),
        );
        let changes_serde = grouped
            .value_serde
            .clone()
            .map(|s| Arc::new(ChangeSerde::new(s)) as SerdeRef<Change<V2>>);
        let changes = KStream::new(self.graph.clone(), id, None, None).repartition(Grouped {
            key_serde: grouped.key_serde.clone(),
            value_serde: changes_serde,
            name: grouped.name,
        });
        KGroupedTable {
            changes,
            value_serde: grouped.value_serde,
        }
    }
}

/// Applies a change to an aggregate: the subtractor takes the old value out
/// of an existing aggregate, then the adder puts the new value in (into a
/// fresh one if there was none), as Kafka Streams' `KTableAggregate`.
fn change_aggregation<K: 'static, V: 'static, A: 'static>(
    init: impl Fn() -> A + Send + Sync + 'static,
    adder: impl Fn(&K, &V, A) -> A + Send + Sync + 'static,
    subtractor: impl Fn(&K, &V, A) -> A + Send + Sync + 'static,
) -> Aggregation<K, Change<V>, A> {
    let apply = Arc::new(move |k: &K, c: &Change<V>, agg: Option<A>| {
        let agg = match (&c.old, agg) {
            (Some(old), Some(a)) => Some(subtractor(k, old, a)),
            (_, a) => a,
        };
        match &c.new {
            Some(new) => adder(k, new, agg.unwrap_or_else(&init)),
            None => agg.unwrap_or_else(&init),
        }
    });
    let first = apply.clone();
    Aggregation {
        initial: Arc::new(move |k, c| first(k, c, None)),
        add: Arc::new(move |k, c, a| apply(k, c, Some(a))),
    }
}

impl<K, V> KGroupedTable<K, V>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    V: Clone + 'static,
{
    fn grouped(&self) -> KGroupedStream<K, Change<V>> {
        KGroupedStream::new(self.changes.clone())
    }

    /// Counts the rows per group.
    pub fn count(&self) -> KTable<K, i64> {
        self.count_with(Materialized::default())
    }

    /// Counts the rows per group into a named store.
    pub fn count_with(&self, materialized: Materialized<K, i64>) -> KTable<K, i64> {
        let m = materialized.or_value_serde(Some(Arc::new(I64Serde)));
        let count = change_aggregation(|| 0i64, |_, _, n| n + 1, |_, _, n| n - 1);
        self.grouped().aggregate_into("KTABLE-AGGREGATE", count, m)
    }

    /// Combines the rows per group: `adder` puts a value in, `subtractor`
    /// takes one out. A group's first value is its aggregate.
    pub fn reduce(
        &self,
        adder: impl Fn(V, V) -> V + Send + Sync + 'static,
        subtractor: impl Fn(V, V) -> V + Send + Sync + 'static,
        materialized: Materialized<K, V>,
    ) -> KTable<K, V> {
        let m = materialized.or_value_serde(self.value_serde.clone());
        let apply = Arc::new(move |c: &Change<V>, agg: Option<V>| {
            let agg = match (&c.old, agg) {
                (Some(old), Some(a)) => Some(subtractor(a, old.clone())),
                (_, a) => a,
            };
            match (&c.new, agg) {
                (Some(new), Some(a)) => adder(a, new.clone()),
                (Some(new), None) => new.clone(),
                (None, Some(a)) => a,
                // A regrouping never sends an empty change, and a change
                // with only an old value reaches a group that has one.
                (None, None) => c.old.clone().expect("a regrouped change has a value"),
            }
        });
        let first = apply.clone();
        let reduce = Aggregation {
            initial: Arc::new(move |_: &K, c: &Change<V>| first(c, None)),
            add: Arc::new(move |_: &K, c: &Change<V>, a| apply(c, Some(a))),
        };
        self.grouped().aggregate_into("KTABLE-REDUCE", reduce, m)
    }

    /// Folds the rows per group: `init` starts a group, `adder` puts a
    /// value in, `subtractor` takes one out. The store's value serde is
    /// inferred for the standard types (`String`, `i64`, ...); give others
    /// with `Materialized::with_value_serde`.
    pub fn aggregate<A: Clone + 'static>(
        &self,
        init: impl Fn() -> A + Send + Sync + 'static,
        adder: impl Fn(&K, &V, A) -> A + Send + Sync + 'static,
        subtractor: impl Fn(&K, &V, A) -> A + Send + Sync + 'static,
        materialized: Materialized<K, A>,
    ) -> KTable<K, A> {
        let aggregation = change_aggregation(init, adder, subtractor);
        let m = materialized.or_default_value_serde();
        self.grouped()
            .aggregate_into("KTABLE-AGGREGATE", aggregation, m)
    }
}
