//! Typed configuration of the Kafka backend.
//!
//! Owns: [`KafkaConfig`], which fixes the client properties stoatflow's
//! semantics depend on (read-committed isolation, no auto-commit, a
//! transactional id, idempotence) so they cannot be overridden, and
//! [`ClientProperties`], the pass-through map for everything else (security,
//! SASL/TLS) whose values never appear in `Debug`, logs or errors.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use stoatflow_log::{LogError, OffsetReset};

/// Client properties stoatflow sets itself; a pass-through entry for one of
/// these is refused.
pub const PROTECTED_KEYS: &[&str] = &[
    "bootstrap.servers",
    "group.id",
    "isolation.level",
    "enable.auto.commit",
    "enable.auto.offset.store",
    "enable.partition.eof",
    "transactional.id",
    "enable.idempotence",
    "transaction.timeout.ms",
    "message.max.bytes",
    "auto.offset.reset",
];

/// Pass-through librdkafka properties. `Debug` shows keys only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ClientProperties(BTreeMap<String, String>);

impl fmt::Debug for ClientProperties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, "<redacted>")))
            .finish()
    }
}

impl ClientProperties {
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// Configuration of a [`KafkaLog`](crate::KafkaLog).
///
/// ```
/// use std::time::Duration;
/// use stoatflow_kafka::KafkaConfig;
/// let config = KafkaConfig::new("127.0.0.1:9092")
///     .with_client_id("orders-app")
///     .with_property("security.protocol", "SASL_SSL")?
///     .with_property("sasl.password", "hunter2")?;
/// assert!(!format!("{config:?}").contains("hunter2"));
/// assert!(KafkaConfig::new("x:1").with_property("isolation.level", "read_uncommitted").is_err());
/// # Ok::<(), stoatflow_log::LogError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaConfig {
    /// Comma-separated `host:port` list.
    pub bootstrap_servers: String,
    /// `client.id` prefix of every client.
    pub client_id: String,
    /// `transaction.timeout.ms` of transactional producers.
    pub transaction_timeout: Duration,
    /// Bound on each blocking call (metadata, offsets, commit).
    pub request_timeout: Duration,
    /// Replication factor of created topics; `None` takes the broker default.
    pub replication_factor: Option<i32>,
    /// Largest record accepted (`message.max.bytes`).
    pub max_record_bytes: usize,
    /// Everything else, passed through.
    pub properties: ClientProperties,
    /// Group members join with `group.instance.id` (Kafka's static
    /// membership, on by default): an instance restarted after a kill takes
    /// its own place back at once, and a closed member does not leave the
    /// group, so a restart within the session timeout moves nothing. Off: a
    /// closed member leaves at once; a restarted instance is a new member,
    /// and a killed predecessor holds its partitions until the broker
    /// expires its session.
    pub static_membership: bool,
    /// What a consumer does with a position outside its partition's
    /// readable range (a seek or a committed offset past the end): Kafka's
    /// `auto.offset.reset`, applied as the embedded log applies it
    /// (earliest by default, as Kafka Streams sets it).
    pub offset_reset: OffsetReset,
}

impl KafkaConfig {
    /// Defaults for a cluster at `bootstrap_servers`.
    #[must_use]
    pub fn new(bootstrap_servers: impl Into<String>) -> Self {
        KafkaConfig {
            bootstrap_servers: bootstrap_servers.into(),
            client_id: "stoatflow".into(),
            transaction_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(30),
            replication_factor: None,
            max_record_bytes: 1_000_000,
            properties: ClientProperties::default(),
            static_membership: true,
            offset_reset: OffsetReset::Earliest,
        }
    }

    /// Sets [`KafkaConfig::static_membership`].
    #[must_use]
    pub fn with_static_membership(mut self, on: bool) -> Self {
        self.static_membership = on;
        self
    }

    /// Sets [`KafkaConfig::offset_reset`].
    #[must_use]
    pub fn with_offset_reset(mut self, reset: OffsetReset) -> Self {
        self.offset_reset = reset;
        self
    }

    /// Sets `client.id`.
    #[must_use]
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = client_id.into();
        self
    }

    /// Sets the bound on blocking calls.
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Adds a pass-through property.
    ///
    /// # Errors
    /// [`LogError::Config`] naming the key (never the value) if it is one of
    /// [`PROTECTED_KEYS`].
    pub fn with_property(
        mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Self, LogError> {
        let key = key.into();
        check_key(&key)?;
        self.properties.0.insert(key, value.into());
        Ok(self)
    }

    /// Checks the whole configuration (also run when connecting).
    ///
    /// # Errors
    /// [`LogError::Config`] naming the offending key.
    pub fn validate(&self) -> Result<(), LogError> {
        if self.bootstrap_servers.trim().is_empty() {
            return Err(LogError::Config {
                key: "bootstrap.servers".into(),
                reason: "must name at least one broker".into(),
            });
        }
        for (k, _) in self.properties.iter() {
            check_key(k)?;
        }
        if self.transaction_timeout.is_zero() || self.request_timeout.is_zero() {
            return Err(LogError::Config {
                key: "timeouts".into(),
                reason: "transaction and request timeouts must be positive".into(),
            });
        }
        Ok(())
    }

    pub(crate) fn timeout_ms(&self) -> u64 {
        u64::try_from(self.request_timeout.as_millis()).unwrap_or(u64::MAX)
    }
}

fn check_key(key: &str) -> Result<(), LogError> {
    if PROTECTED_KEYS.contains(&key) {
        return Err(LogError::Config {
            key: key.to_owned(),
            reason: "stoatflow sets this property itself; it cannot be overridden".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semantic_keys_cannot_be_overridden() {
        for key in [
            "isolation.level",
            "enable.auto.commit",
            "transactional.id",
            "enable.idempotence",
        ] {
            let err = KafkaConfig::new("b:1")
                .with_property(key, "x")
                .expect_err(key);
            assert!(err.to_string().contains(key), "{err}");
            assert!(!err.to_string().contains("\"x\""), "{err}");
        }
    }

    #[test]
    fn secrets_never_appear_in_debug() {
        let c = KafkaConfig::new("b:1")
            .with_property("sasl.password", "s3cr3t")
            .and_then(|c| c.with_property("ssl.key.password", "t0p"))
            .expect("allowed");
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("s3cr3t") && !dbg.contains("t0p"), "{dbg}");
        assert!(dbg.contains("sasl.password"), "{dbg}");
    }

    #[test]
    fn empty_bootstrap_is_refused() {
        assert!(KafkaConfig::new(" ").validate().is_err());
        assert!(KafkaConfig::new("b:1").validate().is_ok());
    }
}
