//! The key table: every setting's dotted key, the type it takes and its
//! default, as documentation and for the did-you-mean of an unknown key.
//!
//! Owns [`KEYS`], [`KAFKA_STREAMS_NAMES`] and [`suggest`]. Knows nothing of parsing: `app_config`
//! gives each key its meaning.

/// One setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    /// The dotted key.
    pub key: &'static str,
    /// What it takes.
    pub takes: &'static str,
    /// Its default.
    pub default: &'static str,
}

const fn k(key: &'static str, takes: &'static str, default: &'static str) -> KeySpec {
    KeySpec {
        key,
        takes,
        default,
    }
}

/// `application.id`.
pub const APPLICATION_ID: &str = "application.id";
/// `processing.guarantee`.
pub const GUARANTEE: &str = "processing.guarantee";
/// `default.deserialization.exception.handler`.
pub const DESER_HANDLER: &str = "default.deserialization.exception.handler";
/// `default.production.exception.handler`.
pub const PRODUCTION_HANDLER: &str = "default.production.exception.handler";
/// `bootstrap.servers`.
pub const BOOTSTRAP: &str = "bootstrap.servers";
/// `client.id`.
pub const CLIENT_ID: &str = "client.id";
/// `replication.factor`.
pub const REPLICATION: &str = "replication.factor";
/// `metrics.recording.level`.
pub const RECORDING_LEVEL: &str = "metrics.recording.level";
/// `runtime.endpoints.enabled`.
pub const ENDPOINTS_ENABLED: &str = "runtime.endpoints.enabled";
/// `runtime.endpoints.listen`.
pub const LISTEN: &str = "runtime.endpoints.listen";
/// `runtime.endpoints.allow-non-loopback`.
pub const ALLOW_NON_LOOPBACK: &str = "runtime.endpoints.allow-non-loopback";
/// `runtime.endpoints.info.show-watermarks`.
pub const SHOW_WATERMARKS: &str = "runtime.endpoints.info.show-watermarks";
/// `runtime.endpoints.max-connections`.
pub const MAX_CONNECTIONS: &str = "runtime.endpoints.max-connections";
/// `runtime.endpoints.request-timeout-ms`.
pub const REQUEST_TIMEOUT: &str = "runtime.endpoints.request-timeout-ms";
/// `runtime.endpoints.max-requests-per-second`.
pub const MAX_REQUESTS: &str = "runtime.endpoints.max-requests-per-second";
/// `runtime.endpoints.refresh-ms`.
pub const REFRESH: &str = "runtime.endpoints.refresh-ms";
/// `stoatflow.backend`.
pub const BACKEND: &str = "stoatflow.backend";
/// `stoatflow.embedded.dir`.
pub const EMBEDDED_DIR: &str = "stoatflow.embedded.dir";
/// `stoatflow.changelog.enabled`.
pub const CHANGELOG: &str = "stoatflow.changelog.enabled";
/// `stoatflow.commit-barrier.interval-ms`.
pub const BARRIER_INTERVAL: &str = "stoatflow.commit-barrier.interval-ms";
/// `stoatflow.commit-barrier.interval-factor`.
pub const BARRIER_FACTOR: &str = "stoatflow.commit-barrier.interval-factor";
/// `stoatflow.commit-barrier.min-interval-ms`.
pub const BARRIER_MIN: &str = "stoatflow.commit-barrier.min-interval-ms";
/// `stoatflow.commit-barrier.max-interval-ms`.
pub const BARRIER_MAX: &str = "stoatflow.commit-barrier.max-interval-ms";
/// `stoatflow.processing.timestamp-coordination-mode`.
pub const COORDINATION: &str = "stoatflow.processing.timestamp-coordination-mode";
/// `stoatflow.processing.dispatch-mode`.
pub const DISPATCH: &str = "stoatflow.processing.dispatch-mode";
/// `stoatflow.processing.lanes`.
pub const LANES: &str = "stoatflow.processing.lanes";
/// `stoatflow.processing.instance-id`.
pub const INSTANCE_ID: &str = "stoatflow.processing.instance-id";
/// `stoatflow.processing.poll-wait-ms`.
pub const POLL_WAIT: &str = "stoatflow.processing.poll-wait-ms";
/// `stoatflow.restore.stall-timeout-ms`.
pub const RESTORE_STALL: &str = "stoatflow.restore.stall-timeout-ms";
/// `stoatflow.migration.from-kafka-streams`.
pub const FROM_KAFKA_STREAMS: &str = "stoatflow.migration.from-kafka-streams";
/// `stoatflow.watermark.max-out-of-orderness-ms`.
pub const MAX_OOO: &str = "stoatflow.watermark.max-out-of-orderness-ms";
/// `stoatflow.watermark.idleness-timeout-ms`.
pub const IDLENESS: &str = "stoatflow.watermark.idleness-timeout-ms";
/// `stoatflow.watermark.auto-interval-ms`.
pub const AUTO_INTERVAL: &str = "stoatflow.watermark.auto-interval-ms";
/// `stoatflow.watermark.preview-after-ms`.
pub const PREVIEW_AFTER: &str = "stoatflow.watermark.preview-after-ms";
/// `state.dir`.
pub const STATE_DIR: &str = "state.dir";
/// `repartition.purge.interval.ms`.
pub const PURGE_INTERVAL: &str = "repartition.purge.interval.ms";
/// `num.standby.replicas`.
pub const STANDBY_REPLICAS: &str = "num.standby.replicas";
/// `application.server`.
pub const APPLICATION_SERVER: &str = "application.server";
/// `windowstore.changelog.additional.retention.ms`.
pub const WINDOWSTORE_ADDITIONAL_RETENTION: &str = "windowstore.changelog.additional.retention.ms";
/// `default.dsl.store`.
pub const DEFAULT_DSL_STORE: &str = "default.dsl.store";
/// `stoatflow.state.cache-max-bytes`.
pub const STORE_CACHE_MAX_BYTES: &str = "stoatflow.state.cache-max-bytes";
/// `stoatflow.state.block-cache-bytes`.
pub const STORE_BLOCK_CACHE_BYTES: &str = "stoatflow.state.block-cache-bytes";
/// The prefix of pass-through librdkafka properties (`kafka.sasl.password`).
pub const KAFKA_PREFIX: &str = "kafka.";

/// Every key but the `kafka.*` pass-through ones.
pub const KEYS: &[KeySpec] = &[
    k(
        APPLICATION_ID,
        "a string of ASCII letters, digits, '.', '_', '-'",
        "none: required",
    ),
    k(
        GUARANTEE,
        "exactly_once_v2 | at_least_once",
        "exactly_once_v2",
    ),
    k(
        DESER_HANDLER,
        "log-and-fail | log-and-continue",
        "log-and-fail",
    ),
    k(PRODUCTION_HANDLER, "fail | continue", "fail"),
    k(
        BOOTSTRAP,
        "host:port[,host:port...] (kafka backend)",
        "none: required for kafka",
    ),
    k(CLIENT_ID, "a string (kafka backend)", "the application id"),
    k(
        REPLICATION,
        "1..=32767 (kafka backend)",
        "the broker's default",
    ),
    k(RECORDING_LEVEL, "info | debug", "info"),
    k(ENDPOINTS_ENABLED, "a boolean", "true"),
    k(LISTEN, "ip:port (localhost:port allowed)", "127.0.0.1:8080"),
    k(ALLOW_NON_LOOPBACK, "a boolean", "false"),
    k(SHOW_WATERMARKS, "a boolean", "true"),
    k(MAX_CONNECTIONS, "1..=65536", "32"),
    k(REQUEST_TIMEOUT, "1..=600000 ms", "5000"),
    k(MAX_REQUESTS, "0..=1000000 (0: no limit)", "200"),
    k(
        REFRESH,
        "0..=60000 ms (0 reads the app for every request)",
        "100",
    ),
    k(BACKEND, "embedded | memory | kafka", "embedded"),
    k(
        EMBEDDED_DIR,
        "a directory (embedded backend; relative to the working directory)",
        "stoatflow-data",
    ),
    k(CHANGELOG, "a boolean", "true"),
    k(BARRIER_INTERVAL, "1..=3600000 ms", "500"),
    k(BARRIER_FACTOR, "1.0..=100.0", "1.5"),
    k(BARRIER_MIN, "1..=3600000 ms", "150"),
    k(BARRIER_MAX, "1..=3600000 ms", "5000"),
    k(COORDINATION, "AUTO | ENABLED | DISABLED", "AUTO"),
    k(DISPATCH, "AUTO | LANE | DIRECT", "AUTO"),
    k(LANES, "1..=1024", "the machine's cores"),
    k(INSTANCE_ID, "a string", "0"),
    k(POLL_WAIT, "1..=60000 ms", "5"),
    k(RESTORE_STALL, "1..=86400000 ms", "30000"),
    k(PURGE_INTERVAL, "1..=86400000 ms", "30000"),
    k(FROM_KAFKA_STREAMS, "a boolean", "false"),
    k(
        STANDBY_REPLICAS,
        "0..=16 (above 0: warm copies of the tasks other instances own; needs state.dir)",
        "0",
    ),
    k(
        APPLICATION_SERVER,
        "host:port where this instance serves interactive queries, advertised to the others",
        "none",
    ),
    k(
        WINDOWSTORE_ADDITIONAL_RETENTION,
        "0..=31536000000 ms, added to a window or session store's retention for its \
         compact,delete changelog. The embedded log judges it against the partition's newest \
         record: 10 min lets its changelogs stop growing within minutes, and must exceed how \
         far the watermark can trail the newest record (the default idleness timeout plus the \
         bound). A Kafka broker judges it against the wall clock: there the default is Kafka \
         Streams' day, and it must exceed how far event time can trail the wall clock \
         (downtime, replays)",
        "600000 (86400000 with stoatflow.backend: kafka)",
    ),
    k(MAX_OOO, "0..=31536000000 ms", "10000"),
    k(IDLENESS, "0..=31536000000 ms (0 disables)", "300000"),
    k(AUTO_INTERVAL, "1..=3600000 ms", "200"),
    k(PREVIEW_AFTER, "0..=3600000 ms", "1000"),
    k(
        STATE_DIR,
        "a directory for persistent stores (relative to the working directory)",
        "<stoatflow.embedded.dir>/state on the embedded backend",
    ),
    k(
        DEFAULT_DSL_STORE,
        "persistent | in_memory (rocksDB is read as persistent)",
        "persistent with a state directory, else in_memory",
    ),
    k(
        STORE_CACHE_MAX_BYTES,
        "1048576..=68719476736 bytes: each persistent store's write-back cache (values the \
         task wrote, not yet in the engine or still read from here); past it the store writes \
         its oldest entries to its engine",
        "33554432 (32 MiB per store)",
    ),
    k(
        STORE_BLOCK_CACHE_BYTES,
        "0..=68719476736 bytes: each persistent store's engine block cache (blocks of its \
         tables read back from disk)",
        "33554432 (32 MiB per store)",
    ),
];

/// A Kafka Streams setting whose name is not ours: its name there, and our
/// key for it or how the thing is set here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KafkaStreamsName {
    /// Kafka Streams' name (`num.stream.threads`).
    pub theirs: &'static str,
    /// Our key for it, if one sets it.
    pub ours: Option<&'static str>,
    /// What differs, or how it is set here when no key sets it.
    pub note: Option<&'static str>,
}

const STORE_CACHE: &str = "a bound per persistent store here, not per instance; \
     stoatflow.state.block-cache-bytes bounds each store's engine block cache";

/// Kafka Streams' names of settings that have another name here (or none):
/// an unknown key among them is answered with ours, not taken for a
/// librdkafka property. `application.id`, `processing.guarantee`,
/// `state.dir` and the like are ours too and are not here. The table is in
/// docs/operating.md#kafka-streams-names.
pub const KAFKA_STREAMS_NAMES: &[KafkaStreamsName] = &[
    KafkaStreamsName {
        theirs: "num.stream.threads",
        ours: Some(LANES),
        note: None,
    },
    KafkaStreamsName {
        theirs: "commit.interval.ms",
        ours: Some(BARRIER_INTERVAL),
        note: None,
    },
    KafkaStreamsName {
        theirs: "max.task.idle.ms",
        ours: Some(IDLENESS),
        note: Some("how long a partition without records holds the watermark back"),
    },
    KafkaStreamsName {
        theirs: "statestore.cache.max.bytes",
        ours: Some(STORE_CACHE_MAX_BYTES),
        note: Some(STORE_CACHE),
    },
    KafkaStreamsName {
        theirs: "cache.max.bytes.buffering",
        ours: Some(STORE_CACHE_MAX_BYTES),
        note: Some(STORE_CACHE),
    },
];

impl KafkaStreamsName {
    /// The entry for `key`, if it is one of Kafka Streams' names.
    pub fn of(key: &str) -> Option<&'static KafkaStreamsName> {
        KAFKA_STREAMS_NAMES.iter().find(|n| n.theirs == key)
    }

    /// `X is Kafka Streams' name; here it is Y (note)`.
    pub fn explain(&self) -> String {
        let here = match (self.ours, self.note) {
            (Some(ours), Some(note)) => format!("here it is {ours} ({note})"),
            (Some(ours), None) => format!("here it is {ours}"),
            (None, Some(note)) => note.to_owned(),
            (None, None) => "here nothing sets it".to_owned(),
        };
        format!("{} is Kafka Streams' name; {here}", self.theirs)
    }
}

/// Our own namespaces: an unknown key under one of these is a typo, not a
/// librdkafka property.
const NAMESPACES: &[&str] = &[
    "stoatflow.",
    "runtime.",
    "metrics.",
    "processing.",
    "application.",
    "default.",
    "repartition.",
    "windowstore.",
];

/// A did-you-mean for an unknown key: our key for one of Kafka Streams'
/// names ([`KAFKA_STREAMS_NAMES`]; none when no key sets it), the closest
/// known key, or the pass-through spelling of what looks like a librdkafka
/// property.
pub fn suggest(unknown: &str) -> Option<String> {
    if let Some(name) = KafkaStreamsName::of(unknown) {
        return name.ours.map(str::to_owned);
    }
    if let Some(key) = closest(unknown, KEYS.iter().map(|s| s.key)) {
        return Some(key.to_owned());
    }
    // A key written under a known prefix but with a different last part.
    if let Some((head, _)) = unknown.rsplit_once('.') {
        let siblings: Vec<&str> = KEYS
            .iter()
            .map(|s| s.key)
            .filter(|k| k.rsplit_once('.').is_some_and(|(h, _)| h == head))
            .collect();
        if !siblings.is_empty() {
            return Some(format!("one of {}", siblings.join(", ")));
        }
    }
    let ours = NAMESPACES.iter().any(|n| unknown.starts_with(n));
    (!ours && unknown.contains('.'))
        .then(|| format!("{KAFKA_PREFIX}{unknown} (librdkafka properties go under {KAFKA_PREFIX})"))
}

/// The candidate nearest `unknown` when it is within a quarter of its length
/// (at least 2) edits: the did-you-mean of keys and of environment variables.
pub(crate) fn closest<S: AsRef<str>>(
    unknown: &str,
    candidates: impl IntoIterator<Item = S>,
) -> Option<S> {
    let limit = (unknown.len() / 4).max(2);
    // A candidate whose length differs by more than the limit is further
    // than it (and skipping it keeps a long unknown name from costing its
    // length times every candidate's).
    let chars = unknown.chars().count();
    candidates
        .into_iter()
        .filter(|c| c.as_ref().chars().count().abs_diff(chars) <= limit)
        .map(|c| (edit_distance(unknown, c.as_ref()), c))
        .filter(|(distance, _)| *distance <= limit)
        // Ties go to the first in lexical order, whatever the candidates' order.
        .min_by(|(da, a), (db, b)| (da, a.as_ref()).cmp(&(db, b.as_ref())))
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::env_name;

    #[test]
    fn suggestions() {
        assert_eq!(
            suggest("stoatflow.watermark.max-out-of-orderness").as_deref(),
            Some(MAX_OOO)
        );
        assert_eq!(
            suggest("stoatflow.watermark.foo").as_deref(),
            Some(
                "one of stoatflow.watermark.max-out-of-orderness-ms, stoatflow.watermark.idleness-timeout-ms, stoatflow.watermark.auto-interval-ms, stoatflow.watermark.preview-after-ms"
            )
        );
        assert_eq!(
            suggest("sasl.password").as_deref(),
            Some("kafka.sasl.password (librdkafka properties go under kafka.)")
        );
        assert_eq!(suggest("stoatflow.nothing.like-it-at-all"), None);
    }

    #[test]
    fn env_names_are_distinct_and_not_kafka_pass_through() {
        let mut names: Vec<String> = KEYS.iter().map(|s| env_name(s.key)).collect();
        assert!(
            names
                .iter()
                .all(|n| !n.starts_with(crate::source::KAFKA_ENV_PREFIX))
        );
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "two keys share an environment variable");
    }
}
