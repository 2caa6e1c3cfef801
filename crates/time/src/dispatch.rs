//! [`OrderedDispatch`]: the merge of per-partition buffers that always serves
//! the partition whose head record is oldest (DESIGN 3.2).
//!
//! Invariants, each covered by a property test:
//! - each partition's records leave in strictly increasing offset order;
//! - a record leaves only when no non-held partition has an older head
//!   (ties go to the partition registered first);
//! - a partition that alignment holds is never served.
//!
//! The dispatch owns the buffers and tells the [`WatermarkTracker`] about each
//! dispatched record and each partition's waiting head (for preview watermarks
//! and the future-head warning). It knows nothing of what a record contains,
//! nor of threads: the caller hands it wall time.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::tracker::Head;
use crate::{EventTime, Offset, PartitionIndex, TrackerError, WallTime, WatermarkTracker};

/// Bad input to the dispatch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DispatchError {
    /// The partition is not registered with the tracker.
    #[error(transparent)]
    Tracker(#[from] TrackerError),
    /// Offsets within a partition must increase.
    #[error(
        "offset {offset} of {partition} is not after the previous offset {previous}: a partition must be buffered in offset order"
    )]
    OffsetOrder {
        /// The partition.
        partition: String,
        /// The offending offset.
        offset: i64,
        /// The last buffered offset.
        previous: i64,
    },
}

/// A record handed out by [`OrderedDispatch::next`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatched<R> {
    /// Which partition it came from.
    pub partition: PartitionIndex,
    /// Its offset.
    pub offset: Offset,
    /// Its (assigned) event time.
    pub event_time: EventTime,
    /// Whether it arrived below the published global watermark (counted, not dropped).
    pub late: bool,
    /// The payload.
    pub record: R,
}

#[derive(Debug)]
struct Buffered<R> {
    offset: Offset,
    event_time: EventTime,
    record: R,
}

#[derive(Debug)]
struct PartitionBuffer<R> {
    queue: VecDeque<Buffered<R>>,
    last_offset: Option<Offset>,
}

impl<R> Default for PartitionBuffer<R> {
    fn default() -> Self {
        PartitionBuffer {
            queue: VecDeque::new(),
            last_offset: None,
        }
    }
}

/// Per-partition FIFO buffers merged oldest-head-first.
#[derive(Debug)]
pub struct OrderedDispatch<R> {
    buffers: Vec<PartitionBuffer<R>>,
    /// Non-empty partitions keyed by (head event time, partition index).
    heads: BinaryHeap<Reverse<(i64, u32)>>,
    passed_over: Vec<Reverse<(i64, u32)>>,
    buffered: usize,
}

impl<R> Default for OrderedDispatch<R> {
    fn default() -> Self {
        OrderedDispatch {
            buffers: Vec::new(),
            heads: BinaryHeap::new(),
            passed_over: Vec::new(),
            buffered: 0,
        }
    }
}

impl<R> OrderedDispatch<R> {
    /// An empty dispatch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records buffered across all partitions.
    pub fn len(&self) -> usize {
        self.buffered
    }

    /// True when nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.buffered == 0
    }

    /// Records buffered for one partition.
    pub fn buffered_in(&self, partition: PartitionIndex) -> usize {
        self.buffers
            .get(partition.as_usize())
            .map_or(0, |b| b.queue.len())
    }

    /// Buffers a fetched record. Offsets of a partition must increase.
    pub fn push(
        &mut self,
        tracker: &mut WatermarkTracker,
        partition: PartitionIndex,
        offset: Offset,
        event_time: EventTime,
        record: R,
        now: WallTime,
    ) -> Result<(), DispatchError> {
        tracker.partition(partition)?;
        let i = partition.as_usize();
        if self.buffers.len() <= i {
            self.buffers.resize_with(i + 1, PartitionBuffer::default);
        }
        let buf = &mut self.buffers[i];
        if let Some(prev) = buf.last_offset
            && offset <= prev
        {
            let partition = tracker.partition(partition)?.to_string();
            return Err(DispatchError::OffsetOrder {
                partition,
                offset: offset.0,
                previous: prev.0,
            });
        }
        buf.last_offset = Some(offset);
        let was_empty = buf.queue.is_empty();
        buf.queue.push_back(Buffered {
            offset,
            event_time,
            record,
        });
        self.buffered += 1;
        if was_empty {
            self.heads
                .push(Reverse((event_time.as_millis(), partition.0)));
            tracker.set_head(
                partition,
                Some(Head {
                    event_time,
                    since: now,
                }),
            )?;
        }
        Ok(())
    }

    /// Hands out the record whose partition head is oldest among partitions
    /// alignment does not hold, advancing the tracker with it.
    ///
    /// # Panics
    /// If `tracker` is not the tracker the records were pushed with.
    pub fn next(&mut self, tracker: &mut WatermarkTracker, now: WallTime) -> Option<Dispatched<R>> {
        let mut chosen = None;
        while let Some(Reverse((ts, p))) = self.heads.pop() {
            if tracker.is_held(PartitionIndex(p)) {
                self.passed_over.push(Reverse((ts, p)));
            } else {
                chosen = Some(p);
                break;
            }
        }
        self.heads.extend(self.passed_over.drain(..));
        let chosen = chosen?;
        let partition = PartitionIndex(chosen);
        let buf = &mut self.buffers[chosen as usize];
        let Buffered {
            offset,
            event_time,
            record,
        } = buf
            .queue
            .pop_front()
            .expect("a partition in the head heap has a buffered record");
        self.buffered -= 1;
        let next_head = buf.queue.front().map(|b| b.event_time);
        if let Some(t) = next_head {
            self.heads.push(Reverse((t.as_millis(), chosen)));
        }
        let late = tracker
            .on_record(partition, event_time, now)
            .expect("a buffered partition was registered with this tracker at push");
        tracker
            .set_head(
                partition,
                next_head.map(|t| Head {
                    event_time: t,
                    since: now,
                }),
            )
            .expect("a buffered partition was registered with this tracker at push");
        Some(Dispatched {
            partition,
            offset,
            event_time,
            late,
            record,
        })
    }

    /// Serves every record that can be served now, in dispatch order; records
    /// of held partitions stay buffered.
    pub fn drain_ready(
        &mut self,
        tracker: &mut WatermarkTracker,
        now: WallTime,
    ) -> Vec<Dispatched<R>> {
        let mut out = Vec::with_capacity(self.buffered);
        while let Some(d) = self.next(tracker, now) {
            out.push(d);
        }
        out
    }
}
