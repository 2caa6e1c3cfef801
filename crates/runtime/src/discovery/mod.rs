//! Which instance to ask about a key (Kafka Streams' `queryMetadataForKey`
//! and `application.server`; docs/queries.md#metadata).
//!
//! A key's task is its partition, under Kafka's default partitioner, of the
//! leading source topic of the sub-topology holding the store. Its owner
//! comes from the group as the engine was built with it (the group's
//! description), its standby holders from the placement every member
//! computes alike (`engine::restore::placement`), and each member's
//! `application.server` from the endpoints topic (`endpoints`), where every
//! member that sets one writes it before it joins.
//!
//! Owns [`Locator`] (the topology's stores and topics, and the log behind a
//! type-erased [`Directory`]) and the metadata types (`metadata`). Reads what
//! the engine publishes; never changes the engine or the group.

pub(crate) mod endpoints;
mod metadata;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use stoatflow_log::{Log, LogError};
use stoatflow_streams::{Serde, Topology};

use crate::engine::Shared;
use crate::engine::assignment::leading_topics;
use crate::engine::partitioner::partition_for_key;
use crate::host_info::HostInfo;
use crate::task_id::TaskId;

use endpoints::EndpointReader;
pub use metadata::{InstanceInfo, KeyQueryMetadata, MetadataError};
use metadata::{Sight, locate};

/// What a [`Locator`] asks of the log, whatever its backend.
trait Directory: Send + Sync {
    /// The partition count of `topic`, `None` if it does not exist.
    fn partitions(&self, topic: &str) -> Result<Option<u32>, LogError>;
    /// Every member's advertised endpoint, by member name.
    fn endpoints(&self) -> Result<BTreeMap<String, String>, LogError>;
}

struct LogDirectory<L: Log> {
    log: Arc<L>,
    app: String,
    reader: Mutex<EndpointReader<L::Consumer>>,
}

impl<L: Log> Directory for LogDirectory<L> {
    fn partitions(&self, topic: &str) -> Result<Option<u32>, LogError> {
        Ok(self.log.describe_topic(topic)?.map(|s| s.partitions))
    }

    fn endpoints(&self) -> Result<BTreeMap<String, String>, LogError> {
        let mut reader = self.reader.lock().expect("endpoint reader lock");
        reader.read(&*self.log, &self.app).cloned()
    }
}

/// Computes key metadata for one application instance.
pub(crate) struct Locator {
    me: String,
    server: Option<HostInfo>,
    replicas: u32,
    /// Each task store's sub-topology.
    stores: BTreeMap<String, usize>,
    /// Each sub-topology's leading source topic (its log name).
    leading: Vec<String>,
    /// Partition counts already read (a topic's count does not change).
    partitions: Mutex<BTreeMap<String, u32>>,
    directory: Box<dyn Directory>,
}

impl std::fmt::Debug for Locator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Locator")
            .field("me", &self.me)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// The settings a [`Locator`] reads.
pub(crate) struct LocatorConfig<'a> {
    pub app: &'a str,
    /// This instance's member name.
    pub me: String,
    /// Its `application.server`, checked by the settings' validation.
    pub server: Option<&'a str>,
    pub replicas: u32,
}

impl Locator {
    pub(crate) fn new<L: Log + 'static>(
        topology: &Topology,
        config: LocatorConfig<'_>,
        log: Arc<L>,
    ) -> Self {
        Locator {
            me: config.me,
            server: config.server.and_then(|s| HostInfo::parse(s).ok()),
            replicas: config.replicas,
            stores: topology.task_stores(),
            leading: leading_topics(topology, config.app),
            partitions: Mutex::default(),
            directory: Box::new(LogDirectory {
                log,
                app: config.app.to_owned(),
                reader: Mutex::new(EndpointReader::new()),
            }),
        }
    }

    /// Where `key` of `store` lives, its bytes written by `key_serde`.
    pub(crate) fn locate<K>(
        &self,
        shared: &Shared,
        store: &str,
        key: &K,
        key_serde: &dyn Serde<K>,
    ) -> Result<KeyQueryMetadata, MetadataError> {
        let Some(&st) = self.stores.get(store) else {
            return Err(MetadataError::UnknownStore {
                store: store.to_owned(),
                known: self.stores.keys().cloned().collect::<Vec<_>>().join(", "),
            });
        };
        let topic = self.leading.get(st).ok_or_else(|| MetadataError::Log {
            store: store.to_owned(),
            message: format!("sub-topology {st} has no source topic"),
        })?;
        let mut bytes = Vec::new();
        key_serde
            .serialize(topic, key, &mut bytes)
            .map_err(|e| MetadataError::KeyEncoding {
                store: store.to_owned(),
                serde: key_serde.name().to_owned(),
                reason: e.to_string(),
            })?;
        let log_error = |e: LogError| MetadataError::Log {
            store: store.to_owned(),
            message: e.to_string(),
        };
        let partitions = self.partitions(topic).map_err(log_error)?;
        let Some(partitions) = partitions.filter(|n| *n > 0) else {
            return Err(MetadataError::NotAvailable {
                store: store.to_owned(),
                task: TaskId::new(st, 0),
                reason: format!("its source topic {topic} does not exist yet"),
            });
        };
        let task = TaskId::new(st, partition_for_key(&bytes, partitions));
        let group = shared.group.lock().expect("group lock").clone();
        let endpoints = match &group {
            Some(_) => self.directory.endpoints().map_err(log_error)?,
            None => BTreeMap::new(),
        };
        let active = shared.assignment().active;
        let sight = Sight {
            me: &self.me,
            server: self.server.as_ref(),
            active: &active,
            group: group.as_ref(),
            replicas: self.replicas,
            endpoints: &endpoints,
        };
        locate(task, &sight).map_err(|reason| MetadataError::NotAvailable {
            store: store.to_owned(),
            task,
            reason,
        })
    }

    fn partitions(&self, topic: &str) -> Result<Option<u32>, LogError> {
        if let Some(n) = self.partitions.lock().expect("partitions lock").get(topic) {
            return Ok(Some(*n));
        }
        let n = self.directory.partitions(topic)?;
        if let Some(n) = n {
            self.partitions
                .lock()
                .expect("partitions lock")
                .insert(topic.to_owned(), n);
        }
        Ok(n)
    }
}
