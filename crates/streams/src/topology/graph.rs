//! The topology graph: typed nodes stored type-erased, and their
//! instantiation into a chain of typed processors.
//!
//! At build time every node keeps a factory. Instantiating a sub-topology
//! walks its nodes children-first; each factory receives its children's
//! input ports (downcast once, here, never per record) and returns its own.
//! Records then flow typed from processor to processor through
//! [`Port`]s: one dynamic call per hop, no serialization, no boxing.
//!
//! This module owns the graph's shape and the instantiation protocol; it
//! knows nothing of what any operator does.

use std::any::Any;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::StateStore;
use stoatflow_time::{SourceTimePolicy, Watermark};

use crate::config::StreamsConfig;
use crate::error::ProcessError;
use crate::record::{Headers, Record};
use crate::topology::context::TaskContext;

/// A node's position in the graph (creation order, which is a topological order).
pub(crate) type NodeId = usize;

/// Receives typed records.
pub(crate) trait Push<K, V> {
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError>;
}

/// A shared input of an instantiated node.
pub(crate) type Port<K, V> = Rc<RefCell<dyn Push<K, V>>>;

/// The children of a node, to which it forwards.
pub(crate) struct Downstream<K, V> {
    ports: Vec<Port<K, V>>,
}

impl<K: 'static, V: 'static> Downstream<K, V> {
    pub(crate) fn from_children(children: Vec<Box<dyn Any>>) -> Self {
        let ports = children
            .into_iter()
            .map(|c| {
                *c.downcast::<Port<K, V>>()
                    .expect("a child's port has its parent's output types")
            })
            .collect();
        Downstream { ports }
    }
}

impl<K: Clone, V: Clone> Downstream<K, V> {
    /// Forwards to every child (cloning for all but the last).
    #[inline]
    pub(crate) fn forward(
        &self,
        cx: &mut TaskContext,
        rec: Record<K, V>,
    ) -> Result<(), ProcessError> {
        match self.ports.as_slice() {
            [] => Ok(()),
            [only] => only.borrow_mut().push(cx, rec),
            [rest @ .., last] => {
                for p in rest {
                    p.borrow_mut().push(cx, rec.clone())?;
                }
                last.borrow_mut().push(cx, rec)
            }
        }
    }

    /// Forwards to one child by position.
    pub(crate) fn forward_to(
        &self,
        i: usize,
        cx: &mut TaskContext,
        rec: Record<K, V>,
    ) -> Result<(), ProcessError> {
        match self.ports.get(i) {
            Some(p) => p.borrow_mut().push(cx, rec),
            None => Ok(()),
        }
    }
}

/// An instantiated node's input, handed to each of its parents (a merge
/// node has several) as a boxed `Port<K, V>`.
pub(crate) struct PortHandle(Option<Rc<dyn Fn() -> Box<dyn Any>>>);

impl PortHandle {
    pub(crate) fn of<K: 'static, V: 'static>(port: Port<K, V>) -> Self {
        PortHandle(Some(Rc::new(move || {
            Box::new(port.clone()) as Box<dyn Any>
        })))
    }

    /// For nodes nothing pushes into (sources).
    pub(crate) fn none() -> Self {
        PortHandle(None)
    }

    /// A fresh handle to the port, for one parent.
    ///
    /// # Panics
    /// If the node is a source: nothing can be its child.
    pub(crate) fn get(&self) -> Box<dyn Any> {
        (self.0.as_ref().expect("a source is never a child"))()
    }
}

/// Wraps a processor as a port.
pub(crate) fn port<K: 'static, V: 'static, P: Push<K, V> + 'static>(p: P) -> PortHandle {
    let port: Port<K, V> = Rc::new(RefCell::new(p));
    PortHandle::of(port)
}

/// An operator that acts when the committed frontier moves: the emission
/// pass (on-window-close, suppress, join null sides) and store expiry.
pub(crate) trait FrontierOperator {
    fn on_frontier(
        &mut self,
        cx: &mut TaskContext,
        frontier: Watermark,
    ) -> Result<(), ProcessError>;

    /// At a barrier, for until-barrier suppress: release the epoch's buffer.
    fn on_barrier(&mut self, _cx: &mut TaskContext) -> Result<(), ProcessError> {
        Ok(())
    }

    /// A takeover from Kafka Streams, whose stream time was `stream_time`:
    /// record as emitted every final result Kafka Streams emitted by then.
    /// `emit_final(store)` is the last window close time Kafka Streams'
    /// on-window-close emission (KIP-825) committed for `store`, if any.
    /// Only the on-window-close aggregations keep an emit frontier.
    fn seed_emitted_by_kafka_streams(
        &mut self,
        _stream_time: i64,
        _emit_final: &dyn Fn(&str) -> Option<i64>,
    ) -> Result<(), ProcessError> {
        Ok(())
    }
}

/// An operator that acts on time events rather than records: event-time
/// timers, STREAM_TIME punctuators and scheduled sources fire on watermark
/// events (not at barriers: docs/barriers.md#watermark-events); wall-clock punctuators and
/// wall-clock or cron scheduled sources fire on the task's wall-clock tick.
pub(crate) trait TimeOperator {
    /// A watermark event: STREAM_TIME punctuators and scheduled sources
    /// fire against `punctuation`, event-time timers against `timers`.
    fn on_event_time(
        &mut self,
        cx: &mut TaskContext,
        punctuation: Watermark,
        timers: Watermark,
    ) -> Result<(), ProcessError>;

    /// A wall-clock tick at `now`.
    fn on_wall_clock(
        &mut self,
        cx: &mut TaskContext,
        now: stoatflow_time::WallTime,
    ) -> Result<(), ProcessError>;
}

/// Entry of a source: bytes in, typed records out.
pub(crate) trait SourceInput {
    /// Deserializes, assigns event time and pushes. Returns the record's
    /// event time, or `None` if a handler skipped it.
    fn process_bytes(
        &mut self,
        cx: &mut TaskContext,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        timestamp: i64,
        headers: Headers,
    ) -> Result<Option<i64>, ProcessError>;

    /// The typed entry, for benchmarks and typed test inputs: a `Port<K, V>` boxed.
    fn typed_port(&self) -> Box<dyn Any>;

    /// Raises the partition time its assigner is given (never lowers it): a restarted
    /// task's, from the time committed with its partition's offset.
    fn seed_partition_time(&mut self, partition_time: stoatflow_time::EventTime);
}

/// A store registered by an instantiated node.
pub(crate) struct StoreHandle {
    /// `Rc<RefCell<S>>` for the concrete store type, for typed inspection.
    pub(crate) typed: Rc<dyn Any>,
    /// The concrete store type's name, for a mismatch's error.
    pub(crate) type_name: &'static str,
    /// The same store as a [`StateStore`], for changelog flushes.
    pub(crate) state: Rc<RefCell<dyn StateStore>>,
    /// Where its value timestamps go in the changelog (Kafka Streams' layout).
    pub(crate) value_layout: stoatflow_state::ChangelogValueLayout,
    /// A window or session store's retention, ms (its changelog deletes
    /// past it plus a margin); `None` for other stores.
    pub(crate) retention_ms: Option<i64>,
    /// The windows of a windowed aggregation's store; `None` for other stores.
    pub(crate) window: Option<WindowShape>,
}

/// The windows a windowed aggregation's store holds: what says when one of
/// them closes (no record can change it any more) and when it expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowShape {
    /// `end − start` of time and sliding windows; `None` for sessions, whose
    /// store keeps each session's end.
    pub size_ms: Option<i64>,
    /// `close − end`: the grace (plus the gap and one for sessions, one for
    /// sliding windows).
    pub close_offset_ms: i64,
    /// How long after its start (a session: its end) the store keeps an entry.
    pub retention_ms: i64,
}

impl WindowShape {
    /// The end of the window starting at `start`; a session's end is
    /// `session_end`, its own.
    pub fn end_of(&self, start: i64, session_end: i64) -> i64 {
        self.size_ms
            .map_or(session_end, |size| start.saturating_add(size))
    }

    /// The close of a window ending at `end`: from then on no record can
    /// change it.
    pub fn close_of(&self, end: i64) -> i64 {
        end.saturating_add(self.close_offset_ms)
    }
}

/// What instantiating a sub-topology collects.
pub(crate) struct Instantiation {
    pub(crate) config: Arc<StreamsConfig>,
    pub(crate) current: NodeId,
    pub(crate) sources: HashMap<String, Rc<RefCell<dyn SourceInput>>>,
    pub(crate) frontier_ops: BTreeMap<NodeId, Rc<RefCell<dyn FrontierOperator>>>,
    pub(crate) time_ops: BTreeMap<NodeId, Rc<RefCell<dyn TimeOperator>>>,
    pub(crate) stores: BTreeMap<String, StoreHandle>,
    /// Where its stores go (`None`: all in memory).
    pub(crate) placement: super::store_choice::StorePlacement,
    /// The persistent stores it opened.
    pub(crate) persistent: Vec<super::store_choice::PersistentStore>,
    /// Stores that could not be opened: the task is refused.
    pub(crate) errors: Vec<crate::error::ProcessError>,
    /// The application's internal topics, which a dynamic sink refuses.
    pub(crate) internal_topics: super::topic_catalog::InternalTopics,
    /// The global stores of the running instance (read-only here).
    pub(crate) globals: super::global::GlobalStores,
}

impl Instantiation {
    pub(crate) fn add_frontier_op(&mut self, op: Rc<RefCell<dyn FrontierOperator>>) {
        self.frontier_ops.insert(self.current, op);
    }

    pub(crate) fn add_time_op(&mut self, op: Rc<RefCell<dyn TimeOperator>>) {
        self.time_ops.insert(self.current, op);
    }

    /// A store another node of this sub-topology registered, typed.
    pub(crate) fn typed_store<S: 'static>(&self, name: &str) -> Option<Rc<RefCell<S>>> {
        self.stores
            .get(name)?
            .typed
            .clone()
            .downcast::<RefCell<S>>()
            .ok()
    }

    pub(crate) fn add_store<S: StateStore + 'static>(&mut self, name: &str, store: Rc<RefCell<S>>) {
        let state: Rc<RefCell<dyn StateStore>> = store.clone();
        self.stores.insert(
            name.to_owned(),
            StoreHandle {
                typed: store,
                type_name: std::any::type_name::<S>(),
                state,
                value_layout: stoatflow_state::ChangelogValueLayout::Plain,
                retention_ms: None,
                window: None,
            },
        );
    }
}

/// A store nodes connect to by name, registered with the builder before any
/// node uses it (the Processor API's `StoreBuilder` is one). Each node that
/// connects to it calls `create` when it is instantiated; the first call
/// registers the store, later ones find it there.
pub(crate) trait StoreSupplier: Send + Sync + std::fmt::Debug {
    fn name(&self) -> &str;

    /// Registers the store with `cx`, unless it is there already.
    fn create(&self, cx: &mut Instantiation);
}

/// Builds a node's instance from its children's ports.
pub(crate) type Factory =
    Arc<dyn Fn(&mut Instantiation, Vec<Box<dyn Any>>) -> PortHandle + Send + Sync>;

/// What kind of node, for `describe()` and validation.
#[derive(Clone, Debug)]
pub(crate) enum NodeKind {
    Source {
        topics: Vec<String>,
        time: SourceTime,
    },
    Processor,
    Sink {
        topic: String,
        /// The partition count a repartition topic was given, if any.
        partitions: Option<u32>,
    },
    /// A sink that picks its topic per record.
    DynamicSink,
}

/// A source's time settings, for the runtime's tracker and for validation.
#[derive(Clone, Debug)]
pub(crate) struct SourceTime {
    /// `None`: the source declared no strategy (the configured default applies).
    pub(crate) policy: Option<SourceTimePolicy>,
    /// Reads a serialized record's event time, for whoever orders records
    /// before a task processes them (the runtime's dispatcher).
    pub(crate) reader: Arc<dyn super::EventTimeReader>,
}

impl SourceTime {
    pub(crate) fn no_watermarks(&self) -> bool {
        self.policy
            .as_ref()
            .is_some_and(|p| !p.generator().produces_watermarks())
    }
}

/// A node of the topology.
#[derive(Clone)]
pub(crate) struct NodeDef {
    pub(crate) name: String,
    pub(crate) kind: NodeKind,
    pub(crate) parents: Vec<NodeId>,
    pub(crate) stores: Vec<String>,
    /// What the watermark drives here, if anything (docs/validation.md#watermark-driven).
    pub(crate) watermark_driven: Option<&'static str>,
    /// Internal topics (repartition) this node writes or reads.
    pub(crate) internal: bool,
    pub(crate) factory: Factory,
}

impl std::fmt::Debug for NodeDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeDef")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("parents", &self.parents)
            .finish()
    }
}

/// The graph under construction, shared by every handle of one builder.
#[derive(Debug, Default)]
pub(crate) struct GraphBuilder {
    pub(crate) nodes: Vec<NodeDef>,
    pub(crate) errors: Vec<crate::error::TopologyError>,
    /// Stores that lack a serde their changelog would need: (store, "key" | "value").
    pub(crate) missing_serdes: Vec<(String, &'static str)>,
    /// User stores added with `StreamsBuilder::add_state_store`.
    pub(crate) user_stores: Vec<Arc<dyn StoreSupplier>>,
    /// Windowed aggregations: node → `close − window.end` (docs/late.md#closes), for
    /// `suppress(until_window_closes)` to find upstream at build time.
    pub(crate) window_close_offsets: HashMap<NodeId, i64>,
    /// Global stores (`StreamsBuilder::global_table`), apart from every sub-topology.
    pub(crate) globals: Vec<super::global::GlobalStoreDef>,
    counter: usize,
}

impl GraphBuilder {
    /// Kafka Streams-style generated names: `KSTREAM-FILTER-0000000001`.
    pub(crate) fn next_name(&mut self, prefix: &str) -> String {
        let n = self.counter;
        self.counter += 1;
        format!("{prefix}-{n:010}")
    }

    pub(crate) fn add(&mut self, node: NodeDef) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }
}

pub(crate) type SharedGraph = Rc<RefCell<GraphBuilder>>;
