//! A global store kept by user code (Kafka Streams' `addGlobalStore`): each record
//! of the store's topic is decoded and handed to the user's update with a
//! [`GlobalStoreWriter`], the only way to write a global store. Processors read
//! global stores with `ProcessorContext::global_store`.
//!
//! Knows the global store's contract (`topology::global`); never who reads the
//! topic, nor when.

use std::any::Any;
use std::sync::Arc;

use stoatflow_state::ValueAndTimestamp;

use crate::config::DeserializationHandler;
use crate::error::ProcessError;
use crate::record::{Headers, Record};
use crate::serde::SerdeRef;
use crate::topology::global::{GlobalKeyValueStore, GlobalRecord, GlobalStoreApply, decode};

/// What a global store's update writes with: the store, and the timestamp of the
/// record being applied (which every write keeps).
#[derive(Debug)]
pub struct GlobalStoreWriter<'a, K, V> {
    store: &'a GlobalKeyValueStore<K, V>,
    timestamp: i64,
}

impl<K: Ord + Clone, V: Clone> GlobalStoreWriter<'_, K, V> {
    /// Writes `value` for `key`, with the record's timestamp.
    pub fn put(&mut self, key: K, value: V) {
        self.store.write(key, Some(value), self.timestamp);
    }

    /// Deletes `key`.
    pub fn delete(&mut self, key: &K) {
        self.store.write(key.clone(), None, self.timestamp);
    }

    /// The value of `key`, if any.
    pub fn get(&self, key: &K) -> Option<ValueAndTimestamp<V>> {
        self.store.get(key)
    }

    /// The store's name.
    pub fn name(&self) -> &str {
        self.store.name()
    }
}

/// A user's update of a global store: the writer and one record of its topic (a
/// null value as `None`).
pub(crate) type GlobalUpdateFn<KIn, VIn, K, V> = Arc<
    dyn Fn(&mut GlobalStoreWriter<'_, K, V>, Record<KIn, Option<VIn>>) -> Result<(), ProcessError>
        + Send
        + Sync,
>;

/// Decodes each record of the topic and hands it to the user's update.
pub(crate) struct ProcessedUpdate<KIn, VIn, K, V> {
    pub(crate) store: Arc<GlobalKeyValueStore<K, V>>,
    pub(crate) key_serde: SerdeRef<KIn>,
    pub(crate) value_serde: SerdeRef<Option<VIn>>,
    pub(crate) update: GlobalUpdateFn<KIn, VIn, K, V>,
}

impl<KIn, VIn, K, V> GlobalStoreApply for ProcessedUpdate<KIn, VIn, K, V>
where
    KIn: 'static,
    VIn: 'static,
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    fn apply(
        &self,
        rec: &GlobalRecord<'_>,
        handler: DeserializationHandler,
    ) -> Result<(), ProcessError> {
        let name = self.store.name();
        let Some((key, value)) = decode(rec, name, &self.key_serde, &self.value_serde, handler)?
        else {
            return Ok(());
        };
        let mut writer = GlobalStoreWriter {
            store: &self.store,
            timestamp: rec.timestamp,
        };
        let record = Record {
            key,
            value,
            timestamp: rec.timestamp,
            headers: Headers::empty(),
        };
        (self.update)(&mut writer, record)
    }

    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self.store.clone()
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<GlobalKeyValueStore<K, V>>()
    }
}
