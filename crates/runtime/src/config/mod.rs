//! [`RuntimeConfig`]: what the runtime needs besides the topology.
//!
//! Owns the typed settings of the runtime (backend, processing guarantee,
//! barrier cadence, lanes, the tracker's knobs) and their validation, which
//! names the offending key. Knows nothing of YAML: a loader builds this.

pub(crate) mod cadence;
pub(crate) mod layout;
pub(crate) mod topic_catalog;

use std::path::PathBuf;
use std::time::Duration;

use stoatflow_log::MAX_TOPIC_NAME_LEN;
use stoatflow_state::{WATERMARK_STORE_NAME, changelog_topic};
use stoatflow_streams::{StoreType, StreamsConfig};
use stoatflow_time::TrackerConfig;

use crate::error::RuntimeError;
use crate::host_info::HostInfo;

/// Where the log lives.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    /// The embedded log in a directory (the default backend).
    Embedded {
        /// Its directory; created if missing.
        dir: PathBuf,
    },
    /// The embedded log in memory: nothing survives the process.
    InMemory,
}

/// `processing.guarantee`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ProcessingGuarantee {
    /// `exactly_once_v2`: one transaction per epoch per instance.
    #[default]
    ExactlyOnceV2,
    /// `at_least_once`: the same barriers, floors and frontier; the commit
    /// is not transactional, so a crash may repeat an epoch's output.
    AtLeastOnce,
}

/// `stoatflow.commit-barrier.*`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CommitBarrierConfig {
    /// `interval-ms` (500): the seed interval.
    pub interval: Duration,
    /// `interval-factor` (1.5): how the measured commit duration scales it.
    pub interval_factor: f64,
    /// `min-interval-ms` (150).
    pub min_interval: Duration,
    /// `max-interval-ms` (5 000).
    pub max_interval: Duration,
}

impl Default for CommitBarrierConfig {
    fn default() -> Self {
        CommitBarrierConfig {
            interval: Duration::from_millis(500),
            interval_factor: 1.5,
            min_interval: Duration::from_millis(150),
            max_interval: Duration::from_millis(5_000),
        }
    }
}

impl CommitBarrierConfig {
    pub(crate) fn clamp(&self, d: Duration) -> Duration {
        d.clamp(self.min_interval, self.max_interval)
    }

    fn validate(&self) -> Result<(), RuntimeError> {
        let bad = |key: &str, value: String, why: &str| {
            Err(RuntimeError::Config {
                key: key.into(),
                value,
                reason: why.into(),
            })
        };
        if !(self.interval_factor.is_finite() && self.interval_factor >= 1.0) {
            return bad(
                "stoatflow.commit-barrier.interval-factor",
                self.interval_factor.to_string(),
                "must be a number of at least 1.0",
            );
        }
        if self.min_interval.is_zero() {
            return bad(
                "stoatflow.commit-barrier.min-interval-ms",
                "0".into(),
                "must be positive",
            );
        }
        if self.min_interval > self.max_interval {
            return bad(
                "stoatflow.commit-barrier.min-interval-ms",
                self.min_interval.as_millis().to_string(),
                "must not exceed stoatflow.commit-barrier.max-interval-ms",
            );
        }
        Ok(())
    }
}

/// The default of `windowstore.changelog.additional.retention.ms`: ten
/// minutes (see [`RuntimeConfig::windowstore_changelog_additional_retention`]).
pub const WINDOWSTORE_CHANGELOG_ADDITIONAL_RETENTION: Duration = Duration::from_secs(600);

/// Everything the runtime needs besides the topology.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// The streams settings (application id, coordination mode, handler, changelogs).
    pub streams: StreamsConfig,
    /// Where the log lives.
    pub backend: Backend,
    /// `processing.guarantee`.
    pub guarantee: ProcessingGuarantee,
    /// `stoatflow.commit-barrier.*`.
    pub barrier: CommitBarrierConfig,
    /// Record lanes (threads). Default: the machine's cores.
    pub lanes: usize,
    /// The watermark tracker's knobs (`stoatflow.watermark.*`).
    pub tracker: TrackerConfig,
    /// This instance's id, part of its transactional id.
    pub instance_id: String,
    /// The longest a poll waits for records.
    pub poll_wait: Duration,
    /// Restore gives up after this long without progress.
    pub restore_stall_timeout: Duration,
    /// `repartition.purge.interval.ms` (Kafka Streams' name and default, 30 s):
    /// at most this often, after a commit, repartition topics are purged below
    /// their committed offsets and the log is asked for its upkeep, on the
    /// application's upkeep thread (no commit waits for it; a pass due while
    /// the last one still runs is skipped).
    pub purge_interval: Duration,
    /// `windowstore.changelog.additional.retention.ms` (Kafka Streams' name;
    /// default [`WINDOWSTORE_CHANGELOG_ADDITIONAL_RETENTION`], ten minutes,
    /// where Kafka Streams has a day): a window or session store's changelog
    /// is created `compact,delete` with a retention of the store's retention
    /// plus this. The embedded log deletes a closed changelog segment once
    /// its newest record is that much older than the partition's newest, so
    /// a soak's changelogs stop growing after about this much event time
    /// instead of keeping every window forever. It must exceed how far the
    /// committed watermark can trail the newest record a task has written:
    /// a window still in its store whose changelog records were deleted is
    /// missing after a restore. The default covers the default idleness
    /// timeout (5 min, the longest a silent partition holds the watermark)
    /// plus the default out-of-orderness bound and a few commit intervals;
    /// raise it for sources with idleness off, partitions that can lag the
    /// others for longer, or a backfill fast enough that one commit interval
    /// spans minutes of event time. A Kafka broker judges the retention
    /// against the wall clock instead: there it must exceed how far event
    /// time can trail the wall clock (downtime, a replay of old records),
    /// and the configuration loader makes it Kafka Streams' day on the Kafka
    /// backend unless it is set.
    pub windowstore_changelog_additional_retention: Duration,
    /// `stoatflow.migration.from-kafka-streams`: on a first start (no
    /// watermark stamp committed yet) take over what a Kafka Streams
    /// application of the same id left: its stores from their changelogs,
    /// its partition times, and the emit frontiers its stream time implies.
    pub migration_from_kafka_streams: bool,
    /// `state.dir`: where persistent stores live, `<state dir>/<task>/<store>`. `None`:
    /// `<dir>/state` on the embedded log in a directory; on other backends persistent
    /// stores then need it set.
    pub state_dir: Option<PathBuf>,
    /// `num.standby.replicas` (Kafka Streams' name, default 0): above 0, an
    /// instance in a consumer group keeps warm copies of the stateful tasks
    /// it does not own in `state.dir` (`engine::restore::standby`), so a task moved
    /// to it restores only the changelog tail since the copy's checkpoint.
    pub standby_replicas: u32,
    /// `application.server` (Kafka Streams' name): the `host:port` where
    /// this instance serves interactive queries, advertised to the other
    /// members so that key metadata can name it (docs/queries.md#metadata).
    /// `None`: it advertises nothing.
    pub application_server: Option<String>,
}

impl RuntimeConfig {
    /// Defaults for `application_id` on the embedded log in `dir`.
    pub fn new(application_id: impl Into<String>, backend: Backend) -> Self {
        let streams = StreamsConfig::new(application_id);
        let mut tracker = TrackerConfig::default();
        if let Ok(policy) = stoatflow_time::SourceTimePolicy::from_max_out_of_orderness_ms(
            streams.max_out_of_orderness.as_millis() as i64,
        ) {
            tracker.default_policy = policy;
        }
        RuntimeConfig {
            streams,
            backend,
            guarantee: ProcessingGuarantee::default(),
            barrier: CommitBarrierConfig::default(),
            lanes: std::thread::available_parallelism().map_or(1, |n| n.get()),
            tracker,
            instance_id: "0".into(),
            poll_wait: Duration::from_millis(5),
            restore_stall_timeout: Duration::from_secs(30),
            purge_interval: Duration::from_secs(30),
            windowstore_changelog_additional_retention: WINDOWSTORE_CHANGELOG_ADDITIONAL_RETENTION,
            migration_from_kafka_streams: false,
            state_dir: None,
            standby_replicas: 0,
            application_server: None,
        }
    }

    /// Sets `application.server`, the `host:port` this instance advertises.
    #[must_use]
    pub fn with_application_server(mut self, server: impl Into<String>) -> Self {
        self.application_server = Some(server.into());
        self
    }

    /// Sets `num.standby.replicas`.
    #[must_use]
    pub fn with_standby_replicas(mut self, replicas: u32) -> Self {
        self.standby_replicas = replicas;
        self
    }

    /// Sets `windowstore.changelog.additional.retention.ms`.
    #[must_use]
    pub fn with_windowstore_changelog_additional_retention(mut self, extra: Duration) -> Self {
        self.windowstore_changelog_additional_retention = extra;
        self
    }

    /// Sets `state.dir`.
    #[must_use]
    pub fn with_state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.state_dir = Some(dir.into());
        self
    }

    /// Where persistent stores live: `state.dir`, else `<dir>/state` on the embedded log in
    /// a directory.
    pub fn effective_state_dir(&self) -> Option<PathBuf> {
        match (&self.state_dir, &self.backend) {
            (Some(dir), _) => Some(dir.clone()),
            (None, Backend::Embedded { dir }) => Some(dir.join("state")),
            (None, _) => None,
        }
    }

    /// The engine of the DSL's stores whose supplier names none (`default.dsl.store`):
    /// as configured, else persistent on the embedded log in a directory and in memory on
    /// the in-memory log.
    pub fn default_dsl_store(&self) -> StoreType {
        self.streams
            .default_dsl_store
            .unwrap_or(match (&self.backend, &self.state_dir) {
                (Backend::Embedded { .. }, _) | (_, Some(_)) => StoreType::Persistent,
                _ => StoreType::InMemory,
            })
    }

    /// Replaces the streams settings (keeping the application id they carry).
    #[must_use]
    pub fn with_streams(mut self, streams: StreamsConfig) -> Self {
        self.streams = streams;
        self
    }

    /// Sets the number of record lanes.
    #[must_use]
    pub fn with_lanes(mut self, lanes: usize) -> Self {
        self.lanes = lanes;
        self
    }

    /// Sets the barrier cadence.
    #[must_use]
    pub fn with_barrier(mut self, barrier: CommitBarrierConfig) -> Self {
        self.barrier = barrier;
        self
    }

    /// Sets the processing guarantee.
    #[must_use]
    pub fn with_guarantee(mut self, guarantee: ProcessingGuarantee) -> Self {
        self.guarantee = guarantee;
        self
    }

    /// Sets the tracker's knobs.
    #[must_use]
    pub fn with_tracker(mut self, tracker: TrackerConfig) -> Self {
        self.tracker = tracker;
        self
    }

    /// The application id.
    pub fn application_id(&self) -> &str {
        &self.streams.application_id
    }

    /// The transactional id of this instance's one producer
    /// (docs/barriers.md#transactions, docs/scale-out.md#transactions).
    pub fn transactional_id(&self) -> String {
        format!("{}-{}", self.application_id(), self.instance_id)
    }

    /// Checks every setting, naming the first bad key.
    ///
    /// # Errors
    /// [`RuntimeError::Config`].
    pub fn validate(&self) -> Result<(), RuntimeError> {
        let app = self.application_id();
        if app.is_empty()
            || !app
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            return Err(RuntimeError::Config {
                key: "application.id".into(),
                value: app.into(),
                reason: "must be non-empty ASCII letters, digits, '.', '_' or '-' (it prefixes topic names)".into(),
            });
        }
        // Every app with changelogs has this internal topic, and its name
        // is the longest an application id alone decides.
        let watermark = changelog_topic(app, WATERMARK_STORE_NAME);
        if watermark.len() > MAX_TOPIC_NAME_LEN {
            return Err(RuntimeError::Config {
                key: "application.id".into(),
                value: app.into(),
                reason: format!(
                    "must be at most {} characters: it prefixes internal topic names such as \
                     {:?}, and a topic name is at most {MAX_TOPIC_NAME_LEN} characters",
                    MAX_TOPIC_NAME_LEN - (watermark.len() - app.len()),
                    changelog_topic("<application.id>", WATERMARK_STORE_NAME),
                ),
            });
        }
        if self.lanes == 0 || self.lanes > 1024 {
            return Err(RuntimeError::Config {
                key: "stoatflow.processing.lanes".into(),
                value: self.lanes.to_string(),
                reason: "must be between 1 and 1024".into(),
            });
        }
        if self.default_dsl_store() == StoreType::Persistent && self.effective_state_dir().is_none()
        {
            return Err(RuntimeError::Config {
                key: "default.dsl.store".into(),
                value: StoreType::Persistent.as_str().into(),
                reason: "persistent stores need state.dir on a log that is not in a directory"
                    .into(),
            });
        }
        if self.standby_replicas > 0 && self.effective_state_dir().is_none() {
            return Err(RuntimeError::Config {
                key: "num.standby.replicas".into(),
                value: self.standby_replicas.to_string(),
                reason: "standby replicas are kept on disk: set state.dir".into(),
            });
        }
        if let Some(server) = &self.application_server {
            HostInfo::parse(server).map_err(|reason| RuntimeError::Config {
                key: "application.server".into(),
                value: server.clone(),
                reason,
            })?;
        }
        self.barrier.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_name_their_key() {
        let base = RuntimeConfig::new("app", Backend::InMemory);
        let err = base.clone().with_lanes(0).validate().unwrap_err();
        assert!(
            err.to_string().contains("stoatflow.processing.lanes"),
            "{err}"
        );
        let err = base
            .clone()
            .with_barrier(CommitBarrierConfig {
                min_interval: Duration::from_secs(10),
                ..CommitBarrierConfig::default()
            })
            .validate()
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("stoatflow.commit-barrier.min-interval-ms"),
            "{err}"
        );
        let err = RuntimeConfig::new("a/b", Backend::InMemory)
            .validate()
            .unwrap_err();
        assert!(err.to_string().contains("application.id"), "{err}");
        assert!(base.validate().is_ok());
        let longest = "a".repeat(219);
        assert!(
            RuntimeConfig::new(&longest, Backend::InMemory)
                .validate()
                .is_ok()
        );
        let err = RuntimeConfig::new(format!("{longest}a"), Backend::InMemory)
            .validate()
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("application.id") && message.contains("at most 219 characters"),
            "{message}"
        );
        let err = base
            .clone()
            .with_standby_replicas(1)
            .validate()
            .unwrap_err();
        assert!(
            err.to_string().contains("num.standby.replicas")
                && err.to_string().contains("state.dir"),
            "{err}"
        );
        assert!(
            base.clone()
                .with_standby_replicas(1)
                .with_state_dir("/tmp/standby-state")
                .validate()
                .is_ok()
        );
        let err = RuntimeConfig::new("app", Backend::InMemory)
            .with_streams(StreamsConfig::new("app").with_default_dsl_store(StoreType::Persistent))
            .validate()
            .unwrap_err();
        assert!(err.to_string().contains("default.dsl.store"), "{err}");
        let err = base
            .clone()
            .with_application_server("localhost")
            .validate()
            .unwrap_err();
        assert!(
            err.to_string().contains("application.server") && err.to_string().contains("localhost"),
            "{err}"
        );
        assert!(
            base.clone()
                .with_application_server("localhost:8080")
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn the_dsl_stores_are_on_disk_by_default_only_on_a_log_in_a_directory() {
        let on_disk = RuntimeConfig::new("app", Backend::Embedded { dir: "/d".into() });
        assert_eq!(on_disk.default_dsl_store(), StoreType::Persistent);
        assert_eq!(
            on_disk.effective_state_dir(),
            Some(PathBuf::from("/d/state"))
        );
        let in_memory = RuntimeConfig::new("app", Backend::InMemory);
        assert_eq!(in_memory.default_dsl_store(), StoreType::InMemory);
        assert_eq!(in_memory.effective_state_dir(), None);
        let chosen = on_disk
            .with_streams(StreamsConfig::new("app").with_default_dsl_store(StoreType::InMemory));
        assert_eq!(chosen.default_dsl_store(), StoreType::InMemory);
    }
}
