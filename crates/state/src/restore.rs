//! Restoration: rebuilding a store from its committed changelog.
//!
//! Owns [`restore`], the loop that applies owned [`ChangelogEntry`]s in offset order in
//! [`RestoreBatch`]es, with its progress reporting ([`RestoreProgress`]).
//!
//! This module never knows how the entries were read, nor any store's layout.

use crate::changelog::ChangelogEntry;
use crate::error::StateError;
use crate::restore_batch::{RESTORE_BATCH_BYTES, RestoreBatch};
use crate::store::StateStore;

/// How far a restore has come, reported to the progress callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestoreProgress {
    /// Records applied so far.
    pub restored: u64,
    /// Records the caller said there are (end offset minus start offset); may be 0 when
    /// unknown.
    pub total: u64,
}

/// Rebuilds `store` from committed changelog entries, in offset order (their values in the
/// store's layout).
///
/// Idempotent: each entry is an upsert or delete of one key, so restoring the same entries
/// again, or restoring a prefix first and the whole stream after, gives the same store.
/// Restored keys are not marked dirty; nothing is written back to the changelog. The entries
/// are applied in batches ([`StateStore::apply_changelog_batch`]) of about
/// [`RESTORE_BATCH_BYTES`]; `progress` is called after each batch with the records the store
/// holds by then (and once, with none, for no entries).
///
/// # Errors
/// [`StateError::CorruptChangelogRecord`] for an entry whose key or value does not decode,
/// naming the store, partition and offset; the store then holds every entry before it.
pub fn restore<S, I>(
    store: &mut S,
    entries: I,
    total: u64,
    progress: &mut dyn FnMut(RestoreProgress),
) -> Result<u64, StateError>
where
    S: StateStore + ?Sized,
    I: IntoIterator<Item = ChangelogEntry>,
{
    let mut restored = 0u64;
    let mut batch = RestoreBatch::default();
    let mut entries = entries.into_iter().peekable();
    while entries.peek().is_some() {
        batch.clear();
        while batch.bytes() < RESTORE_BATCH_BYTES
            && let Some(entry) = entries.next()
        {
            batch.push_entry(&entry);
        }
        store.apply_changelog_batch(&batch)?;
        restored += batch.len() as u64;
        progress(RestoreProgress { restored, total });
    }
    if restored == 0 {
        progress(RestoreProgress { restored, total });
    }
    tracing::debug!(
        store = store.name(),
        restored,
        total,
        "restored store from changelog"
    );
    Ok(restored)
}
