//! The Processor API: [`Processor`], [`ProcessorContext`], punctuators
//! ([`PunctuationType`], [`Cancellable`]), event-time timers, user stores
//! ([`Stores`], [`StoreBuilder`]). The DSL entries `KStream::process` and
//! `KStream::process_values` are `dsl::process`.
//!
//! Differences from Kafka Streams, forced by Rust or by event time:
//! - the context is passed to every call (`init`, `process`, `on_timer`,
//!   `close`, punctuators) instead of being kept by the processor;
//! - a punctuator is a closure over the context; state it shares with the
//!   processor lives behind an `Rc<RefCell<..>>` the two hold;
//! - STREAM_TIME punctuators and event-time timers fire on the watermark
//!   (docs/barriers.md#watermark-events); `current_stream_time_ms()` is an alias of
//!   `current_watermark_ms()`;
//! - event-time timers are keyed by a string, one per key (registering
//!   again moves it), persisted in the changelogged store
//!   `<processor>-timers`; a processor using them declares so with
//!   [`Processor::EVENT_TIME_TIMERS`], which makes the topology
//!   watermark-driven (docs/validation.md#watermark-driven);
//! - processing-time timers are keyed the same way, fire on the task's
//!   wall-clock tick (never on event time), and persist in
//!   `<processor>-wall-timers`; a processor using them declares so with
//!   [`Processor::PROCESSING_TIME_TIMERS`] (no watermark is needed);
//! - `forward_to` names a child by position, in the order the children were
//!   added.
//!
//! This module owns the user-facing API; the node that runs a processor is
//! `node`. It knows the graph only through its contracts (`Downstream`,
//! `Instantiation`, `StoreSupplier`), never the DSL, and never reads the
//! system clock.

pub(crate) mod global_update;
pub(crate) mod node;

use std::any::Any;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use stoatflow_state::{AnyKeyValueStore, InMemoryKeyValueStore, KeyValueStore, StoreConfig};
use stoatflow_time::duration_ms;

use crate::error::ProcessError;
use crate::record::{Headers, Record};
use crate::serde::{BoxedCodec, codec};
use crate::serde::{Serde, SerdeRef};
use crate::topology::context::{RecordMetadata, TaskContext};
use crate::topology::graph::{Downstream, Instantiation, StoreSupplier};
use crate::topology::store_choice::StoreRequest;
use crate::topology::{BytesStoreSupplier, StoreShape, StoreType};

/// What drives a punctuator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PunctuationType {
    /// The watermark (Kafka Streams: stream time). Aligned to 0: fires once
    /// the watermark is known, then every `interval` of watermark progress.
    StreamTime,
    /// The task's wall clock: first `interval` after scheduling.
    WallClockTime,
}

/// A processor, as Kafka Streams' `api.Processor<KIn, VIn, KOut, VOut>`.
pub trait Processor<KIn, VIn, KOut, VOut> {
    /// Whether this processor registers event-time timers. Such a processor
    /// is driven by the watermark and refused where one cannot move
    /// (docs/validation.md#refusals).
    const EVENT_TIME_TIMERS: bool = false;

    /// Whether this processor registers processing-time (wall-clock)
    /// timers; such a processor gets the store `<processor>-wall-timers`.
    const PROCESSING_TIME_TIMERS: bool = false;

    /// Called once before the first record, punctuation or timer.
    fn init(&mut self, _ctx: &mut ProcessorContext<'_, KOut, VOut>) -> Result<(), ProcessError> {
        Ok(())
    }

    /// One record.
    fn process(
        &mut self,
        ctx: &mut ProcessorContext<'_, KOut, VOut>,
        record: Record<KIn, VIn>,
    ) -> Result<(), ProcessError>;

    /// An event-time timer registered for `key` at `timestamp` fired: the
    /// watermark reached it.
    fn on_timer(
        &mut self,
        _ctx: &mut ProcessorContext<'_, KOut, VOut>,
        _key: &str,
        _timestamp: i64,
    ) -> Result<(), ProcessError> {
        Ok(())
    }

    /// A processing-time timer registered for `key` at `timestamp` fired:
    /// the task's wall clock reached it.
    fn on_processing_time_timer(
        &mut self,
        _ctx: &mut ProcessorContext<'_, KOut, VOut>,
        _key: &str,
        _timestamp: i64,
    ) -> Result<(), ProcessError> {
        Ok(())
    }

    /// Called when the task closes.
    fn close(&mut self, _ctx: &mut ProcessorContext<'_, KOut, VOut>) -> Result<(), ProcessError> {
        Ok(())
    }
}

/// A scheduled callback; receives the time it fires at (the watermark or
/// the wall clock, per its [`PunctuationType`]).
pub type Punctuator<KOut, VOut> =
    Box<dyn FnMut(&mut ProcessorContext<'_, KOut, VOut>, i64) -> Result<(), ProcessError>>;

/// Handle of a scheduled punctuator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancellable(pub(crate) usize);

pub(crate) struct Schedule<KOut, VOut> {
    pub(crate) kind: PunctuationType,
    pub(crate) interval_ms: i64,
    pub(crate) next: i64,
    pub(crate) callback: Option<Punctuator<KOut, VOut>>,
    pub(crate) cancelled: bool,
}

impl<KOut, VOut> Schedule<KOut, VOut> {
    /// Kafka Streams' `PunctuationSchedule.next`: after firing at `now`, the
    /// next aligned time strictly after it (missed ones collapse into one).
    pub(crate) fn advance(&mut self, now: i64) {
        let mut next = self.next.saturating_add(self.interval_ms);
        if now >= next {
            let missed = (now - self.next) / self.interval_ms;
            next = self
                .next
                .saturating_add((missed + 1).saturating_mul(self.interval_ms));
        }
        self.next = next;
    }
}

pub(crate) type TimerStore = InMemoryKeyValueStore<String, i64>;

/// Timers of one kind (event time or processing time): one per key,
/// persisted; the in-memory index is
/// (re)built from the store on first use, so it is right after a restore.
pub(crate) struct Timers {
    pub(crate) store_name: String,
    pub(crate) store: Rc<RefCell<TimerStore>>,
    pub(crate) index: BTreeSet<(i64, String)>,
    pub(crate) loaded: bool,
}

impl Timers {
    fn err(&self, source: stoatflow_state::StateError) -> ProcessError {
        ProcessError::State {
            store: self.store_name.clone(),
            source: Box::new(source),
        }
    }

    pub(crate) fn load(&mut self) -> Result<(), ProcessError> {
        if !self.loaded {
            let all = self.store.borrow().all().map_err(|e| self.err(e))?;
            self.index = all.into_iter().map(|(k, t)| (t, k)).collect();
            self.loaded = true;
        }
        Ok(())
    }

    fn register(&mut self, key: &str, ts: i64) -> Result<(), ProcessError> {
        self.load()?;
        self.cancel(key)?;
        self.store
            .borrow_mut()
            .put(key.to_owned(), ts, ts)
            .map_err(|e| self.err(e))?;
        self.index.insert((ts, key.to_owned()));
        Ok(())
    }

    fn cancel(&mut self, key: &str) -> Result<Option<i64>, ProcessError> {
        self.load()?;
        let old = self
            .store
            .borrow_mut()
            .delete(&key.to_owned(), 0)
            .map_err(|e| self.err(e))?;
        if let Some(t) = old {
            self.index.remove(&(t, key.to_owned()));
        }
        Ok(old)
    }

    /// Removes and returns the earliest timer at or below `watermark`.
    pub(crate) fn pop_due(
        &mut self,
        watermark: i64,
    ) -> Result<Option<(i64, String)>, ProcessError> {
        self.load()?;
        match self.index.first() {
            Some((t, _)) if *t <= watermark => {
                let (t, k) = self.index.pop_first().expect("just seen");
                self.store
                    .borrow_mut()
                    .delete(&k, t)
                    .map_err(|e| self.err(e))?;
                Ok(Some((t, k)))
            }
            _ => Ok(None),
        }
    }
}

/// Per-node state a [`ProcessorContext`] works on.
pub(crate) struct NodeState<KOut, VOut> {
    pub(crate) name: String,
    pub(crate) down: Downstream<KOut, VOut>,
    pub(crate) schedules: Vec<Schedule<KOut, VOut>>,
    pub(crate) timers: Option<Timers>,
    pub(crate) wall_timers: Option<Timers>,
    pub(crate) stores: BTreeMap<String, Rc<dyn Any>>,
    /// The instance's global stores, which every processor may read.
    pub(crate) globals: crate::topology::global::GlobalStores,
}

/// What a processor sees while it runs, as Kafka Streams' `ProcessorContext`.
pub struct ProcessorContext<'a, KOut, VOut> {
    pub(crate) task: &'a mut TaskContext,
    pub(crate) node: &'a mut NodeState<KOut, VOut>,
    /// Timestamp and headers of the record being processed, if any.
    pub(crate) current: Option<(i64, Headers)>,
}

impl<KOut, VOut> std::fmt::Debug for ProcessorContext<'_, KOut, VOut> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessorContext")
            .field("node", &self.node.name)
            .field("watermark", &self.task.watermark)
            .finish()
    }
}

impl<KOut: Clone + 'static, VOut: Clone + 'static> ProcessorContext<'_, KOut, VOut> {
    /// Forwards to every child.
    pub fn forward(&mut self, record: Record<KOut, VOut>) -> Result<(), ProcessError> {
        self.node.down.forward(self.task, record)
    }

    /// Forwards to one child, by position (children in the order they were added).
    pub fn forward_to(
        &mut self,
        child: usize,
        record: Record<KOut, VOut>,
    ) -> Result<(), ProcessError> {
        self.node.down.forward_to(child, self.task, record)
    }

    /// Schedules `callback` every `interval` of watermark or wall-clock time.
    pub fn schedule(
        &mut self,
        interval: Duration,
        kind: PunctuationType,
        callback: impl FnMut(&mut ProcessorContext<'_, KOut, VOut>, i64) -> Result<(), ProcessError>
        + 'static,
    ) -> Cancellable {
        let interval_ms = duration_ms(interval).max(1);
        let next = match kind {
            PunctuationType::StreamTime => 0,
            PunctuationType::WallClockTime => {
                self.task.wall_clock.as_millis().saturating_add(interval_ms)
            }
        };
        self.node.schedules.push(Schedule {
            kind,
            interval_ms,
            next,
            callback: Some(Box::new(callback)),
            cancelled: false,
        });
        Cancellable(self.node.schedules.len() - 1)
    }

    /// Cancels a punctuator.
    pub fn cancel(&mut self, c: Cancellable) {
        if let Some(s) = self.node.schedules.get_mut(c.0) {
            s.cancelled = true;
        }
    }

    fn timers(&mut self) -> Result<&mut Timers, ProcessError> {
        let name = self.node.name.clone();
        self.node
            .timers
            .as_mut()
            .ok_or_else(|| ProcessError::Processor {
                node: name.clone(),
                reason:
                    "registers event-time timers but does not declare Processor::EVENT_TIME_TIMERS"
                        .into(),
            })
    }

    fn wall_timers(&mut self) -> Result<&mut Timers, ProcessError> {
        let name = self.node.name.clone();
        self.node
            .wall_timers
            .as_mut()
            .ok_or_else(|| ProcessError::Processor {
                node: name.clone(),
                reason: "registers processing-time timers but does not declare \
                         Processor::PROCESSING_TIME_TIMERS"
                    .into(),
            })
    }

    /// Registers (or moves) the processing-time timer of `key` to the
    /// wall-clock time `timestamp` (ms): it fires on the first wall-clock
    /// tick at or past it, never on event time, and survives a restart.
    pub fn register_processing_time_timer(
        &mut self,
        key: &str,
        timestamp: i64,
    ) -> Result<(), ProcessError> {
        self.wall_timers()?.register(key, timestamp)
    }

    /// Cancels the processing-time timer of `key`; returns its time if there was one.
    pub fn delete_processing_time_timer(&mut self, key: &str) -> Result<Option<i64>, ProcessError> {
        self.wall_timers()?.cancel(key)
    }

    /// Registers (or moves) the event-time timer of `key` to `timestamp`:
    /// it fires once the watermark reaches it, and survives a restart.
    pub fn register_event_time_timer(
        &mut self,
        key: &str,
        timestamp: i64,
    ) -> Result<(), ProcessError> {
        self.timers()?.register(key, timestamp)
    }

    /// Cancels the event-time timer of `key`; returns its time if there was one.
    pub fn delete_event_time_timer(&mut self, key: &str) -> Result<Option<i64>, ProcessError> {
        self.timers()?.cancel(key)
    }

    /// The application-wide watermark (docs/time.md#processor-clock); `i64::MIN` before any.
    pub fn current_watermark_ms(&self) -> i64 {
        self.task.watermark.as_millis()
    }

    /// Alias of [`ProcessorContext::current_watermark_ms`], kept so ported
    /// code compiles: it is the watermark, not Kafka Streams' stream time.
    pub fn current_stream_time_ms(&self) -> i64 {
        self.current_watermark_ms()
    }

    /// The task's wall clock (as of its last tick).
    pub fn current_system_time_ms(&self) -> i64 {
        self.task.wall_clock.as_millis()
    }

    /// Whether the record being processed is below the watermark; false
    /// outside `process`.
    pub fn is_late(&self) -> bool {
        self.current
            .as_ref()
            .is_some_and(|(ts, _)| *ts < self.task.watermark.as_millis())
    }

    /// Topic, partition and offset of the record being processed (empty for
    /// punctuations, timers and the emission pass).
    pub fn record_metadata(&self) -> &RecordMetadata {
        &self.task.meta
    }

    /// Timestamp of the record being processed.
    pub fn timestamp(&self) -> Option<i64> {
        self.current.as_ref().map(|(t, _)| *t)
    }

    /// Headers of the record being processed.
    pub fn headers(&self) -> Option<&Headers> {
        self.current.as_ref().map(|(_, h)| h)
    }

    /// A store connected to this processor, typed with its concrete type.
    pub fn store<S: 'static>(&self, name: &str) -> Option<Rc<RefCell<S>>> {
        self.node
            .stores
            .get(name)?
            .clone()
            .downcast::<RefCell<S>>()
            .ok()
    }

    /// A key-value store built by [`Stores::key_value_store_builder`] or
    /// [`Stores::key_value_store_builder_with`], on whichever engine it runs.
    pub fn key_value_store<K: 'static, V: 'static>(
        &self,
        name: &str,
    ) -> Option<Rc<RefCell<AnyKeyValueStore<K, V>>>> {
        self.store(name)
    }

    /// A global store (`StreamsBuilder::global_table` or `add_global_store`), read
    /// only; `None` if there is none of this name with these types. It is not
    /// connected to the processor: every processor may read every global store.
    pub fn global_store<K, V>(
        &self,
        name: &str,
    ) -> Option<Arc<crate::topology::global::GlobalKeyValueStore<K, V>>>
    where
        K: Send + Sync + 'static,
        V: Send + Sync + 'static,
    {
        self.node.globals.store(name).ok().flatten()
    }

    /// The processor's name.
    pub fn name(&self) -> &str {
        &self.node.name
    }
}

/// Creates the changelogged store of one kind of timers and its index.
pub(crate) fn timer_index(cx: &mut Instantiation, name: &str) -> Timers {
    let store = Rc::new(RefCell::new(InMemoryKeyValueStore::new(
        StoreConfig::new(name.to_owned()).with_changelog_enabled(cx.config.changelog_enabled),
        stoatflow_state::StringCodec,
        stoatflow_state::I64Codec,
    )));
    cx.add_store(name, store.clone());
    Timers {
        store_name: name.to_owned(),
        store,
        index: BTreeSet::new(),
        loaded: false,
    }
}

type StoreFactory = Arc<dyn Fn(&mut Instantiation) + Send + Sync>;

/// A user store, as Kafka Streams' `StoreBuilder`: added with
/// `StreamsBuilder::add_state_store`, connected by name in
/// `KStream::process`.
#[derive(Clone)]
pub struct StoreBuilder {
    name: String,
    factory: StoreFactory,
    /// Why the topology must refuse it (a supplier of the wrong shape).
    pub(crate) refused: Option<String>,
}

impl StoreSupplier for StoreBuilder {
    fn name(&self) -> &str {
        &self.name
    }

    fn create(&self, cx: &mut Instantiation) {
        (self.factory)(cx)
    }
}

impl std::fmt::Debug for StoreBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreBuilder")
            .field("name", &self.name)
            .finish()
    }
}

/// Constructors of user stores, as Kafka Streams' `Stores`.
#[derive(Debug, Clone, Copy)]
pub struct Stores;

impl Stores {
    /// A key-value store on local disk (Kafka Streams' `persistentKeyValueStore`), for
    /// `Materialized::as_`.
    pub fn persistent_key_value_store(name: impl Into<String>) -> BytesStoreSupplier {
        BytesStoreSupplier::new(name, StoreType::Persistent, StoreShape::KeyValue)
    }

    /// A window store on local disk (Kafka Streams' `persistentWindowStore`; retention comes
    /// from the windows or `Materialized::with_retention`), for `Materialized::as_` and
    /// `StreamJoined::with_store_suppliers`.
    pub fn persistent_window_store(name: impl Into<String>) -> BytesStoreSupplier {
        BytesStoreSupplier::new(name, StoreType::Persistent, StoreShape::Window)
    }

    /// A session store on local disk (Kafka Streams' `persistentSessionStore`).
    pub fn persistent_session_store(name: impl Into<String>) -> BytesStoreSupplier {
        BytesStoreSupplier::new(name, StoreType::Persistent, StoreShape::Session)
    }

    /// A key-value store in memory (Kafka Streams' `inMemoryKeyValueStore`).
    pub fn in_memory_key_value_store(name: impl Into<String>) -> BytesStoreSupplier {
        BytesStoreSupplier::new(name, StoreType::InMemory, StoreShape::KeyValue)
    }

    /// A window store in memory (Kafka Streams' `inMemoryWindowStore`).
    pub fn in_memory_window_store(name: impl Into<String>) -> BytesStoreSupplier {
        BytesStoreSupplier::new(name, StoreType::InMemory, StoreShape::Window)
    }

    /// A session store in memory (Kafka Streams' `inMemorySessionStore`).
    pub fn in_memory_session_store(name: impl Into<String>) -> BytesStoreSupplier {
        BytesStoreSupplier::new(name, StoreType::InMemory, StoreShape::Session)
    }

    /// An in-memory, changelogged key-value store.
    pub fn key_value_store_builder<K, V>(
        name: &str,
        key_serde: impl Serde<K> + 'static,
        value_serde: impl Serde<V> + 'static,
    ) -> StoreBuilder
    where
        K: Ord + Clone + 'static,
        V: Clone + 'static,
    {
        Self::key_value_store_builder_with(
            Self::in_memory_key_value_store(name),
            key_serde,
            value_serde,
        )
    }

    /// A changelogged key-value store on the engine `supplier` names (Kafka
    /// Streams' `Stores.keyValueStoreBuilder(supplier, keySerde, valueSerde)`):
    /// `Stores::persistent_key_value_store(name)` keeps it on disk. A supplier
    /// of another shape makes `add_state_store` refuse the topology.
    pub fn key_value_store_builder_with<K, V>(
        supplier: BytesStoreSupplier,
        key_serde: impl Serde<K> + 'static,
        value_serde: impl Serde<V> + 'static,
    ) -> StoreBuilder
    where
        K: Ord + Clone + 'static,
        V: Clone + 'static,
    {
        let ks: Option<SerdeRef<K>> = Some(Arc::new(key_serde));
        let vs: Option<SerdeRef<V>> = Some(Arc::new(value_serde));
        let request = StoreRequest::new(supplier.name(), Some(supplier.store_type()), true);
        let refused = (supplier.shape() != StoreShape::KeyValue).then(|| {
            format!(
                "a {} store supplier cannot back a key-value store",
                supplier.shape()
            )
        });
        StoreBuilder {
            name: supplier.name().to_owned(),
            factory: Arc::new(move |cx: &mut Instantiation| {
                let n = &request.name;
                cx.key_value_store(
                    &request,
                    BoxedCodec(codec(&ks, n)),
                    BoxedCodec(codec(&vs, n)),
                );
            }),
            refused,
        }
    }
}
