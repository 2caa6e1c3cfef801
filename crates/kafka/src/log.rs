//! [`KafkaLog`]: topics, clients and committed offsets over a Kafka cluster.
//!
//! Owns: the admin client (create and describe topics) and the creation of
//! consumers, group members, transactional and at-least-once producers with
//! the properties our semantics need; its members and producers share the
//! groups' generations (offsets, in a transaction or outside one, are
//! committed as the log's member). Knows nothing of streams, windows or
//! watermarks.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer as _};
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::{Offset as KOffset, TopicPartitionList};
use stoatflow_log::{
    CleanupPolicy, GroupMember, Log, LogError, Offset, OffsetAndMetadata, Timestamp,
    TopicPartition, TopicShape, TopicSpec,
};

use crate::block_on::block_on;
use crate::committed::committed;
use crate::config::KafkaConfig;
use crate::consumer::KafkaConsumer;
use crate::errors::{map, map_offset_commit};
use crate::generation::Generations;
use crate::member::KafkaMember;
use crate::plain_producer::KafkaPlainProducer;
use crate::producer::KafkaProducer;

/// A Kafka cluster seen through the broker interface.
pub struct KafkaLog {
    config: KafkaConfig,
    admin: AdminClient<DefaultClientContext>,
    meta: BaseConsumer,
    /// Per group, the generation of this log's member (KIP-447).
    generations: Generations,
}

impl std::fmt::Debug for KafkaLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaLog")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl KafkaLog {
    /// Connects, checking that the cluster answers within the request timeout.
    ///
    /// # Errors
    /// [`LogError::Config`] for invalid configuration, [`LogError::Unreachable`]
    /// if no broker answers.
    pub fn connect(config: KafkaConfig) -> Result<Self, LogError> {
        config.validate()?;
        let admin: AdminClient<DefaultClientContext> = config
            .client_config("admin")
            .create()
            .map_err(|e| map(&e, "creating the admin client", None))?;
        let meta: BaseConsumer = config
            .client_config("metadata")
            .set("allow.auto.create.topics", "false")
            .create()
            .map_err(|e| map(&e, "creating the metadata client", None))?;
        meta.fetch_metadata(None, config.request_timeout)
            .map_err(|e| LogError::Unreachable {
                bootstrap: config.bootstrap_servers.clone(),
                reason: e.to_string(),
            })?;
        Ok(KafkaLog {
            config,
            admin,
            meta,
            generations: Generations::default(),
        })
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &KafkaConfig {
        &self.config
    }

    fn admin_options(&self) -> AdminOptions {
        AdminOptions::new().operation_timeout(Some(self.config.request_timeout))
    }

    fn admin_wait<T>(&self, op: &str, fut: impl Future<Output = T>) -> Result<T, LogError> {
        block_on(fut, self.config.request_timeout + Duration::from_secs(5)).ok_or_else(|| {
            LogError::Timeout {
                op: op.to_owned(),
                after_ms: self.config.timeout_ms(),
            }
        })
    }
}

impl KafkaConfig {
    /// librdkafka properties common to every client.
    pub(crate) fn client_config(&self, role: &str) -> ClientConfig {
        let mut c = ClientConfig::new();
        for (k, v) in self.properties.iter() {
            c.set(k, v);
        }
        c.set("bootstrap.servers", &self.bootstrap_servers)
            .set("client.id", format!("{}-{role}", self.client_id))
            .set(
                "message.max.bytes",
                (self.max_record_bytes + 4096).to_string(),
            )
            .set("socket.timeout.ms", self.timeout_ms().to_string());
        c
    }
}

impl Log for KafkaLog {
    type Consumer = KafkaConsumer;
    type Producer = KafkaProducer;
    type PlainProducer = KafkaPlainProducer;

    fn create_topic(&self, spec: &TopicSpec) -> Result<(), LogError> {
        let partitions = i32::try_from(spec.shape.partitions).map_err(|_| LogError::Config {
            key: format!("topic {:?} partitions", spec.name),
            reason: "too many partitions".into(),
        })?;
        let mut topic = NewTopic::new(
            &spec.name,
            partitions,
            TopicReplication::Fixed(self.config.replication_factor.unwrap_or(-1)),
        )
        .set("cleanup.policy", spec.shape.cleanup.as_kafka_str());
        // No limit is -1, said explicitly: left unset, the broker's default
        // applies (7 days of record time in Kafka), and a topic fed records
        // with old event-time timestamps (a replay, a backfill, a repartition
        // topic) would lose its head before it is read.
        let bytes = spec
            .retention
            .bytes
            .map_or_else(|| "-1".to_owned(), |b| b.to_string());
        let ms = spec
            .retention
            .time
            .map_or_else(|| "-1".to_owned(), |t| t.as_millis().to_string());
        topic = topic
            .set("retention.bytes", &bytes)
            .set("retention.ms", &ms);
        let op = format!("creating topic {:?}", spec.name);
        let results = self
            .admin_wait(
                &op,
                self.admin.create_topics([&topic], &self.admin_options()),
            )?
            .map_err(|e| map(&e, op.clone(), None))?;
        for r in results {
            match r {
                Ok(_) => {}
                Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {
                    return Err(LogError::TopicExists {
                        topic: spec.name.clone(),
                    });
                }
                Err((_, code)) => {
                    return Err(LogError::Broker {
                        op,
                        message: code.to_string(),
                        kind: stoatflow_log::ErrorKind::Fatal,
                    });
                }
            }
        }
        // Wait (bounded) until the topic's partitions are visible in metadata.
        let deadline = std::time::Instant::now() + self.config.request_timeout;
        while std::time::Instant::now() < deadline {
            if self.describe_partitions(&spec.name)? == Some(spec.shape.partitions) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(LogError::Timeout {
            op: format!("waiting for topic {:?} to appear", spec.name),
            after_ms: self.config.timeout_ms(),
        })
    }

    fn describe_topic(&self, topic: &str) -> Result<Option<TopicShape>, LogError> {
        let Some(partitions) = self.describe_partitions(topic)? else {
            return Ok(None);
        };
        let config = self.topic_config(topic)?;
        let cleanup = config
            .get("cleanup.policy")
            .map_or(CleanupPolicy::Delete, |v| CleanupPolicy::from_kafka_str(v));
        Ok(Some(TopicShape::new(partitions, cleanup)))
    }

    fn consumer(&self, group: &str) -> Result<KafkaConsumer, LogError> {
        KafkaConsumer::new(&self.config, group)
    }

    fn join_group(
        &self,
        group: &str,
        member: &str,
        topics: &[String],
    ) -> Result<Box<dyn GroupMember>, LogError> {
        Ok(Box::new(KafkaMember::join(
            &self.config,
            group,
            member,
            topics,
            &self.generations,
        )?))
    }

    fn transactional_producer(&self, transactional_id: &str) -> Result<KafkaProducer, LogError> {
        KafkaProducer::new(&self.config, transactional_id, self.generations.clone())
    }

    fn producer(&self, client_id: &str) -> Result<KafkaPlainProducer, LogError> {
        KafkaPlainProducer::new(&self.config, client_id)
    }

    /// As the log's member of `group` when it has one (its consumer, in its
    /// generation), else as a client outside the group, which the broker
    /// accepts only while the group has no members.
    fn commit_offsets(
        &self,
        group: &str,
        offsets: &[(TopicPartition, OffsetAndMetadata)],
    ) -> Result<(), LogError> {
        let op = format!("committing offsets of group {group:?}");
        let mut tpl = TopicPartitionList::new();
        for (tp, om) in offsets {
            let mut e = tpl.add_partition(&tp.topic, tp.partition.0 as i32);
            e.set_offset(KOffset::Offset(om.offset.0 as i64))
                .map_err(|err| map(&err, format!("adding the offset of {tp}"), None))?;
            e.set_metadata(om.metadata.clone());
        }
        let committed = match self.generations.committer(group) {
            Some(member) => member.commit_offsets(&tpl),
            None => {
                let c: BaseConsumer = self
                    .config
                    .client_config("offsets")
                    .set("group.id", group)
                    .set("enable.auto.commit", "false")
                    .create()
                    .map_err(|e| map(&e, "creating an offsets client", None))?;
                c.commit(&tpl, CommitMode::Sync)
            }
        };
        committed.map_err(|e| map_offset_commit(&e, op, group))
    }

    fn purge_below(&self, tp: &TopicPartition, before: Offset) -> Result<(), LogError> {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(
            &tp.topic,
            tp.partition.0 as i32,
            KOffset::Offset(before.0 as i64),
        )
        .map_err(|e| map(&e, format!("purging {tp} below {}", before.0), None))?;
        let op = format!("purging {tp} below offset {}", before.0);
        let result = self
            .admin_wait(&op, self.admin.delete_records(&tpl, &self.admin_options()))?
            .map_err(|e| map(&e, op.clone(), None))?;
        for e in result.elements() {
            if let Err(err) = e.error() {
                if err.rdkafka_error_code() == Some(RDKafkaErrorCode::OffsetOutOfRange) {
                    let (start, end) = self.watermarks(tp)?;
                    return Err(LogError::OffsetOutOfRange {
                        topic: tp.topic.clone(),
                        partition: tp.partition,
                        offset: before,
                        start: Offset(start),
                        end: Offset(end),
                    });
                }
                return Err(map(&err, op, None));
            }
        }
        Ok(())
    }

    /// A Kafka cluster compacts and applies retention by itself.
    fn upkeep(&self, _now: Timestamp) -> Result<(), LogError> {
        Ok(())
    }

    fn committed_offsets(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>, LogError> {
        let c: BaseConsumer = self
            .config
            .client_config("offsets")
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .set("isolation.level", "read_committed")
            .create()
            .map_err(|e| map(&e, "creating an offsets client", None))?;
        committed(&c, partitions, self.config.request_timeout, group)
    }
}

impl KafkaLog {
    /// The first and end (high-watermark) offsets of `tp`.
    fn watermarks(&self, tp: &TopicPartition) -> Result<(u64, u64), LogError> {
        let (lo, hi) = self
            .meta
            .fetch_watermarks(
                &tp.topic,
                tp.partition.0 as i32,
                self.config.request_timeout,
            )
            .map_err(|e| map(&e, format!("fetching the offsets of {tp}"), None))?;
        Ok((lo.max(0) as u64, hi.max(0) as u64))
    }

    /// The topic's configuration as the broker holds it (`cleanup.policy`,
    /// `retention.ms`, ...): every entry that has a value.
    ///
    /// # Errors
    /// [`LogError::Broker`] if the broker refuses (an unknown topic among
    /// them), [`LogError::Timeout`] if it does not answer.
    pub fn topic_config(&self, topic: &str) -> Result<BTreeMap<String, String>, LogError> {
        let op = format!("describing the configuration of topic {topic:?}");
        let results = self
            .admin_wait(
                &op,
                self.admin
                    .describe_configs([&ResourceSpecifier::Topic(topic)], &self.admin_options()),
            )?
            .map_err(|e| map(&e, op.clone(), None))?;
        let mut config = BTreeMap::new();
        for r in results {
            let resource = r.map_err(|code| LogError::Broker {
                op: op.clone(),
                message: code.to_string(),
                kind: stoatflow_log::ErrorKind::Fatal,
            })?;
            for entry in resource.entries {
                if let Some(value) = entry.value {
                    config.insert(entry.name, value);
                }
            }
        }
        Ok(config)
    }

    fn describe_partitions(&self, topic: &str) -> Result<Option<u32>, LogError> {
        let md = self
            .meta
            .fetch_metadata(Some(topic), self.config.request_timeout)
            .map_err(|e| map(&e, format!("fetching metadata of topic {topic:?}"), None))?;
        let Some(t) = md.topics().iter().find(|t| t.name() == topic) else {
            return Ok(None);
        };
        if let Some(err) = t.error() {
            let code: RDKafkaErrorCode = err.into();
            if code == RDKafkaErrorCode::UnknownTopicOrPartition {
                return Ok(None);
            }
            return Err(LogError::Broker {
                op: format!("fetching metadata of topic {topic:?}"),
                message: code.to_string(),
                kind: stoatflow_log::ErrorKind::Retriable,
            });
        }
        Ok(Some(t.partitions().len() as u32))
    }
}
