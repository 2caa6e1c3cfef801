//! [`Layout`]: what the topology needs on the log, worked out at start —
//! each sub-topology's partition count, the sink topics and their
//! partitions, the repartition topics (named `<application.id>-<topic>` on
//! the log, as Kafka Streams names internal topics) and the changelogs (the
//! watermark changelog with one partition per task) —
//! and the watermark marker that crosses a repartition topic
//! (docs/barriers.md#repartition-hops).
//!
//! Changelogs are compacted; a window or session store's is also deleted
//! past its retention (`compact,delete`, retention = the store's plus
//! `windowstore.changelog.additional.retention.ms`, as Kafka Streams creates
//! them), since such a store expires its entries without writing tombstones.
//! A windowed changelog an earlier version created compacted only is used
//! as it is, with a warning: it keeps every window.
//!
//! Owns topic naming and shape checks; knows nothing of tasks or threads.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use std::time::Duration;

use stoatflow_log::{CleanupPolicy, Header, Log, Record, Timestamp, TopicShape, TopicSpec};
use stoatflow_state::{WATERMARK_STORE_NAME, changelog_topic};
use stoatflow_streams::Topology;

use crate::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::task_id::TaskId;

/// The header that marks a record of a repartition topic as a watermark
/// marker: its value is the writer's barrier stamp, an `i64` big-endian.
pub const WATERMARK_MARKER_HEADER: &str = "__stoatflow.watermark";

/// A marker record carrying `watermark`.
pub(crate) fn marker(watermark: i64) -> Record {
    Record::new(
        None,
        Some(&watermark.to_be_bytes()),
        Timestamp(watermark.max(0)),
    )
    .with_header(WATERMARK_MARKER_HEADER, Some(&watermark.to_be_bytes()))
}

/// The watermark a marker carries, or `None` if `record` is not a marker.
///
/// # Errors
/// A marker whose value is not 8 bytes (the message says so).
pub(crate) fn marker_watermark(headers: &[Header]) -> Result<Option<i64>, String> {
    let Some(h) = headers
        .iter()
        .find(|h: &&Header| h.key == WATERMARK_MARKER_HEADER)
    else {
        return Ok(None);
    };
    let bytes = h
        .value
        .as_deref()
        .ok_or("a watermark marker without a value")?;
    let arr: [u8; 8] = bytes
        .try_into()
        .map_err(|_| format!("a watermark marker of {} bytes, not 8", bytes.len()))?;
    Ok(Some(i64::from_be_bytes(arr)))
}

/// A topic the topology writes.
#[derive(Debug, Clone)]
pub(crate) struct SinkTopic {
    /// Its name on the log.
    pub(crate) log_name: Arc<str>,
    pub(crate) partitions: u32,
    /// A repartition topic (markers follow each epoch's records).
    pub(crate) internal: bool,
    /// The sub-topology writing it (whose stamps its markers carry).
    pub(crate) writer: usize,
}

/// What the topology needs on the log.
#[derive(Debug)]
pub(crate) struct Layout {
    /// Per sub-topology, its input partition count.
    pub(crate) partitions: BTreeMap<usize, u32>,
    /// Per topology sink topic.
    pub(crate) sinks: HashMap<String, SinkTopic>,
}

/// The name on the log of topology topic `topic`.
pub(crate) fn log_topic_name(app: &str, topic: &str, internal: bool) -> String {
    if internal {
        format!("{app}-{topic}")
    } else {
        topic.to_owned()
    }
}

impl Layout {
    /// Checks the topics the topology reads and writes, creates its
    /// repartition topics and changelogs, and works out each sub-topology's
    /// partition count.
    pub(crate) fn plan<L: Log>(
        topology: &Topology,
        config: &RuntimeConfig,
        log: &L,
    ) -> Result<Layout, RuntimeError> {
        topology.validate(&config.streams)?;
        let app = config.application_id();
        let writers = topology.sink_topics();
        let (partitions, internal) = size_subtopologies(topology, &writers, log)?;
        // The topics this start needs: checked all first, created after,
        // so a refused start leaves nothing behind.
        let mut needed = Vec::new();
        for (topic, &n) in &internal {
            needed.push(TopicSpec::new(log_topic_name(app, topic, true), n));
        }
        let mut sinks = HashMap::new();
        for (topic, writer) in &writers {
            let sink = sink_topic(app, topic, *writer, internal.get(topic).copied(), log)?;
            sinks.insert(topic.clone(), sink);
        }
        if config.streams.changelog_enabled {
            needed.extend(store_changelogs(topology, config, &partitions));
        }
        let layout = Layout {
            partitions: partitions.into_iter().map(|(st, (_, n))| (st, n)).collect(),
            sinks,
        };
        if config.streams.changelog_enabled {
            // One partition per task: each task's stamp ring moves with it
            // between instances (engine/commit/task_stamps.rs).
            needed.push(
                TopicSpec::new(
                    changelog_topic(app, WATERMARK_STORE_NAME),
                    layout.partitions.values().sum(),
                )
                .compacted(),
            );
        }
        ensure_topics(log, &needed)?;
        Ok(layout)
    }

    /// The partition of the watermark changelog holding `task`'s stamp
    /// ring: the tasks of sub-topology 0 first, then those of 1, and so on.
    pub(crate) fn watermark_partition(&self, task: TaskId) -> u32 {
        self.partitions
            .range(..task.subtopology)
            .map(|(_, n)| n)
            .sum::<u32>()
            + task.partition
    }
}

/// Per sub-topology, the first topic that sized it and its partition count.
type Sizes = BTreeMap<usize, (String, u32)>;

/// Per sub-topology, a topic that sizes it and its partition count; per
/// repartition topic, its partition count. Fixed counts first: the external
/// topics' and those `Repartitioned` gave (two that differ within one
/// sub-topology are refused, naming both). Then, until nothing changes, each
/// other repartition topic: read by a sub-topology a fixed count sized, it
/// takes that count (Kafka Streams sizes a co-partitioned repartition topic
/// so); otherwise the most partitions among its writers. Every sub-topology
/// must be sized. An existing repartition topic of another count is refused
/// when the topics are ensured, naming it.
fn size_subtopologies<L: Log>(
    topology: &Topology,
    writers: &[(String, usize)],
    log: &L,
) -> Result<(Sizes, BTreeMap<String, u32>), RuntimeError> {
    let sources = topology.sources();
    let mut partitions: Sizes = BTreeMap::new();
    let mut internal: BTreeMap<String, u32> = BTreeMap::new();
    for s in sources.iter().filter(|s| !s.internal) {
        let shape =
            log.describe_topic(&s.topic)?
                .ok_or_else(|| RuntimeError::MissingSourceTopic {
                    topic: s.topic.clone(),
                })?;
        note_partitions(s.subtopology, &s.topic, shape.partitions, &mut partitions)?;
    }
    for s in sources.iter().filter(|s| s.internal) {
        if let Some(n) = topology.repartition_partitions(&s.topic) {
            internal.insert(s.topic.clone(), n);
            note_partitions(s.subtopology, &s.topic, n, &mut partitions)?;
        }
    }
    let fixed: BTreeMap<usize, u32> = partitions.iter().map(|(st, (_, n))| (*st, *n)).collect();
    loop {
        let mut changed = false;
        for s in sources.iter().filter(|s| s.internal) {
            if topology.repartition_partitions(&s.topic).is_some() {
                continue;
            }
            let sized = writers
                .iter()
                .filter(|(t, _)| *t == s.topic)
                .map(|(_, st)| partitions.get(st).map(|(_, n)| *n))
                .collect::<Option<Vec<u32>>>();
            let by_reader = fixed.get(&s.subtopology).copied();
            let Some(n) = by_reader.or_else(|| sized.and_then(|v| v.into_iter().max())) else {
                continue;
            };
            internal.insert(s.topic.clone(), n);
            changed |= note_partitions(s.subtopology, &s.topic, n, &mut partitions)?;
        }
        if !changed {
            break;
        }
    }
    for st in 0..topology.subtopology_count() {
        if !partitions.contains_key(&st) {
            return Err(RuntimeError::Unsupported {
                what: format!("sub-topology {st} without a source topic it can size"),
            });
        }
    }
    Ok((partitions, internal))
}

/// Sub-topology `st` reads `topic` of `n` partitions: `true` if that sizes
/// it first; an error if it was sized otherwise (not co-partitioned).
fn note_partitions(
    st: usize,
    topic: &str,
    n: u32,
    partitions: &mut Sizes,
) -> Result<bool, RuntimeError> {
    match partitions.get(&st) {
        Some((first, m)) if *m != n => Err(RuntimeError::NotCopartitioned {
            first: first.clone(),
            first_partitions: *m,
            second: topic.to_owned(),
            second_partitions: n,
        }),
        Some(_) => Ok(false),
        None => {
            partitions.insert(st, (topic.to_owned(), n));
            Ok(true)
        }
    }
}

/// Sink `topic`, written by sub-topology `writer`: a repartition topic of
/// `internal` partitions, or an external topic that must exist.
fn sink_topic<L: Log>(
    app: &str,
    topic: &str,
    writer: usize,
    internal: Option<u32>,
    log: &L,
) -> Result<SinkTopic, RuntimeError> {
    Ok(match internal {
        Some(n) => SinkTopic {
            log_name: log_topic_name(app, topic, true).into(),
            partitions: n,
            internal: true,
            writer,
        },
        None => {
            let shape =
                log.describe_topic(topic)?
                    .ok_or_else(|| RuntimeError::MissingSinkTopic {
                        topic: topic.to_owned(),
                    })?;
            SinkTopic {
                log_name: topic.into(),
                partitions: shape.partitions,
                internal: false,
                writer,
            }
        }
    })
}

/// Every store's changelog, as many partitions as its sub-topology; a
/// windowed store's compacted with its retention.
fn store_changelogs(
    topology: &Topology,
    config: &RuntimeConfig,
    partitions: &Sizes,
) -> Vec<TopicSpec> {
    let app = config.application_id();
    let streams_config = Arc::new(config.streams.clone());
    let mut needed = Vec::new();
    for (&st, (_, n)) in partitions {
        let task = topology.instantiate(st, &streams_config);
        for name in task.store_names() {
            let spec = TopicSpec::new(changelog_topic(app, name), *n);
            needed.push(match task.store_retention_ms(name) {
                Some(retention) => spec.compacted_with_retention(
                    Duration::from_millis(u64::try_from(retention).unwrap_or(0))
                        .saturating_add(config.windowstore_changelog_additional_retention),
                ),
                None => spec.compacted(),
            });
        }
    }
    needed
}

/// Checks every needed topic, then creates the missing ones: a name the log
/// would refuse (a store or repartition topic named with characters or a
/// length Kafka refuses) is refused before any topic is created, naming the
/// topic and the rule; an existing topic's shape is checked, naming it.
fn ensure_topics<L: Log>(log: &L, needed: &[TopicSpec]) -> Result<(), RuntimeError> {
    for spec in needed {
        stoatflow_log::check_topic_name(&spec.name)?;
    }
    let mut missing = Vec::new();
    for spec in needed {
        match log.describe_topic(&spec.name)? {
            Some(shape) if compacted_only_windowed_changelog(spec, shape) => {
                tracing::warn!(
                    topic = %spec.name,
                    "changelog {} is compacted only (created before windowed changelogs were \
                     created compact,delete): it keeps every window; set its cleanup.policy \
                     to compact,delete and its retention.ms to {} ms to bound it",
                    spec.name,
                    spec.retention.time.map_or(0, |t| t.as_millis())
                );
            }
            Some(_) => log.ensure_topic(spec)?,
            None => missing.push(spec),
        }
    }
    for spec in missing {
        log.ensure_topic(spec)?;
    }
    Ok(())
}

/// Whether `existing` is a windowed changelog `spec` wants `compact,delete`
/// as an earlier version created it: compacted only, the same partitions.
fn compacted_only_windowed_changelog(spec: &TopicSpec, existing: TopicShape) -> bool {
    spec.shape.cleanup == CleanupPolicy::CompactDelete
        && existing == TopicShape::new(spec.shape.partitions, CleanupPolicy::Compact)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_windowed_changelog_created_compacted_only_is_accepted_and_nothing_else_is() {
        let windowed = TopicSpec::new("w", 3).compacted_with_retention(Duration::from_secs(60));
        let compact = TopicShape::new(3, CleanupPolicy::Compact);
        assert!(compacted_only_windowed_changelog(&windowed, compact));
        assert!(!compacted_only_windowed_changelog(
            &windowed,
            TopicShape::new(2, CleanupPolicy::Compact)
        ));
        assert!(!compacted_only_windowed_changelog(
            &windowed,
            TopicShape::new(3, CleanupPolicy::Delete)
        ));
        let key_value = TopicSpec::new("kv", 3).compacted();
        assert!(!compacted_only_windowed_changelog(
            &key_value,
            TopicShape::new(3, CleanupPolicy::CompactDelete)
        ));
    }

    #[test]
    fn markers_round_trip_and_data_is_not_a_marker() {
        assert_eq!(
            marker_watermark(&marker(1_790_000_000_000).headers),
            Ok(Some(1_790_000_000_000))
        );
        assert_eq!(
            marker_watermark(&marker(i64::MIN).headers),
            Ok(Some(i64::MIN))
        );
        let data = Record::new(Some(b"k"), Some(b"v"), Timestamp(5));
        assert_eq!(marker_watermark(&data.headers), Ok(None));
        let bad =
            Record::new(None, None, Timestamp(5)).with_header(WATERMARK_MARKER_HEADER, Some(b"x"));
        assert!(
            marker_watermark(&bad.headers)
                .unwrap_err()
                .contains("1 bytes")
        );
    }
}
