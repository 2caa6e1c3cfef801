//! Opening a store's local copy: trust it, or delete it so it is rebuilt from the changelog.
//!
//! Owns [`LocalCopy`] (how much to trust the local files), [`Recovery`] (what the caller
//! restores from) and [`RebuildReason`], and [`StoreDirectory::recover`], the first step of
//! every persistent store's normal open path: it runs before the engine reads a single file.
//!
//! The rule (exactly-once, Kafka Streams' discipline made checkable): the local copy is
//! trusted only if the last close was clean (a checkpoint exists) and every file under the
//! data directory is exactly what that close recorded (the checkpoint's manifest). Anything
//! else deletes the local copy, and the caller restores from the changelog's start. The
//! checkpoint is deleted when the copy is trusted, so a crash before the next clean close
//! leaves none; a mark takes its place until the engine opens the files, so that the
//! stores' public constructors, which refuse files nothing vouches for, serve them. Damage is reported: a `tracing` warning naming the store and the file, and
//! [`RebuildReason::Damaged`] in the result.
//!
//! This module never opens the engine and never reads the changelog.

use std::fmt;

use super::checkpoint::{Checkpoint, STORE_CHECKPOINT_FILE};
use super::dir::{PersistentConfig, STORE_FORMAT, StoreDirectory};
use crate::changelog::{ChangelogOffset, ChangelogPartition};
use crate::error::StateError;

/// How far to trust a store's local files at open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LocalCopy {
    /// Resume from the checkpoint when the files are exactly as the last clean close left
    /// them; otherwise delete them and rebuild from the changelog (the default). A local
    /// copy in an older directory format is rebuilt too.
    #[default]
    VerifyOrRebuild,
    /// As [`LocalCopy::VerifyOrRebuild`], but damaged files or an older format are refused
    /// with an error and left in place for inspection (an unclean shutdown is still
    /// rebuilt: that is not damage).
    VerifyOrRefuse,
    /// Delete the local copy whatever it looks like and rebuild from the changelog
    /// ([`StoreDirectory::rebuild`]): the option for when only the local copy is bad.
    Rebuild,
}

/// What [`StoreDirectory::recover`] found, and where the caller restores from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recovery {
    /// The files are exactly as the last clean close left them: restore each partition
    /// from its checkpointed offset.
    Resumed {
        /// For each changelog partition, the next offset to restore from.
        offsets: Vec<(ChangelogPartition, ChangelogOffset)>,
    },
    /// The local copy was deleted (or there was none): restore from the changelog's start.
    Rebuilt {
        /// Why.
        reason: RebuildReason,
    },
}

impl Recovery {
    /// The offset to restore `partition` from: its checkpointed offset when resumed, the
    /// partition's start (0) when rebuilt or when the checkpoint does not name it.
    pub fn restore_from(&self, partition: ChangelogPartition) -> ChangelogOffset {
        match self {
            Recovery::Resumed { offsets } => offsets
                .iter()
                .find(|(p, _)| *p == partition)
                .map_or(ChangelogOffset(0), |(_, o)| *o),
            Recovery::Rebuilt { .. } => ChangelogOffset(0),
        }
    }
}

/// Why a store's local copy is rebuilt from its changelog.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RebuildReason {
    /// There were no local files (a first open, or after a rebuild).
    Empty,
    /// Local files but no checkpoint: the last run did not close cleanly, so the files may
    /// hold writes that never committed.
    UncleanShutdown,
    /// A file differs from what the last clean close recorded, or the checkpoint itself is
    /// damaged.
    Damaged {
        /// The file, relative to the store directory.
        file: String,
        /// What differs.
        detail: String,
    },
    /// The directory was written in an older format.
    OlderFormat {
        /// Its format.
        found: u32,
    },
    /// [`LocalCopy::Rebuild`] asked for it.
    Requested,
}

impl fmt::Display for RebuildReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RebuildReason::Empty => f.write_str("no local files"),
            RebuildReason::UncleanShutdown => {
                f.write_str("local files but no checkpoint (unclean shutdown)")
            }
            RebuildReason::Damaged { file, detail } => write!(f, "{file} {detail}"),
            RebuildReason::OlderFormat { found } => {
                write!(f, "store format {found} is older than {STORE_FORMAT}")
            }
            RebuildReason::Requested => f.write_str("rebuild requested"),
        }
    }
}

impl StoreDirectory {
    /// Opens `<state dir>/<store>/` and decides, before the engine reads any file, whether
    /// its local copy can be trusted (see [`LocalCopy`]). On [`Recovery::Resumed`] the
    /// checkpoint has been consumed: open the store and restore each partition from
    /// [`Recovery::restore_from`]. On [`Recovery::Rebuilt`] the local files are gone:
    /// open the store and restore from the start.
    ///
    /// ```
    /// use stoatflow_state::{ChangelogPartition, LocalCopy, PersistentConfig, StoreDirectory};
    /// # fn main() -> Result<(), stoatflow_state::StateError> {
    /// # let tmp = tempfile::tempdir().unwrap();
    /// let config = PersistentConfig::new(tmp.path(), "my-app");
    /// let (dir, recovery) = StoreDirectory::recover(&config, "counts", LocalCopy::default())?;
    /// let from = recovery.restore_from(ChangelogPartition(0));
    /// // ... open the store in `dir` and restore its changelog partition from `from` ...
    /// # let _ = (dir, from);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`StoreDirectory::open`] (another application id, a newer format, a damaged
    /// metadata file, ...); under [`LocalCopy::VerifyOrRefuse`],
    /// [`StateError::DamagedStore`] naming the file, or
    /// [`StateError::UnsupportedStoreFormat`] for an older format.
    pub fn recover(
        config: &PersistentConfig,
        store: &str,
        mode: LocalCopy,
    ) -> Result<(Self, Recovery), StateError> {
        let rebuilt = |dir, reason| Ok((dir, Recovery::Rebuilt { reason }));
        if mode == LocalCopy::Rebuild {
            let dir = Self::rebuild(config, store)?;
            tracing::info!(
                store,
                "rebuilding the store from its changelog, as requested"
            );
            return rebuilt(dir, RebuildReason::Requested);
        }
        let dir = match Self::open(config, store) {
            Err(StateError::UnsupportedStoreFormat {
                found, supported, ..
            }) if found < supported && mode == LocalCopy::VerifyOrRebuild => {
                let dir = Self::rebuild(config, store)?;
                tracing::info!(
                    store,
                    found,
                    "store directory in an older format; rebuilding it from its changelog"
                );
                return rebuilt(dir, RebuildReason::OlderFormat { found });
            }
            other => other?,
        };
        let reason = match dir.read_checkpoint_file()? {
            None if dir.has_local_data()? => RebuildReason::UncleanShutdown,
            None => RebuildReason::Empty,
            Some(bytes) => match Checkpoint::parse(&bytes) {
                Err(detail) => RebuildReason::Damaged {
                    file: STORE_CHECKPOINT_FILE.to_string(),
                    detail,
                },
                Ok(checkpoint) => match dir.verify(&checkpoint)? {
                    None => {
                        // Vouched for until the engine opens it, then by nothing
                        // until the next clean close.
                        dir.mark_recovered()?;
                        dir.remove_checkpoint()?;
                        let offsets = checkpoint.offsets;
                        return Ok((dir, Recovery::Resumed { offsets }));
                    }
                    Some((file, detail)) => RebuildReason::Damaged { file, detail },
                },
            },
        };
        if let RebuildReason::Damaged { file, detail } = &reason {
            if mode == LocalCopy::VerifyOrRefuse {
                return Err(dir.damaged(file, detail.clone()));
            }
            tracing::warn!(
                store,
                file = file.as_str(),
                detail = detail.as_str(),
                "the store's local copy is damaged; rebuilding it from its changelog"
            );
        } else if reason == RebuildReason::UncleanShutdown {
            tracing::info!(
                store,
                "no checkpoint from a clean close; rebuilding the store from its changelog"
            );
        }
        dir.remove_local_copy()?;
        rebuilt(dir, reason)
    }
}
