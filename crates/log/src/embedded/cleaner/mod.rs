//! Compaction of compacted topics, as Kafka's log cleaner does it, beside
//! commits and fetches rather than in their way.
//!
//! Owns: each partition's clean point (kept in its `CleanMark`), the dirty ratio that
//! decides whether a partition is compacted, and one compaction pass with
//! its locking. The key → offset map is `map.rs`, streaming a segment's
//! frames `frames.rs`, writing a compacted segment `rewrite.rs`.
//!
//! # When
//!
//! Only closed segments are compacted, and the map is built from them only,
//! as Kafka does: a record superseded only by one in the active segment
//! stays until that segment is closed. A partition's *clean point* is where
//! the last pass's map ended (the log start after an open: it is not
//! persisted, so the first pass after a restart takes every closed segment
//! once). Its *dirty ratio* is the bytes of closed segments past the clean
//! point over the bytes of all closed segments, known from the segment
//! metadata held in memory. A pass runs when something is dirty and the
//! ratio reaches [`EmbeddedConfig::min_cleanable_dirty_ratio`]: deciding
//! reads nothing, so a partition that did not change costs nothing.
//!
//! # One pass
//!
//! 1. Under the log's lock: decide, mark the partition as being compacted
//!    (one pass per partition at a time; another `maintain` skips it), and
//!    list its closed segments.
//! 2. Without the lock: read the dirty part, segment after segment, into
//!    the map of key → latest offset, whose memory
//!    [`EmbeddedConfig::compaction_map_bytes`] bounds. If the map fills, the
//!    pass ends its map at that record: the *limit*.
//! 3. Without the lock: each closed segment that begins below the limit is
//!    read; if it holds a record whose key the map holds at a later offset
//!    (other than its last record, which stays so that every closed segment
//!    still ends where the next begins), it is copied without those records
//!    into `<base>.seg.cleaned` beside it, and synced.
//! 4. Under the lock, briefly: if the segment is still in place and
//!    unchanged (its id; retention, a purge or a failed commit's repair may
//!    have dropped it meanwhile, and then the copy is thrown away), the copy
//!    is renamed over it and the segment's file handle, index and size are
//!    replaced. The directory is synced after the lock is released.
//! 5. The clean point moves to the limit and the mark is cleared.
//!
//! The lock is taken only for the decision, to take a read handle of each
//! segment, and for each swap; commits and fetches go on meanwhile.
//!
//! # Why it is right
//!
//! A record is dropped only when the map holds a later offset for its key,
//! that is, a later record of the key lies in the partition below the
//! limit; that one maps to itself and stays. So the latest record of every
//! key stays, whatever the clean point (a wrong one only makes a pass do
//! more or less). Fetches read segments under the lock and copy what they
//! read, so a fetch sees a segment wholly before or wholly after its swap,
//! and a position inside a rewritten segment reads on from the next record
//! kept. A crash before the rename leaves the old segment and a
//! `.seg.cleaned` file that the next open removes; after it, the compacted
//! segment, with the same offsets for what it keeps and the same last
//! record, so recovery's checks hold either way.

use std::path::PathBuf;
use std::sync::Arc;

use super::file_pool::FilePool;
use super::format::RecordIn;
use super::partition::{self, Segment};
use super::storage::{self, Reader, Store};
use super::{EmbeddedConfig, MaintenanceReport, Shared, State};
use crate::error::LogError;
use crate::types::TopicPartition;

mod frames;
mod map;
mod rewrite;
#[cfg(test)]
mod tests;

use self::frames::Frames;
use self::map::OffsetMap;
use self::rewrite::Rewritten;

/// Default of [`EmbeddedConfig::min_cleanable_dirty_ratio`] (Kafka's).
pub(crate) const DEFAULT_MIN_DIRTY_RATIO: f64 = 0.5;

/// The fewest bytes a record with a key takes in a batch: a bound on how
/// many keys a number of bytes can hold, to size the map no larger than a
/// small partition needs.
const MIN_KEYED_RECORD: u64 = 25;

/// Whether compaction keeps `r` of a segment ending at `data_end`: the
/// segment's last record (so that its end stays where it was), a record
/// without a key, or the latest record of its key as far as `map` knows.
fn keeps(r: &RecordIn<'_>, data_end: u64, map: &OffsetMap) -> bool {
    r.offset.checked_add(1) == Some(data_end)
        || r.key
            .is_none_or(|k| map.get(k).is_none_or(|latest| latest <= r.offset))
}

/// A closed segment as a pass found it.
#[derive(Debug, Clone)]
pub(crate) struct Closed {
    pub(crate) id: u64,
    pub(crate) base: u64,
    pub(crate) data_end: u64,
    pub(crate) size: u64,
    pub(crate) path: PathBuf,
    /// Byte position of the batch holding the clean point (0 when the
    /// segment is wholly dirty; `size` when wholly clean).
    pub(crate) dirty_from: u64,
}

#[derive(Debug)]
struct Plan {
    token: u64,
    clean: u64,
    dir: Option<PathBuf>,
    /// The log's open segment files, which a copy put in place joins.
    pool: Option<Arc<FilePool>>,
    closed: Vec<Closed>,
    dirty_bytes: u64,
}

/// A step of a pass, for tests to act at (called without the lock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum Step {
    /// The map is built and ends at `limit`.
    MapBuilt { limit: u64 },
    /// The compacted copy of the segment at `base` is written and synced,
    /// not yet renamed.
    Written { base: u64 },
    /// The copy of the segment at `base` is in place.
    Swapped { base: u64 },
}

#[cfg(not(test))]
#[inline(always)]
fn hook(_step: Step) {}

#[cfg(test)]
use self::tests::hook;

/// The ratio in force: a ratio outside 0..=1 is taken as the nearest
/// bound, and NaN as the default.
pub(crate) fn min_dirty_ratio(config: &EmbeddedConfig) -> f64 {
    let r = config.min_cleanable_dirty_ratio;
    if r.is_nan() {
        DEFAULT_MIN_DIRTY_RATIO
    } else {
        r.clamp(0.0, 1.0)
    }
}

/// Compacts `tp` if it is dirty enough (see the module documentation),
/// adding what it did to `report`.
pub(crate) fn compact(
    shared: &Shared,
    tp: &TopicPartition,
    report: &mut MaintenanceReport,
) -> Result<(), LogError> {
    let Some(plan) = plan(shared, tp) else {
        return Ok(());
    };
    let pass = Pass {
        shared,
        tp,
        token: plan.token,
    };
    report.compacted_partitions += 1;
    let mut map = OffsetMap::new(
        shared.config.compaction_map_bytes,
        plan.dirty_bytes / MIN_KEYED_RECORD,
    );
    report.compaction_map_bytes = report.compaction_map_bytes.max(map.bytes() as u64);
    let limit = pass.build_map(&plan, &mut map, report)?;
    hook(Step::MapBuilt { limit });
    for seg in plan.closed.iter().filter(|s| s.base < limit) {
        pass.clean_segment(&plan, seg, &map, report)?;
    }
    pass.finish(limit);
    Ok(())
}

/// The decision and the list of closed segments, under the lock.
fn plan(shared: &Shared, tp: &TopicPartition) -> Option<Plan> {
    let mut st = shared.lock_state();
    let part = st.partitions.get_mut(tp)?;
    if part.cleaner.running.is_some() {
        return None;
    }
    let clean = part.cleaner.clean_end.max(part.start());
    let closed: Vec<Closed> = part.segments[..part.segments.len().saturating_sub(1)]
        .iter()
        .map(|s| closed(s, clean))
        .collect();
    let total: u64 = closed.iter().map(|s| s.size).sum();
    let dirty: u64 = closed.iter().map(|s| s.size - s.dirty_from).sum();
    #[allow(clippy::cast_precision_loss)]
    let enough = dirty as f64 >= min_dirty_ratio(&shared.config) * total as f64;
    if dirty == 0 || !enough {
        return None;
    }
    let token = partition::unique_id();
    part.cleaner.running = Some(token);
    Some(Plan {
        token,
        clean,
        dir: part.dir.clone(),
        pool: part.pool.clone(),
        closed,
        dirty_bytes: dirty,
    })
}

fn closed(s: &Segment, clean: u64) -> Closed {
    let dirty_from = if s.data_end <= clean {
        s.size
    } else {
        let k = s.index.partition_point(|(first, _)| *first <= clean);
        k.checked_sub(1).map_or(0, |k| s.index[k].1)
    };
    Closed {
        id: s.id,
        base: s.base,
        data_end: s.data_end,
        size: s.size,
        path: s.path.clone(),
        dirty_from,
    }
}

/// A pass under way on one partition; dropping it clears the mark.
struct Pass<'a> {
    shared: &'a Shared,
    tp: &'a TopicPartition,
    token: u64,
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        let mut st = self.shared.lock_state();
        if let Some(part) = st.partitions.get_mut(self.tp)
            && part.cleaner.running == Some(self.token)
        {
            part.cleaner.running = None;
        }
    }
}

impl Pass<'_> {
    /// The segment `id` if it is still a closed segment of this pass's
    /// partition.
    fn segment<'s>(&self, st: &'s mut State, id: u64) -> Option<&'s mut Segment> {
        let part = st.partitions.get_mut(self.tp)?;
        if part.cleaner.running != Some(self.token) {
            return None;
        }
        let closed = part.segments.len().saturating_sub(1);
        part.segments[..closed].iter_mut().find(|s| s.id == id)
    }

    /// A read handle of `seg`, `None` if it is gone.
    fn reader(&self, seg: &Closed) -> Result<Option<Reader>, LogError> {
        let mut st = self.shared.lock_state();
        match self.segment(&mut st, seg.id) {
            Some(s) => s.store.reader(&s.path).map(Some),
            None => Ok(None),
        }
    }

    /// Step 2: the map from the dirty closed segments; returns the limit.
    fn build_map(
        &self,
        plan: &Plan,
        map: &mut OffsetMap,
        report: &mut MaintenanceReport,
    ) -> Result<u64, LogError> {
        let mut limit = plan.clean;
        for seg in plan.closed.iter().filter(|s| s.data_end > plan.clean) {
            let Some(reader) = self.reader(seg)? else {
                // Dropped meanwhile, with everything before it.
                limit = seg.data_end;
                continue;
            };
            let mut frames = Frames::new(&reader, &seg.path, seg.dirty_from, seg.size);
            let mut full_at = None;
            while let Some((pos, body)) = frames.next_frame()? {
                super::format::decode_batch_borrowed(body, |r| {
                    if full_at.is_none()
                        && r.offset >= plan.clean
                        && let Some(key) = r.key
                        && !map.insert(key, r.offset)
                    {
                        full_at = Some(r.offset);
                    }
                })
                .map_err(|m| LogError::Corrupt {
                    file: seg.path.clone(),
                    position: pos,
                    reason: m.0.to_owned(),
                })?;
                if full_at.is_some() {
                    break;
                }
            }
            report.compaction_read_bytes += frames.bytes_read();
            if let Some(at) = full_at {
                return Ok(at);
            }
            limit = seg.data_end;
        }
        Ok(limit)
    }

    /// Steps 3 and 4 for one segment.
    fn clean_segment(
        &self,
        plan: &Plan,
        seg: &Closed,
        map: &OffsetMap,
        report: &mut MaintenanceReport,
    ) -> Result<(), LogError> {
        let keep = |r: &RecordIn<'_>| keeps(r, seg.data_end, map);
        let Some(reader) = self.reader(seg)? else {
            return Ok(());
        };
        let (dropped, read) = rewrite::has_dropped(&reader, seg, &keep)?;
        report.compaction_read_bytes += read;
        if !dropped {
            return Ok(());
        }
        let copy = rewrite::rewrite(&reader, seg, plan.dir.as_deref(), &keep)?;
        drop(reader);
        report.compaction_read_bytes += copy.read;
        report.compaction_written_bytes += copy.size;
        hook(Step::Written { base: seg.base });
        let dropped = copy.dropped;
        if self.swap(plan, seg, copy)? {
            report.compacted_records += dropped;
            hook(Step::Swapped { base: seg.base });
        } else {
            report.compaction_discarded_segments += 1;
        }
        Ok(())
    }

    /// Step 4: puts `copy` in place of `seg` if it is still there; returns
    /// whether it did.
    fn swap(&self, plan: &Plan, seg: &Closed, copy: Rewritten) -> Result<bool, LogError> {
        let mut st = self.shared.lock_state();
        let Some(s) = self.segment(&mut st, seg.id) else {
            drop(st);
            copy.discard();
            return Ok(false);
        };
        if let Some(tmp) = &copy.tmp
            && let Err(e) = storage::rename(tmp, &s.path)
        {
            drop(st);
            copy.discard();
            return Err(e);
        }
        s.id = partition::unique_id();
        // The copy's file, in place, joins the pool of open segment files
        // (opened again when next used; it was synced when written).
        let store = match (copy.store, &plan.pool) {
            (Store::Disk(file), Some(pool)) => {
                drop(file);
                Store::existing_pooled(pool)
            }
            (store, _) => store,
        };
        let old = std::mem::replace(&mut s.store, store);
        s.index = copy.index;
        s.size = copy.size;
        s.max_ts = copy.max_ts;
        drop(st);
        // The old file's last handle: closing it frees its blocks, which
        // takes a while for a large file, so not under the lock.
        drop(old);
        if let Some(dir) = &plan.dir {
            // Until this sync a crash may bring back the old segment,
            // which is as valid as the copy.
            storage::sync_dir(dir)?;
        }
        Ok(true)
    }

    /// Step 5.
    fn finish(&self, limit: u64) {
        let mut st = self.shared.lock_state();
        if let Some(part) = st.partitions.get_mut(self.tp)
            && part.cleaner.running == Some(self.token)
        {
            part.cleaner.clean_end = part.cleaner.clean_end.max(limit);
        }
    }
}
