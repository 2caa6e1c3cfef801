//! The foreign-key table join (`KTable::join_on_foreign_key`, Kafka Streams'
//! subscription/response design), as three operators in four nodes:
//!
//! - [`SubscriptionSend`] (left table, left task): keeps the left rows, and
//!   for each change sends subscriptions keyed by foreign key: unsubscribe
//!   the old foreign key when it changed, subscribe the new one;
//! - [`RightSide`] on the subscription topic (right task): keeps the
//!   subscription store and answers a subscription with the right value;
//! - [`RightSide`] on the right table (right task): keeps the right rows and
//!   answers every subscriber of a foreign key whose row changed;
//! - [`ResponseResolve`] (response topic, left task): drops a response whose
//!   hash no longer matches the current left value (stale) and joins.
//!
//! Instructions follow Kafka Streams' `SubscriptionSendProcessorSupplier`,
//! except that a left join's deleted row sends `DeleteAndPropagate` to its
//! old foreign key where Kafka Streams sends a null-key subscription: both
//! end in the same tombstone. Knows nothing of the topics between them.

use std::cell::RefCell;
use std::ops::Bound;
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{KeyValueStore, ValueAndTimestamp};

use crate::error::ProcessError;
use crate::processors::table_aggregate::KvStoreOf;
use crate::record::Record;
use crate::serde::SerdeRef;
use crate::serde::subscription::{
    Instruction, Response, Subscription, SubscriptionKey, value_hash,
};
use crate::topology::context::TaskContext;
use crate::topology::graph::{Downstream, Push};

/// The foreign key of a left value.
pub(crate) type FkExtractor<V, FK> = Arc<dyn Fn(&V) -> FK + Send + Sync>;
/// The joiner: the left value and the right one (`None` only in a left join).
pub(crate) type FkJoiner<V, VO, R> = Arc<dyn Fn(&V, Option<&VO>) -> R + Send + Sync>;

/// A named store, its errors named after it.
pub(crate) struct NamedStore<K, V> {
    pub(crate) name: String,
    pub(crate) store: Rc<RefCell<KvStoreOf<K, V>>>,
}

impl<K, V> NamedStore<K, V> {
    fn err(&self, source: stoatflow_state::StateError) -> ProcessError {
        ProcessError::State {
            store: self.name.clone(),
            source: Box::new(source),
        }
    }
}

impl<K: Ord + Clone + 'static, V: Clone + 'static> NamedStore<K, V> {
    fn get(&self, key: &K) -> Result<Option<ValueAndTimestamp<V>>, ProcessError> {
        self.store.borrow().get(key).map_err(|e| self.err(e))
    }

    /// Writes `value` (or deletes on `None`), returning the old value.
    fn write(&self, key: &K, value: Option<V>, ts: i64) -> Result<Option<V>, ProcessError> {
        let mut store = self.store.borrow_mut();
        let old = store.get(key).map_err(|e| self.err(e))?.map(|v| v.value);
        match value {
            Some(v) => store.put(key.clone(), ValueAndTimestamp::new(v, ts), ts),
            None if old.is_some() => store.delete(key, ts).map(|_| ()),
            None => Ok(()),
        }
        .map_err(|e| self.err(e))?;
        Ok(old)
    }
}

/// The hash of a left value as it would travel (its serde's bytes).
fn hash_of<V>(serde: &SerdeRef<V>, store: &str, v: &V) -> Result<u64, ProcessError> {
    let mut bytes = Vec::new();
    serde
        .serialize(store, v, &mut bytes)
        .map_err(|e| ProcessError::Serialization {
            topic: format!("{store} (hashing a left value)"),
            source: Box::new(e),
        })?;
    Ok(value_hash(&bytes))
}

/// Left table → subscriptions.
pub(crate) struct SubscriptionSend<K, V, FK> {
    pub(crate) left: NamedStore<K, V>,
    pub(crate) value_serde: SerdeRef<V>,
    pub(crate) fk: FkExtractor<V, FK>,
    pub(crate) left_join: bool,
    pub(crate) down: Downstream<FK, Subscription<K>>,
}

impl<K, V, FK> Push<K, Option<V>> for SubscriptionSend<K, V, FK>
where
    K: Ord + Clone + 'static,
    V: Clone + 'static,
    FK: PartialEq + Clone + 'static,
{
    fn push(
        &mut self,
        cx: &mut TaskContext,
        rec: Record<K, Option<V>>,
    ) -> Result<(), ProcessError> {
        let old = self
            .left
            .write(&rec.key, rec.value.clone(), rec.timestamp)?;
        let old_fk = old.as_ref().map(|v| (self.fk)(v));
        let new_fk = rec.value.as_ref().map(|v| (self.fk)(v));
        let hash = match &rec.value {
            Some(v) => Some(hash_of(&self.value_serde, &self.left.name, v)?),
            None => None,
        };
        let send = |cx: &mut TaskContext, fk: FK, instruction| {
            let value = Subscription {
                pk: rec.key.clone(),
                hash,
                instruction,
            };
            let (timestamp, headers) = (rec.timestamp, rec.headers.clone());
            self.down.forward(
                cx,
                Record {
                    key: fk,
                    value,
                    timestamp,
                    headers,
                },
            )
        };
        use Instruction::*;
        match (old_fk, new_fk) {
            (None, None) => Ok(()),
            (Some(old), None) => send(cx, old, DeleteAndPropagate),
            (None, Some(new)) if self.left_join => send(cx, new, PropagateNullIfNoValue),
            (None, Some(new)) => send(cx, new, PropagateOnlyIfValue),
            (Some(old), Some(new)) if old == new => {
                let instruction = if self.left_join {
                    PropagateNullIfNoValue
                } else {
                    PropagateOnlyIfValue
                };
                send(cx, new, instruction)
            }
            (Some(old), Some(new)) => {
                send(cx, old, DeleteNoPropagate)?;
                send(cx, new, PropagateNullIfNoValue)
            }
        }
    }
}

/// The right side's two stores: the subscriptions (value: the hash, its
/// bits as an `i64`) and
/// the right rows.
pub(crate) struct RightStores<FK, K, VO> {
    pub(crate) subscriptions: NamedStore<SubscriptionKey<FK, K>, i64>,
    pub(crate) right: NamedStore<FK, VO>,
}

/// The right side: as the subscription topic's node, subscriptions →
/// responses; as the right table's node, a right row's change → a response
/// to every subscriber of its foreign key. Both nodes share the stores.
pub(crate) struct RightSide<FK, K, VO> {
    pub(crate) stores: RightStores<FK, K, VO>,
    pub(crate) down: Downstream<K, Response<VO>>,
}

impl<FK, K, VO> Push<FK, Subscription<K>> for RightSide<FK, K, VO>
where
    FK: Ord + Clone + 'static,
    K: Ord + Clone + 'static,
    VO: Clone + 'static,
{
    fn push(
        &mut self,
        cx: &mut TaskContext,
        rec: Record<FK, Subscription<K>>,
    ) -> Result<(), ProcessError> {
        let sub = rec.value;
        let key = SubscriptionKey::Entry(rec.key.clone(), sub.pk.clone());
        use Instruction::*;
        let stored = match (sub.instruction, sub.hash) {
            (DeleteAndPropagate | DeleteNoPropagate, _) | (_, None) => None,
            (_, Some(h)) => Some(h as i64),
        };
        self.stores
            .subscriptions
            .write(&key, stored, rec.timestamp)?;
        let right = self.stores.right.get(&rec.key)?;
        let timestamp = right
            .as_ref()
            .map_or(rec.timestamp, |r| r.timestamp.max(rec.timestamp));
        let value = match (sub.instruction, right) {
            (DeleteNoPropagate, _) | (PropagateOnlyIfValue, None) => return Ok(()),
            (DeleteAndPropagate, _) => None,
            (_, right) => right.map(|r| r.value),
        };
        let response = Response {
            hash: sub.hash,
            value,
        };
        self.down.forward(
            cx,
            Record {
                key: sub.pk,
                value: response,
                timestamp,
                headers: rec.headers,
            },
        )
    }
}

impl<FK, K, VO> Push<FK, Option<VO>> for RightSide<FK, K, VO>
where
    FK: Ord + Clone + 'static,
    K: Ord + Clone + 'static,
    VO: Clone + 'static,
{
    fn push(
        &mut self,
        cx: &mut TaskContext,
        rec: Record<FK, Option<VO>>,
    ) -> Result<(), ProcessError> {
        self.stores
            .right
            .write(&rec.key, rec.value.clone(), rec.timestamp)?;
        let (from, to) = (
            SubscriptionKey::First(rec.key.clone()),
            SubscriptionKey::Last(rec.key),
        );
        let mut subscribers = {
            let subs = &self.stores.subscriptions;
            let scan = subs
                .store
                .borrow()
                .range(Bound::Included(&from), Bound::Included(&to));
            scan.map_err(|e| subs.err(e))?
        };
        // In primary-key order, as both engines answer (the stores' key-order rule); the
        // sort keeps the order emitted independent of that (one pass when sorted).
        subscribers.sort_by(|a, b| a.0.cmp(&b.0));
        for (key, hash) in subscribers {
            let SubscriptionKey::Entry(_, pk) = key else {
                continue;
            };
            let response = Response {
                hash: Some(hash.value as u64),
                value: rec.value.clone(),
            };
            let headers = rec.headers.clone();
            self.down.forward(
                cx,
                Record {
                    key: pk,
                    value: response,
                    timestamp: rec.timestamp,
                    headers,
                },
            )?;
        }
        Ok(())
    }
}

/// Responses → the joined table.
pub(crate) struct ResponseResolve<K, V, VO, R> {
    pub(crate) left: NamedStore<K, V>,
    pub(crate) value_serde: SerdeRef<V>,
    pub(crate) joiner: FkJoiner<V, VO, R>,
    pub(crate) left_join: bool,
    pub(crate) down: Downstream<K, Option<R>>,
}

impl<K, V, VO, R> Push<K, Response<VO>> for ResponseResolve<K, V, VO, R>
where
    K: Ord + Clone + 'static,
    V: Clone + 'static,
    R: Clone + 'static,
{
    fn push(
        &mut self,
        cx: &mut TaskContext,
        rec: Record<K, Response<VO>>,
    ) -> Result<(), ProcessError> {
        let current = self.left.get(&rec.key)?.map(|v| v.value);
        let current_hash = match &current {
            Some(v) => Some(hash_of(&self.value_serde, &self.left.name, v)?),
            None => None,
        };
        if current_hash != rec.value.hash {
            // Stale: the left row changed after this subscription was sent.
            return Ok(());
        }
        let value = match (current, &rec.value.value) {
            (Some(left), right @ Some(_)) => Some((self.joiner)(&left, right.as_ref())),
            (Some(left), None) if self.left_join => Some((self.joiner)(&left, None)),
            _ => None,
        };
        self.down.forward(
            cx,
            Record {
                key: rec.key,
                value,
                timestamp: rec.timestamp,
                headers: rec.headers,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use std::any::Any;

    use stoatflow_state::{
        AnyKeyValueStore, InMemoryKeyValueStore, StoreConfig, StringCodec, ValueAndTimestampCodec,
    };

    use super::*;
    use crate::serde::StringSerde;
    use crate::topology::graph::Port;

    type Seen = Rc<RefCell<Vec<(String, Option<String>, i64)>>>;

    struct Collect(Seen);

    impl Push<String, Option<String>> for Collect {
        fn push(
            &mut self,
            _: &mut TaskContext,
            rec: Record<String, Option<String>>,
        ) -> Result<(), ProcessError> {
            self.0
                .borrow_mut()
                .push((rec.key, rec.value, rec.timestamp));
            Ok(())
        }
    }

    fn resolver(left_join: bool, seen: &Seen) -> Resolver {
        let store = InMemoryKeyValueStore::new(
            StoreConfig::new("left"),
            StringCodec,
            ValueAndTimestampCodec::new(StringCodec),
        );
        let port: Port<String, Option<String>> = Rc::new(RefCell::new(Collect(seen.clone())));
        ResponseResolve {
            left: NamedStore {
                name: "left".into(),
                store: Rc::new(RefCell::new(AnyKeyValueStore::InMemory(store))),
            },
            value_serde: Arc::new(StringSerde),
            joiner: Arc::new(|l: &String, r: Option<&String>| {
                format!("{l}+{}", r.map_or("null", String::as_str))
            }),
            left_join,
            down: Downstream::from_children(vec![Box::new(port) as Box<dyn Any>]),
        }
    }

    type Resolver = ResponseResolve<String, String, String, String>;

    fn respond(
        r: &mut Resolver,
        cx: &mut TaskContext,
        hash: Option<u64>,
        value: Option<&str>,
        ts: i64,
    ) {
        let response = Response {
            hash,
            value: value.map(str::to_owned),
        };
        r.push(cx, Record::new("k".to_owned(), response, ts))
            .unwrap();
    }

    fn hash(v: &str) -> Option<u64> {
        Some(value_hash(v.as_bytes()))
    }

    #[test]
    fn a_response_for_a_left_value_that_has_changed_since_is_dropped() {
        for left_join in [false, true] {
            let seen = Seen::default();
            let mut r = resolver(left_join, &seen);
            let cx = &mut TaskContext::default();
            r.left
                .write(&"k".to_owned(), Some("new".into()), 5)
                .unwrap();
            // An answer to the subscription the old value sent: stale.
            respond(&mut r, cx, hash("old"), Some("r"), 6);
            respond(&mut r, cx, hash("old"), None, 6);
            assert!(seen.borrow().is_empty());
            // Answers to the current value join.
            respond(&mut r, cx, hash("new"), Some("r"), 7);
            respond(&mut r, cx, hash("new"), None, 8);
            let no_match = left_join.then(|| "new+null".to_owned());
            assert_eq!(
                *seen.borrow(),
                [
                    ("k".to_owned(), Some("new+r".to_owned()), 7),
                    ("k".to_owned(), no_match, 8)
                ]
            );
        }
    }
}
