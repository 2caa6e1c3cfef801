//! The stateless operators: filter, map, map_values, flat_map,
//! flat_map_values, peek, foreach, branch, the key selection that may skip
//! a record (`group_by_opt`), and the pass-through used by merge.

use std::sync::Arc;

use crate::error::ProcessError;
use crate::record::Record;
use crate::topology::context::TaskContext;
use crate::topology::graph::{Downstream, Push};

pub(crate) type Pred<K, V> = Arc<dyn Fn(&K, &V) -> bool + Send + Sync>;

pub(crate) struct Filter<K, V> {
    pub(crate) pred: Pred<K, V>,
    pub(crate) keep: bool,
    pub(crate) down: Downstream<K, V>,
}

impl<K: Clone, V: Clone> Push<K, V> for Filter<K, V> {
    #[inline]
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        if (self.pred)(&rec.key, &rec.value) == self.keep {
            self.down.forward(cx, rec)
        } else {
            Ok(())
        }
    }
}

pub(crate) struct Map<K, V, K2, V2> {
    pub(crate) f: Arc<dyn Fn(K, V) -> (K2, V2) + Send + Sync>,
    pub(crate) down: Downstream<K2, V2>,
}

impl<K, V, K2: Clone, V2: Clone> Push<K, V> for Map<K, V, K2, V2> {
    #[inline]
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        let (k, v) = (self.f)(rec.key, rec.value);
        self.down.forward(
            cx,
            Record {
                key: k,
                value: v,
                timestamp: rec.timestamp,
                headers: rec.headers,
            },
        )
    }
}

/// A new key per record, or `None` to drop the record (Kafka Streams'
/// key selector returning null before a grouping).
pub(crate) struct SelectKeyOrSkip<K, V, K2> {
    pub(crate) f: Arc<dyn Fn(&K, &V) -> Option<K2> + Send + Sync>,
    pub(crate) down: Downstream<K2, V>,
}

impl<K, V: Clone, K2: Clone> Push<K, V> for SelectKeyOrSkip<K, V, K2> {
    #[inline]
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        let Some(key) = (self.f)(&rec.key, &rec.value) else {
            return Ok(());
        };
        self.down.forward(
            cx,
            Record {
                key,
                value: rec.value,
                timestamp: rec.timestamp,
                headers: rec.headers,
            },
        )
    }
}

pub(crate) struct MapValues<K, V, V2> {
    pub(crate) f: Arc<dyn Fn(&K, V) -> V2 + Send + Sync>,
    pub(crate) down: Downstream<K, V2>,
}

impl<K: Clone, V, V2: Clone> Push<K, V> for MapValues<K, V, V2> {
    #[inline]
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        let v = (self.f)(&rec.key, rec.value);
        self.down.forward(
            cx,
            Record {
                key: rec.key,
                value: v,
                timestamp: rec.timestamp,
                headers: rec.headers,
            },
        )
    }
}

pub(crate) struct FlatMap<K, V, K2, V2> {
    pub(crate) f: Arc<dyn Fn(K, V) -> Vec<(K2, V2)> + Send + Sync>,
    pub(crate) down: Downstream<K2, V2>,
}

impl<K, V, K2: Clone, V2: Clone> Push<K, V> for FlatMap<K, V, K2, V2> {
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        for (k, v) in (self.f)(rec.key, rec.value) {
            self.down.forward(
                cx,
                Record {
                    key: k,
                    value: v,
                    timestamp: rec.timestamp,
                    headers: rec.headers.clone(),
                },
            )?;
        }
        Ok(())
    }
}

pub(crate) struct FlatMapValues<K, V, V2> {
    pub(crate) f: Arc<dyn Fn(&K, V) -> Vec<V2> + Send + Sync>,
    pub(crate) down: Downstream<K, V2>,
}

impl<K: Clone, V, V2: Clone> Push<K, V> for FlatMapValues<K, V, V2> {
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        for v in (self.f)(&rec.key, rec.value) {
            self.down.forward(
                cx,
                Record {
                    key: rec.key.clone(),
                    value: v,
                    timestamp: rec.timestamp,
                    headers: rec.headers.clone(),
                },
            )?;
        }
        Ok(())
    }
}

pub(crate) struct Peek<K, V> {
    pub(crate) f: Arc<dyn Fn(&K, &V) + Send + Sync>,
    pub(crate) down: Downstream<K, V>,
}

impl<K: Clone, V: Clone> Push<K, V> for Peek<K, V> {
    #[inline]
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        (self.f)(&rec.key, &rec.value);
        self.down.forward(cx, rec)
    }
}

/// Routes each record to the first branch whose predicate holds (else drops it).
pub(crate) struct Branch<K, V> {
    pub(crate) preds: Vec<Pred<K, V>>,
    pub(crate) down: Downstream<K, V>,
    /// Which child port serves branch i (children are ordered by creation).
    pub(crate) child_of_branch: Vec<Option<usize>>,
}

impl<K: Clone, V: Clone> Push<K, V> for Branch<K, V> {
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        for (i, p) in self.preds.iter().enumerate() {
            if p(&rec.key, &rec.value) {
                return match self.child_of_branch[i] {
                    Some(c) => self.down.forward_to(c, cx, rec),
                    None => Ok(()),
                };
            }
        }
        Ok(())
    }
}

/// Forwards unchanged (merge, and branch outputs).
pub(crate) struct PassThrough<K, V> {
    pub(crate) down: Downstream<K, V>,
}

impl<K: Clone, V: Clone> Push<K, V> for PassThrough<K, V> {
    #[inline]
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        self.down.forward(cx, rec)
    }
}

/// Forwards the records that carry a value, unwrapped (tombstones skipped).
pub(crate) struct SkipTombstones<K, V> {
    pub(crate) down: Downstream<K, V>,
}

impl<K: Clone, V: Clone> Push<K, Option<V>> for SkipTombstones<K, V> {
    #[inline]
    fn push(
        &mut self,
        cx: &mut TaskContext,
        rec: Record<K, Option<V>>,
    ) -> Result<(), ProcessError> {
        match rec.value {
            Some(value) => self.down.forward(
                cx,
                Record {
                    key: rec.key,
                    value,
                    timestamp: rec.timestamp,
                    headers: rec.headers,
                },
            ),
            None => Ok(()),
        }
    }
}
