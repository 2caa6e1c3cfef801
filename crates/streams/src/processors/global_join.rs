//! The stream–global-table join (inner and left): each stream record maps to a
//! look-up key, finds that key's row in the global store as the store is when the
//! record is processed, and forwards the joined value under the stream record's
//! key and time. Global-table updates forward nothing; the join has no grace and
//! consults no clock (docs/global-tables.md#joins).
//!
//! This module knows nothing of how the global store is filled.

use std::sync::Arc;

use crate::error::ProcessError;
use crate::record::Record;
use crate::topology::context::TaskContext;
use crate::topology::global::GlobalKeyValueStore;
use crate::topology::graph::{Downstream, Push};

/// The key mapper: the look-up key of a stream record, `None` for none (Kafka
/// Streams' null).
pub(crate) type KeyMapper<K, V, GK> = Arc<dyn Fn(&K, &V) -> Option<GK> + Send + Sync>;

/// The joiner: `(stream key, stream value, the row's value)`; the row is `None`
/// only for a left join.
pub(crate) type GlobalJoiner<K, V, GV, VR> = Arc<dyn Fn(&K, &V, Option<&GV>) -> VR + Send + Sync>;

pub(crate) struct GlobalTableJoin<K, V, GK, GV, VR> {
    pub(crate) store: Arc<GlobalKeyValueStore<GK, GV>>,
    pub(crate) key_mapper: KeyMapper<K, V, GK>,
    pub(crate) joiner: GlobalJoiner<K, V, GV, VR>,
    pub(crate) left: bool,
    pub(crate) down: Downstream<K, VR>,
}

impl<K, V, GK, GV, VR> Push<K, V> for GlobalTableJoin<K, V, GK, GV, VR>
where
    K: Clone + 'static,
    GK: Ord + Clone + 'static,
    GV: Clone + 'static,
    VR: Clone + 'static,
{
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        let row = (self.key_mapper)(&rec.key, &rec.value).and_then(|k| self.store.get(&k));
        let value = match (&row, self.left) {
            (Some(r), _) => (self.joiner)(&rec.key, &rec.value, Some(&r.value)),
            (None, true) => (self.joiner)(&rec.key, &rec.value, None),
            (None, false) => return Ok(()),
        };
        let key = rec.key.clone();
        self.down.forward(cx, rec.with(key, value))
    }
}
