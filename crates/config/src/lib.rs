//! # stoatflow-config
//!
//! Loads an application's configuration (docs/operating.md#configuration)
//! from a YAML file, a string map and environment overrides
//! into one typed [`AppConfig`]: the runtime's [`RuntimeConfig`]
//! (streams settings, guarantee, barriers, lanes, the tracker's knobs),
//! the HTTP endpoints, the metrics recording level, and the backend
//! (`embedded` in a directory, `memory`, or `kafka` with `bootstrap.servers`
//! and `kafka.*` librdkafka properties passed through).
//!
//! A short tour:
//! - [`ConfigLoader`]: layers (`yaml_file`, `yaml_str`, `map`, `env`),
//!   later ones overriding earlier ones, then `build`.
//! - [`AppConfig::from_yaml_file`]: a file with the environment on top.
//! - [`KEYS`]: every key, what it takes and its default; [`env_name`] is
//!   the environment variable of a key
//!   (`STOATFLOW_WATERMARK_MAX_OUT_OF_ORDERNESS_MS`).
//! - [`ConfigError`]: unknown key (with a did-you-mean), wrong type, out of
//!   range, missing, each naming the key and its [`Origin`] (`file:line:column`);
//!   a `STOATFLOW_` variable that sets no key, naming it (the project's own,
//!   [`PROJECT_ENV_VARS`], excepted).
//! - A YAML text is refused whole when it is larger than [`MAX_FILE_BYTES`],
//!   nests deeper than [`MAX_NESTING_DEPTH`], holds a NUL byte, a second
//!   document, the same key twice (a leaf or a mapping), or no settings at
//!   all; a leading byte-order mark is dropped.
//! - [`Redacted`], [`PropertyValue`]: secrets (passwords, tokens, key
//!   material) never appear in `Debug`, errors or logs.
//! - [`AppConfig::effective`]: every key's value as the application runs
//!   with it and its [`Origin`], secrets redacted (`stoatflow config`).
//!
//! Checks that need the topology (docs/validation.md#refusals: `DIRECT` dispatch or
//! `DISABLED` coordination with something the watermark drives) run where
//! the topology is known, when the application is built.
//!
//! ```
//! use stoatflow_config::{AppConfig, BackendSettings, ConfigLoader};
//! let yaml = "\
//! application.id: orders-app
//! stoatflow:
//!   backend: kafka
//!   watermark:
//!     idleness-timeout-ms: 120000
//! bootstrap.servers: broker:9092
//! kafka:
//!   sasl.password: hunter2
//! ";
//! let config = ConfigLoader::new().yaml_str("app.yaml", yaml)?.build()?;
//! assert!(matches!(config.backend, BackendSettings::Kafka(_)));
//! assert!(!format!("{config:?}").contains("hunter2"));
//! let err = ConfigLoader::new()
//!     .yaml_str("app.yaml", "stoatflow:\n  watermark:\n    idleness-timeout: 5\n")?
//!     .build()
//!     .unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "unknown configuration key stoatflow.watermark.idleness-timeout at app.yaml:3:5; \
//!      did you mean stoatflow.watermark.idleness-timeout-ms?"
//! );
//! # Ok::<(), stoatflow_config::ConfigError>(())
//! ```

mod app_config;
mod effective;
mod error;
mod keys;
mod loader;
mod project_vars;
mod redacted;
mod source;
mod text;

pub use app_config::{
    AppConfig, BackendSettings, EndpointsSettings, KafkaSettings, RecordingLevel,
};
pub use effective::Setting;
pub use error::{ConfigError, Origin};
pub use keys::{KAFKA_STREAMS_NAMES, KEYS, KafkaStreamsName, KeySpec, suggest};
pub use loader::ConfigLoader;
pub use project_vars::{ENV_PREFIX, PROJECT_ENV_VARS};
pub use redacted::{PropertyValue, REDACTED, Redacted, is_secret_key};
pub use source::{KAFKA_ENV_PREFIX, MAX_NESTING_DEPTH, env_name};
pub use text::MAX_FILE_BYTES;

/// The runtime's settings, which [`AppConfig::runtime`] holds.
pub use stoatflow_runtime::RuntimeConfig;
