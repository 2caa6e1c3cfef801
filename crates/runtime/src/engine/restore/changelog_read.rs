//! Reading changelog partitions back for a restore: every partition wanted,
//! from where its restore starts (its beginning, or a persistent store's
//! checkpoint) to its read-committed end as of the call, with one consumer
//! assigned once: whole, as owned entries ([`read_to_end`]), or as it is
//! read, in large per-partition batches ([`read_batches`]: whole fetched
//! batches copied into one buffer per store, no allocation per record).
//!
//! Every partition is assigned once, at its start (`Consumer::assign_at`):
//! each seek reassigns a Kafka consumer, and librdkafka has aborted the
//! process on an assertion when one was reassigned in quick succession.
//! Owns nothing but the read; what the records are restored into is the
//! caller's.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use stoatflow_log::{Consumer, FetchedBatch, LogError, Offset, TopicPartition};
use stoatflow_state::{
    ChangelogEntry, ChangelogOffset, ChangelogPartition, ChangelogValueLayout, RestoreBatch,
};

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
    let ends = assign_to_end(consumer, partitions)?;
    let mut read = Read::new();
    if ends.is_empty() {
        return Ok(read);
    }
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

/// Assigns `consumer` every partition of `partitions` with records between
/// its start (the offset paired with it, or its beginning if later) and its
/// read-committed end, each at its start, once; returns their ends.
fn assign_to_end<C: Consumer>(
    consumer: &mut C,
    partitions: impl IntoIterator<Item = (TopicPartition, u64)>,
) -> Result<BTreeMap<TopicPartition, u64>, LogError> {
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
    if !ends.is_empty() {
        // One assignment, each partition at its start (no seek per partition).
        consumer.assign_at(&starts)?;
    }
    Ok(ends)
}

/// What [`read_batches`] hands over: a partition's next committed records,
/// or a record with no key (not a changelog record; the entry, keyless,
/// names its position), after which it reads no more.
pub(crate) type Delivery = (TopicPartition, Result<RestoreBatch, ChangelogEntry>);

/// A partition's records are handed over once they fill this many bytes, or
/// when the partition is read to its end; when the partitions being filled
/// hold twice as much together, every one of them is.
pub(crate) const BATCH_BYTES: usize = stoatflow_state::RESTORE_BATCH_BYTES;

/// The ends a read reads its partitions to, once it has looked them up
/// (a partition with nothing to read is not among them).
pub(crate) type EndsSeen = Mutex<Option<BTreeMap<TopicPartition, u64>>>;

/// When a read gives up: after `stall` without progress (the error names
/// `what`), or as soon as `cancel` is set.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadLimits<'a> {
    pub(crate) stall: Duration,
    pub(crate) what: &'a str,
    pub(crate) cancel: Option<&'a AtomicBool>,
    /// Where the ends read to are told, once known (what a query of a
    /// restoring task reports as how far it has to go).
    pub(crate) ends_seen: Option<&'a EndsSeen>,
}

/// Reads `partitions` as [`read_to_end`] does, handing each partition's
/// records to `deliver` in offset order as they are read, in batches of
/// about [`BATCH_BYTES`] already in the store's value layout (`layout`),
/// each partition's last one as soon as it is read to its end.
/// `deliver` returns false when it wants no more (the reading then stops);
/// so does a set `limits.cancel`. `read` is told how many records each fetch
/// brought.
///
/// # Errors
/// The log's; [`LogError::Timeout`] naming `what` on a stall.
pub(crate) fn read_batches<C: Consumer>(
    consumer: &mut C,
    partitions: impl IntoIterator<Item = (TopicPartition, u64)>,
    limits: &ReadLimits<'_>,
    layout: impl Fn(&TopicPartition) -> ChangelogValueLayout,
    read: &mut dyn FnMut(u64),
    deliver: &mut dyn FnMut(Delivery) -> bool,
) -> Result<(), LogError> {
    let mut ends = assign_to_end(consumer, partitions)?;
    if let Some(seen) = limits.ends_seen {
        *seen.lock().expect("restore ends lock") = Some(ends.clone());
    }
    let mut filling: BTreeMap<TopicPartition, RestoreBatch> = BTreeMap::new();
    let mut last_progress = Instant::now();
    while !ends.is_empty() {
        if limits.cancel.is_some_and(|c| c.load(Ordering::Acquire)) {
            return Ok(());
        }
        let fetched = consumer.fetch_batches(Duration::from_millis(100))?;
        if !fetched.is_empty() {
            last_progress = Instant::now();
        }
        let ControlFlow::Continue(count) =
            fill(&fetched, &ends, &mut filling, &layout, read, deliver)
        else {
            return Ok(());
        };
        read(count);
        // Partitions read to their end are done; their last batch goes now.
        let done = remove_ended(consumer, &mut ends)?;
        // A fetch can move a position to the end without a record (past a
        // transaction's marker), so the ends are checked after every fetch,
        // and only a fetch that neither read nor ended anything counts
        // towards the stall.
        if fetched.is_empty() && done.is_empty() && last_progress.elapsed() > limits.stall {
            return Err(LogError::Timeout {
                op: format!("restoring {}", limits.what),
                after_ms: u64::try_from(limits.stall.as_millis()).unwrap_or(u64::MAX),
            });
        }
        if deliver_ready(&mut filling, &done, deliver).is_break() {
            return Ok(());
        }
    }
    Ok(())
}

/// Adds the fetched records below their partition's end to their partition's batch being
/// filled, and returns how many there were. A record with no key ends the reading: the records
/// up to it are told to `read`, it goes to `deliver` at once, and the fill breaks.
fn fill(
    fetched: &[FetchedBatch],
    ends: &BTreeMap<TopicPartition, u64>,
    filling: &mut BTreeMap<TopicPartition, RestoreBatch>,
    layout: &impl Fn(&TopicPartition) -> ChangelogValueLayout,
    read: &mut dyn FnMut(u64),
    deliver: &mut dyn FnMut(Delivery) -> bool,
) -> ControlFlow<(), u64> {
    let mut count = 0u64;
    for fetched in fetched {
        let tp = fetched.partition();
        let Some(&end) = ends.get(tp) else {
            continue;
        };
        let batch = match filling.get_mut(tp) {
            Some(b) => b,
            None => filling
                .entry(tp.clone())
                .or_insert_with(|| RestoreBatch::new(layout(tp))),
        };
        let partition = ChangelogPartition(tp.partition.0);
        for r in fetched.iter().filter(|r| r.offset.0 < end) {
            count += 1;
            let offset = ChangelogOffset(r.offset.0);
            let Some(key) = r.key else {
                read(count);
                let keyless = ChangelogEntry {
                    partition,
                    offset,
                    key: Vec::new(),
                    value: r.value.map(<[u8]>::to_vec),
                    timestamp: r.timestamp.0,
                };
                deliver((tp.clone(), Err(keyless)));
                return ControlFlow::Break(());
            };
            batch.push(partition, offset, key, r.value, r.timestamp.0);
        }
    }
    ControlFlow::Continue(count)
}

/// Removes the partitions whose position has reached their end, and returns them.
fn remove_ended<C: Consumer>(
    consumer: &mut C,
    ends: &mut BTreeMap<TopicPartition, u64>,
) -> Result<Vec<TopicPartition>, LogError> {
    let mut done = Vec::new();
    for (tp, end) in ends.iter() {
        if consumer.position(tp)?.0 >= *end {
            done.push(tp.clone());
        }
    }
    for tp in &done {
        ends.remove(tp);
    }
    Ok(done)
}

/// Hands over every non-empty batch that is ready: its partition is `done`, it holds
/// [`BATCH_BYTES`], or the batches being filled hold twice that together. Breaks when
/// `deliver` wants no more.
fn deliver_ready(
    filling: &mut BTreeMap<TopicPartition, RestoreBatch>,
    done: &[TopicPartition],
    deliver: &mut dyn FnMut(Delivery) -> bool,
) -> ControlFlow<()> {
    let pending: usize = filling.values().map(RestoreBatch::bytes).sum();
    let ready: Vec<TopicPartition> = filling
        .iter()
        .filter(|(tp, b)| {
            !b.is_empty()
                && (done.contains(tp) || b.bytes() >= BATCH_BYTES || pending >= 2 * BATCH_BYTES)
        })
        .map(|(tp, _)| tp.clone())
        .collect();
    for tp in ready {
        let batch = filling.remove(&tp).expect("a batch being filled");
        if !deliver((tp, Ok(batch))) {
            return ControlFlow::Break(());
        }
    }
    ControlFlow::Continue(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use stoatflow_log::{EmbeddedLog, Log, Record, Timestamp, TopicSpec, TransactionalProducer};

    const LIMITS: ReadLimits<'static> = ReadLimits {
        ends_seen: None,
        stall: Duration::from_secs(10),
        what: "test",
        cancel: None,
    };

    /// A log whose changelog partition 0 holds `small` records and partition 1
    /// `large` records of `value_len` bytes each, each in one transaction.
    fn log_with(small: u64, large: u64, value_len: usize) -> EmbeddedLog {
        let log = EmbeddedLog::in_memory();
        log.create_topic(&TopicSpec::new("c", 2)).unwrap();
        let mut producer = log.transactional_producer("writer").unwrap();
        for (p, n) in [(0, small), (1, large)] {
            producer.begin().unwrap();
            for i in 0..n {
                let key = format!("k{i}");
                let value = vec![p as u8; value_len];
                let record = Record::new(Some(key.as_bytes()), Some(&value), Timestamp(i as i64));
                producer
                    .send(&TopicPartition::new("c", p), &record)
                    .unwrap();
            }
            producer.commit().unwrap();
        }
        log
    }

    #[test]
    fn batches_come_as_they_are_read_each_partition_whole_and_in_order() {
        // Partition 1 takes several fetches (one fetch reads at most a MiB of
        // a partition); partition 0 is read to its end by the first.
        let log = log_with(10, 6_000, 1_000);
        let mut consumer = log.consumer("restore").unwrap();
        let partitions = [
            (TopicPartition::new("c", 0), 0),
            (TopicPartition::new("c", 1), 0),
        ];
        let mut read_so_far = 0;
        let mut deliveries: Vec<(u32, u64, Vec<u64>)> = Vec::new();
        let read_at_delivery = std::cell::Cell::new(0);
        read_batches(
            &mut consumer,
            partitions,
            &LIMITS,
            |_| ChangelogValueLayout::Plain,
            &mut |n| {
                read_so_far += n;
                read_at_delivery.set(read_so_far);
            },
            &mut |(tp, batch)| {
                let batch = batch.expect("every record has a key");
                let offsets = batch.iter().map(|r| r.offset.0).collect();
                deliveries.push((tp.partition.0, read_at_delivery.get(), offsets));
                true
            },
        )
        .unwrap();
        assert_eq!(read_so_far, 6_010);
        let (first_partition, read_then, offsets) = &deliveries[0];
        assert_eq!(
            *first_partition, 0,
            "the partition read to its end goes first"
        );
        assert_eq!(offsets, &(0..10).collect::<Vec<u64>>());
        assert!(
            *read_then < 6_010,
            "handed over while the other partition was still being read ({read_then} read)"
        );
        let large: Vec<u64> = deliveries
            .iter()
            .filter(|(p, ..)| *p == 1)
            .flat_map(|(.., o)| o.iter().copied())
            .collect();
        assert_eq!(large, (0..6_000).collect::<Vec<u64>>());
    }

    /// A consumer of one partition whose records past the checkpoint are all
    /// a transaction's marker (as on Kafka): its first fetch returns nothing
    /// and moves the position to the end.
    #[derive(Debug)]
    struct MarkerTail {
        tp: TopicPartition,
        position: u64,
        end: u64,
    }

    impl Consumer for MarkerTail {
        fn assign(&mut self, partitions: &[TopicPartition]) -> Result<(), LogError> {
            assert_eq!(partitions, std::slice::from_ref(&self.tp));
            Ok(())
        }
        fn seek(&mut self, _: &TopicPartition, to: stoatflow_log::SeekTo) -> Result<(), LogError> {
            if let stoatflow_log::SeekTo::Offset(o) = to {
                self.position = o.0;
            }
            Ok(())
        }
        fn position(&self, _: &TopicPartition) -> Result<Offset, LogError> {
            Ok(Offset(self.position))
        }
        fn fetch(&mut self, _: Duration) -> Result<Vec<stoatflow_log::FetchedRecord>, LogError> {
            self.position = self.end;
            Ok(Vec::new())
        }
        fn end_offset(&mut self, _: &TopicPartition) -> Result<Offset, LogError> {
            Ok(Offset(self.end))
        }
        fn beginning_offset(&mut self, _: &TopicPartition) -> Result<Offset, LogError> {
            Ok(Offset(0))
        }
    }

    /// A fetch that returns no record but moves the position to the end (past
    /// a transaction's marker) ends the read at once: the end is checked after
    /// every fetch, not only after one that brought records.
    #[test]
    fn a_fetch_that_moves_to_the_end_without_a_record_ends_the_read_without_a_stall() {
        let tp = TopicPartition::new("c", 0);
        let mut consumer = MarkerTail {
            tp: tp.clone(),
            position: 0,
            end: 5,
        };
        let limits = ReadLimits {
            ends_seen: None,
            stall: Duration::from_secs(2),
            ..LIMITS
        };
        let mut delivered = 0;
        read_batches(
            &mut consumer,
            [(tp, 4)],
            &limits,
            |_| ChangelogValueLayout::Plain,
            &mut |_| {},
            &mut |_| {
                delivered += 1;
                true
            },
        )
        .expect("read to the end, not stalled");
        assert_eq!(delivered, 0);
    }

    #[test]
    fn a_keyless_record_is_handed_over_with_its_position_and_ends_the_read() {
        let log = EmbeddedLog::in_memory();
        log.create_topic(&TopicSpec::new("c", 1)).unwrap();
        let mut producer = log.transactional_producer("writer").unwrap();
        producer.begin().unwrap();
        let tp = TopicPartition::new("c", 0);
        producer
            .send(&tp, &Record::new(Some(b"k"), Some(b"v"), Timestamp(1)))
            .unwrap();
        producer
            .send(&tp, &Record::new(None, Some(b"v"), Timestamp(2)))
            .unwrap();
        producer.commit().unwrap();
        let mut consumer = log.consumer("restore").unwrap();
        let mut got = Vec::new();
        read_batches(
            &mut consumer,
            [(tp.clone(), 0)],
            &LIMITS,
            |_| ChangelogValueLayout::Plain,
            &mut |_| {},
            &mut |(_, batch)| {
                got.push(batch.map(|b| b.len()).map_err(|e| e.offset.0));
                true
            },
        )
        .unwrap();
        assert_eq!(got, vec![Err(1)]);
    }
}
