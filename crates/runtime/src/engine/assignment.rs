//! Which tasks this instance runs: its consumer-group membership, seen as
//! tasks (docs/scale-out.md#consumer-group).
//!
//! A task is one sub-topology on one partition number of all its sources
//! (Kafka Streams' rule). The instance joins the group named by the
//! application id subscribed to one *leading* source per sub-topology (its
//! first source); owning partition `p` of it means owning task `(st, p)`,
//! and with it partition `p` of every other source of `st` (co-partitioned:
//! checked at start) and of its changelogs. So the assignment is
//! task-aligned whatever assignor the group uses, where subscribing to
//! every source would need an assignor that pairs equal partition numbers
//! (Kafka's range assignor does, only as long as every member subscribes
//! to the same topics, and it piles the extra partitions of every topic on
//! the same members).
//!
//! A change of this instance's tasks rebuilds the engine: on a revocation
//! the engine commits its epoch at a barrier, releases, and is built again
//! from the next assignment, restoring state, floors, frontiers and
//! partition times as a restart does. Under eager rebalancing every
//! rebalance revokes everything, so every member rebuilds; under
//! incremental rebalancing ([`GroupEvent::Added`], [`GroupEvent::Removed`])
//! only a member whose tasks change does, and a member that keeps its tasks
//! goes on processing and committing as if nothing happened. Owns the
//! member across engine rebuilds; knows nothing of lanes, stores or the
//! tracker.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use stoatflow_log::{GroupEvent, GroupMember, Log, OffsetAndMetadata, TopicPartition};
use stoatflow_streams::Topology;

use crate::config::layout::log_topic_name;
use crate::engine::restore::placement::GroupView;
use crate::error::RuntimeError;
use crate::task_id::TaskId;

/// How often the poll loop serves the group protocol.
const POLL_EVERY: Duration = Duration::from_millis(20);
/// How long one wait for the first assignment serves the group. A Kafka
/// member's poll returns only at its deadline when nothing is fetched (its
/// partitions are paused), so this bounds how late an assignment is seen.
const ASSIGNMENT_POLL: Duration = Duration::from_millis(5);

/// Per sub-topology, the log name of its leading source.
pub(crate) fn leading_topics(topology: &Topology, app: &str) -> Vec<String> {
    let mut leading: Vec<Option<String>> = vec![None; topology.subtopology_count()];
    for s in topology.sources() {
        leading[s.subtopology].get_or_insert_with(|| log_topic_name(app, &s.topic, s.internal));
    }
    leading.into_iter().flatten().collect()
}

/// The tasks that owning `partitions` of the leading topics stands for.
pub(crate) fn tasks_of(leading: &[String], partitions: &[TopicPartition]) -> BTreeSet<TaskId> {
    partitions
        .iter()
        .filter_map(|tp| {
            let st = leading.iter().position(|t| *t == tp.topic)?;
            Some(TaskId {
                subtopology: st,
                partition: tp.partition.0,
            })
        })
        .collect()
}

/// What the poll loop must do after serving the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rebalance {
    /// Commit the epoch at a barrier, release, rebuild.
    CommitAndRebuild,
    /// Rebuild without committing: the tasks may belong to another
    /// instance already.
    Abandon,
    /// Go on: the group changed (incremental rebalancing) but not this
    /// engine's tasks; only what is placed from the group's view (standby
    /// copies, key metadata) is looked at again.
    Regroup,
}

/// The instance's group membership, kept across engine rebuilds.
#[derive(Debug, Default)]
pub(crate) struct Membership {
    member: Option<Box<dyn GroupMember>>,
    leading: Vec<String>,
    /// The latest assignment not yet built.
    next: Option<BTreeSet<TaskId>>,
    /// The tasks the running engine was built with.
    current: BTreeSet<TaskId>,
    /// The group took `current` back: the next engine waits for an assignment
    /// (an engine replaced after an error keeps `current`).
    revoked: bool,
    last_poll: Option<Instant>,
    /// Joined since the last [`Membership::tasks`]: no assignment built yet.
    joined_now: bool,
    /// The group took tasks back and waits for [`Membership::release`].
    owes_release: bool,
}

impl Membership {
    /// Joins the group on first use; a no-op after. The join goes on in
    /// the background (librdkafka's threads on Kafka) until [`Self::tasks`]
    /// waits for its assignment, so the engine starts it before the
    /// producer's fencing, which it reads nothing before.
    pub(crate) fn join<L: Log>(
        &mut self,
        log: &L,
        topology: &Topology,
        app: &str,
        member: &str,
    ) -> Result<(), RuntimeError> {
        if self.member.is_none() {
            self.leading = leading_topics(topology, app);
            self.member = Some(log.join_group(app, member, &self.leading)?);
            self.joined_now = true;
        }
        Ok(())
    }

    /// The tasks to build: the group is joined on first use, then this
    /// waits for an assignment (serving the group) until `stopping` says to
    /// give up, which builds nothing.
    pub(crate) fn tasks<L: Log>(
        &mut self,
        log: &L,
        topology: &Topology,
        app: &str,
        member: &str,
        stopping: impl Fn() -> bool,
    ) -> Result<BTreeSet<TaskId>, RuntimeError> {
        self.join(log, topology, app, member)?;
        // The engine that was to release failed first: its epoch is aborted,
        // nothing of it to commit.
        self.release()?;
        // After a first join the group's first assignment is awaited; a
        // rebuilt engine keeps the tasks it had unless they were revoked.
        let first = std::mem::take(&mut self.joined_now);
        if !first && self.next.is_none() && !self.revoked {
            self.next = Some(self.current.clone());
        }
        let member = self.member.as_mut().expect("joined above");
        while self.next.is_none() {
            if stopping() {
                self.next = Some(BTreeSet::new());
                break;
            }
            match member.poll(ASSIGNMENT_POLL)? {
                Some(GroupEvent::Assigned(p)) => self.next = Some(tasks_of(&self.leading, &p)),
                Some(GroupEvent::Added(p)) => {
                    let added = tasks_of(&self.leading, &p);
                    self.next = Some(self.current.union(&added).copied().collect());
                }
                // Nothing is built yet: nothing to commit.
                Some(GroupEvent::Revoked(_)) => member.release()?,
                Some(GroupEvent::Removed(p)) => {
                    for task in tasks_of(&self.leading, &p) {
                        self.current.remove(&task);
                    }
                    member.release()?;
                }
                Some(_) | None => {}
            }
        }
        self.current = self.next.take().unwrap_or_default();
        self.revoked = false;
        tracing::info!(tasks = ?self.current, "assigned tasks");
        Ok(self.current.clone())
    }

    /// Serves the group (at most every [`POLL_EVERY`]); says whether the
    /// running engine must stop for a rebalance.
    pub(crate) fn poll(&mut self) -> Result<Option<Rebalance>, RuntimeError> {
        let Some(member) = self.member.as_mut() else {
            return Ok(None);
        };
        if self.last_poll.is_some_and(|t| t.elapsed() < POLL_EVERY) {
            return Ok(None);
        }
        self.last_poll = Some(Instant::now());
        let Some(event) = member.poll(Duration::ZERO)? else {
            return Ok(None);
        };
        Ok(match event {
            GroupEvent::Assigned(p) => {
                let tasks = tasks_of(&self.leading, &p);
                let changed = tasks != self.current;
                self.next = Some(tasks);
                changed.then_some(Rebalance::CommitAndRebuild)
            }
            GroupEvent::Revoked(p) => {
                self.revoked = true;
                self.owes_release = true;
                tracing::info!(revoked = ?tasks_of(&self.leading, &p), "rebalance: committing, then releasing");
                Some(Rebalance::CommitAndRebuild)
            }
            GroupEvent::Added(p) => self.added(&p),
            GroupEvent::Removed(p) => self.removed(&p)?,
            GroupEvent::Lost(p) => {
                let lost = tasks_of(&self.leading, &p);
                for task in &lost {
                    self.current.remove(task);
                }
                self.revoked = true;
                tracing::warn!(?lost, "rebalance: tasks lost, their open epoch is dropped");
                Some(Rebalance::Abandon)
            }
            other => {
                self.revoked = true;
                tracing::warn!(event = ?other, "unknown group event; rebuilding");
                Some(Rebalance::Abandon)
            }
        })
    }

    /// Incremental rebalancing gave this member `partitions`: the engine is
    /// rebuilt with them only if they are tasks it does not run yet.
    fn added(&mut self, partitions: &[TopicPartition]) -> Option<Rebalance> {
        let added: BTreeSet<TaskId> = tasks_of(&self.leading, partitions)
            .difference(&self.current)
            .copied()
            .collect();
        if added.is_empty() {
            tracing::debug!("rebalance: no task added; going on");
            return Some(Rebalance::Regroup);
        }
        tracing::info!(
            ?added,
            "rebalance: tasks added; committing, then rebuilding"
        );
        self.next = Some(self.current.union(&added).copied().collect());
        Some(Rebalance::CommitAndRebuild)
    }

    /// Incremental rebalancing takes `partitions` back: the engine commits,
    /// releases and is rebuilt with the tasks it keeps, without waiting for
    /// the group; a removal of no task of this engine is released at once.
    fn removed(
        &mut self,
        partitions: &[TopicPartition],
    ) -> Result<Option<Rebalance>, RuntimeError> {
        let removed: BTreeSet<TaskId> = tasks_of(&self.leading, partitions)
            .intersection(&self.current)
            .copied()
            .collect();
        if removed.is_empty() {
            self.owes_release = true;
            self.release()?;
            return Ok(Some(Rebalance::Regroup));
        }
        tracing::info!(
            ?removed,
            "rebalance: tasks taken back; committing, then releasing"
        );
        self.next = Some(self.current.difference(&removed).copied().collect());
        self.owes_release = true;
        Ok(Some(Rebalance::CommitAndRebuild))
    }

    /// The group's committed offsets of `partitions` through the member's
    /// own connection, if it has one (`None`: ask the log).
    pub(crate) fn committed_offsets(
        &self,
        partitions: &[TopicPartition],
    ) -> Option<Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>, RuntimeError>> {
        let member = self.member.as_ref()?;
        member
            .committed_offsets(partitions)
            .map(|r| r.map_err(RuntimeError::from))
    }

    /// The group as every member sees it (members and the owner of each
    /// task), from the group's description; `None` when the log cannot
    /// describe its groups, the description fails, or it does not list
    /// this instance as the owner of its own tasks (a description of
    /// another generation).
    pub(crate) fn group_view(&self, me: &str) -> Option<GroupView> {
        let described = match self.member.as_ref()?.describe_group()? {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "the group could not be described; copying every task owned elsewhere");
                return None;
            }
        };
        let mut view = GroupView::default();
        for m in described {
            for task in tasks_of(&self.leading, &m.partitions) {
                view.owners.insert(task, m.member.clone());
            }
            view.members.insert(m.member);
        }
        let mine: BTreeSet<TaskId> = view
            .owners
            .iter()
            .filter(|(_, owner)| *owner == me)
            .map(|(t, _)| *t)
            .collect();
        if !view.members.contains(me) || mine != self.current {
            tracing::warn!(described = ?view, "the group's description is not of this generation; copying every task owned elsewhere");
            return None;
        }
        Some(view)
    }

    /// After the epoch committed: lets the rebalance go on, if the group
    /// took tasks back (a rebuild for added tasks releases nothing).
    pub(crate) fn release(&mut self) -> Result<(), RuntimeError> {
        if !std::mem::take(&mut self.owes_release) {
            return Ok(());
        }
        if let Some(m) = self.member.as_mut() {
            m.release()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    use stoatflow_log::LogError;

    /// A member handing out scripted events; counts its releases.
    #[derive(Debug)]
    struct Scripted {
        events: VecDeque<GroupEvent>,
        released: Arc<Mutex<usize>>,
    }

    impl GroupMember for Scripted {
        fn poll(&mut self, _max_wait: Duration) -> Result<Option<GroupEvent>, LogError> {
            Ok(self.events.pop_front())
        }

        fn release(&mut self) -> Result<(), LogError> {
            *self.released.lock().unwrap() += 1;
            Ok(())
        }
    }

    fn input(partitions: &[u32]) -> Vec<TopicPartition> {
        partitions
            .iter()
            .map(|&p| TopicPartition::new("in", p))
            .collect()
    }

    fn tasks(partitions: &[u32]) -> BTreeSet<TaskId> {
        partitions.iter().map(|&p| TaskId::new(0, p)).collect()
    }

    /// A membership running tasks `running`, its member about to hand out
    /// `events`; the member's release count.
    fn running(running: &[u32], events: Vec<GroupEvent>) -> (Membership, Arc<Mutex<usize>>) {
        let released = Arc::new(Mutex::new(0));
        let membership = Membership {
            member: Some(Box::new(Scripted {
                events: events.into(),
                released: released.clone(),
            })),
            leading: vec!["in".to_owned()],
            current: tasks(running),
            ..Membership::default()
        };
        (membership, released)
    }

    fn poll(m: &mut Membership) -> Option<Rebalance> {
        m.last_poll = None;
        m.poll().unwrap()
    }

    #[test]
    fn an_incremental_rebalance_that_changes_nothing_here_goes_on() {
        let (mut m, released) = running(&[0, 1], vec![GroupEvent::Added(vec![])]);
        assert_eq!(poll(&mut m), Some(Rebalance::Regroup));
        assert_eq!(m.next, None);
        m.release().unwrap();
        assert_eq!(*released.lock().unwrap(), 0, "nothing was taken back");
    }

    #[test]
    fn removed_tasks_commit_release_and_rebuild_with_the_rest() {
        let (mut m, released) = running(&[0, 1], vec![GroupEvent::Removed(input(&[1]))]);
        assert_eq!(poll(&mut m), Some(Rebalance::CommitAndRebuild));
        assert_eq!(*released.lock().unwrap(), 0, "released before the commit");
        m.release().unwrap();
        assert_eq!(*released.lock().unwrap(), 1);
        assert_eq!(m.next, Some(tasks(&[0])));
        assert!(
            !m.revoked,
            "the rest is built without waiting for the group"
        );
    }

    #[test]
    fn added_tasks_rebuild_with_them_and_release_nothing() {
        let (mut m, released) = running(&[0], vec![GroupEvent::Added(input(&[2]))]);
        assert_eq!(poll(&mut m), Some(Rebalance::CommitAndRebuild));
        m.release().unwrap();
        assert_eq!(*released.lock().unwrap(), 0);
        assert_eq!(m.next, Some(tasks(&[0, 2])));
    }

    #[test]
    fn owning_a_leading_partition_is_owning_that_task_only() {
        let leading = vec!["orders".to_owned(), "app-rekeyed".to_owned()];
        let assigned = [
            TopicPartition::new("orders", 4),
            TopicPartition::new("app-rekeyed", 1),
            TopicPartition::new("unrelated", 0),
        ];
        let tasks: Vec<TaskId> = tasks_of(&leading, &assigned).into_iter().collect();
        assert_eq!(
            tasks,
            [
                TaskId {
                    subtopology: 0,
                    partition: 4
                },
                TaskId {
                    subtopology: 1,
                    partition: 1
                }
            ]
        );
    }
}
