//! Store directories and their metadata file.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::changelog::{ChangelogOffset, ChangelogPartition};
use crate::error::StateError;

/// The metadata file in every persistent store directory.
pub const STORE_METADATA_FILE: &str = "stoatflow-store.meta";

const FORMAT_LINE: &str = "stoatflow-store-format=1";

/// The checkpoint file: for each changelog partition, the next offset to restore from.
pub const STORE_CHECKPOINT_FILE: &str = "stoatflow-store.checkpoint";

const CHECKPOINT_FORMAT_LINE: &str = "stoatflow-checkpoint-format=1";

/// Where persistent stores live and whose they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistentConfig {
    state_dir: PathBuf,
    application_id: String,
}

impl PersistentConfig {
    /// Stores under `state_dir`, owned by `application_id`.
    pub fn new(state_dir: impl Into<PathBuf>, application_id: impl Into<String>) -> Self {
        Self {
            state_dir: state_dir.into(),
            application_id: application_id.into(),
        }
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

/// One store's directory, checked to belong to this application id.
#[derive(Debug, Clone)]
pub struct StoreDirectory {
    store: String,
    path: PathBuf,
}

impl StoreDirectory {
    /// Opens (creating it if needed) `<state dir>/<store>/`.
    ///
    /// # Errors
    /// [`StateError::ForeignApplication`] if the directory's metadata names another
    /// application id; [`StateError::BadStoreDirectory`] if the directory holds files but
    /// no valid metadata, or the metadata names another store; [`StateError::Io`] on a
    /// file-system failure.
    pub fn open(config: &PersistentConfig, store: &str) -> Result<Self, StateError> {
        if store.is_empty() || store.contains(['/', '\\']) || store == "." || store == ".." {
            return Err(StateError::InvalidConfig {
                store: store.to_string(),
                detail: "a store name must be a non-empty single path component".into(),
            });
        }
        let path = config.state_dir.join(store);
        let io = |p: &Path| {
            let p = p.display().to_string();
            move |source| StateError::Io {
                store: store.to_string(),
                path: p,
                source,
            }
        };
        fs::create_dir_all(&path).map_err(io(&path))?;
        let meta_path = path.join(STORE_METADATA_FILE);
        let bad = |reason: String| StateError::BadStoreDirectory {
            store: store.to_string(),
            dir: path.display().to_string(),
            reason,
        };
        match fs::read_to_string(&meta_path) {
            Ok(text) => {
                let field = |name: &str| {
                    text.lines()
                        .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
                        .map(str::to_string)
                };
                if !text.lines().any(|l| l == FORMAT_LINE) {
                    return Err(bad(format!("{STORE_METADATA_FILE} has an unknown format")));
                }
                let found = field("application.id")
                    .ok_or_else(|| bad(format!("{STORE_METADATA_FILE} names no application.id")))?;
                if found != config.application_id {
                    return Err(StateError::ForeignApplication {
                        store: store.to_string(),
                        dir: path.display().to_string(),
                        found,
                        expected: config.application_id.clone(),
                    });
                }
                let found_store = field("store").unwrap_or_default();
                if found_store != store {
                    return Err(bad(format!(
                        "{STORE_METADATA_FILE} names store {found_store:?}"
                    )));
                }
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let mut entries = fs::read_dir(&path).map_err(io(&path))?;
                if entries.next().is_some() {
                    return Err(bad(format!("files present but no {STORE_METADATA_FILE}")));
                }
                let tmp = path.join(format!("{STORE_METADATA_FILE}.tmp"));
                let text = format!(
                    "{FORMAT_LINE}\napplication.id={}\nstore={store}\n",
                    config.application_id
                );
                fs::write(&tmp, text).map_err(io(&tmp))?;
                fs::rename(&tmp, &meta_path).map_err(io(&meta_path))?;
            }
            Err(e) => return Err(io(&meta_path)(e)),
        }
        Ok(Self {
            store: store.to_string(),
            path,
        })
    }

    /// Deletes the store's data and checkpoint (after checking it is this application's), leaving an
    /// empty, owned directory: what a restart after an unclean shutdown under exactly-once
    /// does before restoring from the changelog.
    ///
    /// # Errors
    /// As [`StoreDirectory::open`].
    pub fn wipe(config: &PersistentConfig, store: &str) -> Result<Self, StateError> {
        let dir = Self::open(config, store)?;
        let checkpoint = dir.path.join(STORE_CHECKPOINT_FILE);
        match fs::remove_file(&checkpoint) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(source) => return Err(dir.io_err(&checkpoint, source)),
        }
        let data = dir.data_path();
        match fs::remove_dir_all(&data) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(source) => {
                return Err(StateError::Io {
                    store: store.to_string(),
                    path: data.display().to_string(),
                    source,
                });
            }
        }
        Ok(dir)
    }

    /// Records, for each changelog partition, the next offset to restore from: what a clean
    /// close writes once the store's files hold everything before it. Written atomically.
    ///
    /// Under exactly-once the caller reads and deletes the checkpoint when it opens the store
    /// ([`StoreDirectory::take_checkpoint`]), so a crash before the next clean close leaves
    /// none, and the store is wiped and restored from the changelog's start (Kafka Streams'
    /// discipline).
    ///
    /// # Errors
    /// [`StateError::Io`] on a file-system failure.
    pub fn write_checkpoint(
        &self,
        offsets: &[(ChangelogPartition, ChangelogOffset)],
    ) -> Result<(), StateError> {
        let mut text = format!("{CHECKPOINT_FORMAT_LINE}\n");
        for (p, o) in offsets {
            text.push_str(&format!("{p} {o}\n"));
        }
        let path = self.path.join(STORE_CHECKPOINT_FILE);
        let tmp = self.path.join(format!("{STORE_CHECKPOINT_FILE}.tmp"));
        fs::write(&tmp, text).map_err(|source| self.io_err(&tmp, source))?;
        fs::rename(&tmp, &path).map_err(|source| self.io_err(&path, source))
    }

    /// The checkpointed offsets, if a checkpoint exists; the file is left in place.
    ///
    /// # Errors
    /// [`StateError::BadStoreDirectory`] naming the line if the file is malformed;
    /// [`StateError::Io`] on a file-system failure.
    pub fn read_checkpoint(
        &self,
    ) -> Result<Option<Vec<(ChangelogPartition, ChangelogOffset)>>, StateError> {
        let path = self.path.join(STORE_CHECKPOINT_FILE);
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(self.io_err(&path, source)),
        };
        let bad = |reason: String| StateError::BadStoreDirectory {
            store: self.store.clone(),
            dir: self.path.display().to_string(),
            reason,
        };
        let mut lines = text.lines();
        if lines.next() != Some(CHECKPOINT_FORMAT_LINE) {
            return Err(bad(format!(
                "{STORE_CHECKPOINT_FILE} has an unknown format"
            )));
        }
        let mut offsets = Vec::new();
        for (i, line) in lines.enumerate() {
            let parsed = line.split_once(' ').and_then(|(p, o)| {
                Some((
                    ChangelogPartition(p.parse().ok()?),
                    ChangelogOffset(o.parse().ok()?),
                ))
            });
            offsets.push(parsed.ok_or_else(|| {
                bad(format!(
                    "{STORE_CHECKPOINT_FILE} line {}: {line:?} is not \"<partition> <offset>\"",
                    i + 2
                ))
            })?);
        }
        Ok(Some(offsets))
    }

    /// Reads the checkpoint and deletes it (opening a store under exactly-once).
    ///
    /// # Errors
    /// As [`StoreDirectory::read_checkpoint`].
    pub fn take_checkpoint(
        &self,
    ) -> Result<Option<Vec<(ChangelogPartition, ChangelogOffset)>>, StateError> {
        let offsets = self.read_checkpoint()?;
        if offsets.is_some() {
            let path = self.path.join(STORE_CHECKPOINT_FILE);
            fs::remove_file(&path).map_err(|source| self.io_err(&path, source))?;
        }
        Ok(offsets)
    }

    fn io_err(&self, path: &Path, source: std::io::Error) -> StateError {
        StateError::Io {
            store: self.store.clone(),
            path: path.display().to_string(),
            source,
        }
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

    #[test]
    fn first_open_writes_metadata_and_reopen_accepts_it() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app-a");
        let d = StoreDirectory::open(&cfg, "counts").unwrap();
        let meta = fs::read_to_string(d.path().join(STORE_METADATA_FILE)).unwrap();
        assert!(meta.contains("application.id=app-a\n"));
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
    }

    #[test]
    fn unknown_contents_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join("counts")).unwrap();
        fs::write(tmp.path().join("counts/junk"), "x").unwrap();
        let err =
            StoreDirectory::open(&PersistentConfig::new(tmp.path(), "app"), "counts").unwrap_err();
        assert!(matches!(err, StateError::BadStoreDirectory { .. }), "{err}");
    }

    #[test]
    fn checkpoints_round_trip_and_take_deletes() {
        let tmp = tempfile::tempdir().unwrap();
        let d = StoreDirectory::open(&PersistentConfig::new(tmp.path(), "app"), "s").unwrap();
        assert_eq!(d.read_checkpoint().unwrap(), None);
        let offsets = vec![
            (ChangelogPartition(0), ChangelogOffset(17)),
            (ChangelogPartition(3), ChangelogOffset(0)),
        ];
        d.write_checkpoint(&offsets).unwrap();
        assert_eq!(d.read_checkpoint().unwrap(), Some(offsets.clone()));
        assert_eq!(d.take_checkpoint().unwrap(), Some(offsets));
        assert_eq!(d.read_checkpoint().unwrap(), None);
    }

    #[test]
    fn wipe_removes_data_and_checkpoint_but_keeps_ownership() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let d = StoreDirectory::open(&cfg, "s").unwrap();
        fs::create_dir_all(d.data_path()).unwrap();
        fs::write(d.data_path().join("x"), "1").unwrap();
        d.write_checkpoint(&[(ChangelogPartition(0), ChangelogOffset(5))])
            .unwrap();
        let d = StoreDirectory::wipe(&cfg, "s").unwrap();
        assert!(!d.data_path().exists());
        assert_eq!(d.read_checkpoint().unwrap(), None);
        assert!(StoreDirectory::wipe(&PersistentConfig::new(tmp.path(), "other"), "s").is_err());
    }

    #[test]
    fn a_malformed_checkpoint_names_the_line() {
        let tmp = tempfile::tempdir().unwrap();
        let d = StoreDirectory::open(&PersistentConfig::new(tmp.path(), "app"), "s").unwrap();
        fs::write(
            d.path().join(STORE_CHECKPOINT_FILE),
            format!("{CHECKPOINT_FORMAT_LINE}\n0 12\n1 x\n"),
        )
        .unwrap();
        let err = d.read_checkpoint().unwrap_err().to_string();
        assert!(err.contains("line 3: \"1 x\" is not"), "{err}");
    }

    #[test]
    fn bad_store_names_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        for name in ["", "..", "a/b"] {
            assert!(StoreDirectory::open(&cfg, name).is_err());
        }
    }
}
