//! A bounded pool of open segment files, so that a log of any number of
//! segments runs within the process's limit on open files.
//!
//! Owns: [`FilePool`] and the [`PooledFile`] handles segments hold. A
//! handle opens its file when it is used and the pool closes the least
//! recently used file when more than its bound would be open. A file
//! written since its last sync is synced before the pool closes it, so a
//! write never depends on a descriptor that is gone; a sync of a file that
//! is not open has nothing to do. Dropping a handle closes its file (a
//! segment that is deleted or replaced lets its descriptor go at once), and
//! so does [`PooledFile::release`] (a segment that rolls gives its file
//! back: only the active segments and those read lately stay open).
//! Every call runs under the pool's own lock, which segment I/O already
//! does under the log's.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::LogError;

/// The default of [`EmbeddedConfig::max_open_segments`](super::EmbeddedConfig):
/// room for the active segments of a few dozen partitions and the segments
/// their readers are in, far below any process's limit on open files.
pub(crate) const DEFAULT_MAX_OPEN: usize = 64;

/// Open segment files, at most `bound` at a time.
#[derive(Debug)]
pub(crate) struct FilePool {
    bound: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    open: HashMap<u64, Open>,
    /// Ticks at each use: the smallest `used` is the least recent.
    clock: u64,
    next_id: u64,
}

#[derive(Debug)]
struct Open {
    file: File,
    path: PathBuf,
    used: u64,
    /// Written since its last sync.
    dirty: bool,
}

/// A segment file of a [`FilePool`], open only while the pool keeps it so.
#[derive(Debug)]
pub(crate) struct PooledFile {
    id: u64,
    pool: Arc<FilePool>,
}

/// What a use of a file does to its sync state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Reads only.
    Read,
    /// Writes: the file must be synced before it is closed.
    Write,
    /// Writes and syncs everything written so far.
    WriteAndSync,
}

impl FilePool {
    /// A pool keeping at most `bound` files open (at least one).
    pub(crate) fn new(bound: usize) -> Arc<Self> {
        Arc::new(FilePool {
            bound: bound.max(1),
            inner: Mutex::new(Inner::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A handle of an existing file, opened (at the path each use names)
    /// when first used.
    pub(crate) fn existing(self: &Arc<Self>) -> PooledFile {
        let mut inner = self.lock();
        inner.next_id += 1;
        PooledFile {
            id: inner.next_id,
            pool: Arc::clone(self),
        }
    }

    /// Creates (or opens) the file at `path` and keeps it open.
    pub(crate) fn create(self: &Arc<Self>, path: &Path) -> Result<PooledFile, LogError> {
        let handle = self.existing();
        let mut inner = self.lock();
        make_room(&mut inner, self.bound)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| LogError::io("opening", path, e))?;
        inner.clock += 1;
        let used = inner.clock;
        inner.open.insert(
            handle.id,
            Open {
                file,
                path: path.to_path_buf(),
                used,
                dirty: false,
            },
        );
        drop(inner);
        Ok(handle)
    }

    /// How many files are open now.
    #[cfg(test)]
    pub(crate) fn open_count(&self) -> usize {
        self.lock().open.len()
    }
}

/// Closes least recently used files until one more fits, syncing each
/// that was written since its last sync first.
fn make_room(inner: &mut Inner, bound: usize) -> Result<(), LogError> {
    while inner.open.len() >= bound {
        let Some(id) = inner
            .open
            .iter()
            .min_by_key(|(_, o)| o.used)
            .map(|(id, _)| *id)
        else {
            return Ok(());
        };
        if let Some(o) = inner.open.get_mut(&id)
            && o.dirty
        {
            o.file
                .sync_data()
                .map_err(|e| LogError::io("syncing", &o.path, e))?;
            o.dirty = false;
        }
        inner.open.remove(&id);
    }
    Ok(())
}

impl PooledFile {
    /// Runs `f` on the file at `path`, opening it first if the pool closed
    /// it; `effect` says what `f` does to its sync state.
    pub(crate) fn with<R>(
        &self,
        path: &Path,
        op: &'static str,
        effect: Effect,
        f: impl FnOnce(&File) -> std::io::Result<R>,
    ) -> Result<R, LogError> {
        let mut inner = self.pool.lock();
        if !inner.open.contains_key(&self.id) {
            make_room(&mut inner, self.pool.bound)?;
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .map_err(|e| LogError::io("opening", path, e))?;
            inner.open.insert(
                self.id,
                Open {
                    file,
                    path: path.to_path_buf(),
                    used: 0,
                    dirty: false,
                },
            );
        }
        inner.clock += 1;
        let clock = inner.clock;
        let open = inner.open.get_mut(&self.id).expect("opened above");
        open.used = clock;
        let result = f(&open.file).map_err(|e| LogError::io(op, path, e));
        match effect {
            Effect::Read => {}
            // A failed write may have written part: it still needs a sync.
            Effect::Write => open.dirty = true,
            Effect::WriteAndSync => open.dirty = result.is_err(),
        }
        result
    }

    /// Makes what was written to the file durable. A file the pool closed
    /// was synced when it was closed, and has nothing to sync.
    pub(crate) fn sync(&self, path: &Path) -> Result<(), LogError> {
        let mut inner = self.pool.lock();
        let Some(open) = inner.open.get_mut(&self.id) else {
            return Ok(());
        };
        open.file
            .sync_data()
            .map_err(|e| LogError::io("syncing", path, e))?;
        open.dirty = false;
        Ok(())
    }

    /// A ticket to sync the file later, outside the log's lock, holding no
    /// descriptor until it is used (a commit can touch thousands of
    /// segments).
    pub(crate) fn sync_ticket(&self) -> SyncTicket {
        SyncTicket {
            id: self.id,
            pool: Arc::clone(&self.pool),
        }
    }

    /// Closes the file if it is open (synced first if written), until its
    /// next use: a segment that will not be written again gives its
    /// descriptor back instead of holding it until the pool needs room.
    pub(crate) fn release(&self, path: &Path) -> Result<(), LogError> {
        let mut inner = self.pool.lock();
        let Some(open) = inner.open.get_mut(&self.id) else {
            return Ok(());
        };
        if open.dirty {
            open.file
                .sync_data()
                .map_err(|e| LogError::io("syncing", path, e))?;
        }
        let closed = inner.open.remove(&self.id);
        drop(inner);
        drop(closed);
        Ok(())
    }

    /// A descriptor of its own on the file, for a reader that outlives
    /// the pool's lock (compaction): a second descriptor of the open file
    /// if the pool holds it, else the file opened for reading outside the
    /// pool, so a pass over closed segments does not fill the pool and
    /// closes what it opened when done.
    pub(crate) fn reader(&self, path: &Path) -> Result<File, LogError> {
        let inner = self.pool.lock();
        match inner.open.get(&self.id) {
            Some(o) => o.file.try_clone(),
            None => File::open(path),
        }
        .map_err(|e| LogError::io("opening", path, e))
    }

    /// The file's size, without opening it.
    pub(crate) fn len(&self, path: &Path) -> Result<u64, LogError> {
        let inner = self.pool.lock();
        let meta = match inner.open.get(&self.id) {
            Some(o) => o.file.metadata(),
            None => std::fs::metadata(path),
        };
        meta.map(|m| m.len())
            .map_err(|e| LogError::io("reading the size of", path, e))
    }
}

/// A sync of one pooled file, taken under the log's lock and used outside
/// it ([`PooledFile::sync_ticket`]).
#[derive(Debug)]
pub(crate) struct SyncTicket {
    id: u64,
    pool: Arc<FilePool>,
}

impl SyncTicket {
    /// Makes what was written to the file durable, holding the pool's lock
    /// only to take a second descriptor: an `fdatasync` through any
    /// descriptor of a file makes every write to it durable. A file the
    /// pool closed meanwhile was synced when it was closed.
    pub(crate) fn sync(self, path: &Path) -> Result<(), LogError> {
        let file = {
            let mut inner = self.pool.lock();
            match inner.open.get_mut(&self.id) {
                Some(open) if open.dirty => {
                    let file = open
                        .file
                        .try_clone()
                        .map_err(|e| LogError::io("opening", path, e))?;
                    open.dirty = false;
                    file
                }
                _ => return Ok(()),
            }
        };
        let synced = file
            .sync_data()
            .map_err(|e| LogError::io("syncing", path, e));
        if synced.is_err()
            && let Some(open) = self.pool.lock().open.get_mut(&self.id)
        {
            open.dirty = true;
        }
        synced
    }
}

impl Drop for PooledFile {
    fn drop(&mut self) {
        let closed = self.pool.lock().open.remove(&self.id);
        // Closed outside the pool's lock: freeing a large removed file's
        // blocks takes a while.
        drop(closed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_the_bound_is_open_and_a_closed_file_reopens_with_its_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pool = FilePool::new(3);
        let mut handles = Vec::new();
        for i in 0..10u8 {
            let path = dir.path().join(format!("{i}.seg"));
            let h = pool.create(&path).expect("create");
            h.with(&path, "writing", Effect::Write, |f| {
                std::os::unix::fs::FileExt::write_all_at(f, &[i; 4], 0)
            })
            .expect("write");
            assert!(pool.open_count() <= 3);
            handles.push((path, h));
        }
        for (i, (path, h)) in handles.iter().enumerate() {
            let mut buf = [0u8; 4];
            h.with(path, "reading", Effect::Read, |f| {
                std::os::unix::fs::FileExt::read_exact_at(f, &mut buf, 0)
            })
            .expect("read");
            assert_eq!(buf, [i as u8; 4]);
            assert_eq!(h.len(path).expect("len"), 4);
            assert!(pool.open_count() <= 3);
        }
        handles.truncate(1);
        assert!(pool.open_count() <= 1, "a dropped handle closes its file");
    }

    #[test]
    fn a_reader_of_a_closed_file_does_not_enter_the_pool() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pool = FilePool::new(8);
        let path = dir.path().join("0.seg");
        let h = pool.create(&path).expect("create");
        h.with(&path, "writing", Effect::WriteAndSync, |f| {
            std::os::unix::fs::FileExt::write_all_at(f, b"abcd", 0)?;
            f.sync_data()
        })
        .expect("write");
        h.release(&path).expect("release");
        let reader = h.reader(&path).expect("reader");
        assert_eq!(pool.open_count(), 0, "the reader's descriptor is its own");
        let mut buf = [0u8; 4];
        std::os::unix::fs::FileExt::read_exact_at(&reader, &mut buf, 0).expect("read");
        assert_eq!(&buf, b"abcd");
        h.with(&path, "reading", Effect::Read, |_| Ok(()))
            .expect("open");
        assert_eq!(pool.open_count(), 1);
        drop(h.reader(&path).expect("a reader of an open file"));
        assert_eq!(pool.open_count(), 1);
    }

    #[test]
    fn a_released_file_is_closed_and_reopens_with_its_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pool = FilePool::new(8);
        let path = dir.path().join("0.seg");
        let h = pool.create(&path).expect("create");
        h.with(&path, "writing", Effect::Write, |f| {
            std::os::unix::fs::FileExt::write_all_at(f, b"abcd", 0)
        })
        .expect("write");
        assert_eq!(pool.open_count(), 1);
        h.release(&path).expect("release");
        assert_eq!(pool.open_count(), 0, "a released file is closed");
        h.release(&path)
            .expect("releasing a closed file does nothing");
        let mut buf = [0u8; 4];
        h.with(&path, "reading", Effect::Read, |f| {
            std::os::unix::fs::FileExt::read_exact_at(f, &mut buf, 0)
        })
        .expect("read");
        assert_eq!(&buf, b"abcd");
        assert_eq!(pool.open_count(), 1, "opened again when used");
    }
}
