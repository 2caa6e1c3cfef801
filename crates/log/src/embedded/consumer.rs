//! The embedded log's read-committed consumer.
//!
//! Owns: assignment and positions, and the offset-reset policy applied
//! when a position lies outside its partition's readable range (checked at
//! each fetch, as Kafka's consumer does). Everything in a segment below the
//! committed end is committed, so "read committed" is "read below the end".

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Shared, State};
use crate::broker::Consumer;
use crate::error::LogError;
use crate::types::{FetchedBatch, FetchedRecord, Offset, OffsetReset, SeekTo, TopicPartition};

/// Bytes read per partition per fetch.
const FETCH_BYTES_PER_PARTITION: usize = 1 << 20;
/// Bytes read per fetch.
const FETCH_BYTES: usize = 4 << 20;

/// A consumer of an [`EmbeddedLog`](super::EmbeddedLog).
#[derive(Debug)]
pub struct EmbeddedConsumer {
    shared: Arc<Shared>,
    group: String,
    assigned: Vec<(TopicPartition, u64)>,
    next_first: usize,
    reset: OffsetReset,
}

impl EmbeddedConsumer {
    pub(crate) fn new(shared: Arc<Shared>, group: &str) -> Self {
        let reset = shared.config.auto_offset_reset;
        EmbeddedConsumer {
            shared,
            group: group.to_owned(),
            assigned: Vec::new(),
            next_first: 0,
            reset,
        }
    }

    /// This consumer's offset-reset policy, in place of the log's
    /// [`EmbeddedConfig::auto_offset_reset`](super::EmbeddedConfig).
    #[must_use]
    pub fn with_offset_reset(mut self, reset: OffsetReset) -> Self {
        self.reset = reset;
        self
    }

    fn slot(&mut self, tp: &TopicPartition) -> Result<&mut u64, LogError> {
        self.assigned
            .iter_mut()
            .find(|(t, _)| t == tp)
            .map(|(_, pos)| pos)
            .ok_or_else(|| LogError::NotAssigned {
                topic: tp.topic.clone(),
                partition: tp.partition,
            })
    }
}

/// `pos` if it lies in the readable range of `tp` (from the log start
/// retention or a purge recorded to `end`), otherwise where `reset` moves
/// it, or its error.
fn in_range(
    st: &State,
    tp: &TopicPartition,
    pos: u64,
    end: u64,
    reset: OffsetReset,
) -> Result<u64, LogError> {
    let start = st.meta.starts.get(tp).copied().unwrap_or(0);
    reset.place(tp, pos, (start, end))
}

impl Consumer for EmbeddedConsumer {
    fn assign(&mut self, partitions: &[TopicPartition]) -> Result<(), LogError> {
        let st = self.shared.lock_state();
        let mut assigned = Vec::with_capacity(partitions.len());
        for tp in partitions {
            let part = st.partition(tp)?;
            let pos = st
                .meta
                .offsets
                .get(&(self.group.clone(), tp.clone()))
                .map_or_else(|| part.start(), |om| om.offset.0);
            assigned.push((tp.clone(), pos));
        }
        self.assigned = assigned;
        self.next_first = 0;
        Ok(())
    }

    fn seek(&mut self, tp: &TopicPartition, to: SeekTo) -> Result<(), LogError> {
        let target = {
            let st = self.shared.lock_state();
            let part = st.partition(tp)?;
            match to {
                SeekTo::Beginning => part.start(),
                SeekTo::End => st.end(tp)?,
                SeekTo::Offset(o) => o.0,
            }
        };
        *self.slot(tp)? = target;
        Ok(())
    }

    fn position(&self, tp: &TopicPartition) -> Result<Offset, LogError> {
        self.assigned
            .iter()
            .find(|(t, _)| t == tp)
            .map(|(_, pos)| Offset(*pos))
            .ok_or_else(|| LogError::NotAssigned {
                topic: tp.topic.clone(),
                partition: tp.partition,
            })
    }

    fn fetch(&mut self, max_wait: Duration) -> Result<Vec<FetchedRecord>, LogError> {
        let batches = self.fetch_batches(max_wait)?;
        Ok(batches.iter().flat_map(FetchedBatch::to_records).collect())
    }

    fn fetch_batches(&mut self, max_wait: Duration) -> Result<Vec<FetchedBatch>, LogError> {
        let deadline = Instant::now() + max_wait;
        let mut out = Vec::new();
        let mut st = self.shared.lock_state();
        loop {
            let n = self.assigned.len();
            let mut total = 0usize;
            for i in 0..n {
                let k = (self.next_first + i) % n;
                let (tp, pos) = &self.assigned[k];
                let end = st.end(tp)?;
                let pos = in_range(&st, tp, *pos, end, self.reset)?;
                self.assigned[k].1 = pos;
                let tp = &self.assigned[k].0;
                if pos >= end || total >= FETCH_BYTES {
                    continue;
                }
                let before = out.len();
                let next = st
                    .partition(tp)?
                    .read(pos, end, FETCH_BYTES_PER_PARTITION, &mut out)?;
                total += out[before..]
                    .iter()
                    .map(FetchedBatch::buffer_len)
                    .sum::<usize>();
                self.assigned[k].1 = next;
            }
            if n > 0 {
                self.next_first = (self.next_first + 1) % n;
            }
            if !out.is_empty() {
                return Ok(out);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(out);
            }
            st = self
                .shared
                .committed
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    fn end_offset(&mut self, tp: &TopicPartition) -> Result<Offset, LogError> {
        self.shared.lock_state().end(tp).map(Offset)
    }

    fn beginning_offset(&mut self, tp: &TopicPartition) -> Result<Offset, LogError> {
        let st = self.shared.lock_state();
        Ok(Offset(st.partition(tp)?.start()))
    }
}
