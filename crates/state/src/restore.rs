//! Restoration: rebuilding a store from its committed changelog.
//!
//! Owns [`restore`], the loop that applies committed [`ChangelogEntry`]s to a store in offset
//! order, and its progress reporting ([`RestoreProgress`] every
//! [`RESTORE_PROGRESS_INTERVAL`] records).
//!
//! This module never knows how the entries were read, nor any store's layout: each entry is
//! handed to [`StateStore::apply_changelog`].

use crate::changelog::ChangelogEntry;
use crate::error::StateError;
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

/// Progress is reported every this many records, and once at the end.
pub const RESTORE_PROGRESS_INTERVAL: u64 = 100_000;

/// Rebuilds `store` from committed changelog entries, in offset order.
///
/// Idempotent: each entry is an upsert or delete of one key, so restoring the same entries
/// again, or restoring a prefix first and the whole stream after, gives the same store.
/// Restored keys are not marked dirty; nothing is written back to the changelog.
/// `progress` is called every [`RESTORE_PROGRESS_INTERVAL`] records and once at the end.
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
    for entry in entries {
        store.apply_changelog(&entry)?;
        restored += 1;
        if restored.is_multiple_of(RESTORE_PROGRESS_INTERVAL) {
            progress(RestoreProgress { restored, total });
        }
    }
    progress(RestoreProgress { restored, total });
    tracing::debug!(
        store = store.name(),
        restored,
        total,
        "restored store from changelog"
    );
    Ok(restored)
}
