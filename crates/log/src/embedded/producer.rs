//! The embedded log's producers: the transactional one and the
//! at-least-once one.
//!
//! Owns: buffering one epoch's records and offsets in memory, and the
//! commit protocol's steps 1–4 (see the module documentation of
//! `embedded`), the segments' syncs outside the log's lock. Fencing is by epoch: each new producer for a transactional
//! id takes the next epoch, durably, and a commit from an older epoch fails.
//! The at-least-once producer is the same buffer under the empty
//! transactional id, which nothing fences: its flush is a commit of what it
//! buffered (so its records become readable at the flush, all at once,
//! which is more than at-least-once asks), and [`commit_offsets`] is a
//! commit of offsets alone.

use std::collections::HashMap;
use std::sync::Arc;

use super::format::{self, BatchBuilder};
use super::storage::DeferredSync;
use super::txlog::{CommitPart, Entry};
use super::{Shared, State};
use crate::broker::{Producer, TransactionalProducer};
use crate::error::LogError;
use crate::types::{Offset, OffsetAndMetadata, Record, RecordRef, TopicPartition};

/// Batches are cut at about this size so reads stay bounded.
const BATCH_BYTES: usize = 1 << 20;

/// Up to this many partitions written in a transaction, a send finds its
/// partition by a scan rather than by the hash index.
const LINEAR_LOOKUP: usize = 16;

/// A transactional producer of an [`EmbeddedLog`](super::EmbeddedLog).
#[derive(Debug)]
pub struct EmbeddedProducer {
    shared: Arc<Shared>,
    tid: String,
    epoch: u32,
    txn: Option<Pending>,
    /// Partition counts seen, so `send` needs no lock.
    known: HashMap<String, u32>,
}

#[derive(Debug, Default)]
struct Pending {
    /// Per partition written, its batches (sorted by partition at commit).
    batches: Vec<(TopicPartition, Vec<BatchBuilder>)>,
    /// Where each partition is in `batches`.
    index: HashMap<TopicPartition, usize>,
    /// The partition of the last send: runs of sends to one partition find
    /// it without a lookup.
    last: Option<usize>,
    offsets: Vec<(String, TopicPartition, OffsetAndMetadata)>,
}

/// The transactional id of the at-least-once producer and of offsets
/// committed alone: the transaction log checks no epoch for it.
pub(crate) const UNFENCED: &str = "";

/// An at-least-once producer of an [`EmbeddedLog`](super::EmbeddedLog):
/// no transaction to begin, and no fencing.
#[derive(Debug)]
pub struct EmbeddedPlainProducer {
    buffer: EmbeddedProducer,
}

impl EmbeddedPlainProducer {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        EmbeddedPlainProducer {
            buffer: EmbeddedProducer::new(shared, UNFENCED, 0),
        }
    }
}

impl Producer for EmbeddedPlainProducer {
    fn send(&mut self, tp: &TopicPartition, record: &Record) -> Result<(), LogError> {
        self.send_ref(tp, record.into())
    }

    fn send_ref(&mut self, tp: &TopicPartition, record: RecordRef<'_>) -> Result<(), LogError> {
        if self.buffer.txn.is_none() {
            self.buffer.txn = Some(Pending::default());
        }
        self.buffer.send_ref(tp, record)
    }

    fn flush(&mut self) -> Result<(), LogError> {
        if self.buffer.txn.is_none() {
            return Ok(());
        }
        self.buffer.commit()
    }
}

/// Commits `group`'s offsets alone, unfenced ([`crate::Log::commit_offsets`]).
pub(crate) fn commit_offsets(
    shared: Arc<Shared>,
    group: &str,
    offsets: &[(TopicPartition, OffsetAndMetadata)],
) -> Result<(), LogError> {
    let mut p = EmbeddedProducer::new(shared, UNFENCED, 0);
    p.begin()?;
    p.send_offsets(group, offsets)?;
    p.commit()
}

/// Refuses an offset past the end its partition will have once `txn`
/// commits (its committed end plus the records `txn` adds): a group
/// committed there would wait for records that may never come, and would
/// skip the ones that arrive below it.
fn check_offsets(
    st: &State,
    txn: &Pending,
    offsets: &[(TopicPartition, OffsetAndMetadata)],
) -> Result<(), LogError> {
    for (tp, om) in offsets {
        let adding: u64 = txn
            .batches
            .iter()
            .filter(|(t, _)| t == tp)
            .flat_map(|(_, batches)| batches.iter().map(BatchBuilder::offset_span))
            .sum();
        let end = st.end(tp)?.saturating_add(adding);
        if om.offset.0 > end {
            return Err(LogError::OffsetOutOfRange {
                topic: tp.topic.clone(),
                partition: tp.partition,
                offset: om.offset,
                start: Offset(st.meta.starts.get(tp).copied().unwrap_or(0)),
                end: Offset(end),
            });
        }
    }
    Ok(())
}

impl EmbeddedProducer {
    pub(crate) fn new(shared: Arc<Shared>, tid: &str, epoch: u32) -> Self {
        EmbeddedProducer {
            shared,
            tid: tid.to_owned(),
            epoch,
            txn: None,
            known: HashMap::new(),
        }
    }

    /// This producer's epoch (fencing generation).
    #[must_use]
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    fn check_epoch(&self, st: &State) -> Result<(), LogError> {
        if self.tid == UNFENCED || st.meta.producers.get(&self.tid) == Some(&self.epoch) {
            Ok(())
        } else {
            Err(LogError::Fenced {
                transactional_id: self.tid.clone(),
                epoch: self.epoch,
            })
        }
    }

    fn state_error(&self, reason: &'static str) -> LogError {
        LogError::TransactionState {
            transactional_id: self.tid.clone(),
            reason,
        }
    }

    fn check_partition(&mut self, tp: &TopicPartition) -> Result<(), LogError> {
        let count = match self.known.get(&tp.topic) {
            Some(c) => *c,
            None => {
                let st = self.shared.lock_state();
                let Some(spec) = st.meta.topics.get(&tp.topic) else {
                    return Err(LogError::UnknownTopic {
                        topic: tp.topic.clone(),
                    });
                };
                let c = spec.shape.partitions;
                drop(st);
                self.known.insert(tp.topic.clone(), c);
                c
            }
        };
        if tp.partition.0 >= count {
            return Err(LogError::UnknownPartition {
                topic: tp.topic.clone(),
                partition: tp.partition,
                partitions: count,
            });
        }
        Ok(())
    }

    /// Steps 1 and 2's first half, under the log's lock: the records
    /// written at the partitions' committed ends, and a sync of each touched
    /// segment to finish outside the lock.
    fn write_records(&self, st: &mut State, txn: &mut Pending) -> Result<Written, LogError> {
        let segment_bytes = self.shared.config.segment_bytes;
        let txn_seq = st.meta.next_txn;
        let mut parts = Vec::with_capacity(txn.batches.len());
        let mut syncs = Vec::with_capacity(txn.batches.len());
        txn.batches.sort_by(|a, b| a.0.cmp(&b.0));
        txn.index.clear();
        txn.last = None;
        for (tp, batches) in &mut txn.batches {
            let base = st.end(tp)?;
            let part = st
                .partitions
                .get_mut(tp)
                .expect("known partition has a log");
            if part.active_size() >= segment_bytes {
                part.roll(base)?;
            }
            let mut next = base;
            for b in batches.iter_mut() {
                let span = b.offset_span();
                let max_ts = b.max_ts();
                part.append(b.finish(next, txn_seq), next, span, max_ts)?;
                next += span;
            }
            syncs.push(part.sync_active_later()?);
            parts.push(CommitPart {
                tp: tp.clone(),
                base,
                end: next,
            });
        }
        Ok(Written {
            txn: txn_seq,
            parts,
            syncs,
        })
    }

    /// Steps 3 and 4, under the log's lock: the commit point, unless the
    /// producer was fenced or a partition moved while the records synced.
    fn commit_point(
        &self,
        st: &mut State,
        txn_seq: u64,
        parts: Vec<CommitPart>,
        txn: &mut Pending,
    ) -> Result<(), LogError> {
        self.check_epoch(st)?;
        // Only commits move the ends and the transaction sequence, and
        // commits run one at a time: neither moved since step 1.
        debug_assert_eq!(st.meta.next_txn, txn_seq);
        for part in &parts {
            if st.end(&part.tp)? != part.base {
                return Err(self.state_error("a partition's end moved during a commit"));
            }
        }
        let entry = Entry::Commit {
            txn: txn_seq,
            tid: self.tid.clone(),
            epoch: self.epoch,
            parts,
            offsets: std::mem::take(&mut txn.offsets),
        };
        st.txlog.append(&entry)?;
        st.meta.apply(&entry);
        Ok(())
    }
}

/// What step 1 of a commit wrote: its transaction's sequence number, the
/// parts its commit frame names, the syncs step 2 finishes.
struct Written {
    txn: u64,
    parts: Vec<CommitPart>,
    syncs: Vec<DeferredSync>,
}

impl TransactionalProducer for EmbeddedProducer {
    fn begin(&mut self) -> Result<(), LogError> {
        if self.txn.is_some() {
            return Err(self.state_error("a transaction is already open"));
        }
        self.check_epoch(&self.shared.lock_state())?;
        self.txn = Some(Pending::default());
        Ok(())
    }

    fn send(&mut self, tp: &TopicPartition, record: &Record) -> Result<(), LogError> {
        self.send_ref(tp, record.into())
    }

    fn send_ref(&mut self, tp: &TopicPartition, record: RecordRef<'_>) -> Result<(), LogError> {
        let Some(txn) = self.txn.as_ref() else {
            return Err(self.state_error("send outside a transaction"));
        };
        let at = match txn.last {
            Some(i) if txn.batches[i].0 == *tp => Some(i),
            // A few partitions: comparing partition numbers first is
            // cheaper than hashing the topic name.
            _ if txn.batches.len() <= LINEAR_LOOKUP => txn
                .batches
                .iter()
                .position(|(t, _)| t.partition == tp.partition && t.topic == tp.topic),
            _ => txn.index.get(tp).copied(),
        };
        if at.is_none() {
            self.check_partition(tp)?;
        }
        let size = format::record_size(record);
        let max = self
            .shared
            .config
            .max_record_bytes
            .min(format::MAX_RECORD_BYTES_LIMIT);
        if size > max {
            return Err(LogError::RecordTooLarge {
                topic: tp.topic.clone(),
                partition: tp.partition,
                size,
                max,
            });
        }
        let txn = self.txn.as_mut().expect("checked above");
        let i = at.unwrap_or_else(|| {
            txn.batches.push((tp.clone(), Vec::new()));
            txn.index.insert(tp.clone(), txn.batches.len() - 1);
            txn.batches.len() - 1
        });
        txn.last = Some(i);
        let batches = &mut txn.batches[i].1;
        let need_new = batches
            .last()
            .is_none_or(|b| b.len() + size > BATCH_BYTES && b.count() > 0);
        if need_new {
            batches.push(BatchBuilder::new(
                (size + 64).max(64 * 1024).min(BATCH_BYTES + size),
            ));
        }
        batches.last_mut().expect("pushed above").push(record);
        Ok(())
    }

    fn send_offsets(
        &mut self,
        group: &str,
        offsets: &[(TopicPartition, OffsetAndMetadata)],
    ) -> Result<(), LogError> {
        let Some(txn) = self.txn.as_mut() else {
            return Err(self.state_error("send_offsets outside a transaction"));
        };
        check_offsets(&self.shared.lock_state(), txn, offsets)?;
        txn.offsets.extend(
            offsets
                .iter()
                .map(|(tp, om)| (group.to_owned(), tp.clone(), om.clone())),
        );
        Ok(())
    }

    fn commit(&mut self) -> Result<(), LogError> {
        let Some(mut txn) = self.txn.take() else {
            return Err(self.state_error("commit outside a transaction"));
        };
        let shared = Arc::clone(&self.shared);
        let _order = shared.lock_commits();
        let mut st = shared.lock_state();
        self.check_epoch(&st)?;
        if txn.batches.is_empty() && txn.offsets.is_empty() {
            return Ok(());
        }
        for (_, tp, _) in &txn.offsets {
            st.end(tp)?;
        }
        let before: Vec<(TopicPartition, u64)> = txn
            .batches
            .iter()
            .map(|(tp, _)| st.end(tp).map(|e| (tp.clone(), e)))
            .collect::<Result<_, _>>()?;
        // Nothing became visible on a failure; drop what step 1 wrote.
        let undo = |st: &mut State| {
            for (tp, end) in &before {
                if let Some(p) = st.partitions.get_mut(tp) {
                    let _ = p.truncate_to(*end);
                }
            }
        };
        let written = match self.write_records(&mut st, &mut txn) {
            Ok(written) => written,
            Err(e) => {
                undo(&mut st);
                return Err(e);
            }
        };
        drop(st);
        let synced = written.syncs.into_iter().try_for_each(DeferredSync::finish);
        let mut st = shared.lock_state();
        if let Err(e) =
            synced.and_then(|()| self.commit_point(&mut st, written.txn, written.parts, &mut txn))
        {
            undo(&mut st);
            return Err(e);
        }
        // Past the commit point: a failed rotation must not turn a durable
        // commit into an error. The current generation stays valid; the next
        // commit tries again.
        if st.txlog.size > self.shared.config.txlog_rotate_bytes
            && let Err(e) = st.rotate_txlog()
        {
            tracing::warn!(error = %e, "transaction-log rotation failed; retrying after the next commit");
        }
        drop(st);
        self.shared.committed.notify_all();
        Ok(())
    }

    fn abort(&mut self) -> Result<(), LogError> {
        self.txn = None;
        self.check_epoch(&self.shared.lock_state())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::storage::{Op, faults};
    use crate::broker::{Consumer, Log, TransactionalProducer};
    use crate::embedded::{EmbeddedConfig, EmbeddedLog};
    use crate::types::{Record, Timestamp, TopicPartition, TopicSpec};

    fn log_rotating_after_every_commit(dir: &std::path::Path) -> EmbeddedLog {
        let config = EmbeddedConfig {
            txlog_rotate_bytes: 1,
            ..EmbeddedConfig::default()
        };
        let log = EmbeddedLog::open_with(dir, config).expect("open");
        if log.describe_topic("t").expect("describe").is_none() {
            log.create_topic(&TopicSpec::new("t", 1)).expect("create");
        }
        log
    }

    fn send_one(p: &mut impl TransactionalProducer, n: u8) -> Result<(), crate::LogError> {
        p.begin()?;
        p.send(
            &TopicPartition::new("t", 0),
            &Record::new(Some(&[n]), Some(&[n]), Timestamp(i64::from(n))),
        )?;
        p.commit()
    }

    fn committed_values(dir: &std::path::Path) -> Vec<u8> {
        let log = log_rotating_after_every_commit(dir);
        let mut c = log.consumer("r").expect("consumer");
        crate::contract::read_to_end(&mut c, &[TopicPartition::new("t", 0)])
            .into_iter()
            .map(|r| r.record.value.expect("value")[0])
            .collect()
    }

    fn generations(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir)
            .expect("list")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("txn-"))
            })
            .count()
    }

    /// The empty transactional id is the unfenced one (the at-least-once
    /// producer's): no transactional producer may take it, and the
    /// unfenced commits replay on reopen.
    #[test]
    fn the_unfenced_id_is_refused_to_transactions_and_its_commits_survive_a_reopen() {
        use crate::broker::Producer;
        let dir = tempfile::tempdir().expect("tempdir");
        let log = log_rotating_after_every_commit(dir.path());
        let err = log.transactional_producer("").expect_err("the empty id");
        assert!(err.to_string().contains("transactional.id"), "{err}");
        let mut plain = log.producer("plain").expect("producer");
        let mut tx = log.transactional_producer("tx").expect("producer");
        send_one(&mut tx, 1).expect("a transaction");
        plain
            .send(
                &TopicPartition::new("t", 0),
                &Record::new(None, Some(&[2]), Timestamp(2)),
            )
            .expect("send");
        plain.flush().expect("flush");
        send_one(&mut tx, 3).expect("a transaction after the flush");
        drop((plain, tx, log));
        assert_eq!(committed_values(dir.path()), vec![1, 2, 3]);
    }

    /// An error from `commit` means it did not commit: a failed rotation
    /// after the commit point is not the commit's error.
    /// Step 2 runs without the log's lock: while a commit syncs its
    /// segment, another thread fetches, and sees the partition as it was
    /// before the commit (step 1's records are invisible until the commit
    /// point). With the sync under the lock, the reader would wait for it.
    #[test]
    fn a_commit_syncs_its_records_while_readers_go_on_without_seeing_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = log_rotating_after_every_commit(dir.path());
        let mut p = log.transactional_producer("tx").expect("producer");
        send_one(&mut p, 1).expect("first commit");
        let seen_during_sync = Arc::new(std::sync::Mutex::new(None));
        let (reader_log, seen) = (log.clone(), Arc::clone(&seen_during_sync));
        faults::run_at_next(Op::Sync, ".seg", move || {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut c = reader_log.consumer("r").expect("consumer");
                c.assign(&[TopicPartition::new("t", 0)]).expect("assign");
                let fetched = c.fetch(std::time::Duration::ZERO).expect("fetch");
                let _ = tx.send(fetched.len());
            });
            let n = rx
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("a fetch goes on while a commit syncs its records");
            *seen.lock().expect("not poisoned") = Some(n);
        });
        send_one(&mut p, 2).expect("second commit");
        assert_eq!(
            *seen_during_sync.lock().expect("not poisoned"),
            Some(1),
            "only the first commit is visible while the second syncs"
        );
        drop((p, log));
        assert_eq!(committed_values(dir.path()), vec![1, 2]);
    }

    /// A producer fenced while its commit syncs (a newer one took its id
    /// then) does not commit: its records are cut off, and the log holds
    /// only what came before.
    #[test]
    fn a_producer_fenced_while_its_commit_syncs_does_not_commit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = log_rotating_after_every_commit(dir.path());
        let mut p = log.transactional_producer("tx").expect("producer");
        send_one(&mut p, 1).expect("first commit");
        let fencer = log.clone();
        faults::run_at_next(Op::Sync, ".seg", move || {
            std::thread::spawn(move || fencer.transactional_producer("tx").map(drop))
                .join()
                .expect("the fencing thread")
                .expect("a newer producer");
        });
        let err = send_one(&mut p, 2).expect_err("a fenced commit");
        assert!(err.to_string().contains("tx"), "{err}");
        drop((p, log));
        assert_eq!(committed_values(dir.path()), vec![1]);
    }

    #[test]
    fn a_failed_transaction_log_rotation_does_not_fail_a_durable_commit() {
        for (op, name) in [
            (Op::Create, ".log.tmp"),
            (Op::Write, ".log.tmp"),
            (Op::Sync, ".log.tmp"),
            (Op::Rename, ".log.tmp"),
            (Op::SyncDir, ""),
            (Op::Remove, "txn-"),
        ] {
            let dir = tempfile::tempdir().expect("tempdir");
            let log = log_rotating_after_every_commit(dir.path());
            let mut p = log.transactional_producer("tx").expect("producer");
            send_one(&mut p, 1).expect("first commit");
            faults::fail_next(op, name);
            send_one(&mut p, 2).unwrap_or_else(|e| panic!("{op:?} failing in the rotation: {e}"));
            let mut c = log.consumer("r").expect("consumer");
            c.assign(&[TopicPartition::new("t", 0)]).expect("assign");
            let seen = c.fetch(std::time::Duration::ZERO).expect("fetch").len();
            assert_eq!(seen, 2, "{op:?}: the commit is visible");
            send_one(&mut p, 3).expect("the next commit rotates again");
            drop((p, c, log));
            assert_eq!(committed_values(dir.path()), vec![1, 2, 3], "{op:?}");
            assert_eq!(
                generations(dir.path()),
                1,
                "{op:?}: old generations are gone"
            );
        }
    }

    /// A failed append of the commit frame is cut off again, so the commit
    /// that returned an error never shows up after a reopen.
    #[test]
    fn a_commit_that_returned_an_error_is_not_committed_after_a_reopen() {
        for op in [Op::Write, Op::Sync] {
            let dir = tempfile::tempdir().expect("tempdir");
            let log = EmbeddedLog::open(dir.path()).expect("open");
            log.create_topic(&TopicSpec::new("t", 1)).expect("create");
            let mut p = log.transactional_producer("tx").expect("producer");
            send_one(&mut p, 1).expect("first commit");
            faults::fail_next(op, "txn-");
            assert!(send_one(&mut p, 2).is_err(), "{op:?}");
            drop((p, log));
            assert_eq!(committed_values(dir.path()), vec![1], "{op:?}");
        }
    }

    /// Sends interleaved across partitions land in their own partitions,
    /// in order, whether the transaction finds a partition by scanning (a
    /// few partitions) or by its index (more than `LINEAR_LOOKUP`); two
    /// topics share partition numbers.
    #[test]
    fn interleaved_sends_reach_their_partitions_by_scan_and_by_index() {
        for partitions in [3u32, super::LINEAR_LOOKUP as u32 + 5] {
            let dir = tempfile::tempdir().expect("tempdir");
            let log = EmbeddedLog::open(dir.path()).expect("open");
            for topic in ["a", "b"] {
                log.create_topic(&TopicSpec::new(topic, partitions))
                    .expect("create");
            }
            let mut p = log.transactional_producer("tx").expect("producer");
            p.begin().expect("begin");
            for n in 0..4u8 {
                for part in 0..partitions {
                    for topic in ["a", "b"] {
                        let tag = format!("{topic}{part}-{n}");
                        p.send_ref(
                            &TopicPartition::new(topic, part),
                            crate::types::RecordRef {
                                key: None,
                                value: Some(tag.as_bytes()),
                                headers: &[],
                                timestamp: Timestamp(0),
                            },
                        )
                        .expect("send");
                    }
                }
            }
            p.commit().expect("commit");
            let mut c = log.consumer("r").expect("consumer");
            for topic in ["a", "b"] {
                for part in 0..partitions {
                    let values: Vec<String> =
                        crate::contract::read_to_end(&mut c, &[TopicPartition::new(topic, part)])
                            .into_iter()
                            .map(|r| {
                                String::from_utf8(r.record.value.expect("value")).expect("utf-8")
                            })
                            .collect();
                    let want: Vec<String> = (0..4).map(|n| format!("{topic}{part}-{n}")).collect();
                    assert_eq!(values, want, "{partitions} partitions, {topic}/{part}");
                }
            }
        }
    }
}
