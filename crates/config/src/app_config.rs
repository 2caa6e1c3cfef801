//! [`AppConfig`]: the whole typed configuration of an application, built
//! from flattened entries.
//!
//! Owns each key's meaning: its type, range, default and where it lands
//! ([`RuntimeConfig`], the endpoints, the metrics level, the backend and
//! its pass-through client properties), and the checks across keys. Knows
//! nothing of where the entries came from beyond their [`Origin`].

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use stoatflow_runtime::{Backend, HostInfo, ProcessingGuarantee, RuntimeConfig, RuntimeError};
use stoatflow_streams::{
    CoordinationMode, DeserializationHandler, DispatchMode, ProductionHandler, StoreType,
};
use stoatflow_time::SourceTimePolicy;

use crate::error::{ConfigError, Origin};
use crate::keys::*;
use crate::redacted::{PropertyValue, REDACTED, is_secret_key};
use crate::source::{Entry, Raw};

/// Which log the application runs on (`stoatflow.backend`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackendSettings {
    /// `embedded` (the default): the embedded log in `stoatflow.embedded.dir`.
    Embedded {
        /// The directory.
        dir: PathBuf,
    },
    /// `memory`: the embedded log in memory; nothing survives the process.
    Memory,
    /// `kafka`: a Kafka cluster.
    Kafka(KafkaSettings),
}

/// The Kafka backend's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KafkaSettings {
    /// `bootstrap.servers`.
    pub bootstrap_servers: String,
    /// `client.id` (default: the application id).
    pub client_id: String,
    /// `replication.factor` of created topics (default: the broker's).
    pub replication_factor: Option<i32>,
    /// `kafka.*`: librdkafka properties passed through, the prefix removed.
    /// Secret ones print as `<redacted>`.
    pub properties: BTreeMap<String, PropertyValue>,
}

/// `runtime.endpoints.*`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EndpointsSettings {
    /// `runtime.endpoints.enabled` (true).
    pub enabled: bool,
    /// `runtime.endpoints.listen` (127.0.0.1:8080; port 0 picks a free one).
    pub listen: SocketAddr,
    /// `runtime.endpoints.allow-non-loopback` (false): without it a
    /// non-loopback `listen` is refused.
    pub allow_non_loopback: bool,
    /// `runtime.endpoints.info.show-watermarks` (true).
    pub info_show_watermarks: bool,
    /// `runtime.endpoints.max-connections` (32): more wait in the kernel's
    /// listen backlog; the listener stays one thread.
    pub max_connections: usize,
    /// `runtime.endpoints.request-timeout-ms` (5000): a connection not
    /// answered by then is closed.
    pub request_timeout: Duration,
    /// `runtime.endpoints.max-requests-per-second` (200; 0: no limit):
    /// answers past it wait.
    pub max_requests_per_second: u32,
    /// `runtime.endpoints.refresh-ms` (100): how long a response that reads
    /// the application is served before it is read again.
    pub refresh: Duration,
}

impl Default for EndpointsSettings {
    fn default() -> Self {
        EndpointsSettings {
            enabled: true,
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 8080)),
            allow_non_loopback: false,
            info_show_watermarks: true,
            max_connections: 32,
            request_timeout: Duration::from_secs(5),
            max_requests_per_second: 200,
            refresh: Duration::from_millis(100),
        }
    }
}

/// `metrics.recording.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum RecordingLevel {
    /// `info` (the default).
    #[default]
    Info,
    /// `debug`: adds the debug-level meters (`late.records.total`).
    Debug,
}

/// The whole configuration of an application.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AppConfig {
    /// What the runtime needs (streams settings, guarantee, barriers,
    /// lanes, the tracker's knobs). Its `backend` is the embedded log of
    /// [`AppConfig::backend`], or memory when that is Kafka (unused then).
    pub runtime: RuntimeConfig,
    /// Which log.
    pub backend: BackendSettings,
    /// The HTTP endpoints.
    pub endpoints: EndpointsSettings,
    /// `metrics.recording.level`.
    pub recording_level: RecordingLevel,
    /// Where each key that was set was written ([`AppConfig::origin`]).
    pub(crate) origins: BTreeMap<String, Origin>,
}

/// The accumulated settings, with where each was written.
struct Draft {
    runtime: RuntimeConfig,
    backend: Option<(String, Origin)>,
    embedded_dir: PathBuf,
    bootstrap: Option<String>,
    client_id: Option<String>,
    replication_factor: Option<i32>,
    properties: BTreeMap<String, PropertyValue>,
    endpoints: EndpointsSettings,
    recording_level: RecordingLevel,
    max_ooo_ms: i64,
    at: HashMap<&'static str, Origin>,
    /// Where each `kafka.*` property was written.
    property_at: BTreeMap<String, Origin>,
}

const YEAR_MS: u64 = 31_536_000_000;
/// `windowstore.changelog.additional.retention.ms` on Kafka when not set:
/// Kafka Streams' default, a day.
const KAFKA_WINDOWSTORE_ADDITIONAL_RETENTION: Duration = Duration::from_secs(86_400);

/// The most one store's cache may be given (64 GiB): a larger figure is a typo.
const MAX_STORE_MEMORY: u64 = 64 << 30;
const HOUR_MS: u64 = 3_600_000;

impl AppConfig {
    /// Builds the configuration from entries (later ones already override
    /// earlier ones).
    pub(crate) fn from_entries(entries: Vec<Entry>) -> Result<Self, ConfigError> {
        let mut d = Draft {
            // Required: a placeholder until the entries set it; `finish`
            // refuses a configuration that does not.
            runtime: RuntimeConfig::new("unset", Backend::InMemory),
            backend: None,
            embedded_dir: PathBuf::from("stoatflow-data"),
            bootstrap: None,
            client_id: None,
            replication_factor: None,
            properties: BTreeMap::new(),
            endpoints: EndpointsSettings::default(),
            recording_level: RecordingLevel::Info,
            max_ooo_ms: 10_000,
            at: HashMap::new(),
            property_at: BTreeMap::new(),
        };
        for e in &entries {
            d.apply(e)?;
        }
        d.finish()
    }
}

/// The names `processing.guarantee` accepts.
const GUARANTEES: &[(&str, ProcessingGuarantee)] = &[
    ("exactly_once_v2", ProcessingGuarantee::ExactlyOnceV2),
    ("at_least_once", ProcessingGuarantee::AtLeastOnce),
];

/// The names the deserialization handler accepts: ours and Kafka Streams' class names.
const DESER_HANDLERS: &[(&str, DeserializationHandler)] = &[
    ("log-and-fail", DeserializationHandler::LogAndFail),
    ("log-and-continue", DeserializationHandler::LogAndContinue),
    (
        "LogAndFailExceptionHandler",
        DeserializationHandler::LogAndFail,
    ),
    (
        "LogAndContinueExceptionHandler",
        DeserializationHandler::LogAndContinue,
    ),
];

/// The names the production handler accepts: ours and Kafka Streams' default
/// handler's class name (which fails).
const PRODUCTION_HANDLERS: &[(&str, ProductionHandler)] = &[
    ("fail", ProductionHandler::Fail),
    ("continue", ProductionHandler::Continue),
    ("DefaultProductionExceptionHandler", ProductionHandler::Fail),
];

/// The names `metrics.recording.level` accepts.
const RECORDING_LEVELS: &[(&str, RecordingLevel)] = &[
    ("info", RecordingLevel::Info),
    ("debug", RecordingLevel::Debug),
];

/// The backends there are.
const BACKENDS: &[(&str, &str)] = &[
    ("embedded", "embedded"),
    ("memory", "memory"),
    ("kafka", "kafka"),
];

/// The names the coordination mode accepts.
const COORDINATION_MODES: &[(&str, CoordinationMode)] = &[
    ("AUTO", CoordinationMode::Auto),
    ("ENABLED", CoordinationMode::Enabled),
    ("DISABLED", CoordinationMode::Disabled),
];

/// The names the dispatch mode accepts.
const DISPATCH_MODES: &[(&str, DispatchMode)] = &[
    ("AUTO", DispatchMode::Auto),
    ("LANE", DispatchMode::Lane),
    ("DIRECT", DispatchMode::Direct),
];

/// The names the default DSL store accepts (`rocksDB` as Kafka Streams spells it).
const DSL_STORES: &[(&str, StoreType)] = &[
    ("persistent", StoreType::Persistent),
    ("in_memory", StoreType::InMemory),
    ("rocksDB", StoreType::Persistent),
];

impl Draft {
    /// Sets the setting `e` names, from its value.
    fn apply(&mut self, e: &Entry) -> Result<(), ConfigError> {
        let Some(spec) = KEYS.iter().find(|s| s.key == e.key) else {
            return self.apply_other(e);
        };
        self.at.insert(spec.key, e.value_at.clone());
        let rt = &mut self.runtime;
        match spec.key {
            APPLICATION_ID => rt.streams.application_id = string(e)?,
            GUARANTEE => rt.guarantee = choice(e, GUARANTEES)?,
            DESER_HANDLER => rt.streams.deserialization_handler = choice(e, DESER_HANDLERS)?,
            PRODUCTION_HANDLER => {
                rt.streams.production_handler = choice(e, PRODUCTION_HANDLERS)?;
            }
            BOOTSTRAP => self.bootstrap = Some(string(e)?),
            CLIENT_ID => self.client_id = Some(string(e)?),
            REPLICATION => self.replication_factor = Some(int(e, 1, 32_767)? as i32),
            RECORDING_LEVEL => self.recording_level = choice(e, RECORDING_LEVELS)?,
            ENDPOINTS_ENABLED => self.endpoints.enabled = boolean(e)?,
            LISTEN => self.endpoints.listen = address(e)?,
            ALLOW_NON_LOOPBACK => self.endpoints.allow_non_loopback = boolean(e)?,
            SHOW_WATERMARKS => self.endpoints.info_show_watermarks = boolean(e)?,
            MAX_CONNECTIONS => self.endpoints.max_connections = int(e, 1, 65_536)? as usize,
            REQUEST_TIMEOUT => self.endpoints.request_timeout = millis(e, 1, 600_000)?,
            MAX_REQUESTS => self.endpoints.max_requests_per_second = int(e, 0, 1_000_000)? as u32,
            REFRESH => self.endpoints.refresh = millis(e, 0, 60_000)?,
            BACKEND => {
                let name: &str = choice(e, BACKENDS)?;
                self.backend = Some((name.to_owned(), e.value_at.clone()));
            }
            EMBEDDED_DIR => self.embedded_dir = PathBuf::from(string(e)?),
            CHANGELOG => rt.streams.changelog_enabled = boolean(e)?,
            BARRIER_INTERVAL => rt.barrier.interval = millis(e, 1, HOUR_MS)?,
            BARRIER_FACTOR => rt.barrier.interval_factor = float(e, 1.0, 100.0)?,
            BARRIER_MIN => rt.barrier.min_interval = millis(e, 1, HOUR_MS)?,
            BARRIER_MAX => rt.barrier.max_interval = millis(e, 1, HOUR_MS)?,
            COORDINATION => rt.streams.coordination = choice(e, COORDINATION_MODES)?,
            DISPATCH => rt.streams.dispatch = choice(e, DISPATCH_MODES)?,
            LANES => rt.lanes = int(e, 1, 1024)? as usize,
            INSTANCE_ID => rt.instance_id = string(e)?,
            POLL_WAIT => rt.poll_wait = millis(e, 1, 60_000)?,
            RESTORE_STALL => rt.restore_stall_timeout = millis(e, 1, 24 * HOUR_MS)?,
            PURGE_INTERVAL => rt.purge_interval = millis(e, 1, 24 * HOUR_MS)?,
            FROM_KAFKA_STREAMS => rt.migration_from_kafka_streams = boolean(e)?,
            STANDBY_REPLICAS => rt.standby_replicas = int(e, 0, 16)? as u32,
            APPLICATION_SERVER => rt.application_server = Some(host_port(e)?),
            WINDOWSTORE_ADDITIONAL_RETENTION => {
                rt.windowstore_changelog_additional_retention = millis(e, 0, YEAR_MS)?
            }
            MAX_OOO => {
                let ms = int(e, 0, YEAR_MS)?;
                self.max_ooo_ms = ms as i64;
                rt.streams.max_out_of_orderness = Duration::from_millis(ms);
            }
            IDLENESS => rt.tracker.default_idleness = millis(e, 0, YEAR_MS)?,
            AUTO_INTERVAL => rt.tracker.auto_interval = millis(e, 1, HOUR_MS)?,
            PREVIEW_AFTER => rt.tracker.preview_after = millis(e, 0, HOUR_MS)?,
            STATE_DIR => rt.state_dir = Some(PathBuf::from(string(e)?)),
            DEFAULT_DSL_STORE => rt.streams.default_dsl_store = Some(choice(e, DSL_STORES)?),
            STORE_CACHE_MAX_BYTES => {
                rt.streams.store_cache_max_bytes = int(
                    e,
                    stoatflow_streams::MIN_CACHE_MAX_BYTES as u64,
                    MAX_STORE_MEMORY,
                )? as usize
            }
            STORE_BLOCK_CACHE_BYTES => {
                rt.streams.store_block_cache_bytes = int(e, 0, MAX_STORE_MEMORY)?
            }
            other => unreachable!("key {other} is in KEYS but has no meaning"),
        }
        Ok(())
    }

    /// A `kafka.*` pass-through property, a prefix of known keys written as
    /// a value, or an unknown key.
    fn apply_other(&mut self, e: &Entry) -> Result<(), ConfigError> {
        if let Some(property) = e.key.strip_prefix(KAFKA_PREFIX).filter(|p| !p.is_empty()) {
            let value = match &e.value {
                Raw::Scalar(s) => s.clone(),
                Raw::Null | Raw::Sequence => return Err(wrong(e, "a string")),
            };
            self.properties
                .insert(property.to_owned(), PropertyValue::for_key(property, value));
            self.property_at.insert(e.key.clone(), e.value_at.clone());
            return Ok(());
        }
        let prefix = format!("{}.", e.key);
        if KEYS.iter().any(|s| s.key.starts_with(&prefix)) || e.key == "kafka" {
            return Err(wrong(e, "a mapping of keys"));
        }
        Err(ConfigError::UnknownKey {
            key: e.key.clone(),
            at: e.key_at.clone(),
            suggestion: suggest(&e.key),
        })
    }

    fn at(&self, key: &'static str) -> Origin {
        self.at.get(key).cloned().unwrap_or(Origin::Default)
    }

    fn inapplicable(&self, key: &'static str, backend: &str) -> Result<(), ConfigError> {
        match self.at.get(key) {
            Some(at) => Err(ConfigError::Inapplicable {
                key: key.into(),
                at: at.clone(),
                reason: format!(
                    "{BACKEND} is {backend} (set {BACKEND} to the backend it belongs to, or remove it)"
                ),
            }),
            None => Ok(()),
        }
    }

    /// The configuration the entries make, once every check of a key and
    /// between keys holds.
    fn finish(mut self) -> Result<AppConfig, ConfigError> {
        self.runtime.tracker.default_policy = self.default_policy()?;
        self.check_listen()?;
        let backend = self.backend_settings()?;
        self.validate_runtime()?;
        // The last check: an error about a key written comes before the
        // one about the key left out.
        self.require_application_id()?;
        let mut origins = std::mem::take(&mut self.property_at);
        origins.extend(self.at.iter().map(|(k, at)| ((*k).to_owned(), at.clone())));
        Ok(AppConfig {
            runtime: self.runtime,
            backend,
            endpoints: self.endpoints,
            recording_level: self.recording_level,
            origins,
        })
    }

    /// The sources' default time policy, from the largest out-of-orderness.
    fn default_policy(&self) -> Result<SourceTimePolicy, ConfigError> {
        SourceTimePolicy::from_max_out_of_orderness_ms(self.max_ooo_ms).map_err(|e| {
            ConfigError::OutOfRange {
                key: MAX_OOO.into(),
                at: self.at.get(MAX_OOO).cloned().unwrap_or(Origin::Default),
                value: self.max_ooo_ms.to_string(),
                reason: e.to_string(),
            }
        })
    }

    /// The endpoints listen on loopback unless told otherwise.
    fn check_listen(&self) -> Result<(), ConfigError> {
        let listen = self.endpoints.listen;
        if !listen.ip().is_loopback() && !self.endpoints.allow_non_loopback {
            return Err(ConfigError::OutOfRange {
                key: LISTEN.into(),
                at: self.at(LISTEN),
                value: listen.to_string(),
                reason: format!(
                    "not a loopback address; set {ALLOW_NON_LOOPBACK}: true to expose the endpoints beyond this machine"
                ),
            });
        }
        Ok(())
    }

    /// The backend's settings (embedded by default), refusing the keys
    /// another backend takes; sets the runtime's backend.
    fn backend_settings(&mut self) -> Result<BackendSettings, ConfigError> {
        let (name, backend_at) = self
            .backend
            .clone()
            .unwrap_or_else(|| ("embedded".into(), Origin::Default));
        let kafka_keys = [BOOTSTRAP, CLIENT_ID, REPLICATION];
        Ok(match name.as_str() {
            "embedded" => {
                for key in kafka_keys {
                    self.inapplicable(key, &name)?;
                }
                self.no_pass_through(&name, &backend_at)?;
                self.runtime.backend = Backend::Embedded {
                    dir: self.embedded_dir.clone(),
                };
                BackendSettings::Embedded {
                    dir: self.embedded_dir.clone(),
                }
            }
            "memory" => {
                for key in kafka_keys.into_iter().chain([EMBEDDED_DIR]) {
                    self.inapplicable(key, &name)?;
                }
                self.no_pass_through(&name, &backend_at)?;
                self.runtime.backend = Backend::InMemory;
                BackendSettings::Memory
            }
            _ => self.kafka_settings(&name, &backend_at)?,
        })
    }

    /// The Kafka backend's settings: the brokers are required.
    fn kafka_settings(
        &mut self,
        name: &str,
        backend_at: &Origin,
    ) -> Result<BackendSettings, ConfigError> {
        self.inapplicable(EMBEDDED_DIR, name)?;
        let bootstrap = self.bootstrap.clone().ok_or_else(|| ConfigError::Missing {
            key: BOOTSTRAP.into(),
            reason: format!("{BACKEND}: kafka (at {backend_at}) needs the brokers to connect to"),
        })?;
        self.runtime.backend = Backend::InMemory;
        // A broker judges a changelog's retention against the wall
        // clock, not event time: Kafka Streams' day unless set.
        if !self.at.contains_key(WINDOWSTORE_ADDITIONAL_RETENTION) {
            self.runtime.windowstore_changelog_additional_retention =
                KAFKA_WINDOWSTORE_ADDITIONAL_RETENTION;
        }
        Ok(BackendSettings::Kafka(KafkaSettings {
            bootstrap_servers: bootstrap,
            client_id: self
                .client_id
                .clone()
                .unwrap_or_else(|| self.runtime.application_id().to_owned()),
            replication_factor: self.replication_factor,
            properties: std::mem::take(&mut self.properties),
        }))
    }

    /// The runtime's own checks, named by the key they are about.
    fn validate_runtime(&self) -> Result<(), ConfigError> {
        self.runtime.validate().map_err(|e| match e {
            RuntimeError::Config { key, value, reason } => {
                let at = KEYS
                    .iter()
                    .find(|s| s.key == key)
                    .map_or(Origin::Default, |s| self.at(s.key));
                ConfigError::OutOfRange {
                    key,
                    at,
                    value,
                    reason,
                }
            }
            other => ConfigError::OutOfRange {
                key: "configuration".into(),
                at: Origin::Default,
                value: String::new(),
                reason: other.to_string(),
            },
        })
    }

    /// `application.id` was written: it has no default.
    fn require_application_id(&self) -> Result<(), ConfigError> {
        if self.at.contains_key(APPLICATION_ID) {
            return Ok(());
        }
        Err(ConfigError::Missing {
            key: APPLICATION_ID.into(),
            reason: format!(
                "every application names itself, as in Kafka Streams: the id is its \
                 consumer group, its transactional id's prefix and the prefix of its \
                 internal topics, so a default would let two applications share them \
                 (write {APPLICATION_ID}: my-app, or set {})",
                crate::source::env_name(APPLICATION_ID)
            ),
        })
    }

    fn no_pass_through(&self, backend: &str, at: &Origin) -> Result<(), ConfigError> {
        match self.properties.keys().next() {
            Some(p) => Err(ConfigError::Inapplicable {
                key: format!("{KAFKA_PREFIX}{p}"),
                at: at.clone(),
                reason: format!(
                    "Kafka client properties need {BACKEND}: kafka, and it is {backend}"
                ),
            }),
            None => Ok(()),
        }
    }
}

/// What was written, for an error message; secret keys print redacted.
fn shown(e: &Entry) -> String {
    match &e.value {
        _ if is_secret_key(&e.key) => REDACTED.into(),
        Raw::Scalar(s) => format!("{s:?}"),
        Raw::Null => "nothing (null)".into(),
        Raw::Sequence => "a sequence".into(),
    }
}

fn wrong(e: &Entry, expected: &str) -> ConfigError {
    ConfigError::WrongType {
        key: e.key.clone(),
        at: e.value_at.clone(),
        expected: expected.into(),
        found: shown(e),
    }
}

fn out_of_range(e: &Entry, reason: String) -> ConfigError {
    ConfigError::OutOfRange {
        key: e.key.clone(),
        at: e.value_at.clone(),
        value: shown(e),
        reason,
    }
}

fn scalar<'e>(e: &'e Entry, expected: &str) -> Result<&'e str, ConfigError> {
    match &e.value {
        Raw::Scalar(s) => Ok(s.trim()),
        Raw::Null | Raw::Sequence => Err(wrong(e, expected)),
    }
}

/// A `host:port` another instance can reach this one at.
fn host_port(e: &Entry) -> Result<String, ConfigError> {
    let s = scalar(e, "host:port")?;
    HostInfo::parse(s).map_err(|reason| out_of_range(e, reason))?;
    Ok(s.to_owned())
}

fn string(e: &Entry) -> Result<String, ConfigError> {
    let s = scalar(e, "a string")?;
    if s.is_empty() {
        return Err(out_of_range(e, "must not be empty".into()));
    }
    Ok(s.to_owned())
}

fn boolean(e: &Entry) -> Result<bool, ConfigError> {
    match scalar(e, "a boolean (true or false)")? {
        "true" | "True" | "TRUE" => Ok(true),
        "false" | "False" | "FALSE" => Ok(false),
        _ => Err(wrong(e, "a boolean (true or false)")),
    }
}

fn int(e: &Entry, min: u64, max: u64) -> Result<u64, ConfigError> {
    let s = scalar(e, "an integer")?;
    let n: i128 = s
        .replace('_', "")
        .parse()
        .map_err(|_| wrong(e, "an integer"))?;
    if n < i128::from(min) || n > i128::from(max) {
        return Err(out_of_range(e, format!("must be between {min} and {max}")));
    }
    Ok(n as u64)
}

fn millis(e: &Entry, min: u64, max: u64) -> Result<Duration, ConfigError> {
    int(e, min, max).map(Duration::from_millis)
}

fn float(e: &Entry, min: f64, max: f64) -> Result<f64, ConfigError> {
    let x: f64 = scalar(e, "a number")?
        .parse()
        .map_err(|_| wrong(e, "a number"))?;
    if !(x.is_finite() && x >= min && x <= max) {
        return Err(out_of_range(e, format!("must be between {min} and {max}")));
    }
    Ok(x)
}

/// One of `options` by name, any case, `-` and `_` alike.
fn choice<T: Copy>(e: &Entry, options: &[(&str, T)]) -> Result<T, ConfigError> {
    let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
    let expected = format!("one of {}", names.join(", "));
    let s = scalar(e, &expected)?;
    let norm = |x: &str| x.to_ascii_lowercase().replace('-', "_");
    options
        .iter()
        .find(|(n, _)| norm(n) == norm(s))
        .map(|(_, v)| *v)
        .ok_or_else(|| out_of_range(e, format!("must be {expected}")))
}

fn address(e: &Entry) -> Result<SocketAddr, ConfigError> {
    let s = scalar(e, "an address ip:port")?;
    let parsed = match s.strip_prefix("localhost:") {
        Some(port) => port
            .parse::<u16>()
            .ok()
            .map(|p| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), p)),
        None => s.parse().ok(),
    };
    parsed.ok_or_else(|| wrong(e, "an address ip:port (or localhost:port)"))
}
