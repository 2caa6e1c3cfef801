//! Regrouping a table (`KTable::group_by`, Kafka Streams'
//! `KTableRepartitionMap`): each update becomes a [`Change`] under the
//! selected key, the old value's pair first. A row the selector puts in no
//! group (a `None` pair) is treated as deleted: only its old pair is sent,
//! as a subtraction.
//!
//! The old pair is the one this operator selected last for the key, kept in
//! its own store, so the parent table needs no old values of its own (and
//! the store needs only the serdes of the selected key and value, which the
//! repartition topic needs anyway). When the old and new pairs select the same key, one record
//! carries both; otherwise the old pair's subtraction and the new pair's
//! addition are two records, as they may land on different partitions.
//! Knows nothing of the aggregation that follows.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{KeyValueStore, ValueAndTimestamp};

use crate::error::ProcessError;
use crate::processors::table_aggregate::KvStoreOf;
use crate::record::{Change, Record};
use crate::topology::context::TaskContext;
use crate::topology::graph::{Downstream, Push};

/// The selector of a regrouping: a row's new key and value, or `None` for a
/// row in no group.
pub(crate) type Selector<K, V, K2, V2> = Arc<dyn Fn(&K, &V) -> Option<(K2, V2)> + Send + Sync>;

pub(crate) struct TableRegroup<K, V, K2, V2> {
    pub(crate) store_name: String,
    pub(crate) prior: Rc<RefCell<KvStoreOf<K, (K2, V2)>>>,
    pub(crate) selector: Selector<K, V, K2, V2>,
    pub(crate) down: Downstream<K2, Change<V2>>,
}

impl<K, V, K2, V2> Push<K, Option<V>> for TableRegroup<K, V, K2, V2>
where
    K: Ord + Clone + 'static,
    K2: PartialEq + Clone + 'static,
    V2: Clone + 'static,
{
    fn push(
        &mut self,
        cx: &mut TaskContext,
        rec: Record<K, Option<V>>,
    ) -> Result<(), ProcessError> {
        let err = |source| ProcessError::State {
            store: self.store_name.clone(),
            source: Box::new(source),
        };
        let new = rec
            .value
            .as_ref()
            .and_then(|v| (self.selector)(&rec.key, v));
        let old = {
            let mut prior = self.prior.borrow_mut();
            let old = prior.get(&rec.key).map_err(err)?.map(|v| v.value);
            match &new {
                Some(pair) => prior
                    .put(
                        rec.key.clone(),
                        ValueAndTimestamp::new(pair.clone(), rec.timestamp),
                        rec.timestamp,
                    )
                    .map_err(err)?,
                None if old.is_some() => {
                    prior.delete(&rec.key, rec.timestamp).map_err(err)?;
                }
                None => {}
            }
            old
        };
        let (ts, headers) = (rec.timestamp, rec.headers);
        let send = |cx: &mut TaskContext, key: K2, change: Change<V2>| {
            self.down.forward(
                cx,
                Record {
                    key,
                    value: change,
                    timestamp: ts,
                    headers: headers.clone(),
                },
            )
        };
        match (old, new) {
            (Some((ok, ov)), Some((nk, nv))) if ok == nk => {
                send(cx, nk, Change::new(Some(nv), Some(ov)))
            }
            (old, new) => {
                if let Some((ok, ov)) = old {
                    send(cx, ok, Change::new(None, Some(ov)))?;
                }
                if let Some((nk, nv)) = new {
                    send(cx, nk, Change::new(Some(nv), None))?;
                }
                Ok(())
            }
        }
    }
}
