//! [`StreamsApp`]: the application a user starts, watches and closes.
//!
//! Owns the engine thread's handle and the state shared with it (lifecycle
//! state, listener, error handler, the `/watermarks` view, committed
//! positions). Knows nothing of how records are processed.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use stoatflow_log::EmbeddedLog;
use stoatflow_log::{Consumer, Log, TopicPartition};
use stoatflow_streams::{Serde, Topology};
use stoatflow_time::{Clock, SystemClock, WatermarksSnapshot};

use crate::app_state::AppState;
use crate::config::layout::log_topic_name;
use crate::config::{Backend, RuntimeConfig};
use crate::discovery::endpoints::advertise;
use crate::discovery::{KeyQueryMetadata, Locator, LocatorConfig, MetadataError};
use crate::engine::error_response::HandlerOutcome;
use crate::engine::shared::run_query;
use crate::engine::{Assignment, Shared, run_engine, tracks_event_time};
use crate::error::RuntimeError;
use crate::observe::metrics::{MetricsSnapshot, lag_at};
use crate::observe::summary::RunSummary;
use crate::query::{QueryAnswer, QueryError, StateQueryRequest, StoreQuery};
use crate::signals::stop_on_signals;

/// How long [`StreamsApp::run`] gives its close.
pub const RUN_CLOSE_TIMEOUT: Duration = Duration::from_secs(60);

/// A topology running on a log: Kafka Streams' `KafkaStreams`.
///
/// `start()` returns at once; the application restores its state
/// (REBALANCING), then processes (RUNNING) until `close()`, which cuts a
/// final flush barrier and commits it. Dropping it without `close()` stops
/// it at once and commits nothing more, exactly as a crash would: the next
/// start resumes from the last committed barrier.
pub struct StreamsApp<L: Log + 'static = EmbeddedLog> {
    topology: Arc<Topology>,
    config: Arc<RuntimeConfig>,
    log: Arc<L>,
    clock: Arc<dyn Clock>,
    shared: Arc<Shared>,
    locator: Arc<Locator>,
    engine: Option<JoinHandle<()>>,
}

impl<L: Log + 'static> std::fmt::Debug for StreamsApp<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamsApp")
            .field("application_id", &self.config.application_id())
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

impl StreamsApp<EmbeddedLog> {
    /// An application on the embedded log its config names (a directory, or
    /// memory).
    ///
    /// The settings and the topology are checked before the log is opened,
    /// so a refused one creates no data directory.
    ///
    /// # Errors
    /// A bad setting or topology (naming the key or node), or a data
    /// directory that cannot be opened or is locked (naming it).
    pub fn new(topology: Topology, config: RuntimeConfig) -> Result<Self, RuntimeError> {
        config.validate()?;
        topology.validate(&config.streams)?;
        let log = match &config.backend {
            Backend::Embedded { dir } => EmbeddedLog::open(dir)?,
            Backend::InMemory => EmbeddedLog::in_memory(),
        };
        Self::with_log(topology, config, Arc::new(log))
    }
}

impl<L: Log + 'static> StreamsApp<L> {
    /// An application on `log` (any backend).
    ///
    /// # Errors
    /// A bad setting (naming the key) or a refused topology
    /// (docs/validation.md#refusals).
    pub fn with_log(
        topology: Topology,
        config: RuntimeConfig,
        log: Arc<L>,
    ) -> Result<Self, RuntimeError> {
        config.validate()?;
        topology.validate(&config.streams)?;
        let locator = Locator::new(
            &topology,
            LocatorConfig {
                app: config.application_id(),
                me: config.transactional_id(),
                server: config.application_server.as_deref(),
                replicas: config.standby_replicas,
            },
            log.clone(),
        );
        Ok(StreamsApp {
            locator: Arc::new(locator),
            topology: Arc::new(topology),
            config: Arc::new(config),
            log,
            clock: Arc::new(SystemClock),
            shared: Arc::new(Shared::new()),
            engine: None,
        })
    }

    /// Replaces the wall clock (tests).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The log the application runs on.
    pub fn log(&self) -> &Arc<L> {
        &self.log
    }

    /// The current state.
    pub fn state(&self) -> AppState {
        self.shared.state()
    }

    /// Calls `listener(new, old)` on every state change, on the thread that
    /// makes it (mostly the engine's), holding no lock of the application's.
    /// A panic in it stops the engine, before it processes or commits
    /// anything more, with an error naming the listener, which goes to the
    /// uncaught-error handler (by default: ERROR). A panic on the way to
    /// NOT_RUNNING makes it ERROR instead; one told of ERROR is only logged.
    pub fn set_state_listener(
        &self,
        listener: impl Fn(AppState, AppState) + Send + Sync + 'static,
    ) {
        *self.shared.listener.lock().expect("listener lock") = Some(Arc::new(listener));
    }

    /// Calls `handler` with each error that stops the engine; what it returns
    /// decides what happens next
    /// ([`StreamThreadExceptionResponse`](crate::StreamThreadExceptionResponse): replace
    /// the engine in place, resuming from the last commit, or shut down in
    /// ERROR). A handler returning `()` leaves the default: replace after an
    /// aborted or retriable log error, shut down after anything else. A
    /// fenced producer always shuts down. The handler runs holding no lock
    /// of the application's; if it panics, the application shuts down in
    /// ERROR with an error naming the handler and the error it was handed.
    pub fn set_uncaught_error_handler<R: HandlerOutcome>(
        &self,
        handler: impl Fn(&RuntimeError) -> R + Send + Sync + 'static,
    ) {
        *self.shared.error_handler.lock().expect("handler lock") =
            Some(Arc::new(move |e| handler(e).response()));
    }

    /// How many times an error replaced the engine in place since start.
    pub fn replacements(&self) -> u64 {
        self.shared.replacements.load(Ordering::Acquire)
    }

    /// The error that stopped the application, if one did.
    pub fn error(&self) -> Option<Arc<RuntimeError>> {
        self.shared.error.lock().expect("error lock").clone()
    }

    /// Starts processing on its own threads and returns. With
    /// `application.server` set, it first writes that endpoint to the
    /// application's endpoints topic, so that the other members can name
    /// this one (docs/queries.md#endpoints).
    ///
    /// # Errors
    /// [`RuntimeError::NotStartable`] unless the application is CREATED;
    /// the log's error if the endpoint could not be written.
    pub fn start(&mut self) -> Result<(), RuntimeError> {
        let state = self.state();
        if state != AppState::Created || self.engine.is_some() {
            return Err(RuntimeError::NotStartable { state });
        }
        if let Some(server) = &self.config.application_server {
            let (app, me) = (self.config.application_id(), self.config.transactional_id());
            advertise(&*self.log, app, &me, server)?;
        }
        let (topology, config, log, clock, shared) = (
            self.topology.clone(),
            self.config.clone(),
            self.log.clone(),
            self.clock.clone(),
            self.shared.clone(),
        );
        let handle = std::thread::Builder::new()
            .name(format!("{}-poll", self.config.application_id()))
            .spawn(move || run_engine(topology, config, log, clock, shared))
            .map_err(|e| RuntimeError::ThreadDied {
                thread: "poll loop".into(),
                reason: e.to_string(),
            })?;
        self.engine = Some(handle);
        Ok(())
    }

    /// Stops gracefully: a final barrier flushes every window closing at or
    /// before its stamp and commits. Returns whether the application stopped
    /// within `timeout` (if not, it is stopped at once, like a crash). Logs
    /// the run's [`RunSummary`] at info level; [`StreamsApp::summary`]
    /// returns it.
    pub fn close(&mut self, timeout: Duration) -> bool {
        let closed = self.stop_engine(timeout);
        tracing::info!(summary = %self.summary(), "closed");
        closed
    }

    /// What the application did so far, or in its run once closed: records
    /// in and out, drops by reason, the final watermark and the partition
    /// that held it, with why (docs/time.md#holder).
    pub fn summary(&self) -> RunSummary {
        self.handle().summary()
    }

    fn stop_engine(&mut self, timeout: Duration) -> bool {
        self.shared.stop.store(true, Ordering::Release);
        let Some(handle) = self.engine.take() else {
            // Never started, or closed already (ERROR stays ERROR).
            self.shared.transition(AppState::PendingShutdown);
            self.shared.transition(AppState::NotRunning);
            return self.state() == AppState::NotRunning;
        };
        let deadline = Instant::now() + timeout;
        while !handle.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        let in_time = handle.is_finished();
        if !in_time {
            self.shared.halt.store(true, Ordering::Release);
        }
        let _ = handle.join();
        in_time && self.state() == AppState::NotRunning
    }

    /// Starts, runs until SIGINT or SIGTERM, then closes gracefully (a
    /// second signal during the close exits the process at once, with
    /// status 1).
    ///
    /// # Errors
    /// The start error, the error that stopped the application, or
    /// [`RuntimeError::Stopped`] when the close did not end within
    /// [`RUN_CLOSE_TIMEOUT`] (the application was then stopped as a crash
    /// would stop it: what was not committed is processed again at the
    /// next start).
    pub fn run(mut self) -> Result<(), RuntimeError> {
        let signalled = stop_on_signals()?;
        self.start()?;
        while !signalled.load(Ordering::Acquire) && !self.state().has_stopped() {
            std::thread::sleep(Duration::from_millis(50));
        }
        let closed = self.close(RUN_CLOSE_TIMEOUT);
        match self.error() {
            Some(e) => Err(RuntimeError::Stopped {
                reason: e.to_string(),
            }),
            None if !closed => Err(RuntimeError::Stopped {
                reason: format!(
                    "the close did not end within {} s; stopped as a crash would stop it",
                    RUN_CLOSE_TIMEOUT.as_secs()
                ),
            }),
            None => Ok(()),
        }
    }

    /// Waits until the state is `target` or the application stopped; returns
    /// the state then.
    pub fn wait_for_state(&self, target: AppState, timeout: Duration) -> AppState {
        let deadline = Instant::now() + timeout;
        loop {
            let s = self.state();
            if s == target || matches!(s, AppState::Error | AppState::NotRunning) {
                return s;
            }
            if Instant::now() >= deadline {
                return s;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Waits until every source partition's committed offset has reached
    /// the end the partition had when this was called (the input so far is
    /// consumed and committed). Returns whether it did within `timeout`.
    ///
    /// # Errors
    /// The log's, reading the end offsets.
    pub fn wait_until_caught_up(&self, timeout: Duration) -> Result<bool, RuntimeError> {
        self.wait_until_reached(&self.shared.committed, true, timeout)
    }

    /// Waits until every record each source partition held when this was
    /// called has been handed to the tasks: read and processed or queued,
    /// not yet committed (`close()` commits it with the final barrier).
    /// Returns whether it did within `timeout`. A topology that reads a
    /// repartition topic also waits for what its upstream writes meanwhile,
    /// as [`StreamsApp::wait_until_caught_up`] does.
    ///
    /// # Errors
    /// The log's, reading the end offsets.
    pub fn wait_until_consumed(&self, timeout: Duration) -> Result<bool, RuntimeError> {
        let look_again = self.topology.sources().iter().any(|s| s.internal);
        self.wait_until_reached(&self.shared.consumed, look_again, timeout)
    }

    /// Waits until `reached` holds, for every non-empty source partition,
    /// at least the end it had when looked at. With `look_again` the wait
    /// ends only when a second look finds no partition grown.
    fn wait_until_reached(
        &self,
        reached: &Mutex<HashMap<TopicPartition, u64>>,
        look_again: bool,
        timeout: Duration,
    ) -> Result<bool, RuntimeError> {
        let app = self.config.application_id();
        let mut consumer = self.log.consumer(&format!("{app}-caught-up"))?;
        let mut topics: Vec<String> = self
            .topology
            .sources()
            .iter()
            .map(|s| log_topic_name(app, &s.topic, s.internal))
            .collect();
        topics.sort();
        topics.dedup();
        let deadline = Instant::now() + timeout;
        let mut previous: Option<Vec<(TopicPartition, u64)>> = None;
        loop {
            // What is readable now; repartition topics grow while upstream
            // sub-topologies work, so the wait ends only when a second look
            // finds nothing new.
            let mut ends: Vec<(TopicPartition, u64)> = Vec::new();
            for topic in &topics {
                let Some(shape) = self.log.describe_topic(topic)? else {
                    continue;
                };
                for p in 0..shape.partitions {
                    let tp = TopicPartition::new(topic.clone(), p);
                    let end = consumer.end_offset(&tp)?.0;
                    if end > consumer.beginning_offset(&tp)?.0 {
                        ends.push((tp, end));
                    }
                }
            }
            if previous.as_ref() == Some(&ends) {
                return Ok(true);
            }
            loop {
                let done = {
                    let reached = reached.lock().expect("offsets lock");
                    ends.iter()
                        .all(|(tp, end)| reached.get(tp).is_some_and(|c| c >= end))
                };
                if done {
                    break;
                }
                if Instant::now() >= deadline || self.state().has_stopped() {
                    return Ok(false);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            if !look_again {
                return Ok(true);
            }
            previous = Some(ends);
            // A broker's offsets can lag its metadata for a moment: look
            // again after a pause, not at once.
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The tracker's last `/watermarks` view (refreshed every 100 ms).
    pub fn watermarks(&self) -> Option<WatermarksSnapshot> {
        self.shared.snapshot.lock().expect("snapshot lock").clone()
    }

    /// Changelog records the last start restored into the tasks' stores (a
    /// persistent store trusted from its checkpoint reads only the tail past
    /// it; an in-memory or rebuilt one reads its whole changelog).
    pub fn restored_records(&self) -> u64 {
        self.shared.restored.load(Ordering::Acquire)
    }

    /// The tasks the running engine owns and those it keeps standby copies
    /// of (`num.standby.replicas`); empty before the first assignment.
    pub fn assignment(&self) -> Assignment {
        self.shared.assignment()
    }

    /// Changelog records the standby copies applied since start.
    pub fn standby_records(&self) -> u64 {
        self.shared.standby_applied.load(Ordering::Acquire)
    }

    /// How many offsets the standby copies are behind their changelogs'
    /// ends, measured every 500 ms (Kafka Streams' standby lag); `None`
    /// until the running engine's copies first measured it, `Some(0)` with
    /// no copies.
    pub fn standby_lag(&self) -> Option<u64> {
        self.shared.standby_lag()
    }

    /// Barriers committed since start.
    pub fn committed_barriers(&self) -> u64 {
        self.shared.barriers.load(Ordering::Acquire)
    }

    /// When barriers were cut and committed and when the watermark moved
    /// (the newest 100,000 of each): final-result latencies.
    pub fn timeline(&self) -> crate::Timeline {
        self.shared.timeline.lock().expect("timeline lock").clone()
    }

    /// Answers `request` from this instance's stores (Kafka Streams'
    /// `KafkaStreams::query`, IQv2): committed state unless the request asks
    /// for the latest processed, each window with how final it is
    /// (docs/queries.md).
    ///
    /// # Errors
    /// [`QueryError`]: no such store here, another store type, not running,
    /// the engine stopped before the answer committed, or the timeout.
    pub fn query<Q: StoreQuery>(
        &self,
        request: StateQueryRequest<Q>,
    ) -> Result<QueryAnswer<Q::Answer>, QueryError> {
        run_query(&self.shared, request)
    }

    /// Which instance owns `key` of `store` and which keep standby copies
    /// of it, each with its `application.server` (Kafka Streams'
    /// `queryMetadataForKey(store, key, keySerializer)`): `key_serde` must
    /// write the key as the store's source topic was partitioned by.
    ///
    /// # Errors
    /// [`MetadataError`]: no such store in the topology, a key the serde
    /// refuses, no owner known now (not running, a rebalance), or the log.
    pub fn query_metadata_for_key<K>(
        &self,
        store: &str,
        key: &K,
        key_serde: &dyn Serde<K>,
    ) -> Result<KeyQueryMetadata, MetadataError> {
        self.locator.locate(&self.shared, store, key, key_serde)
    }

    /// A cheap, shareable read-only view of the application (state,
    /// watermarks) for the operating surface.
    pub fn handle(&self) -> AppHandle {
        let event_time_tracking = tracks_event_time(&self.topology, &self.config);
        AppHandle {
            locator: self.locator.clone(),
            shared: self.shared.clone(),
            application_id: self.config.application_id().into(),
            clock: self.clock.clone(),
            event_time_tracking,
        }
    }
}

/// A read-only view of a running application: what the HTTP endpoints and
/// metrics read. Cloning it is cheap; it keeps nothing running.
#[derive(Debug, Clone)]
pub struct AppHandle {
    shared: Arc<Shared>,
    locator: Arc<Locator>,
    application_id: Arc<str>,
    clock: Arc<dyn Clock>,
    event_time_tracking: bool,
}

impl AppHandle {
    /// As [`StreamsApp::query`]: what the store routes ask.
    ///
    /// # Errors
    /// As [`StreamsApp::query`].
    pub fn query<Q: StoreQuery>(
        &self,
        request: StateQueryRequest<Q>,
    ) -> Result<QueryAnswer<Q::Answer>, QueryError> {
        run_query(&self.shared, request)
    }

    /// As [`StreamsApp::query_metadata_for_key`].
    ///
    /// # Errors
    /// As [`StreamsApp::query_metadata_for_key`].
    pub fn query_metadata_for_key<K>(
        &self,
        store: &str,
        key: &K,
        key_serde: &dyn Serde<K>,
    ) -> Result<KeyQueryMetadata, MetadataError> {
        self.locator.locate(&self.shared, store, key, key_serde)
    }

    /// The current state.
    pub fn state(&self) -> AppState {
        self.shared.state()
    }

    /// The tracker's last `/watermarks` view, `None` before the engine has
    /// published one.
    pub fn watermarks(&self) -> Option<WatermarksSnapshot> {
        self.shared.snapshot.lock().expect("snapshot lock").clone()
    }

    /// The tasks the instance owns and keeps standby copies of.
    pub fn assignment(&self) -> Assignment {
        self.shared.assignment()
    }

    /// The application id.
    pub fn application_id(&self) -> &str {
        &self.application_id
    }

    /// The figures of `/metrics`, read now: the watermark lag is against
    /// the application's wall clock at this call, so it keeps growing while
    /// the watermark stands still.
    pub fn metrics(&self) -> MetricsSnapshot {
        let mut m = self
            .shared
            .metrics
            .snapshot(self.state(), self.event_time_tracking);
        if let Some(w) = &mut m.watermark {
            w.lag_ms = lag_at(w.current, self.clock.now().as_millis());
        }
        m.standby_lag = self.shared.standby_lag();
        m
    }

    /// See [`StreamsApp::summary`].
    pub fn summary(&self) -> RunSummary {
        RunSummary::new(&self.metrics(), self.watermarks().as_ref())
    }
}

impl<L: Log + 'static> Drop for StreamsApp<L> {
    /// Stops at once and commits nothing more (a crash, as far as the log
    /// can tell). Use [`StreamsApp::close`] for a graceful stop.
    fn drop(&mut self) {
        if let Some(handle) = self.engine.take() {
            self.shared.halt.store(true, Ordering::Release);
            let _ = handle.join();
        }
    }
}
