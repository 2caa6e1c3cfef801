//! The emit-frontier companion store.

use std::fmt;

use crate::codec::{I64Codec, StringCodec};
use crate::error::StateError;
use crate::memory::InMemoryKeyValueStore;
use crate::store::{KeyValueStore, StoreConfig};

/// The companion store of an on-window-close aggregation store: `<store>-emitfrontier`.
pub fn emit_frontier_store_name(store: &str) -> String {
    format!("{store}-emitfrontier")
}

/// The highest window close an on-window-close operator has emitted, kept in an ordinary
/// compacted key-value store under the aggregation store's name. The update is an ordinary
/// store write, so it commits in the same transaction as the results it records.
pub struct EmitFrontier<S> {
    key: String,
    store: S,
}

impl<S: fmt::Debug> fmt::Debug for EmitFrontier<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmitFrontier")
            .field("key", &self.key)
            .field("store", &self.store)
            .finish()
    }
}

impl<S: KeyValueStore<String, i64>> EmitFrontier<S> {
    /// The emit frontier of `aggregation_store`, kept in `store` (named
    /// [`emit_frontier_store_name`]`(aggregation_store)`).
    pub fn new(aggregation_store: &str, store: S) -> Self {
        Self {
            key: aggregation_store.to_string(),
            store,
        }
    }

    /// The highest close emitted so far; `i64::MIN` when nothing has been.
    ///
    /// # Errors
    /// Whatever the underlying store reports.
    pub fn highest_emitted_close(&self) -> Result<i64, StateError> {
        Ok(self.store.get(&self.key)?.unwrap_or(i64::MIN))
    }

    /// Records that every window closing at or before `close` has been emitted. The
    /// frontier never moves back: a lower `close` is ignored. Returns whether it moved.
    ///
    /// # Errors
    /// Whatever the underlying store reports.
    pub fn advance_to(&mut self, close: i64, timestamp: i64) -> Result<bool, StateError> {
        if close <= self.highest_emitted_close()? {
            return Ok(false);
        }
        self.store.put(self.key.clone(), close, timestamp)?;
        Ok(true)
    }

    /// The underlying store (to flush and restore it like any other).
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The underlying store, mutably.
    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    /// Gives the store back.
    pub fn into_inner(self) -> S {
        self.store
    }
}

/// An emit frontier for `aggregation_store` in a fresh in-memory store.
pub fn in_memory_emit_frontier(
    aggregation_store: &str,
    changelog_enabled: bool,
) -> EmitFrontier<InMemoryKeyValueStore<String, i64>> {
    let config = StoreConfig::new(emit_frontier_store_name(aggregation_store))
        .with_changelog_enabled(changelog_enabled);
    EmitFrontier::new(
        aggregation_store,
        InMemoryKeyValueStore::new(config, StringCodec, I64Codec),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ChangelogBatch;
    use crate::store::StateStore;

    #[test]
    fn frontier_is_monotonic_and_changelogged() {
        let mut f = in_memory_emit_frontier("counts", true);
        assert_eq!(f.store().name(), "counts-emitfrontier");
        assert_eq!(f.highest_emitted_close().unwrap(), i64::MIN);
        assert!(f.advance_to(100, 1).unwrap());
        assert!(!f.advance_to(50, 2).unwrap());
        assert!(f.advance_to(200, 3).unwrap());
        assert_eq!(f.highest_emitted_close().unwrap(), 200);
        let mut batch = ChangelogBatch::new();
        f.store_mut().flush_changelog(&mut batch).unwrap();
        let out = batch.to_records();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].key, b"counts".to_vec());
        assert_eq!(out[0].value, Some(200i64.to_be_bytes().to_vec()));
    }
}
