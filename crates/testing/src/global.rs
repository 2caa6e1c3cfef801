//! The driver's global topics: a record piped into a global store's topic is kept
//! (as its topic keeps it) and applied to the store at once; a restarted driver's
//! fresh stores are restored from every record kept, as an instance restores them
//! from their topics before it processes anything.
//!
//! Knows nothing of tasks, barriers or the driver's clock: a global topic moves none
//! of them.

use std::collections::BTreeMap;

use stoatflow_streams::{DeserializationHandler, GlobalRecord, GlobalStores, ProcessError};

/// One record of a global topic, as piped.
#[derive(Debug, Clone)]
struct Kept {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    timestamp: i64,
}

/// The global stores of one driver and what was piped into their topics.
#[derive(Debug, Clone)]
pub(crate) struct GlobalTopics {
    stores: GlobalStores,
    topics: BTreeMap<String, Vec<Kept>>,
}

impl GlobalTopics {
    pub(crate) fn new(stores: GlobalStores) -> Self {
        GlobalTopics {
            stores,
            topics: BTreeMap::new(),
        }
    }

    /// Whether `topic` is a global store's.
    pub(crate) fn reads(&self, topic: &str) -> bool {
        self.stores.reads(topic)
    }

    /// Keeps a record of `topic` (at the topic's next offset, partition 0) and
    /// applies it to its store.
    pub(crate) fn pipe(
        &mut self,
        topic: &str,
        key: Option<Vec<u8>>,
        value: Option<Vec<u8>>,
        timestamp: i64,
        handler: DeserializationHandler,
    ) -> Result<(), ProcessError> {
        let kept = self.topics.entry(topic.to_owned()).or_default();
        kept.push(Kept {
            key,
            value,
            timestamp,
        });
        let offset = kept.len() as i64 - 1;
        apply(&self.stores, topic, offset, &kept[kept.len() - 1], handler)
    }

    /// Takes over `old`'s records and restores this driver's stores from all of them.
    pub(crate) fn restore_from(
        &mut self,
        old: &GlobalTopics,
        handler: DeserializationHandler,
    ) -> Result<(), ProcessError> {
        self.topics = old.topics.clone();
        for (topic, records) in &self.topics {
            for (offset, r) in records.iter().enumerate() {
                apply(&self.stores, topic, offset as i64, r, handler)?;
            }
        }
        Ok(())
    }
}

fn apply(
    stores: &GlobalStores,
    topic: &str,
    offset: i64,
    r: &Kept,
    handler: DeserializationHandler,
) -> Result<(), ProcessError> {
    let rec = GlobalRecord {
        topic,
        partition: Some(0),
        offset: Some(offset),
        key: r.key.as_deref(),
        value: r.value.as_deref(),
        timestamp: r.timestamp,
    };
    stores.apply(&rec, handler)
}
