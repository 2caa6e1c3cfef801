//! [`OrderedDispatch`]: the merge of per-partition buffers that always serves
//! the partition whose head record is oldest (docs/time.md#ordered-dispatch).
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
use std::collections::binary_heap::PeekMut;
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
        // The usual case: the oldest head's partition is not held. Its next
        // head replaces it at the top of the heap in place (one sift, not a
        // pop and a push); each partition is in the heap at most once, so
        // the heap orders the same keys either way.
        let top_held = tracker.is_held(PartitionIndex(self.heads.peek()?.0.1));
        let (chosen, buffered, next_head) = if top_held {
            self.next_past_held(tracker)?
        } else {
            let mut top = self.heads.peek_mut()?;
            let chosen = top.0.1;
            let (buffered, next_head) = take_head(&mut self.buffers[chosen as usize]);
            match next_head {
                Some(t) => *top = Reverse((t.as_millis(), chosen)),
                None => {
                    PeekMut::pop(top);
                }
            }
            (chosen, buffered, next_head)
        };
        let Buffered {
            offset,
            event_time,
            record,
        } = buffered;
        let partition = PartitionIndex(chosen);
        self.buffered -= 1;
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

    /// The oldest head among partitions alignment does not hold, taken off
    /// its buffer (the top of the heap is held): the chosen partition, its
    /// record and its next head.
    fn next_past_held(
        &mut self,
        tracker: &WatermarkTracker,
    ) -> Option<(u32, Buffered<R>, Option<EventTime>)> {
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
        let (buffered, next_head) = take_head(&mut self.buffers[chosen as usize]);
        if let Some(t) = next_head {
            self.heads.push(Reverse((t.as_millis(), chosen)));
        }
        Some((chosen, buffered, next_head))
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

/// Takes a partition's head record (it has one: it is in the head heap);
/// returns it and the event time of the record behind it.
fn take_head<R>(buf: &mut PartitionBuffer<R>) -> (Buffered<R>, Option<EventTime>) {
    let head = buf
        .queue
        .pop_front()
        .expect("a partition in the head heap has a buffered record");
    (head, buf.queue.front().map(|b| b.event_time))
}
