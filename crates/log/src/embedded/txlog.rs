//! The transaction log: the single file whose last durable frame decides
//! what is committed.
//!
//! Owns: [`Meta`] (topics, committed end of every partition, group offsets,
//! producer epochs) and the [`Entry`] frames that change it. A commit is
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
}

const CHECKPOINT: u8 = 1;
const TOPIC: u8 = 2;
const PRODUCER: u8 = 3;
const COMMIT: u8 = 4;

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
                self.next_txn = self.next_txn.max(txn + 1);
            }
        }
    }
}

fn put_spec(b: &mut Vec<u8>, s: &TopicSpec) {
    put_str(b, &s.name);
    b.extend_from_slice(&s.shape.partitions.to_le_bytes());
    b.push(match s.shape.cleanup {
        CleanupPolicy::Delete => 0,
        CleanupPolicy::Compact => 1,
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
            txn: 7,
            tid: "app-0".into(),
            epoch: 3,
            parts: vec![CommitPart {
                tp: TopicPartition::new("t", 1),
                base: 4,
                end: 9,
            }],
            offsets: vec![(
                "g".into(),
                TopicPartition::new("in", 0),
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
                epoch: 3,
            },
            commit,
        ] {
            assert_eq!(Entry::decode(&e.encode()).unwrap(), e);
            m.apply(&e);
        }
        let cp = Entry::Checkpoint(m.clone());
        assert_eq!(Entry::decode(&cp.encode()).unwrap(), cp);
        assert_eq!(m.next_txn, 8);
        assert_eq!(m.ends[&TopicPartition::new("t", 1)], 9);
    }
}
