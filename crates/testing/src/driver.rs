//! The driver: one thread, one clock, the real task code.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use stoatflow_state::{
    BarrierStamp, ChangelogBatch, ChangelogEntry, ChangelogOffset, ChangelogPartition,
    ChangelogRecord, InMemoryKeyValueStore, StateStore, WATERMARK_STORE_NAME, WatermarkKey,
    WatermarkStore, in_memory_watermark_store, restore,
};
use stoatflow_streams::{
    BarrierSchedule, DropEvent, DropReason, EpochCommit, GlobalKeyValueStore, Headers,
    KeyValueStoreOf, OutputRecord, ProcessError, SessionStoreOf, StoreType, StreamTask,
    StreamsConfig, TaskMetrics, TaskStores, Topology, TopologyError, TopologyTasks, WindowStoreOf,
};

use crate::global::GlobalTopics;
use stoatflow_time::{WallTime, Watermark};

/// Driver-only settings.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// `test.driver.commit-per-pipe` (default true).
    pub commit_per_pipe: bool,
    /// The driver's initial wall-clock time.
    pub initial_wall_clock: WallTime,
    /// Where persistent stores live. `None` (the default): every store is in memory,
    /// whatever its supplier or `default.dsl.store` says. `Some(dir)`: each store runs on
    /// the engine its supplier names, else `default.dsl.store`, else the persistent one,
    /// in its own directory under `<dir>/<sub-topology>/`. The caller owns `dir` (a fresh
    /// temporary directory per driver). A restart closes every store before reopening it
    /// (so two engines never share a directory); no checkpoint is written, so a reopened
    /// store drops its local copy and is restored from the committed changelogs, as an
    /// in-memory one is (a crash loses what was not committed on both engines alike).
    /// Drop store handles before a restart: one still held keeps its retired engine open
    /// on the directory the fresh store opens.
    pub state_dir: Option<PathBuf>,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            commit_per_pipe: true,
            initial_wall_clock: WallTime::EPOCH,
            state_dir: None,
        }
    }
}

/// What the driver refuses or fails at.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// The topology is one the engine would refuse.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// Processing failed.
    #[error(transparent)]
    Process(#[from] ProcessError),
    /// `advance_watermark` backwards with commit-per-pipe off.
    #[error(
        "advance_watermark({requested}) is below the current watermark {current}: with test.driver.commit-per-pipe=false the watermark cannot move backwards"
    )]
    BackwardWatermark {
        /// The requested value.
        requested: i64,
        /// The current one.
        current: i64,
    },
    /// A test input serde could not write a key or value.
    #[error("cannot serialize test input for topic {topic}: {source}")]
    Input {
        /// The topic.
        topic: String,
        /// Why.
        #[source]
        source: stoatflow_streams::SerdeError,
    },
    /// An output record did not deserialize with the test serdes.
    #[error("cannot read output topic {topic}: {source}")]
    Output {
        /// The topic.
        topic: String,
        /// Why.
        #[source]
        source: stoatflow_streams::SerdeError,
    },
    /// Reading an empty output topic.
    #[error("output topic {topic} is empty")]
    NoRecord {
        /// The topic.
        topic: String,
    },
    /// No store has this name.
    #[error("no store named {store}; the topology's stores are: {known}")]
    NoStore {
        /// The name asked for.
        store: String,
        /// The stores there are, comma-separated.
        known: String,
    },
    /// A handle of a driver that was restarted (or its topics) was used.
    #[error(
        "this driver was restarted: use the driver restart() or crash_restart() returned, and topics and stores taken from it"
    )]
    Retired,
    /// The store exists but is not of the type asked for.
    #[error("store {store} is a {actual}, not a {expected}")]
    StoreType {
        /// The store.
        store: String,
        /// The type asked for.
        expected: &'static str,
        /// The store's type.
        actual: &'static str,
    },
}

/// A metrics snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverMetrics {
    /// The driver's watermark.
    pub watermark: Watermark,
    /// The tasks' counters, summed.
    pub tasks: TaskMetrics,
}

impl DriverMetrics {
    /// `stoatflow.dropped.records.total{reason}`.
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.tasks.dropped(reason)
    }
}

pub(crate) struct Inner {
    topology: Topology,
    config: Arc<StreamsConfig>,
    driver_config: DriverConfig,
    tasks: Vec<StreamTask>,
    task_of_topic: HashMap<String, usize>,
    internal_topics: HashSet<String>,
    watermark: Watermark,
    /// What event-time timers fire against: the last barrier's stamp, or after a
    /// restart the floor it resumed from.
    timer_floor: Watermark,
    commit_per_pipe: bool,
    wall_clock: WallTime,
    offsets: HashMap<String, i64>,
    /// Offsets as of the last barrier: what a restart resumes from.
    committed_offsets: HashMap<String, i64>,
    pub(crate) outputs: HashMap<String, VecDeque<OutputRecord>>,
    changelogs: BTreeMap<String, Vec<ChangelogRecord>>,
    /// The engine's `stoatflow-watermark` store: one stamp per committed barrier.
    stamps: WatermarkStore<InMemoryKeyValueStore<WatermarkKey, i64>>,
    barrier: u64,
    /// The watermark stamped on the newest committed barrier.
    last_stamp: Watermark,
    /// The counters of the drivers this one was restarted from.
    carried: TaskMetrics,
    /// Restarted: every handle to this driver fails with `Retired`.
    retired: bool,
    /// Dropped records so far (the restarted-from drivers' included).
    drop_events: Vec<DropEvent>,
    /// What was piped into the global stores' topics, which a restart restores them from.
    globals: GlobalTopics,
}

/// Runs a topology without a broker. Cloning gives another handle to the
/// same driver (input and output topics hold one).
#[derive(Clone)]
pub struct TopologyTestDriver {
    pub(crate) inner: Rc<RefCell<Inner>>,
}

impl std::fmt::Debug for TopologyTestDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = self.inner.borrow();
        f.debug_struct("TopologyTestDriver")
            .field("watermark", &i.watermark)
            .field("tasks", &i.tasks.len())
            .finish()
    }
}

impl TopologyTestDriver {
    /// A driver with default driver settings. Refuses every topology the
    /// engine would refuse (docs/validation.md#refusals).
    pub fn new(topology: Topology, config: StreamsConfig) -> Result<Self, DriverError> {
        Self::with_driver_config(topology, config, DriverConfig::default())
    }

    /// A driver with explicit driver settings.
    pub fn with_driver_config(
        topology: Topology,
        config: StreamsConfig,
        driver: DriverConfig,
    ) -> Result<Self, DriverError> {
        topology.validate(&config)?;
        Self::build(topology, Arc::new(config), driver, true)
    }

    fn build(
        topology: Topology,
        config: Arc<StreamsConfig>,
        driver: DriverConfig,
        first_tick: bool,
    ) -> Result<Self, DriverError> {
        // Each driver (a restarted one too) fills its own global stores.
        let topology = topology.with_new_global_stores();
        let globals = GlobalTopics::new(topology.global_stores().clone());
        let tasks: Vec<StreamTask> = (0..topology.subtopology_count())
            .map(|st| match &driver.state_dir {
                None => Ok(topology.instantiate(st, &config)),
                Some(dir) => topology.instantiate_in(
                    st,
                    &config,
                    TaskStores {
                        dir: Some(dir.join(st.to_string())),
                        default: config.default_dsl_store.unwrap_or(StoreType::Persistent),
                    },
                ),
            })
            .collect::<Result<_, _>>()?;
        let mut task_of_topic = HashMap::new();
        let mut internal_topics = HashSet::new();
        for s in topology.sources() {
            task_of_topic.insert(s.topic.clone(), s.subtopology);
            if s.internal {
                internal_topics.insert(s.topic.clone());
            }
        }
        let mut tasks = tasks;
        for t in &mut tasks {
            t.collect_drop_events();
        }
        if first_tick {
            for t in &mut tasks {
                // The first tick: initializes processors and arms wall-clock schedules.
                t.on_wall_clock(driver.initial_wall_clock)?;
            }
        }
        Ok(TopologyTestDriver {
            inner: Rc::new(RefCell::new(Inner {
                topology,
                config,
                driver_config: driver.clone(),
                tasks,
                task_of_topic,
                internal_topics,
                watermark: Watermark::MIN,
                timer_floor: Watermark::MIN,
                commit_per_pipe: driver.commit_per_pipe,
                wall_clock: driver.initial_wall_clock,
                offsets: HashMap::new(),
                committed_offsets: HashMap::new(),
                outputs: HashMap::new(),
                changelogs: BTreeMap::new(),
                stamps: in_memory_watermark_store(true),
                barrier: 0,
                last_stamp: Watermark::MIN,
                carried: TaskMetrics::default(),
                retired: false,
                drop_events: Vec::new(),
                globals,
            })),
        })
    }

    /// The driver's watermark: the largest timestamp piped or advanced to.
    pub fn watermark(&self) -> Watermark {
        self.inner.borrow().watermark
    }

    /// The watermark stamped on the last committed barrier (after a
    /// restart, the newest stamp committed before it).
    pub fn last_barrier_watermark(&self) -> Watermark {
        self.inner.borrow().last_stamp
    }

    /// Per input topic, the offset a restart resumes from: records piped at
    /// or after it were not committed, so a `crash_restart` loses them
    /// (re-pipe them, as a consumer would re-read them). Offsets count from
    /// 0 per topic.
    pub fn committed_offsets(&self) -> BTreeMap<String, i64> {
        let inner = self.inner.borrow();
        inner
            .committed_offsets
            .iter()
            .filter(|(t, _)| !inner.internal_topics.contains(*t))
            .map(|(t, o)| (t.clone(), *o))
            .collect()
    }

    /// `Err(Retired)` once this driver has been restarted.
    pub(crate) fn live(&self) -> Result<(), DriverError> {
        if self.inner.borrow().retired {
            return Err(DriverError::Retired);
        }
        Ok(())
    }

    /// The driver's wall clock.
    pub fn wall_clock(&self) -> WallTime {
        self.inner.borrow().wall_clock
    }

    /// The topology's description.
    pub fn describe(&self) -> String {
        self.inner.borrow().topology.describe()
    }

    pub(crate) fn pipe(
        &self,
        topic: &str,
        key: Option<Vec<u8>>,
        value: Option<Vec<u8>>,
        timestamp: i64,
        headers: Headers,
    ) -> Result<(), DriverError> {
        self.live()?;
        let mut inner = self.inner.borrow_mut();
        if inner.globals.reads(topic) {
            // A global store's topic updates the store at once and nothing else: no task
            // reads it, no time moves, no barrier (docs/global-tables.md#test-driver).
            let handler = inner.config.deserialization_handler;
            return Ok(inner.globals.pipe(topic, key, value, timestamp, handler)?);
        }
        inner.pipe(topic, key, value, timestamp, headers)?;
        inner.finish_step()
    }

    /// Moves event time to `to` and runs the emission pass. Lenient: a
    /// backward request is a no-op, unless commit-per-pipe is off, where it
    /// is an error.
    pub fn advance_watermark(&self, to: i64) -> Result<(), DriverError> {
        self.live()?;
        let mut inner = self.inner.borrow_mut();
        let to = Watermark::from_millis(to);
        if to < inner.watermark {
            if inner.commit_per_pipe {
                return Ok(());
            }
            return Err(DriverError::BackwardWatermark {
                requested: to.as_millis(),
                current: inner.watermark.as_millis(),
            });
        }
        inner.watermark = to;
        inner.emission_pass()?;
        inner.finish_step()
    }

    /// Advances the wall clock, fires wall-clock punctuators and wall-clock
    /// and cron scheduled sources due by then, then commits a barrier
    /// (docs/test-driver.md#advance-watermark). Never moves event time.
    pub fn advance_wall_clock_time(&self, by: Duration) -> Result<(), DriverError> {
        self.live()?;
        let mut inner = self.inner.borrow_mut();
        inner.wall_clock = inner.wall_clock.saturating_add(by);
        let now = inner.wall_clock;
        for i in 0..inner.tasks.len() {
            inner.tasks[i].on_wall_clock(now)?;
            inner.route_internal()?;
        }
        inner.commit()?;
        inner.fire_event_time()
    }

    /// A graceful restart (docs/state.md#graceful-restart): a final barrier commits everything
    /// and records that it flushed; then fresh tasks restore every store from
    /// the committed changelogs and are seeded from the `stoatflow-watermark`
    /// store, keeping the newest stamp. Committed output not read yet
    /// stays readable on the returned driver, as it stays in its topic;
    /// this driver and every topic and store taken from it fail with
    /// [`DriverError::Retired`] from now on. Metrics carry over (see
    /// [`TopologyTestDriver::metrics`]).
    pub fn restart(self) -> Result<Self, DriverError> {
        self.live()?;
        {
            let mut inner = self.inner.borrow_mut();
            inner.commit()?;
            inner.fire_event_time()?;
            inner.mark_graceful()?;
        }
        self.rebuild()
    }

    /// A crash restart (docs/state.md#crash-restart): whatever was not committed is lost —
    /// pending output, store writes, and the offsets of records piped since
    /// the last barrier (pipe them again, as a consumer would re-read them).
    /// Stores are restored from the committed changelogs; the floor resumes
    /// at the newest stamp (a record late before the crash stays late) and
    /// the frontier one barrier back (the newest stamp is left out of it), so
    /// the first pass after the restart replays the last emission pass, and
    /// the emit frontiers keep it from emitting anything twice. The driver's clock
    /// resumes from the newest committed stamp, as the engine's watermark
    /// resumes from the partition times committed with the offsets.
    /// [`TopologyTestDriver::committed_offsets`] says what was committed.
    /// As with [`TopologyTestDriver::restart`], committed output stays
    /// readable, metrics carry over and the old handles are retired.
    ///
    /// By default each pipe commits two barriers with the same stamp (the
    /// record's, then the event-time firing's, which runs against the
    /// first one's stamp): leaving the newest out then seeds the same
    /// floor. To see the replay of an emission pass, turn commit-per-pipe
    /// off and commit between advances.
    pub fn crash_restart(self) -> Result<Self, DriverError> {
        self.live()?;
        self.rebuild()
    }

    fn rebuild(self) -> Result<Self, DriverError> {
        let kept = self.inner.borrow_mut().retire();
        let (topology, config, mut driver) = {
            let i = self.inner.borrow();
            (
                i.topology.clone(),
                i.config.clone(),
                i.driver_config.clone(),
            )
        };
        driver.initial_wall_clock = kept.wall;
        // The first tick waits for the restore, so processors initialize on
        // restored stores and timer indexes are built from them.
        let fresh = Self::build(topology, config, driver, false)?;
        {
            let mut inner = fresh.inner.borrow_mut();
            inner.restore_changelogs(&kept.changelogs)?;
            let handler = inner.config.deserialization_handler;
            inner.globals.restore_from(&kept.globals, handler)?;
            inner.resume_from_stamps()?;
            inner.take_over(kept)?;
        }
        Ok(fresh)
    }

    /// Commits a barrier: barrier-gated operators release, and the epoch's
    /// output becomes readable.
    pub fn commit_barrier(&self) -> Result<(), DriverError> {
        self.live()?;
        let mut inner = self.inner.borrow_mut();
        inner.commit()?;
        inner.fire_event_time()
    }

    /// A store by name, typed with its concrete type (e.g.
    /// `stoatflow_streams::WindowStoreOf<String, i64>`; the typed accessors
    /// below spell the common ones).
    ///
    /// # Errors
    /// [`DriverError::NoStore`] naming the stores there are, or
    /// [`DriverError::StoreType`] naming the type asked for and the store's.
    pub fn store<S: 'static>(&self, name: &str) -> Result<Rc<RefCell<S>>, DriverError> {
        self.live()?;
        let inner = self.inner.borrow();
        if let Some(store) = inner.tasks.iter().find_map(|t| t.store::<S>(name)) {
            return Ok(store);
        }
        match inner.tasks.iter().find_map(|t| t.store_type_name(name)) {
            Some(actual) => Err(DriverError::StoreType {
                store: name.to_owned(),
                expected: std::any::type_name::<S>(),
                actual,
            }),
            None => Err(DriverError::NoStore {
                store: name.to_owned(),
                known: self.store_names().join(", "),
            }),
        }
    }

    /// The store of a global table (`StreamsBuilder::global_table`), by name.
    ///
    /// # Errors
    /// [`DriverError::NoStore`] naming the global stores there are, or
    /// [`DriverError::StoreType`] naming the type asked for and the store's.
    pub fn global_store<K, V>(
        &self,
        name: &str,
    ) -> Result<Arc<GlobalKeyValueStore<K, V>>, DriverError>
    where
        K: Send + Sync + 'static,
        V: Send + Sync + 'static,
    {
        self.live()?;
        let inner = self.inner.borrow();
        let stores = inner.topology.global_stores();
        match stores.store::<K, V>(name) {
            Ok(Some(store)) => Ok(store),
            Ok(None) => Err(DriverError::NoStore {
                store: name.to_owned(),
                known: stores.store_names().join(", "),
            }),
            Err(actual) => Err(DriverError::StoreType {
                store: name.to_owned(),
                expected: std::any::type_name::<GlobalKeyValueStore<K, V>>(),
                actual,
            }),
        }
    }

    /// The key-value store behind a table or a non-windowed aggregation
    /// (`count`, `reduce`, `aggregate`, `StreamsBuilder::table`), values
    /// with their timestamps.
    ///
    /// # Errors
    /// As [`TopologyTestDriver::store`].
    pub fn key_value_store<K: 'static, V: 'static>(
        &self,
        name: &str,
    ) -> Result<Rc<RefCell<KeyValueStoreOf<K, V>>>, DriverError> {
        self.store(name)
    }

    /// The window store behind a time- or sliding-windowed aggregation.
    ///
    /// # Errors
    /// As [`TopologyTestDriver::store`].
    pub fn window_store<K: 'static, V: 'static>(
        &self,
        name: &str,
    ) -> Result<Rc<RefCell<WindowStoreOf<K, V>>>, DriverError> {
        self.store(name)
    }

    /// The session store behind a session-windowed aggregation
    /// (`SessionStore::all` lists every session).
    ///
    /// # Errors
    /// As [`TopologyTestDriver::store`].
    pub fn session_store<K: 'static, V: 'static>(
        &self,
        name: &str,
    ) -> Result<Rc<RefCell<SessionStoreOf<K, V>>>, DriverError> {
        self.store(name)
    }

    /// Every store's name.
    pub fn store_names(&self) -> Vec<String> {
        self.inner
            .borrow()
            .tasks
            .iter()
            .flat_map(|t| t.store_names().map(str::to_owned).collect::<Vec<_>>())
            .collect()
    }

    /// Changelog records committed so far, per store, in commit order.
    pub fn changelog(&self, store: &str) -> Vec<ChangelogRecord> {
        self.inner
            .borrow()
            .changelogs
            .get(store)
            .cloned()
            .unwrap_or_default()
    }

    /// Every record dropped so far, in order, as data: source topic,
    /// partition and offset, key, reason, and the window or session it
    /// missed with its close. One event per window a record missed (the
    /// per-window detail); `dropped.records.total` counts records, once
    /// each: exactly the events whose `counted` is set. Carried across
    /// restarts.
    pub fn dropped_records(&self) -> Vec<DropEvent> {
        let mut inner = self.inner.borrow_mut();
        inner.drain_drop_events();
        inner.drop_events.clone()
    }

    /// A metrics snapshot. Counters are cumulative across restarts, as a
    /// metrics backend sums a restarted application's counters: after a
    /// crash, records piped again are counted again, as the engine counts
    /// records it reprocesses.
    pub fn metrics(&self) -> DriverMetrics {
        let inner = self.inner.borrow();
        let mut tasks = inner.carried.clone();
        for t in &inner.tasks {
            tasks.merge(t.metrics());
        }
        DriverMetrics {
            watermark: inner.watermark,
            tasks,
        }
    }
}

/// What a restarted driver takes over from the one it replaces.
struct Kept {
    outputs: HashMap<String, VecDeque<OutputRecord>>,
    carried: TaskMetrics,
    drop_events: Vec<DropEvent>,
    changelogs: BTreeMap<String, Vec<ChangelogRecord>>,
    wall: WallTime,
    /// The committed offsets: what the restarted driver resumes from.
    offsets: HashMap<String, i64>,
    barrier: u64,
    /// The global topics' records.
    globals: GlobalTopics,
}

impl Inner {
    /// Retires this driver (every handle to it fails from now on) and closes its tasks'
    /// stores; returns what the restarted driver takes over.
    fn retire(&mut self) -> Kept {
        self.retired = true;
        self.drain_drop_events();
        let mut carried = self.carried.clone();
        for t in &self.tasks {
            carried.merge(t.metrics());
        }
        // The retired tasks close their stores, so the fresh ones can open the same
        // directories; their counters stay readable through `carried`.
        self.tasks.clear();
        self.carried = carried.clone();
        Kept {
            outputs: std::mem::take(&mut self.outputs),
            carried,
            drop_events: std::mem::take(&mut self.drop_events),
            changelogs: self.changelogs.clone(),
            wall: self.wall_clock,
            offsets: self.committed_offsets.clone(),
            barrier: self.barrier,
            globals: self.globals.clone(),
        }
    }

    /// Restores the watermark store and each task's stores from the committed changelogs.
    fn restore_changelogs(
        &mut self,
        changelogs: &BTreeMap<String, Vec<ChangelogRecord>>,
    ) -> Result<(), DriverError> {
        for (store, records) in changelogs {
            let entries = records.iter().cloned().enumerate().map(|(i, r)| {
                ChangelogEntry::from_record(r, ChangelogPartition(0), ChangelogOffset(i as u64))
            });
            let err = |source| ProcessError::State {
                store: store.clone(),
                source: Box::new(source),
            };
            if store == WATERMARK_STORE_NAME {
                restore(
                    self.stamps.store_mut(),
                    entries,
                    records.len() as u64,
                    &mut |_| {},
                )
                .map_err(err)?;
                continue;
            }
            let Some((s, layout)) = self.tasks.iter().find_map(|t| {
                t.state_store(store)
                    .map(|s| (s, t.changelog_value_layout(store)))
            }) else {
                continue;
            };
            // The changelog holds Kafka Streams' layout, the store its own.
            let entries = entries.map(|mut e| {
                layout.from_changelog(&mut e);
                e
            });
            restore(
                &mut *s.borrow_mut(),
                entries,
                records.len() as u64,
                &mut |_| {},
            )
            .map_err(err)?;
        }
        Ok(())
    }

    /// Seeds the tasks from the restored stamps: the floor at the newest stamp, the frontier
    /// one barrier back; the driver's clock resumes from the newest stamp.
    fn resume_from_stamps(&mut self) -> Result<(), DriverError> {
        let newest = self
            .stamps
            .stamps()
            .map_err(stamps_err)?
            .last()
            .map(|s| s.watermark);
        let seed = self.stamps.seed().map_err(stamps_err)?;
        let (floor, frontier) = (
            Watermark::from_millis(seed.floor),
            Watermark::from_millis(seed.frontier),
        );
        let resumed = newest.map_or(Watermark::MIN, Watermark::from_millis);
        for t in &mut self.tasks {
            t.seed(floor, frontier);
            t.on_watermark(floor);
        }
        self.watermark = resumed;
        self.timer_floor = floor;
        self.last_stamp = resumed;
        Ok(())
    }

    /// Takes over the retired driver's output, counters, changelogs, offsets and barrier
    /// count, and its wall clock.
    fn take_over(&mut self, kept: Kept) -> Result<(), DriverError> {
        self.outputs = kept.outputs;
        self.carried = kept.carried;
        self.drop_events = kept.drop_events;
        self.changelogs = kept.changelogs;
        self.offsets = kept.offsets.clone();
        self.committed_offsets = kept.offsets;
        self.barrier = kept.barrier;
        for t in &mut self.tasks {
            t.on_wall_clock(kept.wall)?;
        }
        Ok(())
    }

    fn drain_drop_events(&mut self) {
        for t in &mut self.tasks {
            let events = t.take_drop_events();
            self.drop_events.extend(events);
        }
    }

    fn task_for(&self, topic: &str) -> Result<usize, DriverError> {
        self.task_of_topic.get(topic).copied().ok_or_else(|| {
            ProcessError::UnknownTopic {
                topic: topic.into(),
            }
            .into()
        })
    }

    fn pipe(
        &mut self,
        topic: &str,
        key: Option<Vec<u8>>,
        value: Option<Vec<u8>>,
        timestamp: i64,
        headers: Headers,
    ) -> Result<(), DriverError> {
        let t = self.task_for(topic)?;
        let offset = {
            let o = self.offsets.entry(topic.to_owned()).or_insert(0);
            *o += 1;
            *o - 1
        };
        let floor = self.watermark;
        let task = &mut self.tasks[t];
        task.set_floor(floor);
        task.on_watermark(floor);
        let ts = task.process(
            topic,
            Some(0),
            Some(offset),
            key.as_deref(),
            value.as_deref(),
            timestamp,
            headers,
        )?;
        self.route_internal()?;
        if let Some(ts) = ts {
            self.watermark.advance_to(Watermark::from_millis(ts));
        }
        self.emission_pass()
    }

    /// Feeds records written to repartition topics to the tasks that read them.
    fn route_internal(&mut self) -> Result<(), DriverError> {
        if self.internal_topics.is_empty() {
            return Ok(());
        }
        loop {
            let internal = &self.internal_topics;
            let mut moved: Vec<OutputRecord> = Vec::new();
            for task in &mut self.tasks {
                task.move_outputs_for(|t| internal.contains(t), &mut moved);
            }
            if moved.is_empty() {
                return Ok(());
            }
            for r in moved {
                self.hand_over(r)?;
            }
        }
    }

    /// A record written to a repartition topic, to the task reading it,
    /// judged against the driver's watermark.
    fn hand_over(&mut self, r: OutputRecord) -> Result<(), DriverError> {
        let t = self.task_for(&r.topic)?;
        let floor = self.watermark;
        let task = &mut self.tasks[t];
        task.set_floor(floor);
        task.process_handed_over(r)?;
        Ok(())
    }

    /// The end of a pipe or advance: commit if commit-per-pipe, then fire
    /// what runs on event time.
    fn finish_step(&mut self) -> Result<(), DriverError> {
        if self.commit_per_pipe {
            self.commit()?;
        }
        self.fire_event_time()
    }

    /// STREAM_TIME punctuators and scheduled sources against the watermark
    /// the step flushed, event-time timers against the last barrier's
    /// watermark (docs/test-driver.md#judging). What they emit commits now if commit-per-pipe.
    fn fire_event_time(&mut self) -> Result<(), DriverError> {
        let (w, b) = (self.watermark, self.timer_floor);
        for i in 0..self.tasks.len() {
            self.tasks[i].on_watermark(w);
            self.tasks[i].fire_event_time(w, b)?;
            self.route_internal()?;
        }
        if self.commit_per_pipe {
            // Timer deletions and punctuation output commit with the barrier.
            self.commit()?;
        }
        Ok(())
    }

    /// The simpler clock's emission pass: every task, in topological order,
    /// on the driver's watermark (docs/test-driver.md#final-emission).
    fn emission_pass(&mut self) -> Result<(), DriverError> {
        let w = self.watermark;
        BarrierSchedule::advance(self, w)
    }

    /// A barrier: every task crosses it (its epoch readable, its changelog
    /// committed), then the stamp is recorded.
    fn commit(&mut self) -> Result<(), DriverError> {
        BarrierSchedule::commit(self)?;
        self.barrier += 1;
        let stamp = BarrierStamp {
            barrier: self.barrier,
            watermark: self.watermark.as_millis(),
        };
        let ts = self.wall_clock.as_millis();
        self.stamps.record_stamp(stamp, ts).map_err(stamps_err)?;
        self.flush_stamps()?;
        self.committed_offsets = self.offsets.clone();
        self.timer_floor = self.watermark;
        self.last_stamp = self.watermark;
        Ok(())
    }

    fn flush_stamps(&mut self) -> Result<(), DriverError> {
        let mut records = ChangelogBatch::new();
        self.stamps
            .store_mut()
            .flush_changelog(&mut records)
            .map_err(stamps_err)?;
        self.changelogs
            .entry(WATERMARK_STORE_NAME.to_owned())
            .or_default()
            .extend(records.iter().map(|r| r.to_record()));
        Ok(())
    }

    /// Records that the last barrier flushed everything (a graceful shutdown).
    fn mark_graceful(&mut self) -> Result<(), DriverError> {
        let ts = self.wall_clock.as_millis();
        self.stamps
            .mark_graceful_flush(self.barrier, ts)
            .map_err(stamps_err)?;
        self.flush_stamps()
    }
}

impl TopologyTasks for Inner {
    type Error = DriverError;

    fn tasks(&mut self) -> &mut [StreamTask] {
        &mut self.tasks
    }

    fn route(&mut self) -> Result<(), DriverError> {
        self.route_internal()
    }

    fn committed(&mut self, _task: usize, commit: EpochCommit) -> Result<(), DriverError> {
        for r in commit.outputs {
            if self.internal_topics.contains(&*r.topic) {
                // Released at the barrier into a repartition topic: the
                // downstream task (later in topological order) reads it now.
                self.hand_over(r)?;
            } else {
                self.outputs
                    .entry(r.topic.to_string())
                    .or_default()
                    .push_back(r);
            }
        }
        for (store, records) in commit.changelogs {
            self.changelogs
                .entry(store)
                .or_default()
                .extend(records.iter().map(|r| r.to_record()));
        }
        Ok(())
    }
}

fn stamps_err(source: stoatflow_state::StateError) -> DriverError {
    ProcessError::State {
        store: WATERMARK_STORE_NAME.to_owned(),
        source: Box::new(source),
    }
    .into()
}
