//! The Processor API's DSL entries: [`KStream::process`],
//! [`KStream::process_values`] and [`StreamsBuilder::add_state_store`].
//!
//! This module wires a user processor into the graph (its stores, its timer
//! stores, whether the watermark drives it); the API itself is `processor`
//! and the node that runs it `processor::node`.

use std::any::Any;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use crate::dsl::builder::StreamsBuilder;
use crate::dsl::kstream::KStream;
use crate::processor::node::CustomProcessor;
use crate::processor::{NodeState, Processor, StoreBuilder, timer_index};
use crate::topology::graph::{
    Downstream, Instantiation, NodeDef, NodeKind, SharedGraph, StoreSupplier,
};

impl StreamsBuilder {
    /// Adds a user store that processors connect to by name.
    pub fn add_state_store(&mut self, store: StoreBuilder) -> &mut Self {
        let mut graph = self.graph.borrow_mut();
        if let Some(reason) = &store.refused {
            graph
                .errors
                .push(crate::error::TopologyError::InvalidArgument {
                    node: store.name().to_owned(),
                    reason: reason.clone(),
                });
        }
        graph.user_stores.push(Arc::new(store));
        drop(graph);
        self
    }
}

fn user_store(graph: &SharedGraph, name: &str) -> Option<Arc<dyn StoreSupplier>> {
    graph
        .borrow()
        .user_stores
        .iter()
        .rev()
        .find(|b| b.name() == name)
        .cloned()
}

impl<K: Clone + 'static, V: Clone + 'static> KStream<K, V> {
    /// Runs a custom processor on every record; `stores` names user stores
    /// added with [`StreamsBuilder::add_state_store`].
    pub fn process<KOut, VOut, P>(
        &self,
        supplier: impl Fn() -> P + Send + Sync + 'static,
        stores: &[&str],
    ) -> KStream<KOut, VOut>
    where
        KOut: Clone + 'static,
        VOut: Clone + 'static,
        P: Processor<K, V, KOut, VOut> + 'static,
    {
        let (id, _) = self.add_custom("KSTREAM-PROCESSOR", supplier, stores);
        let mut s = KStream::new(self.graph.clone(), id, None, None);
        s.repartition_required = true;
        s
    }

    /// As [`KStream::process`] for a processor that keeps keys (Kafka
    /// Streams' `FixedKeyProcessor`): no repartition is implied downstream.
    /// Keeping the key is the processor's contract; it is not checked.
    pub fn process_values<VOut, P>(
        &self,
        supplier: impl Fn() -> P + Send + Sync + 'static,
        stores: &[&str],
    ) -> KStream<K, VOut>
    where
        VOut: Clone + 'static,
        P: Processor<K, V, K, VOut> + 'static,
    {
        let (id, _) = self.add_custom("KSTREAM-PROCESSVALUES", supplier, stores);
        let mut s = KStream::new(self.graph.clone(), id, self.key_serde.clone(), None);
        s.repartition_required = self.repartition_required;
        s
    }

    fn add_custom<KOut, VOut, P>(
        &self,
        prefix: &str,
        supplier: impl Fn() -> P + Send + Sync + 'static,
        stores: &[&str],
    ) -> (usize, String)
    where
        KOut: Clone + 'static,
        VOut: Clone + 'static,
        P: Processor<K, V, KOut, VOut> + 'static,
    {
        let name = self.graph.borrow_mut().next_name(prefix);
        let mut builders = Vec::new();
        for s in stores {
            match user_store(&self.graph, s) {
                Some(b) => builders.push(b),
                None => self.graph.borrow_mut().errors.push(
                    crate::error::TopologyError::InvalidArgument {
                        node: name.clone(),
                        reason: format!(
                            "store {s} is not added to the builder (StreamsBuilder::add_state_store)"
                        ),
                    },
                ),
            }
        }
        let mut store_names: Vec<String> = stores.iter().map(|s| (*s).to_owned()).collect();
        let timers = P::EVENT_TIME_TIMERS;
        let timer_store = format!("{name}-timers");
        if timers {
            store_names.push(timer_store.clone());
        }
        let wall_timers = P::PROCESSING_TIME_TIMERS;
        let wall_timer_store = format!("{name}-wall-timers");
        if wall_timers {
            store_names.push(wall_timer_store.clone());
        }
        let node_name = name.clone();
        let factory = Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
            let mut handles: BTreeMap<String, Rc<dyn Any>> = BTreeMap::new();
            for b in &builders {
                b.create(cx);
                if let Some(h) = cx.stores.get(b.name()) {
                    handles.insert(b.name().to_owned(), h.typed.clone());
                }
            }
            let timers = timers.then(|| timer_index(cx, &timer_store));
            let wall_timers = wall_timers.then(|| timer_index(cx, &wall_timer_store));
            let node = Rc::new(RefCell::new(CustomProcessor::<P, K, V, KOut, VOut>::new(
                supplier(),
                NodeState {
                    name: node_name.clone(),
                    down: Downstream::from_children(ch),
                    schedules: Vec::new(),
                    timers,
                    wall_timers,
                    stores: handles,
                    globals: cx.globals.clone(),
                },
            )));
            cx.add_time_op(node.clone());
            crate::topology::graph::PortHandle::of::<K, V>(node)
        });
        let mut g = self.graph.borrow_mut();
        let id = g.add(NodeDef {
            name: name.clone(),
            kind: NodeKind::Processor,
            parents: vec![self.node],
            stores: store_names,
            watermark_driven: timers.then_some("event-time timer"),
            internal: false,
            factory,
        });
        (id, name)
    }
}
