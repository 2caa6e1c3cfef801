//! Commit barriers (docs/barriers.md#epochs): cut barrier N (fix the offsets,
//! stamp W(N), send it down every lane behind what they hold), gather the
//! lanes' crossings, hand transaction N to the committer, and finish the
//! barrier once it committed; the cadence that decides when the next is due;
//! the flush barrier that ends an engine that commits.
//!
//! Owns the barrier in flight (at most one). Knows the lanes only through
//! their channels and the log only through the committer.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError, sync_channel};
use std::time::{Duration, Instant};

use stoatflow_log::offset_metadata::{self, PartitionMetadata};
use stoatflow_log::{Log, Offset, OffsetAndMetadata, TopicPartition};
use stoatflow_time::{EventTime, WallTime, Watermark};

use crate::config::layout::marker;
use crate::engine::commit::committer::{CommitDone, CommitJob};
use crate::engine::lane_protocol::{Crossed, LaneFailed, LaneMsg};
use crate::engine::{Engine, MARKER_METADATA_KEY, SubtopologyTime, send};
use crate::error::RuntimeError;
use crate::observe::timeline::BarrierTiming;
use crate::task_id::TaskId;

/// A barrier between its cut and its commit: first its lanes cross it (their
/// commits gather here), then the committer commits its transaction.
pub(in crate::engine) struct InFlight {
    barrier: u64,
    stamps: Arc<[Watermark]>,
    flush: bool,
    /// When it was cut, and the clock's time then (the stamp ring's).
    cut: Instant,
    now: WallTime,
    /// The late arrivals the trackers had counted at the cut: those of the
    /// epochs up to this one.
    late_at_cut: u64,
    /// The source offsets fixed at the cut (moved into the job).
    offsets: Vec<(TopicPartition, OffsetAndMetadata)>,
    /// Where the lanes answer it: the channel lives as long as the barrier
    /// is in flight, so no crossing can come while none is.
    crossings: Receiver<Crossed>,
    /// Lanes still to cross it; once none, the transaction is the committer's.
    crossing: usize,
    /// The crossed lanes' commits.
    commits: Vec<(TaskId, stoatflow_streams::EpochCommit)>,
}

impl<L: Log + 'static> Engine<L> {
    /// The end of an engine that commits (a close, a graceful rebalance):
    /// dispatch what is buffered, let the barrier in flight commit, then a
    /// flush barrier; once it committed, the lanes close and checkpoint
    /// their persistent stores. `false` if the application was halted on
    /// the way (nothing more is committed or checkpointed then).
    pub(in crate::engine) fn flush_and_checkpoint(&mut self) -> Result<bool, RuntimeError> {
        self.drain_dispatch()?;
        if !self.finish_barrier()? {
            return Ok(false);
        }
        self.cut_barrier(true)?;
        if !self.finish_barrier()? {
            return Ok(false);
        }
        for lane in &self.lanes {
            send(lane, LaneMsg::Checkpoint)?;
        }
        Ok(true)
    }

    /// Between two batches of a long dispatch (a fetch holds up to 4 MiB):
    /// the barrier in flight moves on, and the next one is cut when due.
    /// The tracker has seen only dispatched records, so a cut between any
    /// two of them is a cut like any other.
    pub(in crate::engine) fn keep_barriers_moving(&mut self) -> Result<(), RuntimeError> {
        self.advance_barrier(Duration::ZERO)?;
        if self.inflight.is_none() && self.cadence.is_due(Instant::now(), self.epoch_has_work()) {
            self.cut_barrier(false)?;
        }
        Ok(())
    }

    /// Whether the epoch since the last barrier did anything, or a later
    /// barrier still has final results to emit or commit
    /// (docs/barriers.md#cadence).
    pub(in crate::engine) fn epoch_has_work(&self) -> bool {
        self.dispatched_since_barrier > 0
            || self.punctuation_since_barrier
            || self.markers_since_barrier
            || self.pending_output.load(Ordering::Acquire)
            || self.times.iter().any(SubtopologyTime::has_work)
    }

    /// A lane that failed stops the application now.
    pub(in crate::engine) fn check_failures(&mut self) -> Result<(), RuntimeError> {
        match self.failures.try_recv() {
            Ok(failed) => Err(lane_failed(failed)),
            Err(TryRecvError::Empty) => Ok(()),
            Err(TryRecvError::Disconnected) => Err(lanes_gone()),
        }
    }

    /// Cuts barrier N: fixes the offsets, stamps W(N) and sends it down
    /// every lane behind what they hold. The lanes cross it while the poll
    /// loop goes on dispatching epoch N+1; [`Engine::advance_barrier`]
    /// collects their commits and hands the transaction to the committer.
    pub(in crate::engine) fn cut_barrier(&mut self, flush: bool) -> Result<(), RuntimeError> {
        debug_assert!(self.inflight.is_none(), "barrier N+1 waits for N's commit");
        // Everything dispatched before the cut reaches its lane before the
        // barrier: the offsets fixed below count it as epoch N's.
        for lane in 0..self.lanes.len() {
            self.send_runs(lane)?;
        }
        let now = self.clock.now();
        let cut = Instant::now();
        let direct = self.direct;
        let stamps: Arc<[Watermark]> = self
            .times
            .iter_mut()
            .map(|t| match direct {
                true => Watermark::MIN,
                false => t.tracker.force_watermark(now),
            })
            .collect();
        let late_at_cut = self
            .times
            .iter()
            .map(|t| t.tracker.metrics(now).late_records_total)
            .sum();
        let n = self.barrier + 1;
        let offsets = self.fixed_offsets();
        self.pending_output.store(false, Ordering::Release);
        // The force above publishes the watermark, so the throttled poll
        // would never report it: the advance reaches the lanes here, ahead of
        // the barrier (docs/barriers.md#watermark-events).
        self.send_stamps_as_watermarks(&stamps)?;
        // One answer per lane: none of them waits to send it.
        let (reply, crossings) = sync_channel(self.lanes.len());
        for lane in &self.lanes {
            send(
                lane,
                LaneMsg::Barrier {
                    barrier: n,
                    stamps: stamps.clone(),
                    flush,
                    reply: reply.clone(),
                },
            )?;
        }
        // What follows the cut is epoch N+1's.
        self.dispatched_since_barrier = 0;
        self.punctuation_since_barrier = false;
        self.markers_since_barrier = false;
        self.inflight = Some(InFlight {
            barrier: n,
            stamps,
            flush,
            cut,
            now,
            late_at_cut,
            offsets,
            crossings,
            crossing: self.lanes.len(),
            commits: Vec::new(),
        });
        Ok(())
    }

    /// The source offsets a barrier cut now fixes: each positioned slot's
    /// position, with its partition time and (a repartition partition) the
    /// last marker read.
    fn fixed_offsets(&self) -> Vec<(TopicPartition, OffsetAndMetadata)> {
        self.slots
            .iter()
            .filter_map(|s| {
                let position = s.position?;
                // A repartition partition's watermark is the last marker
                // read; it commits with the position past it, so a restart
                // resumes it (markers before the position are not re-read).
                let processor = s
                    .last_marker
                    .as_ref()
                    .map(|m| m.load(Ordering::Acquire))
                    .filter(|&w| w != i64::MIN)
                    .map(|w| vec![(MARKER_METADATA_KEY.to_owned(), w)])
                    .unwrap_or_default();
                let meta = PartitionMetadata {
                    partition_time: s.partition_time.map(EventTime::as_millis),
                    processor,
                };
                Some((
                    s.tp.clone(),
                    OffsetAndMetadata {
                        offset: Offset(position),
                        metadata: offset_metadata::encode(&meta),
                    },
                ))
            })
            .collect()
    }

    /// Each sub-topology whose stamp moved, or whose floor moved at the
    /// last barrier, hears its stamp as a watermark. Timers fire against
    /// the floor, so an event is also owed the barrier after the floor
    /// moved, or timers due under the last floor would wait for the
    /// watermark to move.
    fn send_stamps_as_watermarks(&self, stamps: &[Watermark]) -> Result<(), RuntimeError> {
        for (st, time) in self.times.iter().enumerate() {
            if stamps[st] > time.recent[1] || time.recent[0] != time.recent[1] {
                for lane in &self.lanes {
                    send(
                        lane,
                        LaneMsg::Watermark {
                            subtopology: st,
                            watermark: stamps[st],
                        },
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Moves the barrier in flight on: takes the lanes' crossings, hands the
    /// transaction to the committer once every lane crossed, and finishes
    /// the barrier once it committed. Waits at most `wait` for each step.
    /// Without a barrier in flight, only a lane's failure is looked for.
    pub(in crate::engine) fn advance_barrier(
        &mut self,
        wait: Duration,
    ) -> Result<(), RuntimeError> {
        self.check_failures()?;
        let Some(inflight) = &mut self.inflight else {
            return Ok(());
        };
        while inflight.crossing > 0 {
            // A lane that failed never crosses: its failure is looked for
            // whenever a crossing is not there yet, and it is the reason
            // once no lane is left to cross.
            let crossed = if wait.is_zero() {
                match inflight.crossings.try_recv() {
                    Ok(c) => c,
                    Err(TryRecvError::Empty) => return self.check_failures(),
                    Err(TryRecvError::Disconnected) => return Err(self.failure_or_gone()),
                }
            } else {
                match inflight.crossings.recv_timeout(wait) {
                    Ok(c) => c,
                    Err(RecvTimeoutError::Timeout) => return self.check_failures(),
                    Err(RecvTimeoutError::Disconnected) => return Err(self.failure_or_gone()),
                }
            };
            debug_assert_eq!(crossed.barrier, inflight.barrier);
            inflight.commits.extend(crossed.commits);
            inflight.crossing -= 1;
            if inflight.crossing == 0 {
                self.submit_commit()?;
                break;
            }
        }
        if let Some(done) = self.committer.answer(wait)? {
            self.on_committed(done)?;
        }
        Ok(())
    }

    /// Waits until the barrier in flight (if any) committed. `false` if the
    /// application was halted meanwhile (nothing more is committed then).
    pub(in crate::engine) fn finish_barrier(&mut self) -> Result<bool, RuntimeError> {
        while self.inflight.is_some() {
            if self.shared.halt.load(Ordering::Acquire) {
                return Ok(false);
            }
            self.advance_barrier(Duration::from_millis(20))?;
        }
        Ok(true)
    }

    /// Every lane crossed the barrier in flight: its transaction, in task
    /// order whatever the lane count (the same output sequence), goes to
    /// the committer with the stamp ring and the repartition markers.
    pub(in crate::engine) fn submit_commit(&mut self) -> Result<(), RuntimeError> {
        let inflight = self.inflight.as_mut().expect("a barrier in flight");
        let mut commits = std::mem::take(&mut inflight.commits);
        commits.sort_by_key(|(id, _)| *id);
        let (n, flush) = (inflight.barrier, inflight.flush);
        let stamps = inflight.stamps.clone();
        let offsets = std::mem::take(&mut inflight.offsets);
        let stamp_records = self
            .stamps
            .record(n, &stamps, flush, inflight.now.as_millis())?;
        // After the epoch's records, a marker carrying W(N) of the writing
        // sub-topology to every partition of each repartition topic it writes
        // (docs/barriers.md#repartition-hops); only when that stamp moved: a
        // repeated marker says nothing new and would keep an idle application
        // cutting barriers.
        let mut markers = Vec::new();
        for sink in self.plan.sinks.values().filter(|s| s.internal) {
            let stamp = stamps[sink.writer];
            if stamp <= self.times[sink.writer].last_marker_sent {
                continue;
            }
            let record = marker(stamp.as_millis());
            for p in 0..sink.partitions {
                markers.push((TopicPartition::new(&*sink.log_name, p), record.clone()));
            }
        }
        for (time, &stamp) in self.times.iter_mut().zip(stamps.iter()) {
            time.last_marker_sent.advance_to(stamp);
            time.recent = [time.recent[1], stamp];
        }
        self.committer.submit(CommitJob {
            barrier: n,
            commits,
            markers,
            stamp_records,
            offsets,
        })
    }

    /// Transaction N committed: barrier N is done, and N+1 may be cut once
    /// the cadence says so (counted from N's cut).
    pub(in crate::engine) fn on_committed(&mut self, done: CommitDone) -> Result<(), RuntimeError> {
        let inflight = self.inflight.take().expect("a barrier in flight");
        debug_assert_eq!(done.barrier, inflight.barrier);
        done.result?;
        let n = inflight.barrier;
        self.cadence.on_commit(inflight.cut, done.took);
        let interval = (self.barrier_cut_at.replace(inflight.cut)).map(|last| inflight.cut - last);
        self.shared.metrics.on_barrier(
            n,
            inflight.late_at_cut,
            interval,
            done.at.saturating_duration_since(inflight.cut),
        );
        self.barrier = n;
        {
            let mut committed = self.shared.committed.lock().expect("committed lock");
            for (tp, om) in &done.offsets {
                committed.insert(tp.clone(), om.offset.0);
            }
        }
        let offsets = done
            .offsets
            .iter()
            .map(|(tp, om)| (tp.clone(), om.offset.0));
        self.shared
            .committed_barriers
            .committed(n, offsets.collect());
        self.upkeep.after_commit(&done.offsets);
        self.timeline.barrier_committed(BarrierTiming {
            barrier: n,
            stamps: inflight.stamps.to_vec(),
            flush: inflight.flush,
            cut: inflight.cut,
            committed: done.at,
        });
        self.shared
            .timeline
            .lock()
            .expect("timeline lock")
            .append(&mut self.timeline);
        self.shared.barriers.fetch_add(1, Ordering::AcqRel);
        tracing::debug!(barrier = n, stamps = ?inflight.stamps, flush = inflight.flush, "barrier committed");
        Ok(())
    }
}

pub(in crate::engine) fn lane_failed(LaneFailed { lane, error }: LaneFailed) -> RuntimeError {
    tracing::error!(lane, error = %error, "record lane failed");
    error
}

impl<L: Log + 'static> Engine<L> {
    /// Every lane hung up: the failure one reported, if any, says why.
    fn failure_or_gone(&self) -> RuntimeError {
        self.failures
            .try_recv()
            .map_or_else(|_| lanes_gone(), lane_failed)
    }
}

fn lanes_gone() -> RuntimeError {
    RuntimeError::ThreadDied {
        thread: "lane".into(),
        reason: "hung up before crossing a barrier".into(),
    }
}
