//! A log directory as data: snapshot the files of a log, write them back
//! into a fresh directory (after damaging them), list the segment files,
//! and write a frame by hand (hostile bytes behind a valid checksum).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every file of a log directory but its `LOCK`, by path relative to the root.
pub type Files = BTreeMap<PathBuf, Vec<u8>>;

pub fn snapshot(root: &Path) -> Files {
    fn walk(root: &Path, dir: &Path, out: &mut Files) {
        for e in std::fs::read_dir(dir).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.file_name().is_some_and(|n| n != "LOCK") {
                let rel = p.strip_prefix(root).expect("under root").to_path_buf();
                out.insert(rel, std::fs::read(&p).expect("read file"));
            }
        }
    }
    let mut out = Files::new();
    walk(root, root, &mut out);
    out
}

/// A fresh directory holding `files`. On a RAM-backed `/dev/shm` where there
/// is one (the damage sweep opens thousands of copies; fsync is free there).
pub fn materialize(files: &Files) -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm).or_else(|_| tempfile::tempdir())
    } else {
        tempfile::tempdir()
    }
    .expect("tempdir");
    for (rel, bytes) in files {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, bytes).expect("write");
    }
    dir
}

/// The segment files of `topic`/`partition`, oldest first.
pub fn segments(files: &Files, topic: &str, partition: u32) -> Vec<PathBuf> {
    let dir = Path::new("topics").join(topic).join(partition.to_string());
    files
        .keys()
        .filter(|p| p.parent() == Some(dir.as_path()))
        .cloned()
        .collect()
}

/// The transaction-log file (there is one at rest).
pub fn txlog(files: &Files) -> PathBuf {
    files
        .keys()
        .find(|p| p.to_string_lossy().starts_with("txn-"))
        .cloned()
        .expect("a transaction log")
}

/// A frame as the format documents it: `[len u32 LE][crc32 of len ++ body][body]`.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let len = (body.len() as u32).to_le_bytes();
    let mut h = crc32fast::Hasher::new();
    h.update(&len);
    h.update(body);
    let mut out = len.to_vec();
    out.extend_from_slice(&h.finalize().to_le_bytes());
    out.extend_from_slice(body);
    out
}
