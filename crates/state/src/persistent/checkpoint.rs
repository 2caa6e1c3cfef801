//! The checkpoint a clean close leaves in a store directory, with its manifest of files.
//!
//! Owns the checkpoint file's format and the manifest: for each changelog partition the next
//! offset to restore from, and the relative path, size and CRC-32 of every file (and every
//! directory) under the store's data directory as the closed engine left them. The engine
//! reads its own files as if whole: a damaged journal can drop keys silently, a damaged
//! table can make it request a huge allocation and abort the process. So a local copy is
//! trusted only after [`Manifest::verify`] has found every file exactly as recorded, before
//! the engine reads any of them. A missing, extra, resized or changed file is damage.
//!
//! The file is sealed text (see [`super::sealed`]):
//!
//! ```text
//! stoatflow-checkpoint-format=2
//! offset <partition> <offset>
//! dir <relative path>
//! file <size> <crc32, 8 hex digits> <relative path>
//! crc32=<8 hex digits>
//! ```
//!
//! Paths are relative to the data directory, `/`-separated, sorted. This module never knows
//! what the engine's files contain, nor how a store is rebuilt.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::file_crc::file_crc;
use super::sealed::{seal, unseal};
use crate::changelog::{ChangelogOffset, ChangelogPartition};

/// The checkpoint file: for each changelog partition, the next offset to restore from, and
/// the manifest of the engine's files.
pub const STORE_CHECKPOINT_FILE: &str = "stoatflow-store.checkpoint";

const FORMAT_LINE: &str = "stoatflow-checkpoint-format=2";

/// One entry of the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Dir,
    File { size: u64, crc: u32 },
}

/// The engine's files as a clean close left them, sorted by relative path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Manifest {
    entries: Vec<(String, Entry)>,
}

/// A difference between the files and the manifest: which file, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Damage {
    /// Relative to the data directory.
    pub(crate) file: String,
    pub(crate) detail: String,
}

/// An i/o failure while reading the files (not damage: the caller reports it as such).
pub(crate) type IoFailure = (PathBuf, io::Error);

/// What a clean close recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    pub(crate) offsets: Vec<(ChangelogPartition, ChangelogOffset)>,
    pub(crate) manifest: Manifest,
}

impl Checkpoint {
    /// The file's contents.
    pub(crate) fn encode(&self) -> String {
        let mut body = format!("{FORMAT_LINE}\n");
        for (p, o) in &self.offsets {
            body.push_str(&format!("offset {p} {o}\n"));
        }
        for (path, entry) in &self.manifest.entries {
            match entry {
                Entry::Dir => body.push_str(&format!("dir {path}\n")),
                Entry::File { size, crc } => {
                    body.push_str(&format!("file {size} {crc:08x} {path}\n"));
                }
            }
        }
        seal(body)
    }

    /// Parses the file's contents, or says why they are not a checkpoint.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Self, String> {
        let body = unseal(bytes)?;
        let mut lines = body.lines();
        match lines.next() {
            Some(FORMAT_LINE) => {}
            Some(other) => return Err(format!("unknown format line {other:?}")),
            None => return Err("is empty".into()),
        }
        let mut offsets = Vec::new();
        let mut entries: Vec<(String, Entry)> = Vec::new();
        for (i, line) in lines.enumerate() {
            let bad = || format!("line {}: {line:?} is malformed", i + 2);
            let (kind, rest) = line.split_once(' ').ok_or_else(bad)?;
            match kind {
                "offset" => {
                    let (p, o) = rest.split_once(' ').ok_or_else(bad)?;
                    let p = p.parse().map_err(|_| bad())?;
                    let o = o.parse().map_err(|_| bad())?;
                    offsets.push((ChangelogPartition(p), ChangelogOffset(o)));
                }
                "dir" => entries.push((rest.to_string(), Entry::Dir)),
                "file" => {
                    let mut parts = rest.splitn(3, ' ');
                    let size = parts.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
                    let crc = parts
                        .next()
                        .filter(|s| s.len() == 8)
                        .and_then(|s| u32::from_str_radix(s, 16).ok())
                        .ok_or_else(bad)?;
                    let path = parts.next().ok_or_else(bad)?;
                    entries.push((path.to_string(), Entry::File { size, crc }));
                }
                _ => return Err(bad()),
            }
            if let [.., (a, _), (b, _)] = entries.as_slice()
                && a >= b
            {
                return Err(format!("line {}: paths out of order", i + 2));
            }
        }
        Ok(Self {
            offsets,
            manifest: Manifest { entries },
        })
    }
}

/// A directory entry found by a walk, not yet checksummed.
struct Found {
    path: String,
    full: PathBuf,
    kind: FoundKind,
}

enum FoundKind {
    Dir,
    File {
        size: u64,
    },
    /// A symlink, socket, ... or a name that is not UTF-8 or holds a newline.
    Other(String),
}

/// Every entry under `root`, sorted by relative path. A missing `root` is an empty walk.
fn walk(root: &Path) -> Result<Vec<Found>, IoFailure> {
    fn visit(root: &Path, dir: &Path, out: &mut Vec<Found>) -> Result<(), IoFailure> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound && dir == root => return Ok(()),
            Err(e) => return Err((dir.to_path_buf(), e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| (dir.to_path_buf(), e))?;
            let full = entry.path();
            let meta = fs::symlink_metadata(&full).map_err(|e| (full.clone(), e))?;
            let rel = full.strip_prefix(root).unwrap_or(&full);
            let name = rel
                .to_str()
                .filter(|s| !s.contains('\n'))
                .map(|s| s.replace(std::path::MAIN_SEPARATOR, "/"));
            let (path, kind) = match name {
                None => (
                    rel.to_string_lossy().into_owned(),
                    FoundKind::Other("a name that is not utf-8 or holds a newline".into()),
                ),
                Some(p) if meta.is_dir() => (p, FoundKind::Dir),
                Some(p) if meta.is_file() => (p, FoundKind::File { size: meta.len() }),
                Some(p) => (p, FoundKind::Other(format!("a {:?}", meta.file_type()))),
            };
            let is_dir = matches!(kind, FoundKind::Dir);
            out.push(Found {
                path,
                full: full.clone(),
                kind,
            });
            if is_dir {
                visit(root, &full, out)?;
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    visit(root, root, &mut out)?;
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// The CRC-32 of a file's contents and its length (holes are not read, see [`file_crc`]).
fn checksum(path: &Path) -> Result<(u32, u64), IoFailure> {
    let sum = file_crc(path).map_err(|e| (path.to_path_buf(), e))?;
    Ok((sum.crc, sum.len))
}

impl Manifest {
    /// Records every file and directory under `root` (the engine must be closed).
    ///
    /// # Errors
    /// An i/o failure, or an entry the manifest cannot record (a symlink, a name that is
    /// not UTF-8), as [`io::ErrorKind::InvalidData`].
    pub(crate) fn scan(root: &Path) -> Result<Self, IoFailure> {
        let mut entries = Vec::new();
        for found in walk(root)? {
            let entry = match found.kind {
                FoundKind::Dir => Entry::Dir,
                FoundKind::File { .. } => {
                    let (crc, size) = checksum(&found.full)?;
                    Entry::File { size, crc }
                }
                FoundKind::Other(what) => {
                    return Err((
                        found.full,
                        io::Error::new(io::ErrorKind::InvalidData, format!("{what} in the store")),
                    ));
                }
            };
            entries.push((found.path, entry));
        }
        Ok(Self { entries })
    }

    /// Checks the files under `root` against the manifest: names and sizes first (cheap),
    /// then every file's checksum. `Ok(Some(damage))` names the first difference.
    ///
    /// # Errors
    /// An i/o failure other than a missing file.
    pub(crate) fn verify(&self, root: &Path) -> Result<Option<Damage>, IoFailure> {
        let damage = |file: &str, detail: String| {
            Ok(Some(Damage {
                file: file.to_string(),
                detail,
            }))
        };
        let found = walk(root)?;
        let (mut f, mut m) = (found.iter().peekable(), self.entries.iter().peekable());
        loop {
            match (f.peek(), m.peek()) {
                (None, None) => break,
                (Some(x), Some((path, _))) if x.path > *path => {
                    return damage(path, "is missing".into());
                }
                (None, Some((path, _))) => return damage(path, "is missing".into()),
                (Some(x), None) => {
                    return damage(&x.path, "is not in the checkpoint's manifest".into());
                }
                (Some(x), Some((path, _))) if x.path < *path => {
                    return damage(&x.path, "is not in the checkpoint's manifest".into());
                }
                (Some(x), Some((path, entry))) => {
                    match (&x.kind, entry) {
                        (FoundKind::Dir, Entry::Dir) => {}
                        (FoundKind::File { size }, Entry::File { size: want, .. }) => {
                            if size != want {
                                return damage(
                                    path,
                                    format!("has {size} bytes, the checkpoint recorded {want}"),
                                );
                            }
                        }
                        (FoundKind::Other(what), _) => {
                            return damage(path, format!("is {what}"));
                        }
                        (FoundKind::Dir, Entry::File { .. }) => {
                            return damage(
                                path,
                                "is a directory, the checkpoint recorded a file".into(),
                            );
                        }
                        (FoundKind::File { .. }, Entry::Dir) => {
                            return damage(
                                path,
                                "is a file, the checkpoint recorded a directory".into(),
                            );
                        }
                    }
                    f.next();
                    m.next();
                }
            }
        }
        for (x, (path, entry)) in found.iter().zip(&self.entries) {
            if let Entry::File { size, crc } = entry {
                let (actual, len) = match checksum(&x.full) {
                    Ok(c) => c,
                    Err((_, e)) if e.kind() == io::ErrorKind::NotFound => {
                        return damage(path, "is missing".into());
                    }
                    Err(e) => return Err(e),
                };
                if len != *size || actual != *crc {
                    return damage(
                        path,
                        format!(
                            "content differs from the checkpoint's record (crc32 {actual:08x}, recorded {crc:08x})"
                        ),
                    );
                }
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tree() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join("ks/0/tables")).unwrap();
        fs::write(tmp.path().join("ks/0/current"), b"v1").unwrap();
        fs::write(tmp.path().join("ks/0/tables/7"), vec![5u8; 1000]).unwrap();
        fs::write(tmp.path().join("0.jnl"), b"journal bytes").unwrap();
        tmp
    }

    fn verify(m: &Manifest, root: &Path) -> Option<Damage> {
        m.verify(root).unwrap()
    }

    #[test]
    fn checkpoint_round_trips() {
        let t = tree();
        let ck = Checkpoint {
            offsets: vec![
                (ChangelogPartition(0), ChangelogOffset(17)),
                (ChangelogPartition(3), ChangelogOffset(0)),
            ],
            manifest: Manifest::scan(t.path()).unwrap(),
        };
        let text = ck.encode();
        assert!(text.contains("\nfile 2 "), "{text}");
        assert!(text.contains(" ks/0/current\n"), "{text}");
        assert!(text.contains("\ndir ks/0/tables\n"), "{text}");
        assert_eq!(Checkpoint::parse(text.as_bytes()), Ok(ck));
    }

    #[test]
    fn an_unchanged_tree_verifies_and_every_kind_of_damage_is_named() {
        let t = tree();
        let m = Manifest::scan(t.path()).unwrap();
        assert_eq!(verify(&m, t.path()), None);
        let root = t.path();

        let mut bytes = fs::read(root.join("ks/0/tables/7")).unwrap();
        bytes[500] ^= 0x10;
        fs::write(root.join("ks/0/tables/7"), &bytes).unwrap();
        let d = verify(&m, root).unwrap();
        assert_eq!(d.file, "ks/0/tables/7");
        assert!(d.detail.starts_with("content differs"), "{}", d.detail);
        bytes[500] ^= 0x10;
        fs::write(root.join("ks/0/tables/7"), &bytes).unwrap();
        assert_eq!(verify(&m, root), None);

        fs::write(root.join("0.jnl"), b"journal").unwrap();
        let d = verify(&m, root).unwrap();
        assert_eq!(
            (d.file.as_str(), d.detail.as_str()),
            ("0.jnl", "has 7 bytes, the checkpoint recorded 13")
        );
        fs::write(root.join("0.jnl"), b"journal bytes").unwrap();

        fs::remove_file(root.join("ks/0/current")).unwrap();
        let d = verify(&m, root).unwrap();
        assert_eq!(
            (d.file.as_str(), d.detail.as_str()),
            ("ks/0/current", "is missing")
        );
        fs::write(root.join("ks/0/current"), b"v1").unwrap();

        fs::write(root.join("ks/0/extra"), b"").unwrap();
        let d = verify(&m, root).unwrap();
        assert_eq!(
            (d.file.as_str(), d.detail.as_str()),
            ("ks/0/extra", "is not in the checkpoint's manifest")
        );
        fs::remove_file(root.join("ks/0/extra")).unwrap();

        fs::remove_dir_all(root.join("ks")).unwrap();
        let d = verify(&m, root).unwrap();
        assert_eq!((d.file.as_str(), d.detail.as_str()), ("ks", "is missing"));
    }

    #[test]
    fn an_empty_or_missing_root_is_an_empty_manifest() {
        let t = tempfile::tempdir().unwrap();
        let missing = t.path().join("data");
        let m = Manifest::scan(&missing).unwrap();
        assert_eq!(m, Manifest::default());
        assert_eq!(verify(&m, &missing), None);
        fs::create_dir(&missing).unwrap();
        assert_eq!(verify(&m, &missing), None);
    }

    #[test]
    fn malformed_checkpoints_say_why() {
        let err = |body: &str| Checkpoint::parse(seal(body.to_string()).as_bytes()).unwrap_err();
        assert_eq!(err(""), "is empty");
        assert!(err("stoatflow-checkpoint-format=1\n").starts_with("unknown format line"));
        assert_eq!(
            err(&format!("{FORMAT_LINE}\noffset 0 x\n")),
            "line 2: \"offset 0 x\" is malformed"
        );
        assert_eq!(
            err(&format!("{FORMAT_LINE}\nfile 1 0000000g a\n")),
            "line 2: \"file 1 0000000g a\" is malformed"
        );
        assert_eq!(
            err(&format!("{FORMAT_LINE}\ndir b\ndir a\n")),
            "line 3: paths out of order"
        );
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = Checkpoint::parse(&bytes);
        }

        #[test]
        fn arbitrary_sealed_bodies_never_panic(body in "(stoatflow-checkpoint-format=2\n)?((offset|dir|file) [ -~]{0,30}\n){0,6}") {
            let _ = Checkpoint::parse(seal(body).as_bytes());
        }
    }
}
