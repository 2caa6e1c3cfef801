//! Consumer-group membership: which partitions of a set of topics this
//! member owns, and when that changes.
//!
//! Owns: [`GroupMember`] (poll for [`GroupEvent`]s, release what a
//! rebalance revokes, describe the group), [`GroupEvent`],
//! [`MemberAssignment`], and [`SoleMember`], the member of a
//! log that has no group coordination (the embedded log): it owns every
//! partition of its topics from the start, and nothing ever changes. A
//! member never reads records: the partitions it owns are read by an
//! ordinary [`crate::Consumer`], so membership and fetching stay apart.
//! Must never know streams, tasks, watermarks or which backend is behind it.

use std::fmt::Debug;
use std::time::Duration;

use crate::error::LogError;
use crate::types::{OffsetAndMetadata, TopicPartition};

/// A change of what a member owns.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GroupEvent {
    /// The group gave this member these partitions (its whole assignment).
    Assigned(Vec<TopicPartition>),
    /// The group takes these partitions back. The member finishes their work
    /// (commits it), then calls [`GroupMember::release`]; the rebalance waits
    /// for that call, so no other member reads them before it.
    Revoked(Vec<TopicPartition>),
    /// The member lost these partitions without a revocation (it was out of
    /// the group too long): another member may own them already, so their
    /// open work must not commit. No release is needed.
    Lost(Vec<TopicPartition>),
    /// Incremental (cooperative) rebalancing: the group added these
    /// partitions to what the member owns, which it keeps. May be empty: a
    /// rebalance that gave this member nothing new.
    Added(Vec<TopicPartition>),
    /// Incremental (cooperative) rebalancing: the group takes these
    /// partitions back and the member keeps the rest. As with
    /// [`GroupEvent::Revoked`], the member finishes their work, then calls
    /// [`GroupMember::release`]; no whole assignment follows, only an
    /// [`GroupEvent::Added`] (maybe empty) once the group settles.
    Removed(Vec<TopicPartition>),
}

/// One member of a group and what it owns, as the group's description
/// shows every member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberAssignment {
    /// The member's name (the `member` it joined with).
    pub member: String,
    /// The partitions it owns in the group's current generation.
    pub partitions: Vec<TopicPartition>,
}

/// A member of a consumer group subscribed to a fixed set of topics.
/// Dropping it leaves the group.
pub trait GroupMember: Send + Debug {
    /// Serves the group protocol for at most `max_wait`, returning the next
    /// change of assignment if there is one. The first event after joining
    /// is an [`GroupEvent::Assigned`] (eager rebalancing) or an
    /// [`GroupEvent::Added`] (incremental).
    ///
    /// # Errors
    /// Backend failures, a rebalance the coordinator reported as failed.
    fn poll(&mut self, max_wait: Duration) -> Result<Option<GroupEvent>, LogError>;

    /// Gives back what the last [`GroupEvent::Revoked`] or
    /// [`GroupEvent::Removed`] named, letting the rebalance go on.
    ///
    /// # Errors
    /// Backend failures.
    fn release(&mut self) -> Result<(), LogError>;

    /// The group's committed offsets of `partitions` (stable: none that an
    /// open transaction still holds), read through this member's own
    /// connection to the group's coordinator, if the backend has one; `None`
    /// sends the caller to [`crate::Log::committed_offsets`], which may have
    /// to connect first.
    fn committed_offsets(
        &self,
        partitions: &[TopicPartition],
    ) -> Option<Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>, LogError>> {
        let _ = partitions;
        None
    }

    /// Every member of the group and what it owns now, if the backend can
    /// describe the group (`None`: it cannot). Members whose name the
    /// description does not carry are left out.
    ///
    /// # Errors
    /// Backend failures.
    fn describe_group(&self) -> Option<Result<Vec<MemberAssignment>, LogError>> {
        None
    }
}

/// The only member of its group: owns every partition of its topics, for
/// good. The member of a log without group coordination (the embedded log,
/// which one process owns: its directory lock refuses a second one).
#[derive(Debug)]
pub struct SoleMember {
    pending: Option<Vec<TopicPartition>>,
}

impl SoleMember {
    /// A member owning `partitions` (every partition of its topics: the
    /// default [`crate::Log::join_group`] lists them).
    #[must_use]
    pub fn owning(partitions: Vec<TopicPartition>) -> Self {
        SoleMember {
            pending: Some(partitions),
        }
    }
}

impl GroupMember for SoleMember {
    /// Returns at once: the assignment first, then never anything else.
    fn poll(&mut self, _max_wait: Duration) -> Result<Option<GroupEvent>, LogError> {
        Ok(self.pending.take().map(GroupEvent::Assigned))
    }

    fn release(&mut self) -> Result<(), LogError> {
        Ok(())
    }
}
