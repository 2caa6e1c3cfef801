//! Table-table joins (`KTable::join`, `left_join`, `outer_join`; Kafka
//! Streams' `KTableKTable{Inner,Left,Right,Outer}Join`): one node per side,
//! each recomputing the key's result when its side updates, against the
//! other side's latest value.
//!
//! Each side keeps the last value it saw per key in its own store
//! (`<join>-this-store`, `<join>-other-store`, shared by the two nodes), so a
//! node knows both the other side's value and whether its own side had one
//! before the update (Kafka Streams reads the parents' materialized stores
//! and their old values instead; the outputs are the same). A result is a
//! tombstone where the update removes the row (`None` downstream).
//! Knows nothing of the DSL that wires the two sides.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{KeyValueStore, ValueAndTimestamp};

use crate::error::ProcessError;
use crate::processors::table_aggregate::KvStoreOf;
use crate::record::Record;
use crate::topology::context::TaskContext;
use crate::topology::graph::{Downstream, Push};

/// A joiner seen from one side: this side's value, the other side's.
pub(crate) type SideJoiner<V, VO, R> = Arc<dyn Fn(Option<&V>, Option<&VO>) -> R + Send + Sync>;

/// Which missing value still gives a result, seen from one side.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Optional {
    /// A result exists without this side's value (the other side is kept).
    pub(crate) this: bool,
    /// A result exists without the other side's value (this side is kept).
    pub(crate) other: bool,
}

/// A store of one side's rows, with its name for errors.
pub(crate) struct SideStore<K, V> {
    pub(crate) name: String,
    pub(crate) store: Rc<RefCell<KvStoreOf<K, V>>>,
}

impl<K, V> SideStore<K, V> {
    fn err(&self, source: stoatflow_state::StateError) -> ProcessError {
        ProcessError::State {
            store: self.name.clone(),
            source: Box::new(source),
        }
    }
}

pub(crate) struct TableJoinSide<K, V, VO, R> {
    pub(crate) this: SideStore<K, V>,
    pub(crate) other: SideStore<K, VO>,
    pub(crate) optional: Optional,
    pub(crate) joiner: SideJoiner<V, VO, R>,
    pub(crate) down: Downstream<K, Option<R>>,
}

impl<K, V, VO, R> Push<K, Option<V>> for TableJoinSide<K, V, VO, R>
where
    K: Ord + Clone + 'static,
    V: Clone + 'static,
    VO: Clone + 'static,
    R: Clone,
{
    fn push(
        &mut self,
        cx: &mut TaskContext,
        rec: Record<K, Option<V>>,
    ) -> Result<(), ProcessError> {
        let had = {
            let mut this = self.this.store.borrow_mut();
            let had = this.get(&rec.key).map_err(|e| self.this.err(e))?.is_some();
            match &rec.value {
                Some(v) => this.put(
                    rec.key.clone(),
                    ValueAndTimestamp::new(v.clone(), rec.timestamp),
                    rec.timestamp,
                ),
                None if had => this.delete(&rec.key, rec.timestamp).map(drop),
                None => Ok(()),
            }
            .map_err(|e| self.this.err(e))?;
            had
        };
        let other = self
            .other
            .store
            .borrow()
            .get(&rec.key)
            .map_err(|e| self.other.err(e))?;
        let new = rec.value.as_ref();
        let Optional {
            this: this_optional,
            other: other_optional,
        } = self.optional;
        if other.is_none() && (!other_optional || (new.is_none() && !had)) {
            return Ok(());
        }
        let value = ((new.is_some() || this_optional)
            && (other.is_some() || other_optional)
            && (new.is_some() || other.is_some()))
        .then(|| (self.joiner)(new, other.as_ref().map(|o| &o.value)));
        let timestamp = other
            .as_ref()
            .map_or(rec.timestamp, |o| o.timestamp.max(rec.timestamp));
        self.down.forward(
            cx,
            Record {
                key: rec.key,
                value,
                timestamp,
                headers: rec.headers,
            },
        )
    }
}
