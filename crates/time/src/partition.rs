//! Names for where records come from: [`SourcePartition`], [`Offset`] and the
//! tracker's dense [`PartitionIndex`].
//!
//! Owns identity only; it knows nothing of time.

use std::fmt;
use std::sync::Arc;

/// A partition of a source topic, as the watermark tracker sees it.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourcePartition {
    topic: Arc<str>,
    partition: i32,
}

impl SourcePartition {
    /// `topic`'s partition number `partition`.
    pub fn new(topic: impl Into<Arc<str>>, partition: i32) -> Self {
        SourcePartition {
            topic: topic.into(),
            partition,
        }
    }

    /// The topic name.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The partition number.
    pub fn partition(&self) -> i32 {
        self.partition
    }
}

impl fmt::Display for SourcePartition {
    /// `topic:partition`, the key format of `/watermarks`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.topic, self.partition)
    }
}

impl fmt::Debug for SourcePartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SourcePartition({self})")
    }
}

/// A record's position in its partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Offset(pub i64);

/// Dense handle of a registered partition, handed out by
/// [`crate::WatermarkTracker::register`] for the per-record fast path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionIndex(pub(crate) u32);

impl PartitionIndex {
    /// Position in registration order.
    pub fn as_usize(self) -> usize {
        self.0 as usize
    }
}
