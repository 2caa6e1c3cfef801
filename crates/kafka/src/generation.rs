//! [`Generations`]: per consumer group, the group metadata (generation and
//! member id) of this log's member, shared between the member and the
//! producers (KIP-447), and the member's way to commit offsets outside a
//! transaction (at-least-once).
//!
//! Owns: the slots and who may fill or clear them. A [`KafkaMember`] fills
//! its group's slot on every assignment and clears it when it leaves; a
//! producer adding offsets to a transaction reads it, so the broker checks
//! those offsets against the group's current generation and refuses a
//! zombie of an older one. An at-least-once commit goes through the
//! member's own consumer ([`MemberCommit`]) for the same reason. Knows
//! nothing of transactions, rebalances or streams: it only holds what the
//! member last saw.
//!
//! [`KafkaMember`]: crate::KafkaMember

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use rdkafka::TopicPartitionList;
use rdkafka::consumer::ConsumerGroupMetadata;
use rdkafka::error::KafkaResult;

/// A member's commit of offsets outside any transaction, as the member (in
/// its current generation), waiting for the group's answer.
pub(crate) trait MemberCommit: Send + Sync {
    fn commit_offsets(&self, offsets: &TopicPartitionList) -> KafkaResult<()>;
}

/// Which member filled a slot: a member clears the slot only if it is
/// still its own (a later member of the same group on the same log may
/// have replaced it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemberToken(u64);

impl MemberToken {
    pub(crate) fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        MemberToken(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

type Slot = Option<(MemberToken, Arc<ConsumerGroupMetadata>)>;

/// Per group, the member that commits its offsets outside transactions.
type Committers = HashMap<String, (MemberToken, Weak<dyn MemberCommit>)>;

/// The group metadata of the members of one log, by group. Cloning shares it.
#[derive(Clone, Default)]
pub(crate) struct Generations(Arc<Mutex<HashMap<String, Slot>>>, Arc<Mutex<Committers>>);

impl std::fmt::Debug for Generations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let groups: Vec<String> = self.lock().keys().cloned().collect();
        f.debug_struct("Generations")
            .field("groups", &groups)
            .finish()
    }
}

impl Generations {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        // A panic while holding the lock leaves a map that is still whole.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `member` of `group` was just assigned its partitions in the
    /// generation `metadata` carries.
    pub(crate) fn set(&self, group: &str, member: MemberToken, metadata: ConsumerGroupMetadata) {
        self.lock()
            .insert(group.to_owned(), Some((member, Arc::new(metadata))));
    }

    /// `member` joined `group`: offsets of the group committed outside a
    /// transaction go through `commit` from now on.
    pub(crate) fn register(
        &self,
        group: &str,
        member: MemberToken,
        commit: Weak<dyn MemberCommit>,
    ) {
        self.committers().insert(group.to_owned(), (member, commit));
    }

    fn committers(&self) -> std::sync::MutexGuard<'_, Committers> {
        self.1
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `member` left `group`: its slot is emptied unless another member
    /// has filled it since.
    pub(crate) fn clear(&self, group: &str, member: MemberToken) {
        if let Some(slot) = self.lock().get_mut(group)
            && slot.as_ref().is_some_and(|(m, _)| *m == member)
        {
            *slot = None;
        }
        let mut committers = self.committers();
        if committers.get(group).is_some_and(|(m, _)| *m == member) {
            committers.remove(group);
        }
    }

    /// The member of `group` on this log that commits its offsets, if it
    /// has one.
    pub(crate) fn committer(&self, group: &str) -> Option<Arc<dyn MemberCommit>> {
        self.committers().get(group).and_then(|(_, c)| c.upgrade())
    }

    /// The metadata of the member of `group` on this log, if it has one.
    pub(crate) fn current(&self, group: &str) -> Option<Arc<ConsumerGroupMetadata>> {
        self.lock()
            .get(group)
            .and_then(|s| s.as_ref().map(|(_, md)| md.clone()))
    }
}

#[cfg(test)]
mod tests {
    use rdkafka::ClientConfig;
    use rdkafka::consumer::{BaseConsumer, Consumer as _};

    use super::*;

    /// Metadata of a client of `group` (it never needs a broker for this).
    fn metadata(group: &str) -> ConsumerGroupMetadata {
        let c: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", "127.0.0.1:9")
            .set("group.id", group)
            .create()
            .expect("a client");
        c.group_metadata().expect("group metadata")
    }

    #[test]
    fn a_member_clears_only_its_own_slot() {
        let generations = Generations::default();
        let (first, second) = (MemberToken::next(), MemberToken::next());
        assert!(generations.current("g").is_none());
        generations.set("g", first, metadata("g"));
        assert!(generations.current("g").is_some());
        assert!(generations.current("other").is_none());
        // A second member of the same group on the same log replaces the
        // first; the first leaving does not empty the second's slot.
        generations.set("g", second, metadata("g"));
        generations.clear("g", first);
        assert!(generations.current("g").is_some());
        generations.clear("g", second);
        assert!(generations.current("g").is_none());
    }
}
