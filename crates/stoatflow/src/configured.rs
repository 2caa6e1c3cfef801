//! [`App`]: an application whose backend one configuration key chooses
//! (`stoatflow.backend`: the embedded log in a directory, memory, or Kafka).
//!
//! Owns turning an [`AppConfig`] into a running [`StreamsApp`] on the right
//! log, and the endpoints' listener settings. Knows no key's meaning (the
//! config crate typed them) and names keys only in its errors; the runtime
//! never learns which backend it runs on.

use std::sync::Arc;
use std::time::Duration;

use stoatflow_config::{AppConfig, BackendSettings, ConfigError, EndpointsSettings};
use stoatflow_log::{EmbeddedLog, Log, LogError, TopicShape, TopicSpec};
use stoatflow_runtime::{
    AppHandle, AppState, HandlerOutcome, RunSummary, RuntimeError, StreamsApp,
};
use stoatflow_server::{BoundListener, HttpServer, ServerError};
use stoatflow_streams::Topology;
use stoatflow_time::WatermarksSnapshot;

/// A topology running on the backend its configuration names.
///
/// ```
/// use std::time::Duration;
/// use stoatflow::*;
///
/// let mut builder = StreamsBuilder::new();
/// builder
///     .stream("words", Consumed::with(Serdes::string(), Serdes::string()))
///     .to("copies", Produced::with(Serdes::string(), Serdes::string()));
/// let config = config::ConfigLoader::new()
///     .yaml_str("app.yaml", "application.id: words\nstoatflow.backend: memory\n")?
///     .build()?;
/// let mut app = App::from_config(builder.build()?, &config)?;
/// app.ensure_topic(&log::TopicSpec::new("words", 1))?;
/// app.ensure_topic(&log::TopicSpec::new("copies", 1))?;
/// app.start()?;
/// assert!(app.close(Duration::from_secs(10)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum App {
    /// On the embedded log (a directory, or memory).
    Embedded(StreamsApp<EmbeddedLog>),
    /// On a Kafka cluster.
    #[cfg(feature = "kafka")]
    Kafka(StreamsApp<stoatflow_kafka::KafkaLog>),
}

/// Why an application could not be built from its configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppError {
    /// A setting the backend refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The runtime refused the settings or the topology (docs/validation.md).
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The log could not be opened or reached.
    #[error(transparent)]
    Log(#[from] LogError),
    /// The endpoints could not listen where the key says.
    #[error("{key}: {source}")]
    Endpoints {
        /// The configuration key (`runtime.endpoints.listen`).
        key: &'static str,
        /// Why.
        #[source]
        source: ServerError,
    },
}

/// The key the endpoints' address is set by.
const LISTEN_KEY: &str = "runtime.endpoints.listen";

macro_rules! each {
    ($self:expr, $app:ident => $body:expr) => {
        match $self {
            App::Embedded($app) => $body,
            #[cfg(feature = "kafka")]
            App::Kafka($app) => $body,
        }
    };
}

impl App {
    /// Builds the application on the backend `config` names; checks the
    /// topology against the settings (DIRECT dispatch or DISABLED
    /// coordination with anything the watermark drives is refused here).
    ///
    /// # Errors
    /// [`AppError`]: a refused setting or topology, an embedded directory
    /// that cannot be opened, a Kafka cluster that cannot be reached, or the
    /// `kafka` backend in a build without the `kafka` feature.
    pub fn from_config(topology: Topology, config: &AppConfig) -> Result<Self, AppError> {
        let runtime = config.runtime.clone();
        match &config.backend {
            BackendSettings::Embedded { .. } | BackendSettings::Memory => {
                Ok(App::Embedded(StreamsApp::new(topology, runtime)?))
            }
            BackendSettings::Kafka(kafka) => kafka_app(topology, config, kafka),
            other => Err(AppError::Config(ConfigError::Refused {
                key: "stoatflow.backend".into(),
                reason: format!("this build does not know the backend {other:?}"),
            })),
        }
    }

    /// Creates `spec`'s topic, or checks the shape of the one there.
    ///
    /// # Errors
    /// [`LogError`] naming the topic.
    pub fn ensure_topic(&self, spec: &TopicSpec) -> Result<(), LogError> {
        each!(self, app => app.log().ensure_topic(spec))
    }

    /// The shape of topic `name`, `None` if it does not exist.
    ///
    /// # Errors
    /// [`LogError`] naming the topic.
    pub fn describe_topic(&self, name: &str) -> Result<Option<TopicShape>, LogError> {
        each!(self, app => app.log().describe_topic(name))
    }

    /// See [`StreamsApp::start`].
    ///
    /// # Errors
    /// [`RuntimeError::NotStartable`] unless CREATED.
    pub fn start(&mut self) -> Result<(), RuntimeError> {
        each!(self, app => app.start())
    }

    /// See [`StreamsApp::close`].
    pub fn close(&mut self, timeout: Duration) -> bool {
        each!(self, app => app.close(timeout))
    }

    /// See [`StreamsApp::run`]: starts, runs until SIGINT or SIGTERM, then
    /// closes gracefully.
    ///
    /// # Errors
    /// The start error, the error that stopped the application, or a close
    /// that did not end in time.
    pub fn run(self) -> Result<(), RuntimeError> {
        each!(self, app => app.run())
    }

    /// See [`StreamsApp::set_state_listener`]: `listener(new, old)` on
    /// every state change.
    pub fn set_state_listener(
        &self,
        listener: impl Fn(AppState, AppState) + Send + Sync + 'static,
    ) {
        each!(self, app => app.set_state_listener(listener))
    }

    /// See [`StreamsApp::set_uncaught_error_handler`]: what `handler`
    /// returns for an error that stops the engine decides what follows.
    pub fn set_uncaught_error_handler<R: HandlerOutcome>(
        &self,
        handler: impl Fn(&RuntimeError) -> R + Send + Sync + 'static,
    ) {
        each!(self, app => app.set_uncaught_error_handler(handler))
    }

    /// See [`StreamsApp::state`].
    pub fn state(&self) -> AppState {
        each!(self, app => app.state())
    }

    /// See [`StreamsApp::error`].
    pub fn error(&self) -> Option<Arc<RuntimeError>> {
        each!(self, app => app.error())
    }

    /// See [`StreamsApp::wait_for_state`].
    pub fn wait_for_state(&self, target: AppState, timeout: Duration) -> AppState {
        each!(self, app => app.wait_for_state(target, timeout))
    }

    /// See [`StreamsApp::wait_until_caught_up`].
    ///
    /// # Errors
    /// The log's error, or the one that stopped the application.
    pub fn wait_until_caught_up(&self, timeout: Duration) -> Result<bool, RuntimeError> {
        each!(self, app => app.wait_until_caught_up(timeout))
    }

    /// See [`StreamsApp::wait_until_consumed`].
    ///
    /// # Errors
    /// The log's error, or the one that stopped the application.
    pub fn wait_until_consumed(&self, timeout: Duration) -> Result<bool, RuntimeError> {
        each!(self, app => app.wait_until_consumed(timeout))
    }

    /// See [`StreamsApp::watermarks`].
    pub fn watermarks(&self) -> Option<WatermarksSnapshot> {
        each!(self, app => app.watermarks())
    }

    /// See [`StreamsApp::summary`]: records in and out, drops by reason,
    /// the final watermark and the partition that held it, with why.
    pub fn summary(&self) -> RunSummary {
        each!(self, app => app.summary())
    }

    /// The read-only view the endpoints serve.
    pub fn handle(&self) -> AppHandle {
        each!(self, app => app.handle())
    }

    /// Starts the HTTP endpoints as `config.endpoints` says (`None` when
    /// `runtime.endpoints.enabled` is off), exporting metrics at
    /// `metrics.recording.level`: [`App::bind_endpoints`], then
    /// [`App::serve_endpoints`].
    ///
    /// # Errors
    /// As [`App::bind_endpoints`].
    pub fn start_endpoints(&self, config: &AppConfig) -> Result<Option<HttpServer>, AppError> {
        match Self::bind_endpoints(config)? {
            Some(bound) => self.serve_endpoints(bound).map(Some),
            None => Ok(None),
        }
    }

    /// Binds the endpoints' address (`None` when `runtime.endpoints.enabled`
    /// is off) without an application yet: call it before
    /// [`App::from_config`] and before creating topics, so that a taken
    /// address fails the start before anything is created.
    ///
    /// # Errors
    /// [`AppError::Endpoints`] naming `runtime.endpoints.listen`: the
    /// address cannot be bound, or is not loopback without
    /// `runtime.endpoints.allow-non-loopback`.
    pub fn bind_endpoints(config: &AppConfig) -> Result<Option<BoundListener>, AppError> {
        let settings: &EndpointsSettings = &config.endpoints;
        if !settings.enabled {
            return Ok(None);
        }
        let level = match config.recording_level {
            stoatflow_config::RecordingLevel::Debug => stoatflow_server::RecordingLevel::Debug,
            _ => stoatflow_server::RecordingLevel::Info,
        };
        let mut builder = HttpServer::builder()
            .listen(settings.listen)
            .info_show_watermarks(settings.info_show_watermarks)
            .allow_non_loopback(settings.allow_non_loopback)
            .recording_level(level)
            .max_connections(settings.max_connections)
            .request_timeout(settings.request_timeout)
            .max_requests_per_second(settings.max_requests_per_second)
            .refresh(settings.refresh);
        if let BackendSettings::Embedded { dir } = &config.backend {
            builder = builder.address_file(dir.join(crate::log_routes::ENDPOINT_FILE));
        }
        builder
            .bind()
            .map(Some)
            .map_err(|source| AppError::Endpoints {
                key: LISTEN_KEY,
                source,
            })
    }

    /// Serves this application's endpoints on `bound` (from
    /// [`App::bind_endpoints`]); on the embedded log, with the log routes
    /// and, for a directory, its address in [`crate::ENDPOINT_FILE`] there.
    ///
    /// # Errors
    /// [`AppError::Endpoints`] when the listener's thread cannot start or
    /// the address file cannot be written.
    pub fn serve_endpoints(&self, bound: BoundListener) -> Result<HttpServer, AppError> {
        self.serve_endpoints_with(bound, &crate::QueryableStores::new())
    }

    /// [`App::serve_endpoints`], with the store routes answering from
    /// `stores` (docs/operating.md#store-routes).
    ///
    /// # Errors
    /// As [`App::serve_endpoints`].
    pub fn serve_endpoints_with(
        &self,
        bound: BoundListener,
        stores: &crate::QueryableStores,
    ) -> Result<HttpServer, AppError> {
        let bound = bound.stores(stores.access(self.handle()));
        let bound = match self {
            App::Embedded(app) => bound.log(Arc::new(crate::log_routes::EmbeddedLogAccess::new(
                app.log().clone(),
                app.handle().application_id(),
            ))),
            #[cfg(feature = "kafka")]
            App::Kafka(_) => bound,
        };
        bound
            .serve(Arc::new(self.handle()))
            .map_err(|source| AppError::Endpoints {
                key: LISTEN_KEY,
                source,
            })
    }
}

#[cfg(feature = "kafka")]
fn kafka_app(
    topology: Topology,
    config: &AppConfig,
    kafka: &stoatflow_config::KafkaSettings,
) -> Result<App, AppError> {
    let mut client = stoatflow_kafka::KafkaConfig::new(kafka.bootstrap_servers.clone())
        .with_client_id(kafka.client_id.clone());
    client.replication_factor = kafka.replication_factor;
    for (key, value) in &kafka.properties {
        client = client
            .with_property(key.clone(), value.expose())
            .map_err(|e| match e {
                LogError::Config { reason, .. } => AppError::Config(ConfigError::Refused {
                    key: format!("kafka.{key}"),
                    reason,
                }),
                other => AppError::Log(other),
            })?;
    }
    let log = stoatflow_kafka::KafkaLog::connect(client)?;
    Ok(App::Kafka(StreamsApp::with_log(
        topology,
        config.runtime.clone(),
        Arc::new(log),
    )?))
}

#[cfg(not(feature = "kafka"))]
fn kafka_app(
    _topology: Topology,
    _config: &AppConfig,
    _kafka: &stoatflow_config::KafkaSettings,
) -> Result<App, AppError> {
    Err(AppError::Config(ConfigError::Refused {
        key: "stoatflow.backend".into(),
        reason: "kafka: this build of stoatflow has no Kafka support (enable the `kafka` feature)"
            .into(),
    }))
}
