//! The stream-table join (inner and left): each stream record looks its key
//! up in the table's store as it is now and forwards the joined value with
//! the stream record's time. Table updates forward nothing; a stream-table
//! join has no grace (docs/emission.md#stream-table-joins) and consults no
//! clock.
//!
//! This module knows nothing of how the table's store is filled.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{KeyValueStore, ValueAndTimestamp};

use crate::KeyValueStoreOf;
use crate::error::ProcessError;
use crate::record::Record;
use crate::topology::context::TaskContext;
use crate::topology::graph::{Downstream, Push};

pub(crate) struct StreamTableJoin<K, V, VT, VR> {
    pub(crate) store_name: String,
    pub(crate) table: Rc<RefCell<KeyValueStoreOf<K, VT>>>,
    /// `(key, stream value, table value)`; the table value is `None` only for a left join.
    pub(crate) joiner: Arc<dyn Fn(&K, &V, Option<&VT>) -> VR + Send + Sync>,
    pub(crate) left: bool,
    pub(crate) down: Downstream<K, VR>,
}

impl<K, V, VT, VR> Push<K, V> for StreamTableJoin<K, V, VT, VR>
where
    K: Ord + Clone + 'static,
    VT: Clone + 'static,
    VR: Clone + 'static,
{
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        let row: Option<ValueAndTimestamp<VT>> =
            self.table
                .borrow()
                .get(&rec.key)
                .map_err(|source| ProcessError::State {
                    store: self.store_name.clone(),
                    source: Box::new(source),
                })?;
        let value = match (&row, self.left) {
            (Some(r), _) => (self.joiner)(&rec.key, &rec.value, Some(&r.value)),
            (None, true) => (self.joiner)(&rec.key, &rec.value, None),
            (None, false) => return Ok(()),
        };
        let key = rec.key.clone();
        self.down.forward(cx, rec.with(key, value))
    }
}
