//! The engine's bottom layer: the graph and the contracts every operator
//! implements (`graph`: `Push`, `Downstream`, `FrontierOperator`,
//! `TimeOperator`, instantiation), the task that runs a sub-topology
//! (`task`, `context`, `shared_store`), the order of a barrier's steps on
//! it (`barrier`) and, here, [`Topology`]: the built
//! graph, its sub-topologies, `describe()`, and its validation (docs/validation.md).
//!
//! Sub-topologies are the connected components of the graph once it is cut
//! at repartition topics (nodes sharing a store stay together). Each is run
//! by one [`StreamTask`].
//!
//! This layer knows nothing of the DSL, the Processor API or what any
//! operator does; everything above it imports it, never the reverse.

pub(crate) mod barrier;
pub(crate) mod context;
mod event_time;
pub(crate) mod global;
pub(crate) mod graph;
pub(crate) mod shared_store;
pub(crate) mod store_choice;
mod store_open;
pub(crate) mod task;
pub(crate) mod topic_catalog;

pub use event_time::EventTimeReader;
pub use global::{GlobalKeyValueStore, GlobalRecord, GlobalStores};
pub use graph::WindowShape;
pub use store_choice::{BytesStoreSupplier, PersistentStore, StoreShape, StoreType, TaskStores};
pub use topic_catalog::{TopicCatalog, TopicLookup};

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use stoatflow_time::SourceTimePolicy;

use crate::config::{CoordinationMode, DispatchMode, StreamsConfig};
use crate::error::TopologyError;
use crate::topology::graph::{Instantiation, NodeDef, NodeId, NodeKind};
use crate::topology::task::StreamTask;

/// A source topic and the time policy its partitions run.
#[derive(Debug, Clone)]
pub struct SourceDescription {
    /// The topic.
    pub topic: String,
    /// The source node.
    pub node: String,
    /// `None`: no strategy declared, the configured default applies.
    pub policy: Option<SourceTimePolicy>,
    /// An internal (repartition) topic.
    pub internal: bool,
    /// Its sub-topology.
    pub subtopology: usize,
}

/// A built topology.
#[derive(Debug, Clone)]
pub struct Topology {
    nodes: Vec<NodeDef>,
    missing_serdes: Vec<(String, &'static str)>,
    /// Sub-topology of each node.
    subtopology_of: Vec<usize>,
    subtopologies: usize,
    /// The global stores' definitions (docs/global-tables.md).
    global_defs: Vec<global::GlobalStoreDef>,
    /// The global stores this topology's tasks read: see [`Topology::with_new_global_stores`].
    globals: GlobalStores,
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

impl Topology {
    pub(crate) fn new(
        nodes: Vec<NodeDef>,
        missing_serdes: Vec<(String, &'static str)>,
    ) -> Result<Self, TopologyError> {
        let n = nodes.len();
        let mut parent: Vec<usize> = (0..n).collect();
        let mut store_owner: HashMap<&str, usize> = HashMap::new();
        for (i, node) in nodes.iter().enumerate() {
            for &p in &node.parents {
                let (a, b) = (find(&mut parent, i), find(&mut parent, p));
                parent[a.max(b)] = a.min(b);
            }
            for s in &node.stores {
                if let Some(&other) = store_owner.get(s.as_str()) {
                    let (a, b) = (find(&mut parent, i), find(&mut parent, other));
                    parent[a.max(b)] = a.min(b);
                } else {
                    store_owner.insert(s, i);
                }
            }
        }
        let mut index: BTreeMap<usize, usize> = BTreeMap::new();
        let mut subtopology_of = vec![0; n];
        for (i, st) in subtopology_of.iter_mut().enumerate() {
            let root = find(&mut parent, i);
            let next = index.len();
            *st = *index.entry(root).or_insert(next);
        }
        Ok(Topology {
            nodes,
            missing_serdes,
            subtopology_of,
            subtopologies: index.len(),
            global_defs: Vec::new(),
            globals: GlobalStores::default(),
        })
    }

    /// Adds the global stores, refusing one whose topic a source or another global
    /// store reads, or whose name another store has.
    pub(crate) fn with_globals(
        mut self,
        defs: Vec<global::GlobalStoreDef>,
    ) -> Result<Self, TopologyError> {
        for (i, d) in defs.iter().enumerate() {
            let source = self.nodes.iter().find(
                |n| matches!(&n.kind, NodeKind::Source { topics, .. } if topics.contains(&d.topic)),
            );
            let existing = match (source, defs[..i].iter().find(|o| o.topic == d.topic)) {
                (Some(n), _) => Some(n.name.clone()),
                (None, Some(o)) => Some(format!("global store {}", o.name)),
                (None, None) => None,
            };
            if let Some(existing) = existing {
                return Err(TopologyError::TopicAlreadyRead {
                    topic: d.topic.clone(),
                    existing,
                });
            }
            let task_store = self.nodes.iter().any(|n| n.stores.contains(&d.name));
            if task_store || defs[..i].iter().any(|o| o.name == d.name) {
                return Err(TopologyError::DuplicateStore {
                    store: d.name.clone(),
                });
            }
        }
        self.globals = GlobalStores::new(&defs);
        self.global_defs = defs;
        Ok(self)
    }

    /// The global stores this topology's tasks read (shared by its clones). An
    /// instance that runs the topology first takes [`Topology::with_new_global_stores`]
    /// and fills them from their topics before processing.
    pub fn global_stores(&self) -> &GlobalStores {
        &self.globals
    }

    /// This topology with new, empty global stores: what a starting instance runs, so
    /// that no two instances (nor a restarted one and its predecessor) share them.
    #[must_use]
    pub fn with_new_global_stores(&self) -> Topology {
        let mut t = self.clone();
        t.globals = GlobalStores::new(&self.global_defs);
        t
    }

    /// Number of sub-topologies.
    pub fn subtopology_count(&self) -> usize {
        self.subtopologies
    }

    /// Each store the tasks hold (not the global stores), with the
    /// sub-topology whose tasks hold it, by name.
    pub fn task_stores(&self) -> BTreeMap<String, usize> {
        self.nodes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| n.stores.iter().map(move |s| (s.clone(), i)))
            .map(|(s, i)| (s, self.subtopology_of[i]))
            .collect()
    }

    /// The source topics with their time policies.
    pub fn sources(&self) -> Vec<SourceDescription> {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| match &n.kind {
                NodeKind::Source { topics, time } => {
                    Some(topics.iter().map(move |t| SourceDescription {
                        topic: t.clone(),
                        node: n.name.clone(),
                        policy: time.policy.clone(),
                        internal: n.internal,
                        subtopology: self.subtopology_of[i],
                    }))
                }
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// The event-time reader of the source reading `topic` (the runtime's
    /// dispatcher orders records by it before a task processes them).
    pub fn event_time_reader(&self, topic: &str) -> Option<Arc<dyn EventTimeReader>> {
        self.nodes.iter().find_map(|n| match &n.kind {
            NodeKind::Source { topics, time } if topics.iter().any(|t| t == topic) => {
                Some(time.reader.clone())
            }
            _ => None,
        })
    }

    /// The topics the topology's sinks write, with the sub-topology writing
    /// each (repartition topics included; see [`Topology::sources`] for which
    /// are internal).
    pub fn sink_topics(&self) -> Vec<(String, usize)> {
        let mut out: Vec<(String, usize)> = self
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| match &n.kind {
                NodeKind::Sink { topic, .. } => Some((topic.clone(), self.subtopology_of[i])),
                _ => None,
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The partition count repartition topic `topic` was given
    /// (`Repartitioned::with_number_of_partitions`); `None` when it was given
    /// none (it then has as many as the sub-topology writing it) or is not a
    /// repartition topic.
    pub fn repartition_partitions(&self, topic: &str) -> Option<u32> {
        self.nodes.iter().find_map(|n| match &n.kind {
            NodeKind::Sink {
                topic: t,
                partitions,
            } if t == topic => *partitions,
            _ => None,
        })
    }

    /// Whether the topology needs watermark tracking under `AUTO`: a
    /// watermark-driven processor, or a source with an explicit strategy.
    pub fn needs_event_time(&self) -> bool {
        self.nodes.iter().any(|n| {
            n.watermark_driven.is_some()
                || matches!(&n.kind, NodeKind::Source { time, .. } if time.policy.is_some())
        })
    }

    /// Refuses what docs/validation.md#refusals lists, naming the node and the source.
    pub fn validate(&self, config: &StreamsConfig) -> Result<(), TopologyError> {
        let external: Vec<(&NodeDef, &crate::topology::graph::SourceTime, &str)> = self
            .nodes
            .iter()
            .filter(|n| !n.internal)
            .filter_map(|n| match &n.kind {
                NodeKind::Source { topics, time } => Some((n, time, topics[0].as_str())),
                _ => None,
            })
            .collect();
        for node in self.nodes.iter().filter(|n| n.watermark_driven.is_some()) {
            let what = node.watermark_driven.expect("filtered");
            let Some(&(first, _, topic)) = external.first() else {
                return Err(TopologyError::NoSourceTopic {
                    node: node.name.clone(),
                    what,
                });
            };
            if let Some((src, _, topic)) = external.iter().find(|(_, t, _)| t.no_watermarks()) {
                return Err(TopologyError::NoWatermarksSource {
                    node: node.name.clone(),
                    what,
                    source_node: format!("{} (topic {topic})", src.name),
                });
            }
            let source_node = format!("{} (topic {topic})", first.name);
            if config.coordination == CoordinationMode::Disabled {
                return Err(TopologyError::CoordinationDisabled {
                    node: node.name.clone(),
                    what,
                    source_node,
                });
            }
            if config.dispatch == DispatchMode::Direct {
                return Err(TopologyError::DirectDispatch {
                    node: node.name.clone(),
                    what,
                    source_node,
                });
            }
        }
        if config.changelog_enabled
            && let Some((store, what)) = self.missing_serdes.first()
        {
            return Err(TopologyError::MissingSerde {
                store: store.clone(),
                what,
            });
        }
        Ok(())
    }

    /// Kafka Streams-style description.
    pub fn describe(&self) -> String {
        let mut out = String::from("Topologies:\n");
        for st in 0..self.subtopologies {
            let _ = writeln!(out, "   Sub-topology: {st}");
            for (i, n) in self
                .nodes
                .iter()
                .enumerate()
                .filter(|(i, _)| self.subtopology_of[*i] == st)
            {
                let children: Vec<&str> = self
                    .children(i)
                    .into_iter()
                    .map(|c| self.nodes[c].name.as_str())
                    .collect();
                let parents: Vec<&str> = n
                    .parents
                    .iter()
                    .map(|&p| self.nodes[p].name.as_str())
                    .collect();
                match &n.kind {
                    NodeKind::Source { topics, .. } => {
                        let _ = writeln!(
                            out,
                            "    Source: {} (topics: [{}])",
                            n.name,
                            topics.join(", ")
                        );
                    }
                    NodeKind::Processor => {
                        let _ = writeln!(
                            out,
                            "    Processor: {} (stores: [{}])",
                            n.name,
                            n.stores.join(", ")
                        );
                    }
                    NodeKind::Sink { topic, .. } => {
                        let _ = writeln!(out, "    Sink: {} (topic: {topic})", n.name);
                    }
                    NodeKind::DynamicSink => {
                        let _ = writeln!(out, "    Sink: {} (topic: chosen per record)", n.name);
                    }
                }
                if !matches!(n.kind, NodeKind::Sink { .. } | NodeKind::DynamicSink) {
                    let _ = writeln!(
                        out,
                        "      --> {}",
                        if children.is_empty() {
                            "none".to_owned()
                        } else {
                            children.join(", ")
                        }
                    );
                }
                if !parents.is_empty() {
                    let _ = writeln!(out, "      <-- {}", parents.join(", "));
                }
            }
            out.push('\n');
        }
        for d in &self.global_defs {
            let _ = writeln!(out, "   Global store: {} (topic: {})", d.name, d.topic);
        }
        out
    }

    fn children(&self, id: NodeId) -> Vec<NodeId> {
        (id + 1..self.nodes.len())
            .filter(|&c| self.nodes[c].parents.contains(&id))
            .collect()
    }

    /// Instantiates sub-topology `st` as a task.
    pub fn instantiate(&self, st: usize, config: &Arc<StreamsConfig>) -> StreamTask {
        let (task, errors) = self.instantiate_placed(st, config, None);
        debug_assert!(errors.is_empty(), "in-memory stores always open");
        task
    }

    /// Builds a task of sub-topology `st` whose stores go where `stores` says: persistent
    /// ones (by their supplier, else by `stores.default`) in their own directory under
    /// `stores.dir`, opened through `StoreDirectory::recover`; the task lists them
    /// ([`StreamTask::persistent_stores`]) with where each one's restore starts.
    ///
    /// # Errors
    /// The first store that could not be opened (locked, another application's, no state
    /// directory), naming it; nothing of the task is kept.
    pub fn instantiate_in(
        &self,
        st: usize,
        config: &Arc<StreamsConfig>,
        stores: TaskStores,
    ) -> Result<StreamTask, crate::error::ProcessError> {
        let (task, mut errors) = self.instantiate_placed(st, config, Some(stores));
        match errors.is_empty() {
            true => Ok(task),
            false => Err(errors.swap_remove(0)),
        }
    }

    fn instantiate_placed(
        &self,
        st: usize,
        config: &Arc<StreamsConfig>,
        placement: store_choice::StorePlacement,
    ) -> (StreamTask, Vec<crate::error::ProcessError>) {
        let mut cx = Instantiation {
            config: config.clone(),
            current: 0,
            sources: HashMap::new(),
            frontier_ops: BTreeMap::new(),
            time_ops: BTreeMap::new(),
            stores: BTreeMap::new(),
            placement,
            persistent: Vec::new(),
            errors: Vec::new(),
            internal_topics: topic_catalog::InternalTopics {
                application_id: config.application_id.clone(),
                topology: Arc::new(
                    self.sources()
                        .into_iter()
                        .filter(|s| s.internal)
                        .map(|s| s.topic)
                        .collect(),
                ),
            },
            globals: self.globals.clone(),
        };
        let mut ports: HashMap<NodeId, crate::topology::graph::PortHandle> = HashMap::new();
        for i in (0..self.nodes.len())
            .rev()
            .filter(|&i| self.subtopology_of[i] == st)
        {
            let child_ports: Vec<Box<dyn std::any::Any>> = self
                .children(i)
                .iter()
                .map(|c| {
                    ports
                        .get(c)
                        .expect("children are instantiated before their parents")
                        .get()
                })
                .collect();
            cx.current = i;
            let port = (self.nodes[i].factory)(&mut cx, child_ports);
            ports.insert(i, port);
        }
        let errors = std::mem::take(&mut cx.errors);
        (StreamTask::new(st, cx), errors)
    }
}
