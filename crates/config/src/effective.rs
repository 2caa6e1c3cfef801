//! [`Setting`]: the effective configuration key by key, each value as the
//! application runs with it and where it came from (a file's
//! `line:column`, an environment variable, a map, or the default), for
//! `stoatflow config`.
//!
//! Owns rendering a typed [`AppConfig`] back into one line per key, and
//! the rule that secrets print as [`REDACTED`]: every `kafka.*` property
//! whose name [`is_secret_key`] marks. Knows nothing of how keys are
//! parsed: `app_config` does.

use std::time::Duration;

use stoatflow_runtime::ProcessingGuarantee;
use stoatflow_streams::{
    CoordinationMode, DeserializationHandler, DispatchMode, ProductionHandler,
};

use crate::app_config::{AppConfig, BackendSettings, RecordingLevel};
use crate::error::Origin;
use crate::keys::*;
use crate::redacted::{PropertyValue, REDACTED};

/// One key of the effective configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Setting {
    /// The dotted key (`kafka.` and the property for pass-through ones).
    pub key: String,
    /// Its value as the application runs with it; [`REDACTED`] for a
    /// secret.
    pub value: String,
    /// Where it was written; [`Origin::Default`] for a default.
    pub origin: Origin,
}

impl AppConfig {
    /// Every key that applies to this configuration's backend, in the
    /// order of [`KEYS`], then the `kafka.*` properties by name: its value
    /// (defaults resolved: the machine's lane count, the client id from
    /// the application id, the state directory under the embedded one)
    /// and its origin. Secrets are [`REDACTED`].
    pub fn effective(&self) -> Vec<Setting> {
        let mut out: Vec<Setting> = KEYS
            .iter()
            .filter_map(|spec| {
                Some(Setting {
                    key: spec.key.to_owned(),
                    value: self.value_of(spec.key)?,
                    origin: self.origin(spec.key),
                })
            })
            .collect();
        if let BackendSettings::Kafka(k) = &self.backend {
            for (property, value) in &k.properties {
                let key = format!("{KAFKA_PREFIX}{property}");
                out.push(Setting {
                    value: match value {
                        PropertyValue::Plain(s) => s.clone(),
                        PropertyValue::Secret(_) => REDACTED.to_owned(),
                    },
                    origin: self.origin(&key),
                    key,
                });
            }
        }
        out
    }

    /// Where `key` was set, [`Origin::Default`] if nowhere.
    pub fn origin(&self, key: &str) -> Origin {
        self.origins.get(key).cloned().unwrap_or(Origin::Default)
    }

    /// `key`'s value, `None` where the backend makes it inapplicable.
    fn value_of(&self, key: &str) -> Option<String> {
        if let Some(name) = self.choice_name(key) {
            return Some(name.to_owned());
        }
        if let Some(value) = self.endpoints_value(key) {
            return Some(value);
        }
        let rt = &self.runtime;
        let kafka = match &self.backend {
            BackendSettings::Kafka(k) => Some(k),
            _ => None,
        };
        Some(match key {
            APPLICATION_ID => rt.application_id().to_owned(),
            BOOTSTRAP => kafka?.bootstrap_servers.clone(),
            CLIENT_ID => kafka?.client_id.clone(),
            REPLICATION => kafka?
                .replication_factor
                .map_or_else(|| "the broker's default".to_owned(), |n| n.to_string()),
            EMBEDDED_DIR => match &self.backend {
                BackendSettings::Embedded { dir } => dir.display().to_string(),
                _ => return None,
            },
            CHANGELOG => rt.streams.changelog_enabled.to_string(),
            BARRIER_INTERVAL => ms(rt.barrier.interval),
            BARRIER_FACTOR => rt.barrier.interval_factor.to_string(),
            BARRIER_MIN => ms(rt.barrier.min_interval),
            BARRIER_MAX => ms(rt.barrier.max_interval),
            LANES => rt.lanes.to_string(),
            INSTANCE_ID => rt.instance_id.clone(),
            POLL_WAIT => ms(rt.poll_wait),
            RESTORE_STALL => ms(rt.restore_stall_timeout),
            PURGE_INTERVAL => ms(rt.purge_interval),
            FROM_KAFKA_STREAMS => rt.migration_from_kafka_streams.to_string(),
            STANDBY_REPLICAS => rt.standby_replicas.to_string(),
            APPLICATION_SERVER => rt
                .application_server
                .clone()
                .unwrap_or_else(|| "none".into()),
            WINDOWSTORE_ADDITIONAL_RETENTION => ms(rt.windowstore_changelog_additional_retention),
            MAX_OOO => ms(rt.streams.max_out_of_orderness),
            IDLENESS => ms(rt.tracker.default_idleness),
            AUTO_INTERVAL => ms(rt.tracker.auto_interval),
            PREVIEW_AFTER => ms(rt.tracker.preview_after),
            STATE_DIR => rt
                .effective_state_dir()
                .map_or_else(|| "none".to_owned(), |d| d.display().to_string()),
            DEFAULT_DSL_STORE => rt.default_dsl_store().as_str().to_owned(),
            STORE_CACHE_MAX_BYTES => rt.streams.store_cache_max_bytes.to_string(),
            STORE_BLOCK_CACHE_BYTES => rt.streams.store_block_cache_bytes.to_string(),
            other => unreachable!("key {other} is in KEYS but has no rendering"),
        })
    }

    /// The name a key that picks one of several behaviours is set to (the
    /// guarantee, the handlers, the modes, the backend), `None` for any
    /// other key.
    fn choice_name(&self, key: &str) -> Option<&'static str> {
        let rt = &self.runtime;
        Some(match key {
            GUARANTEE => match rt.guarantee {
                ProcessingGuarantee::AtLeastOnce => "at_least_once",
                _ => "exactly_once_v2",
            },
            DESER_HANDLER => match rt.streams.deserialization_handler {
                DeserializationHandler::LogAndFail => "log-and-fail",
                DeserializationHandler::LogAndContinue => "log-and-continue",
            },
            PRODUCTION_HANDLER => match rt.streams.production_handler {
                ProductionHandler::Fail => "fail",
                ProductionHandler::Continue => "continue",
            },
            RECORDING_LEVEL => match self.recording_level {
                RecordingLevel::Debug => "debug",
                _ => "info",
            },
            BACKEND => match &self.backend {
                BackendSettings::Embedded { .. } => "embedded",
                BackendSettings::Memory => "memory",
                BackendSettings::Kafka(_) => "kafka",
            },
            COORDINATION => match rt.streams.coordination {
                CoordinationMode::Auto => "AUTO",
                CoordinationMode::Enabled => "ENABLED",
                CoordinationMode::Disabled => "DISABLED",
            },
            DISPATCH => match rt.streams.dispatch {
                DispatchMode::Auto => "AUTO",
                DispatchMode::Lane => "LANE",
                DispatchMode::Direct => "DIRECT",
            },
            _ => return None,
        })
    }

    /// The value of a `runtime.endpoints.*` key, `None` for any other key.
    fn endpoints_value(&self, key: &str) -> Option<String> {
        let e = &self.endpoints;
        Some(match key {
            ENDPOINTS_ENABLED => e.enabled.to_string(),
            LISTEN => e.listen.to_string(),
            ALLOW_NON_LOOPBACK => e.allow_non_loopback.to_string(),
            SHOW_WATERMARKS => e.info_show_watermarks.to_string(),
            MAX_CONNECTIONS => e.max_connections.to_string(),
            REQUEST_TIMEOUT => ms(e.request_timeout),
            MAX_REQUESTS => e.max_requests_per_second.to_string(),
            REFRESH => ms(e.refresh),
            _ => return None,
        })
    }
}

/// A duration as its whole milliseconds.
fn ms(d: Duration) -> String {
    d.as_millis().to_string()
}
