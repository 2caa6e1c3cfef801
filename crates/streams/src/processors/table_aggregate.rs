//! Non-windowed aggregation of a grouped stream into a table: count, reduce,
//! aggregate. Every update is forwarded (caching is off).

use std::cell::RefCell;
use std::rc::Rc;

use stoatflow_state::{KeyValueStore, ValueAndTimestamp};

use crate::error::ProcessError;
use crate::processors::windowed::Aggregation;
use crate::record::Record;
use crate::topology::context::TaskContext;
use crate::topology::graph::{Downstream, Push};

pub(crate) type KvStoreOf<K, A> = crate::KeyValueStoreOf<K, A>;

pub(crate) struct TableAggregate<K, V, A> {
    pub(crate) store_name: String,
    pub(crate) aggregation: Aggregation<K, V, A>,
    pub(crate) store: Rc<RefCell<KvStoreOf<K, A>>>,
    pub(crate) down: Downstream<K, Option<A>>,
}

impl<K: Ord + Clone + 'static, V, A: Clone + 'static> Push<K, V> for TableAggregate<K, V, A> {
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        let err = |source| ProcessError::State {
            store: self.store_name.clone(),
            source: Box::new(source),
        };
        let mut store = self.store.borrow_mut();
        let (agg, ts) = match store.get(&rec.key).map_err(err)? {
            Some(old) => (
                (self.aggregation.add)(&rec.key, &rec.value, old.value),
                old.timestamp.max(rec.timestamp),
            ),
            None => (
                (self.aggregation.initial)(&rec.key, &rec.value),
                rec.timestamp,
            ),
        };
        store
            .put(rec.key.clone(), ValueAndTimestamp::new(agg.clone(), ts), ts)
            .map_err(err)?;
        drop(store);
        self.down.forward(
            cx,
            Record {
                key: rec.key,
                value: Some(agg),
                timestamp: ts,
                headers: rec.headers,
            },
        )
    }
}
