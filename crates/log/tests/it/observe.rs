//! What a reader can observe of a log: every record of the given partitions
//! from the beginning to the end offset, one group's committed offsets, and
//! the topics. Errors and a reader that stops progressing without an error
//! (a stall) are told apart: the second is a silent loss.

use std::time::Duration;

use stoatflow_log::{
    Consumer, EmbeddedLog, Log, LogError, OffsetAndMetadata, SeekTo, TopicPartition,
};

/// One committed record as a reader sees it: topic, partition, offset, value.
pub type Seen = (String, u32, u64, Option<Vec<u8>>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub topics: Vec<(String, u32)>,
    pub records: Vec<Seen>,
    pub offsets: Vec<Option<OffsetAndMetadata>>,
}

#[derive(Debug)]
pub enum Unreadable {
    /// The log said what is wrong.
    Error(LogError),
    /// The reader stopped short of the end offset without an error.
    Stalled(String),
}

impl From<LogError> for Unreadable {
    fn from(e: LogError) -> Self {
        Unreadable::Error(e)
    }
}

/// Reads `tps` to their end and `group`'s offsets for `offsets_of`.
pub fn observe(
    log: &EmbeddedLog,
    topics: &[&str],
    tps: &[TopicPartition],
    group: &str,
    offsets_of: &[TopicPartition],
) -> Result<Observed, Unreadable> {
    let mut shapes = Vec::new();
    for t in topics {
        if let Some(shape) = log.describe_topic(t)? {
            shapes.push(((*t).to_owned(), shape.partitions));
        }
    }
    let present: Vec<TopicPartition> = tps
        .iter()
        .filter(|tp| {
            shapes
                .iter()
                .any(|(t, n)| *t == tp.topic && tp.partition.0 < *n)
        })
        .cloned()
        .collect();
    let mut c = log.consumer("observer")?;
    let ends = present
        .iter()
        .map(|tp| c.end_offset(tp))
        .collect::<Result<Vec<_>, _>>()?;
    c.assign(&present)?;
    for tp in &present {
        c.seek(tp, SeekTo::Beginning)?;
    }
    let mut records = Vec::new();
    let mut idle = 0;
    loop {
        let mut behind = None;
        for (tp, end) in present.iter().zip(&ends) {
            let pos = c.position(tp)?;
            if pos < *end {
                behind = Some(format!("{tp} at {pos} of {end}"));
            }
        }
        let Some(behind) = behind else { break };
        let got = c.fetch(Duration::ZERO)?;
        if got.is_empty() {
            idle += 1;
            if idle > 3 {
                return Err(Unreadable::Stalled(behind));
            }
        }
        records.extend(got.into_iter().map(|r| {
            (
                r.partition.topic,
                r.partition.partition.0,
                r.offset.0,
                r.record.value,
            )
        }));
    }
    records.sort();
    let offsets = log
        .committed_offsets(group, offsets_of)?
        .into_iter()
        .map(|(_, o)| o)
        .collect();
    Ok(Observed {
        topics: shapes,
        records,
        offsets,
    })
}
