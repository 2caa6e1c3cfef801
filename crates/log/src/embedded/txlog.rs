//! The transaction log: the single file whose last durable frame decides
//! what is committed.
//!
//! Owns: [`Meta`] (topics, committed end and log start of every partition,
//! group offsets, producer epochs) and the [`Entry`] frames that change it,
//! with [`Meta::check`], the rules a replayed entry must satisfy. A commit is
//! visible exactly when its [`Entry::Commit`] frame is durable; segment data
//! beyond a partition's committed end is garbage to be truncated.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use super::format::{Cursor, Malformed, put_str};
use crate::types::{
    CleanupPolicy, Offset, OffsetAndMetadata, Partition, Retention, TopicPartition, TopicShape,
    TopicSpec,
};

/// The committed state, rebuilt on open by replaying the transaction log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Meta {
    pub(crate) topics: BTreeMap<String, TopicSpec>,
    pub(crate) ends: HashMap<TopicPartition, u64>,
    pub(crate) offsets: HashMap<(String, TopicPartition), OffsetAndMetadata>,
    pub(crate) producers: HashMap<String, u32>,
    pub(crate) next_txn: u64,
    /// First offset kept by retention; absent means 0.
    pub(crate) starts: HashMap<TopicPartition, u64>,
}

/// One part of a commit: the records of one partition at `[base, end)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommitPart {
    pub(crate) tp: TopicPartition,
    pub(crate) base: u64,
    pub(crate) end: u64,
}

/// A transaction-log frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    /// The whole state; first frame of every rotated log file.
    Checkpoint(Meta),
    TopicCreated(TopicSpec),
    ProducerInit {
        tid: String,
        epoch: u32,
    },
    Commit {
        txn: u64,
        tid: String,
        epoch: u32,
        parts: Vec<CommitPart>,
        offsets: Vec<(String, TopicPartition, OffsetAndMetadata)>,
    },
    /// Retention dropped every segment below `start`; written (and synced)
    /// before the files are removed.
    LogStart {
        tp: TopicPartition,
        start: u64,
    },
}

const CHECKPOINT: u8 = 1;
const TOPIC: u8 = 2;
const PRODUCER: u8 = 3;
const COMMIT: u8 = 4;
const LOG_START: u8 = 5;

impl Meta {
    pub(crate) fn apply(&mut self, e: &Entry) {
        match e {
            Entry::Checkpoint(m) => *self = m.clone(),
            Entry::TopicCreated(spec) => {
                for p in 0..spec.shape.partitions {
                    self.ends
                        .insert(TopicPartition::new(spec.name.clone(), p), 0);
                }
                self.topics.insert(spec.name.clone(), spec.clone());
            }
            Entry::ProducerInit { tid, epoch } => {
                self.producers.insert(tid.clone(), *epoch);
            }
            Entry::Commit {
                txn,
                parts,
                offsets,
                ..
            } => {
                for p in parts {
                    self.ends.insert(p.tp.clone(), p.end);
                }
                for (g, tp, om) in offsets {
                    self.offsets.insert((g.clone(), tp.clone()), om.clone());
                }
                self.next_txn = self.next_txn.max(txn.saturating_add(1));
            }
            Entry::LogStart { tp, start } => {
                self.starts.insert(tp.clone(), *start);
            }
        }
    }

    /// Why `e` cannot follow this state, if it cannot. Replay runs every
    /// entry read back through this before applying it: a checksum only
    /// proves the bytes are the ones written, not that they make sense.
    pub(crate) fn check(&self, e: &Entry) -> Result<(), String> {
        match e {
            Entry::Checkpoint(m) => {
                for spec in m.topics.values() {
                    check_spec(spec)?;
                }
                for (tp, end) in &m.ends {
                    m.check_known(tp)?;
                    if m.starts.get(tp).is_some_and(|s| s > end) {
                        return Err(format!("partition {tp} starts past its end {end}"));
                    }
                }
                for (_, tp) in m.offsets.keys() {
                    m.check_known(tp)?;
                }
                Ok(())
            }
            Entry::TopicCreated(spec) => {
                check_spec(spec)?;
                if self.topics.contains_key(&spec.name) {
                    return Err(format!("topic {:?} created twice", spec.name));
                }
                Ok(())
            }
            Entry::ProducerInit { tid, epoch } => {
                let expected = self.producers.get(tid).map_or(0, |e| e.wrapping_add(1));
                if *epoch == expected {
                    Ok(())
                } else {
                    Err(format!(
                        "producer {tid:?} takes epoch {epoch} where {expected} is next"
                    ))
                }
            }
            Entry::Commit {
                txn,
                tid,
                epoch,
                parts,
                offsets,
            } => self.check_commit(*txn, tid, *epoch, parts, offsets),
            Entry::LogStart { tp, start } => {
                let end = self.check_known(tp)?;
                let old = self.starts.get(tp).copied().unwrap_or(0);
                if *start < old || *start > end {
                    return Err(format!(
                        "partition {tp} log start moves from {old} to {start} (end {end})"
                    ));
                }
                Ok(())
            }
        }
    }

    /// Why a commit cannot follow this state, if it cannot: it must be the
    /// next transaction, by its producer's current epoch, and append each
    /// partition once, at its end.
    fn check_commit(
        &self,
        txn: u64,
        tid: &str,
        epoch: u32,
        parts: &[CommitPart],
        offsets: &[(String, TopicPartition, OffsetAndMetadata)],
    ) -> Result<(), String> {
        if txn != self.next_txn || txn.checked_add(1).is_none() {
            return Err(format!(
                "commit of transaction {txn} where {} is next",
                self.next_txn
            ));
        }
        // An empty id is a plain producer's flush or a commit of
        // offsets alone: nothing fences those.
        if !tid.is_empty() && self.producers.get(tid) != Some(&epoch) {
            return Err(format!(
                "commit by producer {tid:?} epoch {epoch}, which is not current"
            ));
        }
        for (i, p) in parts.iter().enumerate() {
            let end = self.check_known(&p.tp)?;
            if p.base != end || p.end < p.base || parts[..i].iter().any(|q| q.tp == p.tp) {
                return Err(format!(
                    "commit appends {}..{} to partition {} whose end is {end}",
                    p.base, p.end, p.tp
                ));
            }
        }
        for (_, tp, _) in offsets {
            self.check_known(tp)?;
        }
        Ok(())
    }

    /// The committed end of a partition of a known topic.
    fn check_known(&self, tp: &TopicPartition) -> Result<u64, String> {
        self.ends
            .get(tp)
            .copied()
            .filter(|_| {
                self.topics
                    .get(&tp.topic)
                    .is_some_and(|s| tp.partition.0 < s.shape.partitions)
            })
            .ok_or_else(|| format!("partition {tp} is not a partition of a known topic"))
    }
}

fn check_spec(spec: &TopicSpec) -> Result<(), String> {
    match spec.invalid() {
        Some(why) => Err(format!("topic {:?}: {why}", spec.name)),
        None => Ok(()),
    }
}

fn put_spec(b: &mut Vec<u8>, s: &TopicSpec) {
    put_str(b, &s.name);
    b.extend_from_slice(&s.shape.partitions.to_le_bytes());
    b.push(match s.shape.cleanup {
        CleanupPolicy::Delete => 0,
        CleanupPolicy::Compact => 1,
        CleanupPolicy::CompactDelete => 2,
    });
    b.extend_from_slice(&s.retention.bytes.unwrap_or(u64::MAX).to_le_bytes());
    let ms = s.retention.time.map_or(u64::MAX, |d| {
        u64::try_from(d.as_millis()).unwrap_or(u64::MAX - 1)
    });
    b.extend_from_slice(&ms.to_le_bytes());
}

fn get_spec(c: &mut Cursor<'_>) -> Result<TopicSpec, Malformed> {
    let name = c.str()?;
    let partitions = c.u32()?;
    let cleanup = match c.u8()? {
        0 => CleanupPolicy::Delete,
        1 => CleanupPolicy::Compact,
        2 => CleanupPolicy::CompactDelete,
        _ => return Err(Malformed("unknown cleanup policy")),
    };
    let bytes = c.u64()?;
    let ms = c.u64()?;
    Ok(TopicSpec {
        name,
        shape: TopicShape::new(partitions, cleanup),
        retention: Retention {
            bytes: (bytes != u64::MAX).then_some(bytes),
            time: (ms != u64::MAX).then(|| Duration::from_millis(ms)),
        },
    })
}

fn put_tp(b: &mut Vec<u8>, tp: &TopicPartition) {
    put_str(b, &tp.topic);
    b.extend_from_slice(&tp.partition.0.to_le_bytes());
}

fn get_tp(c: &mut Cursor<'_>) -> Result<TopicPartition, Malformed> {
    Ok(TopicPartition {
        topic: c.str()?,
        partition: Partition(c.u32()?),
    })
}

fn put_offset(b: &mut Vec<u8>, g: &str, tp: &TopicPartition, om: &OffsetAndMetadata) {
    put_str(b, g);
    put_tp(b, tp);
    b.extend_from_slice(&om.offset.0.to_le_bytes());
    put_str(b, &om.metadata);
}

fn get_offset(
    c: &mut Cursor<'_>,
) -> Result<(String, TopicPartition, OffsetAndMetadata), Malformed> {
    let g = c.str()?;
    let tp = get_tp(c)?;
    let offset = Offset(c.u64()?);
    let metadata = c.str()?;
    Ok((g, tp, OffsetAndMetadata { offset, metadata }))
}

impl Entry {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64);
        match self {
            Entry::Checkpoint(m) => {
                b.push(CHECKPOINT);
                b.extend_from_slice(&m.next_txn.to_le_bytes());
                b.extend_from_slice(&(m.topics.len() as u32).to_le_bytes());
                for s in m.topics.values() {
                    put_spec(&mut b, s);
                }
                let mut ends: Vec<_> = m.ends.iter().collect();
                ends.sort();
                b.extend_from_slice(&(ends.len() as u32).to_le_bytes());
                for (tp, end) in ends {
                    put_tp(&mut b, tp);
                    b.extend_from_slice(&end.to_le_bytes());
                }
                let mut offs: Vec<_> = m.offsets.iter().collect();
                offs.sort_by(|a, b| a.0.cmp(b.0));
                b.extend_from_slice(&(offs.len() as u32).to_le_bytes());
                for ((g, tp), om) in offs {
                    put_offset(&mut b, g, tp, om);
                }
                let mut prods: Vec<_> = m.producers.iter().collect();
                prods.sort();
                b.extend_from_slice(&(prods.len() as u32).to_le_bytes());
                for (tid, epoch) in prods {
                    put_str(&mut b, tid);
                    b.extend_from_slice(&epoch.to_le_bytes());
                }
                let mut starts: Vec<_> = m.starts.iter().collect();
                starts.sort();
                b.extend_from_slice(&(starts.len() as u32).to_le_bytes());
                for (tp, start) in starts {
                    put_tp(&mut b, tp);
                    b.extend_from_slice(&start.to_le_bytes());
                }
            }
            Entry::TopicCreated(s) => {
                b.push(TOPIC);
                put_spec(&mut b, s);
            }
            Entry::ProducerInit { tid, epoch } => {
                b.push(PRODUCER);
                put_str(&mut b, tid);
                b.extend_from_slice(&epoch.to_le_bytes());
            }
            Entry::Commit {
                txn,
                tid,
                epoch,
                parts,
                offsets,
            } => {
                b.push(COMMIT);
                b.extend_from_slice(&txn.to_le_bytes());
                put_str(&mut b, tid);
                b.extend_from_slice(&epoch.to_le_bytes());
                b.extend_from_slice(&(parts.len() as u32).to_le_bytes());
                for p in parts {
                    put_tp(&mut b, &p.tp);
                    b.extend_from_slice(&p.base.to_le_bytes());
                    b.extend_from_slice(&p.end.to_le_bytes());
                }
                b.extend_from_slice(&(offsets.len() as u32).to_le_bytes());
                for (g, tp, om) in offsets {
                    put_offset(&mut b, g, tp, om);
                }
            }
            Entry::LogStart { tp, start } => {
                b.push(LOG_START);
                put_tp(&mut b, tp);
                b.extend_from_slice(&start.to_le_bytes());
            }
        }
        b
    }

    pub(crate) fn decode(body: &[u8]) -> Result<Entry, Malformed> {
        let mut c = Cursor { b: body };
        let e = match c.u8()? {
            CHECKPOINT => {
                let mut m = Meta {
                    next_txn: c.u64()?,
                    ..Meta::default()
                };
                for _ in 0..c.u32()? {
                    let s = get_spec(&mut c)?;
                    m.topics.insert(s.name.clone(), s);
                }
                for _ in 0..c.u32()? {
                    let tp = get_tp(&mut c)?;
                    m.ends.insert(tp, c.u64()?);
                }
                for _ in 0..c.u32()? {
                    let (g, tp, om) = get_offset(&mut c)?;
                    m.offsets.insert((g, tp), om);
                }
                for _ in 0..c.u32()? {
                    let tid = c.str()?;
                    m.producers.insert(tid, c.u32()?);
                }
                // Log starts (absent in checkpoints written before retention
                // was recorded).
                if !c.b.is_empty() {
                    for _ in 0..c.u32()? {
                        let tp = get_tp(&mut c)?;
                        m.starts.insert(tp, c.u64()?);
                    }
                }
                Entry::Checkpoint(m)
            }
            TOPIC => Entry::TopicCreated(get_spec(&mut c)?),
            PRODUCER => Entry::ProducerInit {
                tid: c.str()?,
                epoch: c.u32()?,
            },
            COMMIT => {
                let txn = c.u64()?;
                let tid = c.str()?;
                let epoch = c.u32()?;
                let mut parts = Vec::new();
                for _ in 0..c.u32()? {
                    let tp = get_tp(&mut c)?;
                    parts.push(CommitPart {
                        tp,
                        base: c.u64()?,
                        end: c.u64()?,
                    });
                }
                let mut offsets = Vec::new();
                for _ in 0..c.u32()? {
                    offsets.push(get_offset(&mut c)?);
                }
                Entry::Commit {
                    txn,
                    tid,
                    epoch,
                    parts,
                    offsets,
                }
            }
            LOG_START => Entry::LogStart {
                tp: get_tp(&mut c)?,
                start: c.u64()?,
            },
            _ => return Err(Malformed("unknown transaction-log entry kind")),
        };
        if !c.b.is_empty() {
            return Err(Malformed("trailing bytes in a transaction-log entry"));
        }
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        let spec = TopicSpec::new("t", 2)
            .compacted()
            .with_retention(Retention {
                bytes: Some(10),
                time: None,
            });
        let commit = Entry::Commit {
            txn: 0,
            tid: "app-0".into(),
            epoch: 0,
            parts: vec![CommitPart {
                tp: TopicPartition::new("t", 1),
                base: 0,
                end: 9,
            }],
            offsets: vec![(
                "g".into(),
                TopicPartition::new("t", 0),
                OffsetAndMetadata {
                    offset: Offset(5),
                    metadata: "AgAAAAAAAAPo".into(),
                },
            )],
        };
        let mut m = Meta::default();
        for e in [
            Entry::TopicCreated(spec),
            Entry::ProducerInit {
                tid: "app-0".into(),
                epoch: 0,
            },
            commit,
            Entry::LogStart {
                tp: TopicPartition::new("t", 1),
                start: 4,
            },
        ] {
            assert_eq!(Entry::decode(&e.encode()).unwrap(), e);
            assert_eq!(m.check(&e), Ok(()), "{e:?}");
            m.apply(&e);
        }
        let cp = Entry::Checkpoint(m.clone());
        assert_eq!(Entry::decode(&cp.encode()).unwrap(), cp);
        assert_eq!(m.next_txn, 1);
        assert_eq!(m.ends[&TopicPartition::new("t", 1)], 9);
    }

    #[test]
    fn a_compact_and_delete_topic_round_trips_with_its_retention() {
        let spec = TopicSpec::new("w", 3).compacted_with_retention(Duration::from_millis(71_000));
        let e = Entry::TopicCreated(spec.clone());
        assert_eq!(Entry::decode(&e.encode()).unwrap(), e);
        assert_eq!(spec.shape.cleanup, CleanupPolicy::CompactDelete);
        assert_eq!(spec.retention.time, Some(Duration::from_millis(71_000)));
    }
}

#[cfg(test)]
mod replay_checks {
    use super::*;

    fn with_topic() -> Meta {
        let mut m = Meta::default();
        let e = Entry::TopicCreated(TopicSpec::new("t", 1));
        m.apply(&e);
        m.apply(&Entry::ProducerInit {
            tid: "p".into(),
            epoch: 0,
        });
        m
    }

    fn commit(txn: u64, base: u64, end: u64) -> Entry {
        Entry::Commit {
            txn,
            tid: "p".into(),
            epoch: 0,
            parts: vec![CommitPart {
                tp: TopicPartition::new("t", 0),
                base,
                end,
            }],
            offsets: Vec::new(),
        }
    }

    #[test]
    fn entries_that_do_not_follow_the_state_are_refused() {
        let m = with_topic();
        assert_eq!(m.check(&commit(0, 0, 3)), Ok(()));
        for bad in [
            commit(1, 0, 3),
            commit(u64::MAX, 0, 3),
            commit(0, 1, 3),
            Entry::TopicCreated(TopicSpec::new("t", 1)),
            Entry::TopicCreated(TopicSpec::new("../x", 1)),
            Entry::TopicCreated(TopicSpec::new("z", 0)),
            Entry::ProducerInit {
                tid: "p".into(),
                epoch: 5,
            },
            Entry::LogStart {
                tp: TopicPartition::new("t", 0),
                start: 1,
            },
            Entry::LogStart {
                tp: TopicPartition::new("u", 0),
                start: 0,
            },
        ] {
            assert!(m.check(&bad).is_err(), "{bad:?}");
        }
        let mut top = with_topic();
        top.next_txn = u64::MAX;
        assert!(
            top.check(&commit(u64::MAX, 0, 1)).is_err(),
            "no txn past u64::MAX"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::fuzz_cases()))]

        /// Arbitrary entry bodies (as if behind a valid checksum), and valid
        /// entries with bytes overwritten: an error or an entry that is
        /// checked against a state and applied only if it passes, never a
        /// panic.
        #[test]
        fn arbitrary_entries_decode_check_and_apply_without_panic(
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256),
            kind in 1u8..=5,
            edits in proptest::collection::vec((proptest::prelude::any::<usize>(), proptest::prelude::any::<u8>()), 0..6),
        ) {
            let mut meta = with_topic();
            let mut kinded = body.clone();
            kinded.insert(0, kind);
            let mut edited = commit(0, 0, 3).encode();
            for (at, v) in edits {
                let n = edited.len();
                edited[at % n] = v;
            }
            for b in [body, kinded, edited] {
                if let Ok(e) = Entry::decode(&b) {
                    if meta.check(&e).is_ok() {
                        meta.apply(&e);
                    }
                    proptest::prop_assert_eq!(Entry::decode(&e.encode()).ok(), Some(e));
                }
            }
        }
    }
}
