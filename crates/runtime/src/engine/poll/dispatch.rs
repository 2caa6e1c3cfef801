//! The poll side of the engine: fetched batches into ordered dispatch, and
//! dispatched records out to the lanes as runs of one batch.
//!
//! Owns the source slots (per partition: its position, partition time,
//! markers read and the batches still in dispatch) and the runs waiting
//! for each lane. Knows nothing of barriers beyond asking the engine to
//! keep them moving between long batches.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use stoatflow_log::{Consumer, FetchedBatch, Log, RecordView, TopicPartition};
use stoatflow_streams::EventTimeReader;
use stoatflow_time::{Dispatched, EventTime, PartitionIndex, WallTime};

use crate::config::layout::marker_watermark;
use crate::engine::guard::{WATERMARK_GENERATOR, guarded};
use crate::engine::lane_protocol::{LaneMsg, LaneRun};
use crate::engine::{BATCH, Engine, send};
use crate::error::RuntimeError;
use crate::task_id::TaskId;

/// One source partition as the poll loop sees it.
pub(in crate::engine) struct SourceSlot {
    pub(in crate::engine) tp: TopicPartition,
    pub(in crate::engine) topic: Arc<str>,
    pub(in crate::engine) index: PartitionIndex,
    pub(in crate::engine) task: TaskId,
    pub(in crate::engine) lane: usize,
    pub(in crate::engine) reader: Option<Arc<dyn EventTimeReader>>,
    /// Next offset to commit: one past the last dispatched record.
    pub(in crate::engine) position: Option<u64>,
    /// The largest event time dispatched (committed as partition time).
    pub(in crate::engine) partition_time: Option<EventTime>,
    /// A repartition partition: the last marker read from it.
    pub(in crate::engine) last_marker: Option<Arc<AtomicI64>>,
    /// One past the last record (or marker) the engine received for this
    /// partition: where a fetch that failed must leave the consumer.
    pub(in crate::engine) fetched_to: Option<u64>,
    /// Records fetched and not yet dispatched.
    pub(in crate::engine) buffered: usize,
    /// The offset of the newest marker read (committed past once every
    /// record before it is dispatched).
    pub(in crate::engine) marker_offset: Option<u64>,
    /// Fetched batches with records still in dispatch, by sequence number,
    /// oldest first.
    pub(in crate::engine) fetched: VecDeque<(u64, Arc<FetchedBatch>)>,
    /// The sequence number of the next fetched batch.
    pub(in crate::engine) next_seq: u64,
    /// The run of dispatched records not yet handed to the lane.
    pub(in crate::engine) open: Option<LaneRun>,
}

/// A fetched record waiting in ordered dispatch: record `index` of the
/// slot's batch number `seq`.
pub(in crate::engine) struct Pending {
    slot: u32,
    index: u32,
    seq: u64,
}

impl<L: Log + 'static> Engine<L> {
    /// Publishes how far each source partition was handed to the lanes
    /// (`StreamsApp::wait_until_consumed`).
    pub(in crate::engine) fn publish_consumed(&self) {
        let mut consumed = self.shared.consumed.lock().expect("consumed lock");
        for s in &self.slots {
            if let Some(p) = s.position {
                consumed.insert(s.tp.clone(), p);
            }
        }
    }

    /// Reads a fetched batch's markers and event times and buffers its
    /// records in ordered dispatch; the batch itself waits in its slot
    /// until its last record is dispatched.
    pub(in crate::engine) fn buffer(
        &mut self,
        batch: FetchedBatch,
        now: WallTime,
    ) -> Result<(), RuntimeError> {
        let Some(&slot) = self.slot_of.get(batch.partition()) else {
            return Ok(());
        };
        let batch = Arc::new(batch);
        note_fetched(&mut self.slots[slot], &batch);
        let seq = self.slots[slot].next_seq;
        let mut pushed = false;
        for (index, r) in batch.iter().enumerate() {
            if self.slots[slot].last_marker.is_some() && self.read_marker(slot, &r)? {
                continue;
            }
            self.push_record(slot, seq, index, &r, now)?;
            pushed = true;
        }
        if pushed {
            let s = &mut self.slots[slot];
            s.fetched.push_back((seq, batch));
            s.next_seq += 1;
        }
        Ok(())
    }

    /// DIRECT dispatch (no event time tracked): a fetched batch's records
    /// go to their lanes in offset order, at once, past the tracker and
    /// ordered dispatch; the partition time is the largest record
    /// timestamp, as Kafka Streams' with its default extractor.
    pub(in crate::engine) fn hand_over(&mut self, batch: FetchedBatch) -> Result<(), RuntimeError> {
        let Some(&slot) = self.slot_of.get(batch.partition()) else {
            return Ok(());
        };
        let batch = Arc::new(batch);
        let s = &mut self.slots[slot];
        note_fetched(s, &batch);
        let (seq, partition) = (s.next_seq, s.index);
        s.next_seq += 1;
        // Where `route` finds the batch of each record it hands over.
        s.fetched.push_back((seq, batch.clone()));
        let mut since_check = 0usize;
        for (index, r) in batch.iter().enumerate() {
            if self.slots[slot].last_marker.is_some() && self.read_marker(slot, &r)? {
                continue;
            }
            self.slots[slot].buffered += 1;
            let event_time = EventTime::new(r.timestamp.0.max(0))
                .unwrap_or_else(|_| EventTime::new(0).expect("zero is a valid event time"));
            self.route(Dispatched {
                partition,
                offset: stoatflow_time::Offset(r.offset.0 as i64),
                event_time,
                late: false,
                record: Pending {
                    slot: slot as u32,
                    index: index as u32,
                    seq,
                },
            })?;
            since_check += 1;
            if since_check == BATCH {
                since_check = 0;
                self.keep_barriers_moving()?;
            }
        }
        Ok(())
    }

    /// After a fetch that failed: whether the consumer took records before
    /// it failed, which the engine never received (its position passed
    /// where the engine was fetched to). Such a fetch is not retried: the
    /// engine is replaced and resumes from the last commit, which reads them
    /// again. Seeking the consumer back instead would reassign it, and
    /// librdkafka can abort on an assertion when a consumer is reassigned
    /// while its broker is away.
    pub(in crate::engine) fn fetch_took_records(&self) -> Result<bool, RuntimeError> {
        for s in &self.slots {
            if let Some(to) = s.fetched_to
                && self.consumer.position(&s.tp)?.0 > to
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A repartition partition's record: if it is a watermark marker,
    /// takes its watermark and returns true.
    pub(in crate::engine) fn read_marker(
        &mut self,
        slot: usize,
        r: &RecordView<'_>,
    ) -> Result<bool, RuntimeError> {
        let s = &mut self.slots[slot];
        match marker_watermark(r.headers) {
            Ok(None) => Ok(false),
            Ok(Some(w)) => {
                if let Some(cell) = &s.last_marker {
                    cell.fetch_max(w, Ordering::AcqRel);
                }
                s.marker_offset = Some(r.offset.0);
                if s.buffered == 0 {
                    s.position = Some(r.offset.0 + 1);
                }
                // The position moved: a barrier commits it.
                self.markers_since_barrier = true;
                Ok(true)
            }
            Err(reason) => Err(RuntimeError::BadMarker {
                partition: s.tp.to_string(),
                offset: r.offset.0,
                reason,
            }),
        }
    }

    pub(in crate::engine) fn push_record(
        &mut self,
        slot: usize,
        seq: u64,
        index: usize,
        r: &RecordView<'_>,
        now: WallTime,
    ) -> Result<(), RuntimeError> {
        let s = &mut self.slots[slot];
        s.buffered += 1;
        let record_ts = r.timestamp.0;
        let event_time = match &s.reader {
            // User code (deserializers, the timestamp assigner) on the poll
            // thread: a panic stops the engine with an error naming it.
            Some(reader) => guarded(|| {
                reader.event_time(r.key, r.value, record_ts, s.partition_time)
            })
            .map_err(|p| {
                p.naming(format!(
                    "the timestamp assigner of topic {} (or a deserializer it reads with), at {} offset {}",
                    s.topic, s.tp, r.offset.0
                ))
            })?,
            None => EventTime::new(record_ts).map_err(|e| e.to_string()),
        };
        let event_time = match event_time {
            Ok(t) => t,
            Err(reason) => {
                // The task meets the same failure and its deserialization
                // handler decides; dispatch orders it by its log timestamp.
                tracing::debug!(partition = %s.tp, offset = r.offset.0, reason, "event time unreadable at dispatch");
                EventTime::new(record_ts.max(0))
                    .unwrap_or_else(|_| EventTime::new(0).expect("zero is a valid event time"))
            }
        };
        let time = &mut self.times[s.task.subtopology];
        time.dispatch
            .push(
                &mut time.tracker,
                s.index,
                stoatflow_time::Offset(r.offset.0 as i64),
                event_time,
                Pending {
                    slot: slot as u32,
                    index: index as u32,
                    seq,
                },
                now,
            )
            .map_err(|e| RuntimeError::ThreadDied {
                thread: "poll loop".into(),
                reason: e.to_string(),
            })
    }

    /// A partition with nothing waiting in dispatch commits the consumer's
    /// position, which has passed what is not a record (Kafka's transaction
    /// markers), so a committed offset reaches the partition's end.
    pub(in crate::engine) fn advance_idle_positions(&mut self) -> Result<(), RuntimeError> {
        for s in &mut self.slots {
            if s.buffered > 0 {
                continue;
            }
            let next = self.consumer.position(&s.tp)?.0;
            // A partition that never had a record (only an aborted
            // transaction, say) still reaches its end.
            if s.position.is_none_or(|at| next > at) {
                s.position = Some(next);
                // No record may follow soon: a barrier commits the move, or
                // the committed offset never reaches the partition's end.
                self.markers_since_barrier = true;
            }
        }
        Ok(())
    }

    /// Hands every record ordered dispatch releases to its lane, as runs of
    /// consecutive records of one fetched batch (one run per partition and
    /// batch in the usual case, whatever the interleaving of partitions).
    pub(in crate::engine) fn drain_dispatch(&mut self) -> Result<(), RuntimeError> {
        let now = self.clock.now();
        let mut since_check = 0usize;
        for st in 0..self.times.len() {
            loop {
                let time = &mut self.times[st];
                // Dispatching a record runs its partition's watermark
                // generator (user code, for a custom one).
                let next = guarded(|| time.dispatch.next(&mut time.tracker, now))
                    .map_err(|p| p.naming(format!("{WATERMARK_GENERATOR} of sub-topology {st}")))?;
                let Some(d) = next else {
                    break;
                };
                self.route(d)?;
                since_check += 1;
                if since_check == BATCH {
                    since_check = 0;
                    self.keep_barriers_moving()?;
                }
            }
        }
        for lane in 0..self.lanes.len() {
            self.send_runs(lane)?;
        }
        Ok(())
    }

    /// One dispatched record: its slot's position and partition time move,
    /// and it joins its partition's open run.
    pub(in crate::engine) fn route(&mut self, d: Dispatched<Pending>) -> Result<(), RuntimeError> {
        let Pending { slot, index, seq } = d.record;
        let s = &mut self.slots[slot as usize];
        let offset = d.offset.0 as u64;
        s.position = Some(offset + 1);
        s.buffered -= 1;
        if s.buffered == 0
            && let Some(m) = s.marker_offset
            && m > offset
        {
            s.position = Some(m + 1);
        }
        if s.partition_time.is_none_or(|p| d.event_time > p) {
            s.partition_time = Some(d.event_time);
        }
        self.dispatched_since_barrier += 1;
        while s.fetched.front().is_some_and(|(q, _)| *q < seq) {
            s.fetched.pop_front();
        }
        let (_, batch) = s
            .fetched
            .front()
            .expect("a dispatched record's batch waits in its slot");
        let last_of_batch = index as usize + 1 == batch.len();
        match &mut s.open {
            Some(run) if run.to == index && Arc::ptr_eq(&run.batch, batch) => run.to += 1,
            open => {
                let run = LaneRun {
                    task: s.task,
                    topic: s.topic.clone(),
                    batch: batch.clone(),
                    from: index,
                    to: index + 1,
                };
                if let Some(done) = open.replace(run) {
                    self.runs[s.lane].0.push(done);
                }
            }
        }
        if last_of_batch {
            // Its run holds it now; an idle partition keeps no batch.
            s.fetched.pop_front();
        }
        let lane = s.lane;
        self.runs[lane].1 += 1;
        if self.runs[lane].1 >= BATCH {
            self.send_runs(lane)?;
        }
        Ok(())
    }

    /// Sends `lane` its waiting runs, the open ones included.
    pub(in crate::engine) fn send_runs(&mut self, lane: usize) -> Result<(), RuntimeError> {
        let (runs, count) = &mut self.runs[lane];
        for s in self.slots.iter_mut().filter(|s| s.lane == lane) {
            runs.extend(s.open.take());
        }
        if runs.is_empty() {
            return Ok(());
        }
        *count = 0;
        send(&self.lanes[lane], LaneMsg::Records(std::mem::take(runs)))
    }
}

/// `batch` reached the engine: its partition was fetched up to its last
/// record.
fn note_fetched(slot: &mut SourceSlot, batch: &FetchedBatch) {
    if let Some(last) = batch.len().checked_sub(1) {
        slot.fetched_to = Some(batch.get(last).offset.0 + 1);
    }
}
