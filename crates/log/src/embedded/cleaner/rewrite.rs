//! Writing the compacted copy of one closed segment, streaming: records are
//! read frame by frame and the kept ones go into new batches as they come,
//! so neither the segment nor its records are ever held whole.
//!
//! Owns: [`has_dropped`] (whether a rewrite would drop anything, stopping at
//! the first record it would) and [`rewrite`] (the copy, in
//! `<base>.seg.cleaned` beside the segment, synced, or a buffer in memory
//! mode). Which records stay is the caller's `keep`. A kept record further
//! from its batch's base than a delta carries (`u32::MAX`) starts a new
//! batch; offsets that do not increase record by record are corruption.

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
    malformed_at(seg, pos, m.0.to_owned())
}

fn malformed_at(seg: &Closed, pos: u64, reason: String) -> LogError {
    LogError::Corrupt {
        file: seg.path.clone(),
        position: pos,
        reason,
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
    // The offset of the record before, kept or not: offsets must increase,
    // or deltas from a batch's base would underflow.
    let mut last = None;
    while let Some((pos, body)) = frames.next_frame()? {
        let mut failed = None;
        format::decode_batch_borrowed(body, |r| {
            if failed.is_some() {
                return;
            }
            if let Some(before) = last.filter(|&b| r.offset <= b) {
                failed = Some(malformed_at(
                    seg,
                    pos,
                    format!("record offset {} does not follow offset {before}", r.offset),
                ));
                return;
            }
            last = Some(r.offset);
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
    /// Adds `r`, whose offset is above every offset pushed before, to the
    /// batch being built, or to a new one when that one is full or `r` lies
    /// further from its base than a delta carries (`u32::MAX`).
    fn push(&mut self, r: &RecordIn<'_>) -> Result<(), LogError> {
        let joins = (self.batch.count() > 0
            && self.batch.len() < BATCH_BYTES
            && self.batch.count() < BATCH_RECORDS)
            .then(|| u32::try_from(r.offset - self.base).ok())
            .flatten();
        let delta = match joins {
            Some(delta) => delta,
            None => {
                self.flush()?;
                self.base = r.offset;
                0
            }
        };
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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::types::Record;

    /// A closed segment of one-record batches at `offsets` (synthetic: the
    /// gaps between them are never written).
    fn segment(offsets: &[u64]) -> (Reader, Closed) {
        let mut data = Vec::new();
        for &o in offsets {
            let mut b = BatchBuilder::new(64);
            let r = Record::new(Some(&o.to_le_bytes()), Some(b"v"), Timestamp(1));
            b.push((&r).into());
            data.extend_from_slice(b.finish(o, 0));
        }
        let seg = Closed {
            id: 0,
            base: offsets[0],
            data_end: offsets[offsets.len() - 1] + 1,
            size: data.len() as u64,
            path: Path::new("seg").to_path_buf(),
            dirty_from: 0,
        };
        (Reader::Mem(Arc::new(data)), seg)
    }

    /// The offsets of the copy, batch by batch, checked against its index.
    fn batches_of(w: &Rewritten) -> Vec<Vec<u64>> {
        let reader = w.store.reader(Path::new("copy")).expect("reader");
        let mut frames = Frames::new(&reader, Path::new("copy"), 0, w.size);
        let mut out = Vec::new();
        let mut index = Vec::new();
        while let Some((pos, body)) = frames.next_frame().expect("frame") {
            let mut offsets = Vec::new();
            let hdr = format::decode_batch(body, |o, _| offsets.push(o)).expect("batch");
            index.push((hdr.base, pos));
            out.push(offsets);
        }
        assert_eq!(index, w.index);
        out
    }

    const GAP_MAX: u64 = u32::MAX as u64;

    /// Found by fuzzing: two kept records exactly `u32::MAX` offsets apart
    /// went into one batch at delta `u32::MAX`, and the builder's next
    /// delta overflowed (a panic in debug builds, a wrap in release). A
    /// delta of `u32::MAX` is what the format carries; one more is not,
    /// and starts a new batch.
    #[test]
    fn kept_records_up_to_and_past_the_widest_delta_apart_keep_their_offsets() {
        for top in [0, u64::MAX - 3 * GAP_MAX - 8] {
            let o1 = top + GAP_MAX; // delta u32::MAX: the same batch
            let o2 = o1 + 1; // delta 2^32 from the base: a new batch
            let o3 = o2 + GAP_MAX + 1; // a gap of 2^32
            let o4 = o3 + GAP_MAX + 2; // a gap of 2^32 + 1
            let offsets = [top, o1, o2, o3, o4, o4 + 1];
            let (reader, seg) = segment(&offsets);
            let w = rewrite(&reader, &seg, None, &|_: &RecordIn<'_>| true).expect("rewrite");
            assert_eq!(w.dropped, 0);
            assert_eq!(
                batches_of(&w),
                vec![vec![top, o1], vec![o2], vec![o3], vec![o4, o4 + 1]],
                "from offset {top}"
            );
        }
    }

    /// Offsets of a segment that do not increase (a writer bug behind a
    /// valid checksum: recovery checks batch against batch, not record
    /// against record) are corruption named by file and position: going
    /// back underflowed the delta (a panic in debug builds), and a repeated
    /// offset was copied twice into one batch.
    #[test]
    fn offsets_that_do_not_increase_are_corruption_not_an_underflow() {
        for offsets in [[10, 5], [10, 10]] {
            let (reader, seg) = segment(&offsets);
            let second = segment(&offsets[..1]).1.size;
            match rewrite(&reader, &seg, None, &|_: &RecordIn<'_>| true) {
                Err(LogError::Corrupt {
                    file,
                    position,
                    reason,
                }) => {
                    assert_eq!((file.as_path(), position), (Path::new("seg"), second));
                    assert!(
                        reason.contains(&format!("offset {}", offsets[1])),
                        "{reason}"
                    );
                }
                other => panic!("{offsets:?}: {other:?}"),
            }
        }
    }
}
