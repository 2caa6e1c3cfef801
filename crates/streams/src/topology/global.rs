//! Global stores: a key-value store that holds the whole of one topic on every
//! instance, read by every task and written only by whoever reads that topic
//! (the runtime's global thread, or the test driver).
//!
//! A global store is defined once, when the topology is built
//! ([`GlobalStoreDef`]), and made anew for each running instance of the topology
//! ([`GlobalStores`]): an instance restores it from its topic before it processes
//! anything, so a fresh set is empty. It is never changelogged (the topic is its
//! changelog) and kept in memory on both engines. Tasks only read it; the
//! store is shared across threads behind a read-write lock.
//!
//! This module owns the store, a global table's decoding of the topic's records (a
//! null value deletes the key), the contract of any other update
//! ([`GlobalStoreApply`]) and the set of an instance's global stores. It knows
//! nothing of who reads the topic, when, or of any operator that looks the store up.

use std::any::Any;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, PoisonError, RwLock};

use stoatflow_state::ValueAndTimestamp;

use crate::config::DeserializationHandler;
use crate::error::{ProcessError, position};
use crate::serde::SerdeRef;

/// One record of a global store's topic, as read from the log.
#[derive(Debug, Clone, Copy)]
pub struct GlobalRecord<'a> {
    /// The topic.
    pub topic: &'a str,
    /// Its partition, when known (for error messages).
    pub partition: Option<i32>,
    /// Its offset, when known (for error messages).
    pub offset: Option<i64>,
    /// The key bytes.
    pub key: Option<&'a [u8]>,
    /// The value bytes; `None` (a null) deletes the key.
    pub value: Option<&'a [u8]>,
    /// The record's timestamp, kept with the value.
    pub timestamp: i64,
}

/// A global key-value store: the latest value of each key of its topic, with the
/// timestamp of the record that wrote it. Keys are in `K: Ord`'s order.
pub struct GlobalKeyValueStore<K, V> {
    name: String,
    rows: RwLock<BTreeMap<K, ValueAndTimestamp<V>>>,
}

impl<K, V> std::fmt::Debug for GlobalKeyValueStore<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GlobalKeyValueStore")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<K: Ord + Clone, V: Clone> GlobalKeyValueStore<K, V> {
    pub(crate) fn new(name: &str) -> Self {
        GlobalKeyValueStore {
            name: name.to_owned(),
            rows: RwLock::new(BTreeMap::new()),
        }
    }

    /// The store's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The value of `key` and its timestamp, if the key has one.
    pub fn get(&self, key: &K) -> Option<ValueAndTimestamp<V>> {
        // A writer that panicked mid-update left a whole map: every write is one insert
        // or one remove.
        let rows = self.rows.read().unwrap_or_else(PoisonError::into_inner);
        rows.get(key).cloned()
    }

    /// The keys in `[from, to]` (either bound open when `None`), in key order.
    pub fn range(&self, from: Option<&K>, to: Option<&K>) -> Vec<(K, ValueAndTimestamp<V>)> {
        let from = from.map_or(Bound::Unbounded, Bound::Included);
        let to = to.map_or(Bound::Unbounded, Bound::Included);
        let rows = self.rows.read().unwrap_or_else(PoisonError::into_inner);
        rows.range::<K, _>((from, to))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Every key, in key order.
    pub fn all(&self) -> Vec<(K, ValueAndTimestamp<V>)> {
        self.range(None, None)
    }

    /// The number of keys.
    pub fn approximate_num_entries(&self) -> u64 {
        self.rows
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len() as u64
    }

    /// Writes `value` for `key` (`None` deletes it). Only a global store's updater
    /// calls it: tasks read.
    pub(crate) fn write(&self, key: K, value: Option<V>, timestamp: i64) {
        let mut rows = self.rows.write().unwrap_or_else(PoisonError::into_inner);
        match value {
            Some(v) => {
                rows.insert(key, ValueAndTimestamp::new(v, timestamp));
            }
            None => {
                rows.remove(&key);
            }
        }
    }
}

/// What an instance's set of global stores needs of one store, whatever its types.
pub(crate) trait GlobalStoreApply: Send + Sync {
    /// Decodes `rec` and writes it: a null value deletes the key. A record whose key
    /// or value does not decode fails under `LogAndFail` and is skipped (logged)
    /// under `LogAndContinue`; a null key is skipped (Kafka Streams' global
    /// stores skip it too).
    fn apply(
        &self,
        rec: &GlobalRecord<'_>,
        handler: DeserializationHandler,
    ) -> Result<(), ProcessError>;

    /// The store it writes (a `GlobalKeyValueStore`), for a typed look-up.
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;

    /// The store's concrete type's name, for a mismatch's error.
    fn type_name(&self) -> &'static str;
}

/// Decodes a global record with `key_serde` and `value_serde` (which reads a null
/// as `None`): `None` when the handler skips it (a null key, or a key or value that
/// does not decode under `LogAndContinue`), an error under `LogAndFail`.
pub(crate) fn decode<K, V>(
    rec: &GlobalRecord<'_>,
    store: &str,
    key_serde: &SerdeRef<K>,
    value_serde: &SerdeRef<Option<V>>,
    handler: DeserializationHandler,
) -> Result<Option<(K, Option<V>)>, ProcessError> {
    let skip_or_fail = |part: &'static str, e: crate::serde::SerdeError| {
        let at = position(rec.partition, rec.offset);
        match handler {
            DeserializationHandler::LogAndFail => Err(ProcessError::Deserialization {
                part,
                topic: rec.topic.to_owned(),
                position: at,
                source: Box::new(e),
            }),
            DeserializationHandler::LogAndContinue => {
                tracing::warn!(topic = %rec.topic, position = %at, store, error = %e, "skipping a global store record whose {part} does not deserialize");
                Ok(None)
            }
        }
    };
    let Some(key_bytes) = rec.key else {
        tracing::warn!(topic = %rec.topic, position = %position(rec.partition, rec.offset), store, "skipping a global store record with a null key");
        return Ok(None);
    };
    let key = match key_serde.deserialize(rec.topic, key_bytes) {
        Ok(k) => k,
        Err(e) => return skip_or_fail("key", e),
    };
    match value_serde.deserialize_nullable(rec.topic, rec.value) {
        Ok(v) => Ok(Some((key, v))),
        Err(e) => skip_or_fail("value", e),
    }
}

/// A global table's update: the latest value per key, a null deleting.
pub(crate) struct TableUpdate<K, V> {
    pub(crate) store: Arc<GlobalKeyValueStore<K, V>>,
    pub(crate) key_serde: SerdeRef<K>,
    pub(crate) value_serde: SerdeRef<Option<V>>,
}

impl<K, V> GlobalStoreApply for TableUpdate<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    fn apply(
        &self,
        rec: &GlobalRecord<'_>,
        handler: DeserializationHandler,
    ) -> Result<(), ProcessError> {
        let name = self.store.name();
        if let Some((key, value)) = decode(rec, name, &self.key_serde, &self.value_serde, handler)?
        {
            self.store.write(key, value, rec.timestamp);
        }
        Ok(())
    }

    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self.store.clone()
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<GlobalKeyValueStore<K, V>>()
    }
}

/// How to make a fresh, empty instance of one global store.
pub(crate) type GlobalStoreMaker = Arc<dyn Fn() -> Arc<dyn GlobalStoreApply> + Send + Sync>;

/// A global store as the topology defines it: its name, its topic, how to make it.
#[derive(Clone)]
pub(crate) struct GlobalStoreDef {
    pub(crate) name: String,
    pub(crate) topic: String,
    pub(crate) make: GlobalStoreMaker,
}

impl std::fmt::Debug for GlobalStoreDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GlobalStoreDef")
            .field("name", &self.name)
            .field("topic", &self.topic)
            .finish()
    }
}

struct GlobalStoreInstance {
    name: String,
    topic: String,
    store: Arc<dyn GlobalStoreApply>,
}

/// The global stores of one running instance of a topology (cloning shares them):
/// every task of the instance reads them; only the reader of their topics writes.
#[derive(Clone, Default)]
pub struct GlobalStores {
    stores: Arc<Vec<GlobalStoreInstance>>,
}

impl std::fmt::Debug for GlobalStores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.stores.iter().map(|s| (&s.name, &s.topic)))
            .finish()
    }
}

impl GlobalStores {
    /// Fresh, empty stores for `defs`.
    pub(crate) fn new(defs: &[GlobalStoreDef]) -> Self {
        let stores = defs
            .iter()
            .map(|d| GlobalStoreInstance {
                name: d.name.clone(),
                topic: d.topic.clone(),
                store: (d.make)(),
            })
            .collect();
        GlobalStores {
            stores: Arc::new(stores),
        }
    }

    /// Whether the topology has no global store.
    pub fn is_empty(&self) -> bool {
        self.stores.is_empty()
    }

    /// The topics the global stores are read from, one per store.
    pub fn topics(&self) -> Vec<String> {
        self.stores.iter().map(|s| s.topic.clone()).collect()
    }

    /// The global stores' names.
    pub fn store_names(&self) -> Vec<String> {
        self.stores.iter().map(|s| s.name.clone()).collect()
    }

    /// Whether `topic` is a global store's topic.
    pub fn reads(&self, topic: &str) -> bool {
        self.stores.iter().any(|s| s.topic == topic)
    }

    /// Applies one record of a global topic to the store it feeds (a null value
    /// deletes the key). A topic no global store reads is ignored.
    ///
    /// # Errors
    /// [`ProcessError::Deserialization`] naming the topic and position, under
    /// `LogAndFail`, for a key or value that does not decode.
    pub fn apply(
        &self,
        rec: &GlobalRecord<'_>,
        handler: DeserializationHandler,
    ) -> Result<(), ProcessError> {
        match self.stores.iter().find(|s| s.topic == rec.topic) {
            Some(s) => s.store.apply(rec, handler),
            None => Ok(()),
        }
    }

    /// The global store named `name`, typed; `Err` with the store's actual type name
    /// if it has other types, `Ok(None)` if there is no such store.
    pub fn store<K, V>(
        &self,
        name: &str,
    ) -> Result<Option<Arc<GlobalKeyValueStore<K, V>>>, &'static str>
    where
        K: Send + Sync + 'static,
        V: Send + Sync + 'static,
    {
        let Some(s) = self.stores.iter().find(|s| s.name == name) else {
            return Ok(None);
        };
        let type_name = s.store.type_name();
        s.store
            .clone()
            .as_any()
            .downcast::<GlobalKeyValueStore<K, V>>()
            .map(Some)
            .map_err(|_| type_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serde::{Serdes, nullable_ref};

    fn defs() -> Vec<GlobalStoreDef> {
        let make: GlobalStoreMaker = Arc::new(|| {
            Arc::new(TableUpdate {
                store: Arc::new(GlobalKeyValueStore::<String, String>::new("g")),
                key_serde: Arc::new(Serdes::string()),
                value_serde: nullable_ref(Arc::new(Serdes::string())),
            })
        });
        vec![GlobalStoreDef {
            name: "g".into(),
            topic: "gt".into(),
            make,
        }]
    }

    fn rec<'a>(key: &'a [u8], value: Option<&'a [u8]>, ts: i64) -> GlobalRecord<'a> {
        GlobalRecord {
            topic: "gt",
            partition: Some(0),
            offset: Some(7),
            key: Some(key),
            value,
            timestamp: ts,
        }
    }

    fn typed(g: &GlobalStores) -> Arc<GlobalKeyValueStore<String, String>> {
        g.store::<String, String>("g").unwrap().unwrap()
    }

    #[test]
    fn a_null_value_deletes_and_a_new_set_starts_empty() {
        let defs = defs();
        let g = GlobalStores::new(&defs);
        let h = DeserializationHandler::LogAndFail;
        g.apply(&rec(b"a", Some(b"1"), 5), h).unwrap();
        g.apply(&rec(b"b", Some(b"2"), 6), h).unwrap();
        g.apply(&rec(b"a", None, 7), h).unwrap();
        assert_eq!(typed(&g).get(&"a".into()), None);
        assert_eq!(
            typed(&g).get(&"b".into()),
            Some(ValueAndTimestamp::new("2".into(), 6))
        );
        assert_eq!(typed(&g).approximate_num_entries(), 1);
        assert!(typed(&GlobalStores::new(&defs)).all().is_empty());
        assert!(
            typed(&g.clone()).get(&"b".into()).is_some(),
            "a clone shares"
        );
    }

    #[test]
    fn a_bad_value_fails_naming_topic_and_position_or_is_skipped() {
        let g = GlobalStores::new(&defs());
        let bad: &[u8] = &[0xff, 0xfe];
        let err = g
            .apply(&rec(b"a", Some(bad), 1), DeserializationHandler::LogAndFail)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("value") && err.contains("gt") && err.contains("offset 7"),
            "{err}"
        );
        g.apply(
            &rec(b"a", Some(bad), 1),
            DeserializationHandler::LogAndContinue,
        )
        .unwrap();
        assert_eq!(typed(&g).approximate_num_entries(), 0);
    }

    #[test]
    fn a_store_asked_for_with_other_types_names_its_type() {
        let g = GlobalStores::new(&defs());
        let err = g.store::<i64, String>("g").unwrap_err();
        assert!(err.contains("GlobalKeyValueStore"), "{err}");
        assert!(g.store::<String, String>("nope").unwrap().is_none());
    }
}
