//! [`StreamsConfig`]: the settings a topology is built and run with.
//!
//! Typed, validated at construction; the YAML front end maps onto it.

use std::time::Duration;

/// `stoatflow.processing.timestamp-coordination-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CoordinationMode {
    /// Track watermarks only when the topology needs them.
    #[default]
    Auto,
    /// Always track.
    Enabled,
    /// Never track; refused for a topology with anything a watermark drives.
    Disabled,
}

/// How records reach processors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DispatchMode {
    /// LANE for event time, DIRECT otherwise.
    #[default]
    Auto,
    /// Ordered dispatch through key-affinity lanes.
    Lane,
    /// The processing-time fast path: no watermarks.
    Direct,
}

/// What happens to a record whose key or value does not deserialize
/// (Kafka Streams' `default.deserialization.exception.handler`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeserializationHandler {
    /// Stop with an error naming topic, position and serde.
    #[default]
    LogAndFail,
    /// Log, count `dropped.records.total{reason="deserialization_error"}` and go on.
    LogAndContinue,
}

/// What happens to a record a sink cannot hand to the log (Kafka Streams'
/// `default.production.exception.handler`). Today that is a record whose
/// dynamic sink picked a topic that does not exist; a record that does not
/// serialize still stops the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProductionHandler {
    /// Stop with an error naming the topic and the record (Kafka Streams'
    /// `FAIL`, its default handler's answer).
    #[default]
    Fail,
    /// Log, count `dropped.records.total{reason="missing_topic"}` and go on
    /// (Kafka Streams' `CONTINUE`).
    Continue,
}

/// Settings of one application.
#[derive(Debug, Clone)]
pub struct StreamsConfig {
    /// `application.id`: prefixes internal topics and changelogs.
    pub application_id: String,
    /// `timestamp-coordination-mode`.
    pub coordination: CoordinationMode,
    /// Dispatch mode.
    pub dispatch: DispatchMode,
    /// The deserialization handler.
    pub deserialization_handler: DeserializationHandler,
    /// The production handler.
    pub production_handler: ProductionHandler,
    /// `stoatflow.changelog.enabled`.
    pub changelog_enabled: bool,
    /// `stoatflow.watermark.max-out-of-orderness-ms`, for sources without a strategy.
    pub max_out_of_orderness: Duration,
    /// `default.dsl.store`: the engine of the DSL's stores whose supplier names none.
    /// `None` lets the runner decide: the runtime keeps them on disk when it runs on the
    /// embedded log in a directory and in memory otherwise; the test driver keeps them on
    /// disk when given a state directory and every store in memory otherwise.
    pub default_dsl_store: Option<StoreType>,
    /// `stoatflow.state.cache-max-bytes`: each persistent store's write-back cache bound
    /// (at least `MIN_CACHE_MAX_BYTES`).
    pub store_cache_max_bytes: usize,
    /// `stoatflow.state.block-cache-bytes`: each persistent store's engine block cache.
    pub store_block_cache_bytes: u64,
}

impl Default for StreamsConfig {
    fn default() -> Self {
        StreamsConfig {
            application_id: "stoatflow-app".into(),
            coordination: CoordinationMode::Auto,
            dispatch: DispatchMode::Auto,
            deserialization_handler: DeserializationHandler::LogAndFail,
            production_handler: ProductionHandler::Fail,
            changelog_enabled: true,
            max_out_of_orderness: Duration::from_millis(10_000),
            default_dsl_store: None,
            store_cache_max_bytes: stoatflow_state::DEFAULT_CACHE_MAX_BYTES,
            store_block_cache_bytes: stoatflow_state::DEFAULT_BLOCK_CACHE_BYTES,
        }
    }
}

impl StreamsConfig {
    /// Defaults with an application id.
    pub fn new(application_id: impl Into<String>) -> Self {
        StreamsConfig {
            application_id: application_id.into(),
            ..Self::default()
        }
    }

    /// Sets the deserialization handler.
    #[must_use]
    pub fn with_deserialization_handler(mut self, h: DeserializationHandler) -> Self {
        self.deserialization_handler = h;
        self
    }

    /// Sets the production handler.
    #[must_use]
    pub fn with_production_handler(mut self, h: ProductionHandler) -> Self {
        self.production_handler = h;
        self
    }

    /// Sets the coordination mode.
    #[must_use]
    pub fn with_coordination(mut self, mode: CoordinationMode) -> Self {
        self.coordination = mode;
        self
    }

    /// Sets the dispatch mode.
    #[must_use]
    pub fn with_dispatch(mut self, mode: DispatchMode) -> Self {
        self.dispatch = mode;
        self
    }

    /// Sets `default.dsl.store`.
    #[must_use]
    pub fn with_default_dsl_store(mut self, store_type: StoreType) -> Self {
        self.default_dsl_store = Some(store_type);
        self
    }

    /// Sets `stoatflow.state.cache-max-bytes`, each persistent store's write-back cache bound
    /// (raised to `MIN_CACHE_MAX_BYTES` if below it).
    #[must_use]
    pub fn with_store_cache_max_bytes(mut self, bytes: usize) -> Self {
        self.store_cache_max_bytes = bytes;
        self
    }

    /// Sets `stoatflow.state.block-cache-bytes`, each persistent store's engine block cache.
    #[must_use]
    pub fn with_store_block_cache_bytes(mut self, bytes: u64) -> Self {
        self.store_block_cache_bytes = bytes;
        self
    }

    /// Turns changelogs on or off.
    #[must_use]
    pub fn with_changelog(mut self, enabled: bool) -> Self {
        self.changelog_enabled = enabled;
        self
    }
}

/// The engine of a store (Kafka Streams' `default.dsl.store`: `rocksDB` | `in_memory`; here
/// `persistent` | `in_memory`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreType {
    /// Entries on local disk (the persistent engine), restored from the changelog only past
    /// the checkpoint of a clean close.
    Persistent,
    /// Entries in memory, restored from the whole changelog at every start.
    InMemory,
}

impl StoreType {
    /// The configuration value: `persistent` or `in_memory`.
    pub fn as_str(self) -> &'static str {
        match self {
            StoreType::Persistent => "persistent",
            StoreType::InMemory => "in_memory",
        }
    }

    /// Parses `persistent` (or Kafka Streams' `rocksDB`) and `in_memory`.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "persistent" | "rocksDB" | "rocksdb" => Some(StoreType::Persistent),
            "in_memory" => Some(StoreType::InMemory),
            _ => None,
        }
    }
}
