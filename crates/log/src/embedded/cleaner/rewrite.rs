//! Writing the compacted copy of one closed segment, streaming: records are
//! read frame by frame and the kept ones go into new batches as they come,
//! so neither the segment nor its records are ever held whole.
//!
//! Owns: [`has_dropped`] (whether a rewrite would drop anything, stopping at
//! the first record it would) and [`rewrite`] (the copy, in
//! `<base>.seg.cleaned` beside the segment, synced, or a buffer in memory
//! mode). Which records stay is the caller's `keep`.

use std::path::{Path, PathBuf};

use super::super::format::{self, BatchBuilder, RecordIn};
use super::super::partition::CLEANED_SUFFIX;
use super::super::storage::{self, Reader, Store};
use super::Closed;
use super::frames::Frames;
use crate::error::LogError;
use crate::types::{RecordRef, Timestamp};

/// A batch of the copy is cut past this many bytes...
const BATCH_BYTES: usize = 64 << 10;
/// ...or records.
const BATCH_RECORDS: u32 = 4096;

/// The compacted copy of a segment, not yet in place.
#[derive(Debug)]
pub(crate) struct Rewritten {
    pub(crate) store: Store,
    /// The temporary file holding it (`None` in memory).
    pub(crate) tmp: Option<PathBuf>,
    /// (first offset, byte position) of every batch.
    pub(crate) index: Vec<(u64, u64)>,
    pub(crate) size: u64,
    pub(crate) max_ts: i64,
    /// Records left out.
    pub(crate) dropped: u64,
    /// Bytes read from the segment.
    pub(crate) read: u64,
}

impl Rewritten {
    /// Throws the copy away.
    pub(crate) fn discard(self) {
        if let Some(tmp) = &self.tmp {
            drop(self.store);
            if let Err(e) = storage::remove_file(tmp) {
                tracing::warn!(file = %tmp.display(), error = %e, "could not remove a discarded compaction output; the next open removes it");
            }
        }
    }
}

fn malformed(seg: &Closed, pos: u64, m: &format::Malformed) -> LogError {
    LogError::Corrupt {
        file: seg.path.clone(),
        position: pos,
        reason: m.0.to_owned(),
    }
}

/// Whether `keep` refuses some record of the segment, and the bytes read
/// to find out (the scan stops at the first such record).
pub(crate) fn has_dropped(
    reader: &Reader,
    seg: &Closed,
    keep: &impl Fn(&RecordIn<'_>) -> bool,
) -> Result<(bool, u64), LogError> {
    let mut frames = Frames::new(reader, &seg.path, 0, seg.size);
    let mut dropped = false;
    while let Some((pos, body)) = frames.next_frame()? {
        format::decode_batch_borrowed(body, |r| dropped |= !keep(&r))
            .map_err(|m| malformed(seg, pos, &m))?;
        if dropped {
            break;
        }
    }
    Ok((dropped, frames.bytes_read()))
}

/// Writes the records of `seg` that `keep` keeps, at their offsets, to a
/// temporary file in `dir` (synced before this returns), or to a buffer
/// when `dir` is `None`. On an error the temporary file is removed.
pub(crate) fn rewrite(
    reader: &Reader,
    seg: &Closed,
    dir: Option<&Path>,
    keep: &impl Fn(&RecordIn<'_>) -> bool,
) -> Result<Rewritten, LogError> {
    let (tmp, store) = match dir {
        Some(d) => {
            let tmp = d.join(format!("{:020}{CLEANED_SUFFIX}", seg.base));
            (Some(tmp.clone()), Store::create_disk(&tmp)?)
        }
        None => (None, Store::mem(Vec::new())),
    };
    let path = tmp.clone().unwrap_or_else(|| seg.path.clone());
    let mut out = Out {
        store,
        path: &path,
        batch: BatchBuilder::new(BATCH_BYTES),
        base: 0,
        index: Vec::new(),
        size: 0,
        max_ts: i64::MIN,
    };
    let written = copy_kept(reader, seg, keep, &mut out).and_then(|(dropped, read)| {
        out.flush()?;
        out.store.sync(&path)?;
        Ok((dropped, read))
    });
    let result = written.map(|(dropped, read)| Rewritten {
        store: out.store,
        tmp: tmp.clone(),
        index: out.index,
        size: out.size,
        max_ts: out.max_ts,
        dropped,
        read,
    });
    if result.is_err()
        && let Some(t) = &tmp
    {
        let _ = std::fs::remove_file(t);
    }
    result
}

fn copy_kept(
    reader: &Reader,
    seg: &Closed,
    keep: &impl Fn(&RecordIn<'_>) -> bool,
    out: &mut Out<'_>,
) -> Result<(u64, u64), LogError> {
    // A leftover of an earlier attempt is overwritten from byte 0.
    out.store.truncate(0, out.path)?;
    let mut frames = Frames::new(reader, &seg.path, 0, seg.size);
    let mut dropped = 0u64;
    while let Some((pos, body)) = frames.next_frame()? {
        let mut failed = None;
        format::decode_batch_borrowed(body, |r| {
            if failed.is_some() {
                return;
            }
            if !keep(&r) {
                dropped += 1;
            } else if let Err(e) = out.push(&r) {
                failed = Some(e);
            }
        })
        .map_err(|m| malformed(seg, pos, &m))?;
        if let Some(e) = failed {
            return Err(e);
        }
    }
    Ok((dropped, frames.bytes_read()))
}

/// The copy being written.
struct Out<'p> {
    store: Store,
    path: &'p Path,
    batch: BatchBuilder,
    /// First offset of the batch being built.
    base: u64,
    index: Vec<(u64, u64)>,
    size: u64,
    max_ts: i64,
}

impl Out<'_> {
    fn push(&mut self, r: &RecordIn<'_>) -> Result<(), LogError> {
        let full = self.batch.len() >= BATCH_BYTES
            || self.batch.count() >= BATCH_RECORDS
            || r.offset - self.base > u64::from(u32::MAX);
        if self.batch.count() > 0 && full {
            self.flush()?;
        }
        if self.batch.count() == 0 {
            self.base = r.offset;
        }
        let delta = u32::try_from(r.offset - self.base).unwrap_or(u32::MAX);
        self.batch.push_with_delta(
            delta,
            RecordRef {
                key: r.key,
                value: r.value,
                headers: &r.headers,
                timestamp: Timestamp(r.timestamp),
            },
        );
        Ok(())
    }

    fn flush(&mut self) -> Result<(), LogError> {
        if self.batch.count() == 0 {
            return Ok(());
        }
        let mut batch = std::mem::replace(&mut self.batch, BatchBuilder::new(BATCH_BYTES));
        self.max_ts = self.max_ts.max(batch.max_ts());
        let frame = batch.finish(self.base, 0);
        self.store.write_at(self.size, frame, self.path)?;
        self.index.push((self.base, self.size));
        self.size += frame.len() as u64;
        Ok(())
    }
}
