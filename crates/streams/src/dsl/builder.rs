//! [`StreamsBuilder`]: where a topology starts.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use crate::dsl::kstream::KStream;
use crate::dsl::ktable::KTable;
use crate::dsl::materialized::Consumed;
use crate::error::TopologyError;
use crate::processors::source::Source;
use crate::serde::UnitSerde;
use crate::topology::Topology;
use crate::topology::graph::{
    Downstream, Instantiation, NodeDef, NodeKind, PortHandle, SharedGraph, SourceInput, SourceTime,
};

/// Builds a topology with the DSL, as Kafka Streams' `StreamsBuilder`.
#[derive(Debug, Default)]
pub struct StreamsBuilder {
    pub(crate) graph: SharedGraph,
}

impl StreamsBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// A stream read from `topic`.
    pub fn stream<K, V>(&mut self, topic: &str, consumed: Consumed<K, V>) -> KStream<K, V>
    where
        K: Clone + 'static,
        V: Clone + 'static,
    {
        let node = add_source(
            &self.graph,
            topic,
            consumed.key_serde.clone(),
            consumed.value_serde.clone(),
            consumed.strategy,
            consumed.name,
            false,
        );
        KStream::new(
            self.graph.clone(),
            node,
            Some(consumed.key_serde),
            Some(consumed.value_serde),
        )
    }

    /// A table read from `topic`: the latest value per key, null values deleting.
    /// The value serde reads non-null values; a null on the wire is a delete.
    pub fn table<K, V>(
        &mut self,
        topic: &str,
        consumed: Consumed<K, V>,
        store: &str,
    ) -> KTable<K, V>
    where
        K: Ord + Clone + 'static,
        V: Clone + 'static,
    {
        let node = add_source(
            &self.graph,
            topic,
            consumed.key_serde.clone(),
            crate::serde::nullable_ref(consumed.value_serde.clone()),
            consumed.strategy.map(|s| s.for_nullable_values()),
            consumed.name,
            false,
        );
        crate::dsl::ktable::table_from::<K, V, Option<V>>(
            &self.graph,
            node,
            store,
            Some(consumed.key_serde),
            Some(consumed.value_serde),
        )
    }

    /// A source that only moves event time: its records (any key and value
    /// bytes, nulls included) are not processed, but their timestamps count
    /// towards the application's watermark like any source's (a heartbeat
    /// or clock topic; in the test driver, a topic to pipe time into).
    pub fn watermark_source(&mut self, topic: &str) {
        let _ = self.stream(topic, Consumed::with(UnitSerde, UnitSerde));
    }

    /// The topology built so far. Bad DSL arguments recorded while building
    /// are reported here.
    pub fn build(&self) -> Result<Topology, TopologyError> {
        let g = self.graph.borrow();
        if let Some(e) = g.errors.first() {
            return Err(e.clone());
        }
        Topology::new(g.nodes.clone(), g.missing_serdes.clone())?.with_globals(g.globals.clone())
    }
}

pub(crate) fn add_source<K, V>(
    graph: &SharedGraph,
    topic: &str,
    key_serde: crate::serde::SerdeRef<K>,
    value_serde: crate::serde::SerdeRef<V>,
    strategy: Option<stoatflow_time::WatermarkStrategy<K, V>>,
    name: Option<String>,
    internal: bool,
) -> usize
where
    K: Clone + 'static,
    V: Clone + 'static,
{
    let mut g = graph.borrow_mut();
    let name = name.unwrap_or_else(|| g.next_name("KSTREAM-SOURCE"));
    if let Some(existing) = g.nodes.iter().find(
        |n| matches!(&n.kind, NodeKind::Source { topics, .. } if topics.iter().any(|t| t == topic)),
    ) {
        let e = TopologyError::TopicAlreadyRead {
            topic: topic.into(),
            existing: existing.name.clone(),
        };
        g.errors.push(e);
    }
    if let Some(s) = &strategy
        && let Err(error) = s.validate(topic)
    {
        g.errors.push(TopologyError::Strategy {
            source_node: topic.into(),
            error,
        });
    }
    let time = SourceTime {
        policy: strategy.as_ref().map(|s| s.policy().clone()),
        reader: Arc::new(crate::processors::source::SourceTimeReader {
            topic: topic.to_owned(),
            key_serde: key_serde.clone(),
            value_serde: value_serde.clone(),
            strategy: strategy.clone(),
        }),
    };
    let topic_owned = topic.to_owned();
    let factory = Arc::new(
        move |cx: &mut Instantiation, children: Vec<Box<dyn Any>>| -> PortHandle {
            let source = Source {
                topic: topic_owned.clone(),
                key_serde: key_serde.clone(),
                value_serde: value_serde.clone(),
                strategy: strategy.clone(),
                handler: cx.config.deserialization_handler,
                down: Rc::new(Downstream::<K, V>::from_children(children)),
                partition_time: None,
            };
            let s: Rc<RefCell<dyn SourceInput>> = Rc::new(RefCell::new(source));
            cx.sources.insert(topic_owned.clone(), s);
            PortHandle::none()
        },
    );
    g.add(NodeDef {
        name,
        kind: NodeKind::Source {
            topics: vec![topic.to_owned()],
            time,
        },
        parents: vec![],
        stores: vec![],
        watermark_driven: None,
        internal,
        factory,
    })
}
