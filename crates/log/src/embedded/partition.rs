//! One partition: an ordered list of segment files, each named by the first
//! offset it may hold, with an in-memory index of its batches.
//!
//! Owns: appending committed batches, reading by offset, the recovery scan,
//! truncation back to the committed end and retention. Compaction is the
//! cleaner's (`cleaner/`), which rewrites closed segments through the
//! fields here. Knows nothing of transactions: the caller decides what is
//! committed.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::file_pool::FilePool;
use super::format::{self, FrameAt};
use super::storage::{self, DeferredSync, Store};
use crate::error::LogError;
use crate::types::{BatchSpans, FetchedBatch, TopicPartition};

/// Suffix of segment files; the stem is the 20-digit base offset.
pub(crate) const SEGMENT_SUFFIX: &str = ".seg";
/// Suffix of a compacted segment being written (removed on open).
pub(crate) const CLEANED_SUFFIX: &str = ".seg.cleaned";

/// A number no other segment (nor cleaning) of this process has had.
pub(crate) fn unique_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[derive(Debug)]
pub(crate) struct Segment {
    /// Identity of this segment's content: new whenever a segment is
    /// created or rewritten, so the cleaner can tell, after working without
    /// the lock, that the segment it read is still the one in place.
    pub(crate) id: u64,
    /// Smallest offset the segment may hold (its name).
    pub(crate) base: u64,
    pub(crate) path: PathBuf,
    pub(crate) store: Store,
    /// (first offset, byte position) of every batch, ascending.
    pub(crate) index: Vec<(u64, u64)>,
    /// Bytes of valid frames.
    pub(crate) size: u64,
    /// One past the last record's offset, or `base` when empty.
    pub(crate) data_end: u64,
    pub(crate) max_ts: i64,
}

/// What the recovery scan of a partition found. The scan reads only; the
/// caller repairs (see [`PartitionLog::repair`]) once the whole log is
/// known to open.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// One past the last intact committed record.
    pub(crate) data_end: u64,
    /// When the records stop short of the committed end: the file and byte
    /// where they stop, and why.
    pub(crate) short_at: Option<(PathBuf, u64, String)>,
    /// Segment files wholly below the log start (retention recorded the new
    /// start, then the process stopped before deleting them).
    retired: Vec<PathBuf>,
    /// Unfinished compaction outputs.
    cleaned: Vec<PathBuf>,
}

/// A partition's compaction state, kept here and read and moved only by the
/// cleaner (`super::cleaner`).
#[derive(Debug, Default)]
pub(crate) struct CleanMark {
    /// The clean point: where the last pass's map ended.
    pub(crate) clean_end: u64,
    /// The pass running on this partition.
    pub(crate) running: Option<u64>,
}

#[derive(Debug)]
pub(crate) struct PartitionLog {
    pub(crate) tp: TopicPartition,
    /// `None` in memory mode.
    pub(crate) dir: Option<PathBuf>,
    /// The log's open segment files (`None` in memory mode).
    pub(crate) pool: Option<Arc<FilePool>>,
    pub(crate) segments: Vec<Segment>,
    /// How far compaction got, and whether one is running.
    pub(crate) cleaner: CleanMark,
}

fn segment_name(base: u64) -> String {
    format!("{base:020}{SEGMENT_SUFFIX}")
}

impl PartitionLog {
    /// A new, empty partition (creates its directory and first segment;
    /// `dir` and `pool` are `None` in memory mode).
    pub(crate) fn create(
        tp: TopicPartition,
        dir: Option<PathBuf>,
        pool: Option<Arc<FilePool>>,
    ) -> Result<Self, LogError> {
        let mut p = PartitionLog {
            tp,
            dir,
            pool,
            segments: Vec::new(),
            cleaner: CleanMark::default(),
        };
        if let Some(d) = &p.dir {
            storage::create_dir_all(d)?;
        }
        p.roll(0)?;
        Ok(p)
    }

    /// Opens an existing partition directory and scans every segment,
    /// reading only. `start` is the log start retention recorded, `next_txn`
    /// the one transaction a crash can have interrupted.
    ///
    /// Every segment but the last must be whole, and each must begin where
    /// the previous one ends (the first at `start`): anything else is
    /// [`LogError::Corrupt`] naming the file and byte, or the partition and
    /// the missing offsets. In the last segment, the bytes after the
    /// committed records are an interrupted commit's and are not read; if
    /// the committed records stop short, [`Scan::short_at`] says where.
    pub(crate) fn open(
        tp: TopicPartition,
        dir: PathBuf,
        committed_end: u64,
        start: u64,
        next_txn: u64,
        pool: &Arc<FilePool>,
    ) -> Result<(Self, Scan), LogError> {
        let mut segments = Vec::new();
        let mut cleaned = Vec::new();
        let listing = if dir.is_dir() {
            storage::list_dir(&dir)?
        } else {
            Vec::new()
        };
        for (name, path) in listing {
            if name.ends_with(CLEANED_SUFFIX) {
                cleaned.push(path);
                continue;
            }
            let Some(stem) = name.strip_suffix(SEGMENT_SUFFIX) else {
                continue;
            };
            let Ok(base) = stem.parse::<u64>() else {
                continue;
            };
            let store = Store::existing_pooled(pool);
            segments.push(Segment {
                id: unique_id(),
                base,
                path,
                store,
                index: Vec::new(),
                size: 0,
                data_end: base,
                max_ts: i64::MIN,
            });
        }
        segments.sort_by_key(|s| s.base);
        let mut retired = Vec::new();
        while segments.len() > 1 && segments[1].base <= start {
            retired.push(segments.remove(0).path);
        }
        let mut p = PartitionLog {
            tp,
            dir: Some(dir),
            pool: Some(Arc::clone(pool)),
            segments,
            cleaner: CleanMark::default(),
        };
        let mut scan = p.scan(committed_end, start, next_txn)?;
        scan.retired = retired;
        scan.cleaned = cleaned;
        Ok((p, scan))
    }

    fn scan(&mut self, committed_end: u64, start: u64, next_txn: u64) -> Result<Scan, LogError> {
        let tp = &self.tp;
        let count = self.segments.len();
        let mut expected = start;
        let mut prev: Option<(PathBuf, u64)> = None;
        let mut short_at = None;
        for (i, seg) in self.segments.iter_mut().enumerate() {
            if seg.base != expected {
                return Err(segment_gap(tp, seg, expected, prev));
            }
            let last = i + 1 == count;
            if let Some(short) = scan_segment(seg, tp, last, committed_end, next_txn)? {
                short_at = Some(short);
            }
            expected = seg.data_end;
            prev = Some((seg.path.clone(), seg.size));
        }
        if expected < committed_end && short_at.is_none() {
            short_at = Some(match prev {
                Some((file, position)) => (file, position, "no more records in the file".into()),
                None => (
                    self.dir.clone().unwrap_or_default(),
                    0,
                    "the partition has no segment file".into(),
                ),
            });
        }
        Ok(Scan {
            data_end: expected,
            short_at,
            ..Scan::default()
        })
    }

    /// After a successful recovery: removes retired segments and unfinished
    /// compaction outputs, makes sure a segment exists, and truncates
    /// everything at or past `end`.
    pub(crate) fn repair(&mut self, scan: &Scan, end: u64) -> Result<(), LogError> {
        for path in scan.retired.iter().chain(&scan.cleaned) {
            storage::remove_file(path)?;
        }
        if let Some(d) = &self.dir {
            storage::create_dir_all(d)?;
        }
        if self.segments.is_empty() {
            self.roll(end)?;
        }
        self.truncate_to(end)
    }

    /// Drops everything at or after offset `end` (and torn bytes), keeping
    /// at least one segment.
    pub(crate) fn truncate_to(&mut self, end: u64) -> Result<(), LogError> {
        let mut i = self.segments.len();
        while i > 1 && self.segments[i - 1].base >= end {
            i -= 1;
            let seg = self.segments.pop().expect("segment exists");
            if seg.store.on_disk() {
                storage::remove_file(&seg.path)?;
            }
        }
        for seg in &mut self.segments {
            if let Some(k) = seg.index.iter().position(|(first, _)| *first >= end) {
                seg.size = seg.index[k].1;
                seg.index.truncate(k);
                seg.data_end = seg.base.max(end.min(seg.data_end));
                if seg.index.is_empty() {
                    seg.data_end = seg.base;
                }
            }
            if seg.store.len(&seg.path)? > seg.size {
                seg.store.truncate(seg.size, &seg.path)?;
            }
        }
        Ok(())
    }

    /// One past the last record.
    pub(crate) fn data_end(&self) -> u64 {
        self.segments.last().map_or(0, |s| s.data_end)
    }

    /// First readable offset.
    pub(crate) fn start(&self) -> u64 {
        self.segments
            .iter()
            .find_map(|s| s.index.first().map(|(o, _)| *o))
            .unwrap_or_else(|| self.data_end())
    }

    pub(crate) fn size_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.size).sum()
    }

    /// Starts a new active segment at `base`. The segment it closes gives
    /// its file back to the pool: it is read from here on, and a reader
    /// opens it again.
    pub(crate) fn roll(&mut self, base: u64) -> Result<(), LogError> {
        if let Some(closed) = self.segments.last() {
            closed.store.release(&closed.path)?;
        }
        let (path, store) = match (&self.dir, &self.pool) {
            (Some(d), Some(pool)) => {
                let path = d.join(segment_name(base));
                let store = Store::create_pooled(pool, &path)?;
                storage::sync_dir(d)?;
                (path, store)
            }
            (None, _) => (
                PathBuf::from(format!("memory:{}/{}", self.tp, segment_name(base))),
                Store::mem(Vec::new()),
            ),
            (Some(d), None) => {
                return Err(LogError::io(
                    "creating a segment in",
                    d,
                    std::io::Error::other("a partition on disk has no pool of open files"),
                ));
            }
        };
        self.segments.push(Segment {
            id: unique_id(),
            base,
            path,
            store,
            index: Vec::new(),
            size: 0,
            data_end: base,
            max_ts: i64::MIN,
        });
        Ok(())
    }

    /// Appends a finished batch frame (first offset `base`, `span` offsets)
    /// to the active segment, without syncing.
    pub(crate) fn append(
        &mut self,
        frame: &[u8],
        base: u64,
        span: u64,
        max_ts: i64,
    ) -> Result<(), LogError> {
        let seg = self.segments.last_mut().expect("a partition has a segment");
        seg.store.write_at(seg.size, frame, &seg.path)?;
        seg.index.push((base, seg.size));
        seg.size += frame.len() as u64;
        seg.data_end = base + span;
        seg.max_ts = seg.max_ts.max(max_ts);
        Ok(())
    }

    /// The sync of the active segment, to finish without the log's lock
    /// (a commit's step 2).
    pub(crate) fn sync_active_later(&self) -> Result<DeferredSync, LogError> {
        let seg = self.segments.last().expect("a partition has a segment");
        seg.store.sync_later(&seg.path)
    }

    /// Reads records in `[from, to)`, stopping after about `max_bytes`, as
    /// batches that each keep the bytes read from one segment (keys and
    /// values are not copied out). Returns the offset to continue from.
    pub(crate) fn read(
        &self,
        from: u64,
        to: u64,
        max_bytes: usize,
        out: &mut Vec<FetchedBatch>,
    ) -> Result<u64, LogError> {
        let mut cur = ReadCursor {
            next: from.max(self.start()),
            to,
            read: 0,
            max_bytes,
        };
        let first_seg = self
            .segments
            .partition_point(|s| s.base <= cur.next)
            .saturating_sub(1);
        for seg in &self.segments[first_seg..] {
            if cur.done() {
                break;
            }
            if seg.data_end <= cur.next {
                continue;
            }
            let Some(pos) = seg.position_of(cur.next) else {
                continue;
            };
            let (buf, spans) = seg.read_batches(pos, &mut cur)?;
            if !spans.is_empty() {
                out.push(FetchedBatch::from_spans(self.tp.clone(), buf, spans));
            }
            if cur.next < seg.data_end && cur.next < to {
                // Stopped mid-segment: the read window or the byte budget
                // ended there (the rest of the segment is the next read's).
                return Ok(cur.next);
            }
            cur.next = cur.next.max(seg.data_end.min(to));
        }
        Ok(cur.next.min(to).max(from))
    }

    /// Retention: the new log start if closed segments past the byte or
    /// time limit are to go (the first segment that stays begins there).
    pub(crate) fn retention_start(
        &self,
        bytes: Option<u64>,
        older_than_ms: Option<i64>,
    ) -> Option<u64> {
        let mut size = self.size_bytes();
        let mut drop = 0;
        while drop + 1 < self.segments.len() {
            let over_size = bytes.is_some_and(|b| size > b);
            let too_old = older_than_ms.is_some_and(|t| self.segments[drop].max_ts < t);
            if !(over_size || too_old) {
                break;
            }
            size -= self.segments[drop].size;
            drop += 1;
        }
        (drop > 0).then(|| self.segments[drop].base)
    }

    /// Before purging below `end` (everything committed): closes the active
    /// segment if it holds records, so that it can go too. The new active
    /// segment begins empty at `end`.
    pub(crate) fn roll_for_purge(&mut self, end: u64) -> Result<(), LogError> {
        match self.segments.last() {
            Some(active) if active.base < end && self.data_end() == end => self.roll(end),
            _ => Ok(()),
        }
    }

    /// Purging below `before`: the new log start if closed segments lie
    /// wholly below it (the first segment that stays begins there).
    pub(crate) fn purge_start(&self, before: u64) -> Option<u64> {
        let mut drop = 0;
        while drop + 1 < self.segments.len() && self.segments[drop + 1].base <= before {
            drop += 1;
        }
        (drop > 0).then(|| self.segments[drop].base)
    }

    /// Drops the segments below `start` (which the transaction log already
    /// records as the log start). Returns how many.
    pub(crate) fn drop_below(&mut self, start: u64) -> Result<u64, LogError> {
        let mut dropped = 0;
        while self.segments.len() > 1 && self.segments[1].base <= start {
            let seg = self.segments.remove(0);
            if seg.store.on_disk() {
                storage::remove_file(&seg.path)?;
            }
            dropped += 1;
        }
        if dropped > 0
            && let Some(d) = &self.dir
        {
            storage::sync_dir(d)?;
        }
        Ok(dropped)
    }

    pub(crate) fn active_size(&self) -> u64 {
        self.segments.last().map_or(0, |s| s.size)
    }
}

/// The error for a segment that does not begin where the previous one ended (`expected`):
/// records are missing, or two segments overlap. It points at the end of the previous
/// segment, or at the start of this one when it is the first.
fn segment_gap(
    tp: &TopicPartition,
    seg: &Segment,
    expected: u64,
    prev: Option<(PathBuf, u64)>,
) -> LogError {
    let (file, position) = prev.unwrap_or_else(|| (seg.path.clone(), 0));
    let reason = if seg.base > expected {
        format!(
            "partition {tp} has no records from offset {expected} to {}: a segment file is missing or was cut",
            seg.base
        )
    } else {
        format!(
            "partition {tp}: segment file at offset {} overlaps records up to offset {expected}",
            seg.base
        )
    };
    LogError::Corrupt {
        file,
        position,
        reason,
    }
}

/// Reads one segment's frames on opening, building its index, size, end and newest time.
/// A torn frame ends the last segment (and, when the records stop short of
/// `committed_end`, says where: the return value); in a closed segment it is corruption.
/// An interrupted commit's batch past `committed_end` ends the scan; it is not data.
fn scan_segment(
    seg: &mut Segment,
    tp: &TopicPartition,
    last: bool,
    committed_end: u64,
    next_txn: u64,
) -> Result<Option<(PathBuf, u64, String)>, LogError> {
    let data = seg.store.read_all(&seg.path)?;
    let mut short_at = None;
    let mut pos = 0usize;
    loop {
        let corrupt = |reason: String| LogError::Corrupt {
            file: seg.path.clone(),
            position: pos as u64,
            reason,
        };
        let frame = format::frame_at(&data, pos);
        let (body, next) = match frame {
            FrameAt::End => break,
            FrameAt::Valid { body, next } => (body, next),
            FrameAt::Truncated | FrameAt::BadChecksum { .. } if last => {
                if seg.data_end < committed_end {
                    short_at = Some((seg.path.clone(), pos as u64, frame.reason()));
                }
                break;
            }
            FrameAt::Truncated | FrameAt::BadChecksum { .. } => {
                return Err(corrupt(format!("{} in a closed segment", frame.reason())));
            }
        };
        let hdr = format::batch_header(body).map_err(|m| corrupt(m.0.into()))?;
        let last_offset = format::last_offset(body).map_err(|m| corrupt(m.0.into()))?;
        if hdr.base >= committed_end && seg.data_end >= committed_end && last {
            // An interrupted commit's batch: not data, truncated on repair.
            if hdr.txn != next_txn {
                return Err(corrupt(format!(
                    "a batch of transaction {} lies past the committed end {committed_end} of partition {tp}, where only transaction {next_txn} can have been interrupted",
                    hdr.txn
                )));
            }
            break;
        }
        let data_end = match last_offset {
            None => seg.data_end,
            Some(o) => o
                .checked_add(1)
                .ok_or_else(|| corrupt("record offset overflows".into()))?,
        };
        if hdr.base < seg.data_end || data_end > committed_end {
            return Err(corrupt(format!(
                "batch at offset {} of partition {tp} does not follow offset {} within the committed end {committed_end}",
                hdr.base, seg.data_end
            )));
        }
        seg.index.push((hdr.base, pos as u64));
        seg.data_end = data_end;
        seg.max_ts = seg.max_ts.max(hdr.max_ts);
        pos = next;
    }
    seg.size = pos as u64;
    Ok(short_at)
}

/// Where a read has got to, and what bounds it.
struct ReadCursor {
    /// The next offset to read.
    next: u64,
    /// The read window's end (exclusive).
    to: u64,
    /// Bytes read so far.
    read: usize,
    max_bytes: usize,
}

impl ReadCursor {
    /// The window is read, or the byte budget spent.
    fn done(&self) -> bool {
        self.next >= self.to || self.read >= self.max_bytes
    }
}

impl Segment {
    /// The byte position of the batch holding `offset` (or the first batch after it), if the
    /// segment has any batch.
    fn position_of(&self, offset: u64) -> Option<u64> {
        let k = self
            .index
            .partition_point(|(o, _)| *o <= offset)
            .saturating_sub(1);
        self.index.get(k).map(|&(_, pos)| pos)
    }

    /// Reads this segment's batches from byte `pos` on, at least 64 KiB or the cursor's
    /// remaining budget, until the cursor is done or the bytes read end; a batch larger than
    /// that is read whole. Returns the bytes read and the spans of the records in the window.
    fn read_batches(
        &self,
        pos: u64,
        cur: &mut ReadCursor,
    ) -> Result<(Vec<u8>, BatchSpans), LogError> {
        let want = (self.size - pos).min((cur.max_bytes - cur.read).max(64 * 1024) as u64) as usize;
        let mut buf = Vec::new();
        self.store.read_at(pos, want, &mut buf, &self.path)?;
        let mut spans = BatchSpans::default();
        let mut p = 0usize;
        let mut progressed = false;
        loop {
            match format::frame_at(&buf, p) {
                FrameAt::Valid { body, next: np } => {
                    let last = format::fetched(
                        body,
                        buf.as_ptr() as usize,
                        buf.len() - p,
                        cur.next,
                        cur.to,
                        &mut spans,
                    )
                    .map_err(|m| LogError::Corrupt {
                        file: self.path.clone(),
                        position: pos + p as u64,
                        reason: m.0.to_owned(),
                    })?;
                    if let Some(last) = last {
                        cur.next = last + 1;
                    }
                    cur.read += np - p;
                    p = np;
                    progressed = true;
                    if cur.done() {
                        break;
                    }
                }
                FrameAt::End | FrameAt::Truncated if progressed => break,
                FrameAt::End | FrameAt::Truncated => {
                    // A batch larger than what was read: read it whole.
                    let len = frame_len(&buf).unwrap_or(0);
                    if len == 0 || buf.len() >= len {
                        return Err(LogError::Corrupt {
                            file: self.path.clone(),
                            position: pos + p as u64,
                            reason: "unreadable batch in the committed range".into(),
                        });
                    }
                    self.store.read_at(pos, len, &mut buf, &self.path)?;
                }
                bad @ FrameAt::BadChecksum { .. } => {
                    return Err(LogError::Corrupt {
                        file: self.path.clone(),
                        position: pos + p as u64,
                        reason: bad.reason(),
                    });
                }
            }
        }
        Ok((buf, spans))
    }
}

fn frame_len(buf: &[u8]) -> Option<usize> {
    (buf.len() >= format::FRAME_HEADER).then(|| {
        u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize + format::FRAME_HEADER
    })
}
