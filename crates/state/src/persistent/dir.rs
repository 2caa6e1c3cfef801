//! Store directories: ownership, format, checkpoints.
//!
//! Owns [`PersistentConfig`], [`StoreDirectory`] and the metadata file every store directory
//! carries (format version, application id, store name; sealed with a checksum, see
//! [`super::sealed`]). A directory another application id wrote is refused, one with a
//! newer format is refused, a damaged metadata file is refused naming the file. Writing and
//! reading the checkpoint a clean close leaves, with its manifest of the engine's files, is
//! here too ([`super::checkpoint`] owns its format). Deciding at open whether the local copy
//! can be trusted lives in [`super::recover`].
//!
//! This module never opens the engine.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::checkpoint::{Checkpoint, Manifest, STORE_CHECKPOINT_FILE};
use super::sealed::{seal, unseal, write_atomic};
use super::write_cache::{DEFAULT_CACHE_MAX_BYTES, MIN_CACHE_MAX_BYTES};
use crate::changelog::{ChangelogOffset, ChangelogPartition};
use crate::error::StateError;

#[cfg(test)]
mod fuzz;

/// The metadata file in every persistent store directory.
pub const STORE_METADATA_FILE: &str = "stoatflow-store.meta";

/// The store directory format this version writes and reads. Older formats' local copies
/// are rebuilt from the changelog: format 1 (before the checksummed metadata, the checkpoint
/// manifest and the key-value key prefix) and format 2 (a keyspace per segment, named
/// `seg<id>`, where format 3 keeps segments in reused slots with a map of which holds which;
/// format 2's reader would find no segment in a format 3 directory, hence the bump) and
/// format 3 (keys of a codec with a sortable form, Kafka's `i64` and `i32` among them,
/// stored as their encodings, where format 4 stores the sortable form: format 3's keys
/// would decode as other keys).
pub const STORE_FORMAT: u32 = 4;

const FORMAT_KEY: &str = "stoatflow-store-format=";

/// Left in a store directory by a close that could not write its cache to the engine.
const UNCLEAN_MARKER_FILE: &str = "stoatflow-store.unclean";

/// Left in a store directory by [`StoreDirectory::recover`] when it trusts the local copy
/// (and consumes its checkpoint): the files are vouched for until an engine opens them,
/// which removes it.
const RECOVERED_MARKER_FILE: &str = "stoatflow-store.recovered";

/// The engine's lock file inside the data directory (held while the engine is open).
const ENGINE_LOCK_FILE: &str = "lock";

/// The default size of each store's engine block cache
/// (`PersistentConfig::with_block_cache_bytes`): the engine's own default.
pub const DEFAULT_BLOCK_CACHE_BYTES: u64 = 32 << 20;

/// Where persistent stores live, whose they are, and how much memory each may hold: its
/// write-back cache (values the task wrote) and its engine's block cache (blocks of tables
/// read back from disk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistentConfig {
    state_dir: PathBuf,
    application_id: String,
    cache_max_bytes: usize,
    block_cache_bytes: u64,
}

impl PersistentConfig {
    /// Stores under `state_dir`, owned by `application_id`, each with a write-back cache of
    /// [`DEFAULT_CACHE_MAX_BYTES`] and a block cache of [`DEFAULT_BLOCK_CACHE_BYTES`].
    pub fn new(state_dir: impl Into<PathBuf>, application_id: impl Into<String>) -> Self {
        Self {
            state_dir: state_dir.into(),
            application_id: application_id.into(),
            cache_max_bytes: DEFAULT_CACHE_MAX_BYTES,
            block_cache_bytes: DEFAULT_BLOCK_CACHE_BYTES,
        }
    }

    /// Sizes each store's engine block cache: blocks of the store's tables read back from
    /// disk (reads the write-back cache cannot answer) stay in memory up to this many bytes.
    /// 0 keeps none.
    #[must_use]
    pub fn with_block_cache_bytes(mut self, bytes: u64) -> Self {
        self.block_cache_bytes = bytes;
        self
    }

    /// The size of each store's engine block cache.
    pub fn block_cache_bytes(&self) -> u64 {
        self.block_cache_bytes
    }

    /// Bounds each store's write-back cache (keys, values and a per-entry overhead); past
    /// it the store writes its cache to the engine and empties it. A bound below
    /// [`MIN_CACHE_MAX_BYTES`] is raised to it.
    #[must_use]
    pub fn with_cache_max_bytes(mut self, bytes: usize) -> Self {
        self.cache_max_bytes = bytes.max(MIN_CACHE_MAX_BYTES);
        self
    }

    /// As [`PersistentConfig::with_cache_max_bytes`] without the floor, so that tests can
    /// make a cache spill every few writes (each spill then makes a tiny table).
    #[doc(hidden)]
    #[must_use]
    pub fn with_cache_max_bytes_unfloored(mut self, bytes: usize) -> Self {
        self.cache_max_bytes = bytes;
        self
    }

    /// The bound of each store's write-back cache.
    pub fn cache_max_bytes(&self) -> usize {
        self.cache_max_bytes
    }

    /// The state directory.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The application id.
    pub fn application_id(&self) -> &str {
        &self.application_id
    }
}

/// The metadata file's contents as far as they could be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Meta {
    pub(crate) format: u32,
    pub(crate) application_id: Option<String>,
    pub(crate) store: Option<String>,
}

/// Parses a metadata file, or says why it is damaged. Format 1 files are plain lines;
/// later formats are sealed, so a cut or flipped bit never reads as another format or
/// another owner.
pub(crate) fn parse_meta(bytes: &[u8]) -> Result<Meta, String> {
    let body = match unseal(bytes) {
        Ok(body) => body,
        Err(why) => {
            let legacy = std::str::from_utf8(bytes).ok().filter(|t| {
                t.lines().next() == Some("stoatflow-store-format=1")
                    && !t.lines().any(|l| l.starts_with("crc32="))
            });
            legacy.ok_or(why)?
        }
    };
    let format = body
        .lines()
        .next()
        .and_then(|l| l.strip_prefix(FORMAT_KEY))
        .and_then(|v| v.parse::<u32>().ok())
        .ok_or_else(|| "has no format line".to_string())?;
    let field = |name: &str| {
        body.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
            .map(str::to_string)
    };
    Ok(Meta {
        format,
        application_id: field("application.id"),
        store: field("store"),
    })
}

/// One store's directory, checked to belong to this application id.
#[derive(Debug, Clone)]
pub struct StoreDirectory {
    store: String,
    path: PathBuf,
    /// The engine's block cache size ([`PersistentConfig::block_cache_bytes`]).
    block_cache_bytes: u64,
}

impl StoreDirectory {
    /// Opens (creating it if needed) `<state dir>/<store>/`.
    ///
    /// # Errors
    /// [`StateError::ForeignApplication`] if the directory's metadata names another
    /// application id; [`StateError::UnsupportedStoreFormat`] if it has another format
    /// (older: rebuild it with [`StoreDirectory::rebuild`]; newer: written by a newer
    /// version); [`StateError::DamagedStore`] if the metadata file is damaged;
    /// [`StateError::BadStoreDirectory`] if the directory holds files but no metadata, or the
    /// metadata names another store; [`StateError::InvalidConfig`] for a store name that is
    /// not one path component or an application id with a line break; [`StateError::Io`] on
    /// a file-system failure.
    pub fn open(config: &PersistentConfig, store: &str) -> Result<Self, StateError> {
        let dir = Self::unchecked(config, store)?;
        fs::create_dir_all(&dir.path).map_err(|e| dir.io_err(&dir.path, e))?;
        match dir.read_meta()? {
            Some(meta) => dir.check_meta(config, &meta)?,
            None => {
                // A crash during the first open can leave the metadata's temporary file.
                let tmp = dir.path.join(format!("{STORE_METADATA_FILE}.tmp"));
                match fs::remove_file(&tmp) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) => return Err(dir.io_err(&tmp, e)),
                }
                let mut entries = fs::read_dir(&dir.path).map_err(|e| dir.io_err(&dir.path, e))?;
                if entries.next().is_some() {
                    return Err(dir.bad(format!("files present but no {STORE_METADATA_FILE}")));
                }
                dir.write_meta(config)?;
            }
        }
        Ok(dir)
    }

    /// Deletes the local copy of the store (its data and checkpoint) and starts the
    /// directory afresh for this application id, so the store is rebuilt from its changelog:
    /// the option for when only the local copy is bad. It works on a directory whose
    /// metadata is damaged, missing or of another format, as long as it holds only what a
    /// store directory holds.
    ///
    /// # Errors
    /// [`StateError::ForeignApplication`] if the metadata is intact and names another
    /// application id; [`StateError::BadStoreDirectory`] if the directory holds files a
    /// store directory never has (it is not deleted); as [`StoreDirectory::open`] otherwise.
    pub fn rebuild(config: &PersistentConfig, store: &str) -> Result<Self, StateError> {
        let dir = Self::unchecked(config, store)?;
        fs::create_dir_all(&dir.path).map_err(|e| dir.io_err(&dir.path, e))?;
        if let Ok(Some(meta)) = dir.read_meta()
            && let Err(e @ StateError::ForeignApplication { .. }) = dir.check_meta(config, &meta)
        {
            return Err(e);
        }
        let mut entries = Vec::new();
        for entry in fs::read_dir(&dir.path).map_err(|e| dir.io_err(&dir.path, e))? {
            let entry = entry.map_err(|e| dir.io_err(&dir.path, e))?;
            let name = entry.file_name();
            let ours = name == "data" || name.to_string_lossy().starts_with("stoatflow-store.");
            if !ours {
                return Err(dir.bad(format!(
                    "{} is not part of a store directory; refusing to delete it",
                    entry.path().display()
                )));
            }
            entries.push(entry.path());
        }
        // The checkpoint goes first: a crash part-way leaves no checkpoint, so the next
        // open rebuilds again.
        dir.remove_checkpoint()?;
        for path in entries {
            let removed = if path.is_dir() {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path)
            };
            match removed {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(dir.io_err(&path, e)),
            }
        }
        dir.write_meta(config)?;
        Ok(dir)
    }

    /// The directory of `store` under `config`, names checked, nothing read.
    fn unchecked(config: &PersistentConfig, store: &str) -> Result<Self, StateError> {
        let invalid = |detail: &str| StateError::InvalidConfig {
            store: store.to_string(),
            detail: detail.to_string(),
        };
        if store.is_empty()
            || store.contains(['/', '\\', '\n', '\r'])
            || store == "."
            || store == ".."
        {
            return Err(invalid(
                "a store name must be a non-empty single path component without line breaks",
            ));
        }
        if config.application_id.contains(['\n', '\r']) {
            return Err(invalid("the application id must not contain line breaks"));
        }
        Ok(Self {
            store: store.to_string(),
            path: config.state_dir.join(store),
            block_cache_bytes: config.block_cache_bytes,
        })
    }

    /// How large the engine's block cache is to be.
    pub(crate) fn block_cache_bytes(&self) -> u64 {
        self.block_cache_bytes
    }

    /// The metadata, `None` if there is no metadata file.
    fn read_meta(&self) -> Result<Option<Meta>, StateError> {
        let path = self.path.join(STORE_METADATA_FILE);
        match fs::read(&path) {
            Ok(bytes) => parse_meta(&bytes)
                .map(Some)
                .map_err(|detail| self.damaged(STORE_METADATA_FILE, detail)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io_err(&path, e)),
        }
    }

    fn check_meta(&self, config: &PersistentConfig, meta: &Meta) -> Result<(), StateError> {
        let found = meta
            .application_id
            .clone()
            .ok_or_else(|| self.bad(format!("{STORE_METADATA_FILE} names no application.id")))?;
        if found != config.application_id {
            return Err(StateError::ForeignApplication {
                store: self.store.clone(),
                dir: self.path.display().to_string(),
                found,
                expected: config.application_id.clone(),
            });
        }
        let found_store = meta.store.as_deref().unwrap_or_default();
        if found_store != self.store {
            return Err(self.bad(format!("{STORE_METADATA_FILE} names store {found_store:?}")));
        }
        if meta.format != STORE_FORMAT {
            return Err(StateError::UnsupportedStoreFormat {
                store: self.store.clone(),
                dir: self.path.display().to_string(),
                found: meta.format,
                supported: STORE_FORMAT,
            });
        }
        Ok(())
    }

    fn write_meta(&self, config: &PersistentConfig) -> Result<(), StateError> {
        let text = seal(format!(
            "{FORMAT_KEY}{STORE_FORMAT}\napplication.id={}\nstore={}\n",
            config.application_id, self.store
        ));
        write_atomic(&self.path.join(STORE_METADATA_FILE), text.as_bytes())
            .map_err(|(p, e)| self.io_err(&p, e))
    }

    /// Records a clean close: for each changelog partition the next offset to restore
    /// from, and a manifest of every file the engine left (path, size, CRC-32), so that the
    /// next open can check the local copy before the engine reads it
    /// ([`StoreDirectory::recover`]). Call it after the store is dropped and everything
    /// before `offsets` is in its files. Written atomically and synced.
    ///
    /// # Errors
    /// [`StateError::StoreInUse`] if the store's engine is still open;
    /// [`StateError::DamagedStore`] if the store's last close could not write its cache to
    /// its files; [`StateError::Io`] on a file-system failure or a file the manifest cannot
    /// record.
    pub fn write_checkpoint(
        &self,
        offsets: &[(ChangelogPartition, ChangelogOffset)],
    ) -> Result<(), StateError> {
        let lock_path = self.data_path().join(ENGINE_LOCK_FILE);
        match fs::File::open(&lock_path) {
            Ok(lock) => match lock.try_lock() {
                Ok(()) => drop(lock),
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(StateError::StoreInUse {
                        store: self.store.clone(),
                        dir: self.path.display().to_string(),
                    });
                }
                Err(fs::TryLockError::Error(e)) => return Err(self.io_err(&lock_path, e)),
            },
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(self.io_err(&lock_path, e)),
        }
        if self.is_marked_unclean() {
            return Err(self.damaged(
                UNCLEAN_MARKER_FILE,
                "the store closed without writing its cache to its files: no checkpoint",
            ));
        }
        let manifest = Manifest::scan(&self.data_path()).map_err(|(p, e)| self.io_err(&p, e))?;
        let checkpoint = Checkpoint {
            offsets: offsets.to_vec(),
            manifest,
        };
        write_atomic(&self.checkpoint_path(), checkpoint.encode().as_bytes())
            .map_err(|(p, e)| self.io_err(&p, e))
    }

    /// The checkpointed offsets, if a checkpoint exists; the file is left in place and the
    /// files are not checked against its manifest (that is [`StoreDirectory::recover`]'s
    /// job).
    ///
    /// # Errors
    /// [`StateError::DamagedStore`] naming the checkpoint file if it is damaged;
    /// [`StateError::Io`] on a file-system failure.
    pub fn read_checkpoint(
        &self,
    ) -> Result<Option<Vec<(ChangelogPartition, ChangelogOffset)>>, StateError> {
        self.read_checkpoint_file()?
            .map(|bytes| {
                Checkpoint::parse(&bytes)
                    .map(|c| c.offsets)
                    .map_err(|detail| self.damaged(STORE_CHECKPOINT_FILE, detail))
            })
            .transpose()
    }

    /// The checkpoint file's bytes, `None` if there is none.
    pub(crate) fn read_checkpoint_file(&self) -> Result<Option<Vec<u8>>, StateError> {
        let path = self.checkpoint_path();
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io_err(&path, e)),
        }
    }

    pub(crate) fn remove_checkpoint(&self) -> Result<(), StateError> {
        let path = self.checkpoint_path();
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.io_err(&path, e)),
        }
    }

    /// Records that the store closed without writing every cached entry to the engine, so
    /// that no checkpoint vouches for its files ([`StoreDirectory::write_checkpoint`]
    /// refuses) and the next open rebuilds them from the changelog.
    pub(crate) fn mark_unclean(&self) -> Result<(), StateError> {
        let path = self.path.join(UNCLEAN_MARKER_FILE);
        write_atomic(&path, b"the last close lost cached writes\n")
            .map_err(|(p, e)| self.io_err(&p, e))
    }

    fn is_marked_unclean(&self) -> bool {
        self.path.join(UNCLEAN_MARKER_FILE).exists()
    }

    /// Deletes the checkpoint, then the engine's files (and the unclean-close and
    /// recovered marks with them).
    pub(crate) fn remove_local_copy(&self) -> Result<(), StateError> {
        self.remove_checkpoint()?;
        for mark in [UNCLEAN_MARKER_FILE, RECOVERED_MARKER_FILE] {
            self.remove_mark(mark)?;
        }
        let data = self.data_path();
        match fs::remove_dir_all(&data) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.io_err(&data, e)),
        }
    }

    /// Records that [`StoreDirectory::recover`] trusted the local copy: the next open of
    /// the engine serves it without a checkpoint.
    pub(crate) fn mark_recovered(&self) -> Result<(), StateError> {
        let path = self.path.join(RECOVERED_MARKER_FILE);
        write_atomic(
            &path,
            b"vouched for by a recovery; consumed by the next open\n",
        )
        .map_err(|(p, e)| self.io_err(&p, e))
    }

    /// Removes the mark `name`; whether it was there.
    fn remove_mark(&self, name: &str) -> Result<bool, StateError> {
        let path = self.path.join(name);
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.io_err(&path, e)),
        }
    }

    /// Whether the engine has left any file.
    pub(crate) fn has_local_data(&self) -> Result<bool, StateError> {
        let data = self.data_path();
        match fs::read_dir(&data) {
            Ok(mut entries) => Ok(entries.next().is_some()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.io_err(&data, e)),
        }
    }

    /// Decides, before the engine reads its files, whether something vouches for them, and
    /// consumes what did (the engine is about to change the files): a checkpoint left in
    /// place (the caller skipped [`StoreDirectory::recover`]) is checked against the files
    /// first; [`StoreDirectory::recover`]'s mark says it checked them (or rebuilt them) just
    /// before. Files with neither are refused: they may hold writes that never committed.
    /// No files: nothing to vouch for.
    ///
    /// # Errors
    /// [`StateError::DamagedStore`] naming the file that differs;
    /// [`StateError::UnverifiedLocalCopy`] naming the directory.
    pub(crate) fn consume_checkpoint(&self) -> Result<(), StateError> {
        match self.read_checkpoint_file()? {
            Some(bytes) => {
                let checkpoint = Checkpoint::parse(&bytes)
                    .map_err(|detail| self.damaged(STORE_CHECKPOINT_FILE, detail))?;
                if let Some(d) = self.verify(&checkpoint)? {
                    return Err(self.damaged(&d.0, d.1));
                }
                self.remove_mark(RECOVERED_MARKER_FILE)?;
                self.remove_checkpoint()
            }
            None if self.remove_mark(RECOVERED_MARKER_FILE)? => Ok(()),
            None if self.has_local_data()? => Err(StateError::UnverifiedLocalCopy {
                store: self.store.clone(),
                dir: self.path.display().to_string(),
            }),
            None => Ok(()),
        }
    }

    /// The first difference between the engine's files and `checkpoint`'s manifest, as
    /// (file relative to the store directory, what differs).
    pub(crate) fn verify(
        &self,
        checkpoint: &Checkpoint,
    ) -> Result<Option<(String, String)>, StateError> {
        Ok(checkpoint
            .manifest
            .verify(&self.data_path())
            .map_err(|(p, e)| self.io_err(&p, e))?
            .map(|d| (format!("data/{}", d.file), d.detail)))
    }

    pub(crate) fn damaged(&self, file: &str, detail: impl Into<String>) -> StateError {
        StateError::DamagedStore {
            store: self.store.clone(),
            dir: self.path.display().to_string(),
            file: file.to_string(),
            detail: detail.into(),
        }
    }

    fn bad(&self, reason: String) -> StateError {
        StateError::BadStoreDirectory {
            store: self.store.clone(),
            dir: self.path.display().to_string(),
            reason,
        }
    }

    fn io_err(&self, path: &Path, source: std::io::Error) -> StateError {
        StateError::Io {
            store: self.store.clone(),
            path: path.display().to_string(),
            source,
        }
    }

    fn checkpoint_path(&self) -> PathBuf {
        self.path.join(STORE_CHECKPOINT_FILE)
    }

    /// The store name.
    pub fn store(&self) -> &str {
        &self.store
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the engine's files live inside it.
    pub fn data_path(&self) -> PathBuf {
        self.path.join("data")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Open descriptors of this process whose file lies under `dir` (deleted ones too:
    /// a deleted file held open keeps its blocks).
    fn open_under(dir: &Path) -> usize {
        std::fs::read_dir("/proc/self/fd")
            .expect("list /proc/self/fd")
            .flatten()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .filter(|target| target.starts_with(dir))
            .count()
    }

    /// A window store whose segments come and go holds at most its engine's bound of table
    /// files open: the tables of a dropped segment are closed (fjall's cache of open files
    /// kept them, deleted, until it held 900 per store) and so free their blocks.
    #[test]
    fn dropped_segments_leave_no_table_file_open() {
        use crate::{
            I64Codec, PersistentWindowStore, Segmented, SegmentedConfig, StoreConfig, StringCodec,
            WindowStore,
        };
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app")
            .with_cache_max_bytes(crate::MIN_CACHE_MAX_BYTES);
        let seg = SegmentedConfig::new(1_000).with_segment_interval(1_000);
        let mut w =
            PersistentWindowStore::open(&cfg, StoreConfig::new("w"), seg, StringCodec, I64Codec)
                .unwrap();
        let mut most = 0;
        for round in 0..40i64 {
            let start = round * 1_000;
            // More than the cache holds: every round writes its segment back as tables.
            for k in 0..20_000 {
                w.put(format!("key-{k:05}-{}", "x".repeat(40)), start, 7, start)
                    .unwrap();
            }
            w.expire(start + 1_000).unwrap();
            most = most.max(open_under(tmp.path()));
        }
        // The lock and the journal beside the table files.
        let bound = super::super::MAX_OPEN_TABLE_FILES + 2;
        assert!(
            most <= bound,
            "{most} files open under the store's directory after 40 segments came and went, bound {bound}"
        );
    }

    fn meta_text(tmp: &Path, store: &str) -> String {
        fs::read_to_string(tmp.join(store).join(STORE_METADATA_FILE)).unwrap()
    }

    #[test]
    fn first_open_writes_sealed_metadata_and_reopen_accepts_it() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app-a");
        StoreDirectory::open(&cfg, "counts").unwrap();
        let meta = meta_text(tmp.path(), "counts");
        assert!(
            meta.starts_with(
                "stoatflow-store-format=4\napplication.id=app-a\nstore=counts\ncrc32="
            ),
            "{meta}"
        );
        assert_eq!(
            parse_meta(meta.as_bytes()),
            Ok(Meta {
                format: 4,
                application_id: Some("app-a".into()),
                store: Some("counts".into())
            })
        );
        StoreDirectory::open(&cfg, "counts").unwrap();
    }

    #[test]
    fn another_application_id_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        StoreDirectory::open(&PersistentConfig::new(tmp.path(), "app-a"), "counts").unwrap();
        let err = StoreDirectory::open(&PersistentConfig::new(tmp.path(), "app-b"), "counts")
            .unwrap_err();
        assert!(matches!(err, StateError::ForeignApplication { .. }));
        let msg = err.to_string();
        assert!(msg.starts_with("store counts: directory "), "{msg}");
        assert!(
            msg.ends_with(
                "belongs to application id \"app-a\", not \"app-b\"; refusing to open it"
            ),
            "{msg}"
        );
        // Not even an explicit rebuild deletes another application's store.
        let err = StoreDirectory::rebuild(&PersistentConfig::new(tmp.path(), "app-b"), "counts")
            .unwrap_err();
        assert!(
            matches!(err, StateError::ForeignApplication { .. }),
            "{err}"
        );
    }

    #[test]
    fn a_newer_format_is_refused_and_an_older_one_must_be_rebuilt() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let dir = tmp.path().join("counts");
        fs::create_dir_all(&dir).unwrap();
        let newer = seal("stoatflow-store-format=5\napplication.id=app\nstore=counts\n".into());
        fs::write(dir.join(STORE_METADATA_FILE), newer).unwrap();
        let err = StoreDirectory::open(&cfg, "counts").unwrap_err();
        assert!(
            matches!(
                err,
                StateError::UnsupportedStoreFormat {
                    found: 5,
                    supported: 4,
                    ..
                }
            ),
            "{err}"
        );
        let msg = err.to_string();
        assert!(msg.starts_with("store counts: directory "), "{msg}");
        assert!(
            msg.ends_with("has store format 5, this version reads format 4; it was written by a newer version; refusing to open it"),
            "{msg}"
        );

        // Format 1 (plain lines), format 2 (sealed, a keyspace per segment) and format 3
        // (keys stored as their encodings).
        let older = [
            (
                "stoatflow-store-format=1\napplication.id=app\nstore=counts\n".to_string(),
                1,
            ),
            (
                seal("stoatflow-store-format=2\napplication.id=app\nstore=counts\n".into()),
                2,
            ),
            (
                seal("stoatflow-store-format=3\napplication.id=app\nstore=counts\n".into()),
                3,
            ),
        ];
        for (meta, found) in older {
            fs::write(dir.join(STORE_METADATA_FILE), meta).unwrap();
            let err = StoreDirectory::open(&cfg, "counts")
                .unwrap_err()
                .to_string();
            assert!(err.ends_with(&format!("has store format {found}, this version reads format 4; rebuild it from its changelog (StoreDirectory::rebuild or LocalCopy::Rebuild)")), "{err}");
            StoreDirectory::rebuild(&cfg, "counts").unwrap();
            StoreDirectory::open(&cfg, "counts").unwrap();
        }
    }

    #[test]
    fn damaged_metadata_is_refused_naming_the_file_and_rebuild_recovers_it() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        StoreDirectory::open(&cfg, "counts").unwrap();
        let path = tmp.path().join("counts").join(STORE_METADATA_FILE);
        let mut bytes = fs::read(&path).unwrap();
        // "app" -> "aqp": without the checksum this would read as another application.
        bytes[40] ^= 0x01;
        fs::write(&path, &bytes).unwrap();
        let err = StoreDirectory::open(&cfg, "counts").unwrap_err();
        assert!(matches!(err, StateError::DamagedStore { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("is damaged: stoatflow-store.meta checksum mismatch"),
            "{msg}"
        );
        StoreDirectory::rebuild(&cfg, "counts").unwrap();
        StoreDirectory::open(&cfg, "counts").unwrap();
    }

    #[test]
    fn unknown_contents_are_refused_and_never_deleted() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join("counts")).unwrap();
        fs::write(tmp.path().join("counts/junk"), "x").unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let err = StoreDirectory::open(&cfg, "counts").unwrap_err();
        assert!(matches!(err, StateError::BadStoreDirectory { .. }), "{err}");
        let err = StoreDirectory::rebuild(&cfg, "counts").unwrap_err();
        assert!(
            err.to_string()
                .contains("junk is not part of a store directory"),
            "{err}"
        );
        assert!(tmp.path().join("counts/junk").exists());
    }

    #[test]
    fn a_leftover_metadata_temp_file_does_not_block_the_first_open() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join("counts")).unwrap();
        fs::write(tmp.path().join("counts/stoatflow-store.meta.tmp"), "stoat").unwrap();
        StoreDirectory::open(&PersistentConfig::new(tmp.path(), "app"), "counts").unwrap();
    }

    #[test]
    fn checkpoints_round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let d = StoreDirectory::open(&PersistentConfig::new(tmp.path(), "app"), "s").unwrap();
        assert_eq!(d.read_checkpoint().unwrap(), None);
        let offsets = vec![
            (ChangelogPartition(0), ChangelogOffset(17)),
            (ChangelogPartition(3), ChangelogOffset(0)),
        ];
        d.write_checkpoint(&offsets).unwrap();
        assert_eq!(d.read_checkpoint().unwrap(), Some(offsets.clone()));
        d.remove_checkpoint().unwrap();
        assert_eq!(d.read_checkpoint().unwrap(), None);
    }

    #[test]
    fn a_checkpoint_is_refused_while_the_engine_is_open() {
        let tmp = tempfile::tempdir().unwrap();
        let d = StoreDirectory::open(&PersistentConfig::new(tmp.path(), "app"), "s").unwrap();
        let db = super::super::open_database(&d).unwrap();
        let err = d.write_checkpoint(&[]).unwrap_err();
        assert!(matches!(err, StateError::StoreInUse { .. }), "{err}");
        drop(db);
        d.write_checkpoint(&[]).unwrap();
    }

    #[test]
    fn rebuild_removes_data_and_checkpoint_but_keeps_ownership() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let d = StoreDirectory::open(&cfg, "s").unwrap();
        fs::create_dir_all(d.data_path()).unwrap();
        fs::write(d.data_path().join("x"), "1").unwrap();
        d.write_checkpoint(&[(ChangelogPartition(0), ChangelogOffset(5))])
            .unwrap();
        let d = StoreDirectory::rebuild(&cfg, "s").unwrap();
        assert!(!d.data_path().exists());
        assert_eq!(d.read_checkpoint().unwrap(), None);
        assert!(StoreDirectory::rebuild(&PersistentConfig::new(tmp.path(), "other"), "s").is_err());
    }

    #[test]
    fn a_damaged_checkpoint_names_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let d = StoreDirectory::open(&PersistentConfig::new(tmp.path(), "app"), "s").unwrap();
        d.write_checkpoint(&[(ChangelogPartition(0), ChangelogOffset(12))])
            .unwrap();
        let path = d.path().join(STORE_CHECKPOINT_FILE);
        let text = fs::read_to_string(&path).unwrap().replace("12", "13");
        fs::write(&path, text).unwrap();
        let err = d.read_checkpoint().unwrap_err().to_string();
        assert!(
            err.contains("is damaged: stoatflow-store.checkpoint checksum mismatch"),
            "{err}"
        );
    }

    #[test]
    fn bad_store_names_and_application_ids_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        for name in ["", "..", "a/b", "a\nb"] {
            assert!(StoreDirectory::open(&cfg, name).is_err());
        }
        let cfg = PersistentConfig::new(tmp.path(), "app\nstore=x");
        assert!(matches!(
            StoreDirectory::open(&cfg, "s"),
            Err(StateError::InvalidConfig { .. })
        ));
    }

    proptest! {
        #[test]
        fn arbitrary_metadata_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            let _ = parse_meta(&bytes);
        }

        #[test]
        fn arbitrary_metadata_lines_never_panic(body in "(stoatflow-store-format=[0-9]{1,12}\n)?([a-z.]{0,15}=[ -~]{0,10}\n){0,4}") {
            let _ = parse_meta(body.as_bytes());
            let _ = parse_meta(seal(body).as_bytes());
        }
    }

    #[test]
    fn a_store_marked_unclean_gets_no_checkpoint_and_is_rebuilt() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let dir = StoreDirectory::open(&cfg, "s").unwrap();
        std::fs::create_dir_all(dir.data_path()).unwrap();
        std::fs::write(dir.data_path().join("table"), b"x").unwrap();
        dir.mark_unclean().unwrap();
        let err = dir.write_checkpoint(&[]).unwrap_err().to_string();
        assert!(err.contains(UNCLEAN_MARKER_FILE), "{err}");
        let (dir, recovery) =
            StoreDirectory::recover(&cfg, "s", super::super::LocalCopy::VerifyOrRebuild).unwrap();
        assert!(
            matches!(recovery, super::super::Recovery::Rebuilt { .. }),
            "{recovery:?}"
        );
        assert!(!dir.path().join(UNCLEAN_MARKER_FILE).exists());
        dir.write_checkpoint(&[]).unwrap();
    }
}
