//! Reading changelog partitions back for a restore: every partition wanted,
//! from where its restore starts (its beginning, or a persistent store's
//! checkpoint) to its read-committed end as of the call, with one consumer
//! assigned once.
//!
//! Every partition is assigned once, at its start (`Consumer::assign_at`):
//! each seek reassigns a Kafka consumer, and librdkafka has aborted the
//! process on an assertion when one was reassigned in quick succession.
//! Owns nothing but the read; what the records are restored into is the
//! caller's.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use std::sync::atomic::{AtomicBool, Ordering};

use stoatflow_log::{Consumer, LogError, Offset, TopicPartition};
use stoatflow_state::{ChangelogEntry, ChangelogOffset, ChangelogPartition};

/// Per partition, its committed records (a record without a key is returned
/// as `Err` with its position, for the caller to name).
pub(crate) type Read = BTreeMap<TopicPartition, Vec<Result<ChangelogEntry, ChangelogEntry>>>;

/// Reads `partitions`, each from the offset paired with it (or its beginning,
/// if that is later), to their ends with `consumer` (of a group with no
/// committed offsets), giving up after `stall` without progress. Stops
/// early, returning what it read, once `cancel` is set: the caller then
/// discards the read.
///
/// # Errors
/// The log's; [`LogError::Timeout`] naming `what` on a stall.
pub(crate) fn read_to_end<C: Consumer>(
    consumer: &mut C,
    partitions: impl IntoIterator<Item = (TopicPartition, u64)>,
    stall: Duration,
    what: &str,
    cancel: Option<&AtomicBool>,
) -> Result<Read, LogError> {
    let mut ends = BTreeMap::new();
    let mut starts = Vec::new();
    for (tp, from) in partitions {
        let end = consumer.end_offset(&tp)?.0;
        let start = consumer.beginning_offset(&tp)?.0.max(from);
        if end > start {
            starts.push((tp.clone(), Offset(start)));
            ends.insert(tp, end);
        }
    }
    let mut read = Read::new();
    if ends.is_empty() {
        return Ok(read);
    }
    // One assignment, each partition at its start (no seek per partition).
    consumer.assign_at(&starts)?;
    let mut last_progress = Instant::now();
    loop {
        let mut behind = false;
        for (tp, end) in &ends {
            behind |= consumer.position(tp)?.0 < *end;
        }
        if !behind || cancel.is_some_and(|c| c.load(Ordering::Acquire)) {
            return Ok(read);
        }
        let batch = consumer.fetch(Duration::from_millis(100))?;
        if batch.is_empty() {
            if last_progress.elapsed() > stall {
                return Err(LogError::Timeout {
                    op: format!("restoring {what}"),
                    after_ms: u64::try_from(stall.as_millis()).unwrap_or(u64::MAX),
                });
            }
            continue;
        }
        last_progress = Instant::now();
        for r in batch {
            if ends.get(&r.partition).is_some_and(|end| r.offset.0 < *end) {
                read.entry(r.partition.clone())
                    .or_default()
                    .push(changelog_entry(r));
            }
        }
    }
}

/// A committed changelog record as the state crate reads it back; a record
/// with no key is not a changelog record (the entry, keyless, is returned
/// so the caller can name its position).
pub(crate) fn changelog_entry(
    r: stoatflow_log::FetchedRecord,
) -> Result<ChangelogEntry, ChangelogEntry> {
    let entry = ChangelogEntry {
        partition: ChangelogPartition(r.partition.partition.0),
        offset: ChangelogOffset(r.offset.0),
        key: Vec::new(),
        value: r.record.value,
        timestamp: r.record.timestamp.0,
    };
    match r.record.key {
        Some(key) => Ok(ChangelogEntry { key, ..entry }),
        None => Err(entry),
    }
}
