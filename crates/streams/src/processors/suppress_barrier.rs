//! The barrier suppress buffer, `until_barrier()` (docs/emission.md#until-barrier): holds the
//! updates that flow through it during one epoch and releases at most one
//! record per key at the commit barrier, inside that epoch's transaction.
//!
//! It consults no clock, keeps no store and no changelog (on a crash the
//! epoch is reprocessed and rebuilds it) and never evicts: an evicted
//! intermediate is exactly the inconsistent answer it exists to prevent.
//! A release keeps the latest update's value, timestamp and headers, and
//! releases leave in buffer-time (the key's first update in the epoch),
//! then key, order.

use std::collections::BTreeMap;

use stoatflow_time::Watermark;

use crate::error::ProcessError;
use crate::record::Record;
use crate::topology::context::TaskContext;
use crate::topology::graph::{Downstream, FrontierOperator, Push};

pub(crate) struct BarrierSuppress<K, V> {
    buffer: BTreeMap<K, (i64, Record<K, Option<V>>)>,
    down: Downstream<K, Option<V>>,
}

impl<K, V> BarrierSuppress<K, V> {
    pub(crate) fn new(down: Downstream<K, Option<V>>) -> Self {
        BarrierSuppress {
            buffer: BTreeMap::new(),
            down,
        }
    }
}

impl<K: Ord + Clone, V: Clone> Push<K, Option<V>> for BarrierSuppress<K, V> {
    fn push(
        &mut self,
        _cx: &mut TaskContext,
        rec: Record<K, Option<V>>,
    ) -> Result<(), ProcessError> {
        match self.buffer.get_mut(&rec.key) {
            Some((_, latest)) => *latest = rec,
            None => {
                self.buffer.insert(rec.key.clone(), (rec.timestamp, rec));
            }
        }
        Ok(())
    }
}

impl<K: Ord + Clone, V: Clone> FrontierOperator for BarrierSuppress<K, V> {
    fn on_frontier(&mut self, _: &mut TaskContext, _: Watermark) -> Result<(), ProcessError> {
        Ok(())
    }

    fn on_barrier(&mut self, cx: &mut TaskContext) -> Result<(), ProcessError> {
        let mut released: Vec<_> = std::mem::take(&mut self.buffer).into_values().collect();
        // Key order already; a stable sort by buffer time keeps it within a time.
        released.sort_by_key(|(buffer_time, _)| *buffer_time);
        for (_, rec) in released {
            self.down.forward(cx, rec)?;
        }
        Ok(())
    }
}
