//! Where the embedded log's bytes live: a file on disk or a buffer in memory.
//!
//! Owns: [`Store`], the handful of positional file operations the log needs
//! (append, read at, truncate, sync) on a file, on a segment file of the
//! bounded pool of open segments (`file_pool`) or on a buffer, the
//! [`Reader`] that compaction reads a closed segment through without the
//! log's lock, and directory helpers. The in-memory mode runs the very same format and recovery code over buffers, which is
//! why it is a variant here and not a second log.
//!
//! Every operation that changes durable state first asks [`faults`], a seam
//! through which unit tests make a chosen operation fail (a full disk, a
//! failed fsync). Outside `cfg(test)` it is an inlined `Ok(())`.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::file_pool::{Effect, FilePool, PooledFile, SyncTicket};
use crate::error::LogError;

/// One stored file.
#[derive(Debug)]
pub(crate) enum Store {
    /// An open file on disk (the transaction log, a compaction's output).
    Disk(File),
    /// A segment file on disk, opened through the pool of open segments.
    Pooled(PooledFile),
    /// A buffer (in-memory mode), shared copy-on-write with the
    /// [`Reader`]s taken of it.
    Mem(Arc<Vec<u8>>),
}

/// A read-only handle on a stored file's bytes as they were when it was
/// taken, for reading without the log's lock: a second descriptor of the
/// same open file (which keeps its bytes readable even after the file is
/// renamed over or removed), or a shared reference to the buffer.
#[derive(Debug)]
pub(crate) enum Reader {
    Disk(File),
    Mem(Arc<Vec<u8>>),
}

impl Reader {
    /// Fills `out` with the bytes at `pos`.
    pub(crate) fn read_exact_at(
        &self,
        pos: u64,
        out: &mut [u8],
        path: &Path,
    ) -> Result<(), LogError> {
        match self {
            Reader::Disk(f) => f
                .read_exact_at(out, pos)
                .map_err(|e| LogError::io("reading", path, e)),
            Reader::Mem(v) => {
                let bytes = usize::try_from(pos)
                    .ok()
                    .and_then(|start| v.get(start..start.checked_add(out.len())?));
                match bytes {
                    Some(b) => {
                        out.copy_from_slice(b);
                        Ok(())
                    }
                    None => Err(LogError::io(
                        "reading",
                        path,
                        std::io::ErrorKind::UnexpectedEof.into(),
                    )),
                }
            }
        }
    }
}

fn read_file_at(
    f: &File,
    pos: u64,
    len: usize,
    buf: &mut Vec<u8>,
    path: &Path,
) -> Result<(), LogError> {
    buf.clear();
    buf.resize(len, 0);
    f.read_exact_at(buf, pos)
        .map_err(|e| LogError::io("reading", path, e))
}

fn read_mem_at(v: &[u8], pos: u64, len: usize, buf: &mut Vec<u8>) {
    buf.clear();
    let start = usize::try_from(pos).unwrap_or(usize::MAX).min(v.len());
    let end = start.saturating_add(len).min(v.len());
    buf.extend_from_slice(&v[start..end]);
}

impl Store {
    /// An in-memory store holding `bytes`.
    pub(crate) fn mem(bytes: Vec<u8>) -> Store {
        Store::Mem(Arc::new(bytes))
    }

    /// A [`Reader`] of this store's current bytes.
    pub(crate) fn reader(&self, path: &Path) -> Result<Reader, LogError> {
        match self {
            Store::Disk(f) => f
                .try_clone()
                .map(Reader::Disk)
                .map_err(|e| LogError::io("opening", path, e)),
            Store::Pooled(p) => p.reader(path).map(Reader::Disk),
            Store::Mem(v) => Ok(Reader::Mem(Arc::clone(v))),
        }
    }

    /// Whether this store is a file (and not a buffer).
    pub(crate) fn on_disk(&self) -> bool {
        !matches!(self, Store::Mem(_))
    }

    /// A segment file, created at `path` (or opened, if it exists) in `pool`.
    pub(crate) fn create_pooled(pool: &Arc<FilePool>, path: &Path) -> Result<Store, LogError> {
        faults::check(Op::Create, path).map_err(|e| LogError::io("opening", path, e))?;
        pool.create(path).map(Store::Pooled)
    }

    /// An existing segment file in `pool`, opened when first used.
    pub(crate) fn existing_pooled(pool: &Arc<FilePool>) -> Store {
        Store::Pooled(pool.existing())
    }

    /// Gives a pooled segment file's descriptor back to the pool (synced
    /// first if written); it opens again when next used. Nothing to do for
    /// any other store.
    pub(crate) fn release(&self, path: &Path) -> Result<(), LogError> {
        match self {
            Store::Pooled(p) => p.release(path),
            Store::Disk(_) | Store::Mem(_) => Ok(()),
        }
    }

    pub(crate) fn create_disk(path: &Path) -> Result<Store, LogError> {
        faults::check(Op::Create, path).map_err(|e| LogError::io("opening", path, e))?;
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map(Store::Disk)
            .map_err(|e| LogError::io("opening", path, e))
    }

    pub(crate) fn len(&self, path: &Path) -> Result<u64, LogError> {
        match self {
            Store::Disk(f) => f
                .metadata()
                .map(|m| m.len())
                .map_err(|e| LogError::io("reading the size of", path, e)),
            Store::Pooled(p) => p.len(path),
            Store::Mem(v) => Ok(v.len() as u64),
        }
    }

    pub(crate) fn write_at(&mut self, pos: u64, bytes: &[u8], path: &Path) -> Result<(), LogError> {
        faults::check(Op::Write, path).map_err(|e| LogError::io("writing", path, e))?;
        match self {
            Store::Disk(f) => f
                .write_all_at(bytes, pos)
                .map_err(|e| LogError::io("writing", path, e)),
            Store::Pooled(p) => p.with(path, "writing", Effect::Write, |f| {
                f.write_all_at(bytes, pos)
            }),
            Store::Mem(v) => {
                let v = Arc::make_mut(v);
                v.truncate(pos as usize);
                v.extend_from_slice(bytes);
                Ok(())
            }
        }
    }

    /// Reads `len` bytes at `pos` into `buf` (cleared first).
    pub(crate) fn read_at(
        &self,
        pos: u64,
        len: usize,
        buf: &mut Vec<u8>,
        path: &Path,
    ) -> Result<(), LogError> {
        match self {
            Store::Disk(f) => read_file_at(f, pos, len, buf, path),
            Store::Pooled(p) => p.with(path, "reading", Effect::Read, |f| {
                buf.clear();
                buf.resize(len, 0);
                f.read_exact_at(buf, pos)
            }),
            Store::Mem(v) => {
                read_mem_at(v, pos, len, buf);
                Ok(())
            }
        }
    }

    /// The whole content (recovery scans).
    pub(crate) fn read_all(&self, path: &Path) -> Result<Vec<u8>, LogError> {
        let len = self.len(path)? as usize;
        let mut buf = Vec::new();
        self.read_at(0, len, &mut buf, path)?;
        Ok(buf)
    }

    pub(crate) fn truncate(&mut self, len: u64, path: &Path) -> Result<(), LogError> {
        faults::check(Op::Truncate, path).map_err(|e| LogError::io("truncating", path, e))?;
        match self {
            Store::Disk(f) => f
                .set_len(len)
                .and_then(|()| f.sync_all())
                .map_err(|e| LogError::io("truncating", path, e)),
            Store::Pooled(p) => p.with(path, "truncating", Effect::WriteAndSync, |f| {
                f.set_len(len).and_then(|()| f.sync_all())
            }),
            Store::Mem(v) => {
                if (len as usize) < v.len() {
                    Arc::make_mut(v).truncate(len as usize);
                }
                Ok(())
            }
        }
    }

    /// [`Store::sync`] in two halves, so that the slow one can run without
    /// the log's lock: this half, under the lock, syncs a file that is not a
    /// pooled segment at once, and gives a pooled segment's sync back for
    /// [`DeferredSync::finish`] (the pool syncs a file it closes meanwhile).
    pub(crate) fn sync_later(&self, path: &Path) -> Result<DeferredSync, LogError> {
        let ticket = match self {
            Store::Pooled(p) => Some(p.sync_ticket()),
            Store::Disk(_) | Store::Mem(_) => {
                self.sync(path)?;
                None
            }
        };
        Ok(DeferredSync {
            ticket,
            path: path.to_path_buf(),
        })
    }

    pub(crate) fn sync(&self, path: &Path) -> Result<(), LogError> {
        faults::check(Op::Sync, path).map_err(|e| LogError::io("syncing", path, e))?;
        match self {
            Store::Disk(f) => f.sync_data().map_err(|e| LogError::io("syncing", path, e)),
            Store::Pooled(p) => p.sync(path),
            Store::Mem(_) => Ok(()),
        }
    }
}

/// The second half of [`Store::sync_later`]: a pooled segment's sync (or
/// nothing left to sync), finished by [`DeferredSync::finish`] outside the
/// log's lock.
#[derive(Debug)]
pub(crate) struct DeferredSync {
    ticket: Option<SyncTicket>,
    path: PathBuf,
}

impl DeferredSync {
    /// Makes what was written to the file durable.
    pub(crate) fn finish(self) -> Result<(), LogError> {
        let Some(ticket) = self.ticket else {
            return Ok(());
        };
        faults::check(Op::Sync, &self.path).map_err(|e| LogError::io("syncing", &self.path, e))?;
        ticket.sync(&self.path)
    }
}

/// Makes a directory's entries (created, renamed, removed files) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), LogError> {
    faults::check(Op::SyncDir, dir).map_err(|e| LogError::io("syncing directory", dir, e))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| LogError::io("syncing directory", dir, e))
}

pub(crate) fn create_dir_all(dir: &Path) -> Result<(), LogError> {
    faults::check(Op::Create, dir).map_err(|e| LogError::io("creating directory", dir, e))?;
    std::fs::create_dir_all(dir).map_err(|e| LogError::io("creating directory", dir, e))
}

/// Entries of `dir` as (file name, path), sorted by name.
pub(crate) fn list_dir(dir: &Path) -> Result<Vec<(String, PathBuf)>, LogError> {
    let mut out = Vec::new();
    let rd = std::fs::read_dir(dir).map_err(|e| LogError::io("listing", dir, e))?;
    for entry in rd {
        let entry = entry.map_err(|e| LogError::io("listing", dir, e))?;
        if let Some(name) = entry.file_name().to_str() {
            out.push((name.to_owned(), entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

pub(crate) fn remove_file(path: &Path) -> Result<(), LogError> {
    faults::check(Op::Remove, path).map_err(|e| LogError::io("removing", path, e))?;
    std::fs::remove_file(path).map_err(|e| LogError::io("removing", path, e))
}

/// Renames `from` over `to` (atomic on POSIX file systems).
pub(crate) fn rename(from: &Path, to: &Path) -> Result<(), LogError> {
    faults::check(Op::Rename, from).map_err(|e| LogError::io("renaming", from, e))?;
    std::fs::rename(from, to).map_err(|e| LogError::io("renaming", from, e))
}

/// An operation that changes durable state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Create,
    Write,
    Sync,
    Truncate,
    Rename,
    Remove,
    SyncDir,
}

/// The fault-injection seam: in tests, a per-thread plan of operations to
/// fail; otherwise nothing.
pub(crate) mod faults {
    #[cfg(not(test))]
    #[inline(always)]
    pub(crate) fn check(_op: super::Op, _path: &std::path::Path) -> std::io::Result<()> {
        Ok(())
    }

    #[cfg(test)]
    pub(crate) use plan::{check, fail_next, run_at_next};

    #[cfg(test)]
    mod plan {
        use std::cell::RefCell;
        use std::path::Path;

        use super::super::Op;

        /// Something a test runs in place of an operation's check.
        type Hook = Box<dyn FnOnce()>;

        thread_local! {
            static PLAN: RefCell<Vec<(Op, String)>> = const { RefCell::new(Vec::new()) };
            static HOOKS: RefCell<Vec<(Op, String, Hook)>> = const { RefCell::new(Vec::new()) };
        }

        /// Runs `hook` (once, on this thread) when the next `op` on a path
        /// whose file name contains `name` is about to happen: a test sees
        /// what other threads can do at that moment.
        pub(crate) fn run_at_next(op: Op, name: &str, hook: impl FnOnce() + 'static) {
            HOOKS.with(|h| h.borrow_mut().push((op, name.to_owned(), Box::new(hook))));
        }

        /// Makes the next `op` on a path whose file name contains `name`
        /// fail (once) on this thread.
        pub(crate) fn fail_next(op: Op, name: &str) {
            PLAN.with(|p| p.borrow_mut().push((op, name.to_owned())));
        }

        pub(crate) fn check(op: Op, path: &Path) -> std::io::Result<()> {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let hook = HOOKS.with(|h| {
                let mut h = h.borrow_mut();
                h.iter()
                    .position(|(o, n, _)| *o == op && name.contains(n.as_str()))
                    .map(|i| h.remove(i).2)
            });
            if let Some(hook) = hook {
                hook();
            }
            PLAN.with(|p| {
                let mut p = p.borrow_mut();
                match p
                    .iter()
                    .position(|(o, n)| *o == op && name.contains(n.as_str()))
                {
                    Some(i) => {
                        p.remove(i);
                        Err(std::io::Error::other(format!("injected {op:?} failure")))
                    }
                    None => Ok(()),
                }
            })
        }
    }
}
