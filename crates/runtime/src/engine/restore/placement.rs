//! Where standby copies go (docs/scale-out.md#standbys): each task's copies
//! are placed on the `num.standby.replicas` members that rank highest for it
//! by rendezvous hashing, among the group's members other than the task's
//! owner. Every member computes the same placement from what the group's
//! description tells them all (who is in the group, who owns what), so no
//! member needs to be told where copies are, and a member joining or leaving
//! moves only the copies of the tasks it ranks on.
//!
//! Owns the ranking and nothing else; knows nothing of stores, threads or
//! the log.

use std::collections::BTreeSet;

use crate::engine::partitioner::murmur2;
pub(crate) use crate::engine::shared::GroupView;
use crate::task_id::TaskId;

/// How strongly `member` ranks for holding a copy of `task`: a hash of
/// both, stable across processes and builds (murmur2, as the partitioner).
fn rank(task: TaskId, member: &str) -> u32 {
    let mut bytes = format!("{task}").into_bytes();
    bytes.push(0);
    bytes.extend_from_slice(member.as_bytes());
    murmur2(&bytes) as u32
}

/// The members that hold a copy of `task`: the `replicas` highest-ranked
/// members other than its owner (fewer when the group has fewer).
pub(crate) fn holders(replicas: u32, task: TaskId, group: &GroupView) -> Vec<&str> {
    let owner = group.owners.get(&task).map(String::as_str);
    let mut ranked: Vec<(u32, &str)> = group
        .members
        .iter()
        .map(String::as_str)
        .filter(|m| Some(*m) != owner)
        .map(|m| (rank(task, m), m))
        .collect();
    // Highest rank first; equal ranks by name, so every member agrees.
    ranked.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    ranked
        .into_iter()
        .take(replicas as usize)
        .map(|(_, m)| m)
        .collect()
}

/// The tasks among `all` that `me` keeps a copy of.
pub(crate) fn copies_of(
    replicas: u32,
    me: &str,
    all: impl IntoIterator<Item = TaskId>,
    group: &GroupView,
) -> BTreeSet<TaskId> {
    all.into_iter()
        .filter(|t| holders(replicas, *t, group).contains(&me))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn tasks(subtopologies: usize, partitions: u32) -> Vec<TaskId> {
        (0..subtopologies)
            .flat_map(|st| (0..partitions).map(move |p| TaskId::new(st, p)))
            .collect()
    }

    /// `n` members, the tasks dealt round-robin as owners.
    fn group(n: usize, all: &[TaskId]) -> GroupView {
        let members: Vec<String> = (0..n).map(|i| format!("instance-{i}")).collect();
        GroupView {
            owners: all
                .iter()
                .enumerate()
                .map(|(i, t)| (*t, members[i % n].clone()))
                .collect(),
            members: members.into_iter().collect(),
        }
    }

    /// Per task, the members holding a copy, as each member computes its own.
    fn placement(replicas: u32, all: &[TaskId], g: &GroupView) -> BTreeMap<TaskId, Vec<String>> {
        let mut out: BTreeMap<TaskId, Vec<String>> = all.iter().map(|t| (*t, vec![])).collect();
        for m in &g.members {
            for t in copies_of(replicas, m, all.iter().copied(), g) {
                out.get_mut(&t).expect("a listed task").push(m.clone());
            }
        }
        out
    }

    #[test]
    fn each_task_has_exactly_the_asked_copies_never_on_its_owner() {
        let all = tasks(3, 12);
        for n in [2, 3, 6, 10] {
            for replicas in [1, 2] {
                let g = group(n, &all);
                for (t, holders) in placement(replicas, &all, &g) {
                    let want = (replicas as usize).min(n - 1);
                    assert_eq!(holders.len(), want, "{n} members, task {t}: {holders:?}");
                    assert!(
                        !holders.contains(&g.owners[&t]),
                        "task {t} copied on its owner"
                    );
                }
            }
        }
    }

    #[test]
    fn copies_spread_over_the_members() {
        let all = tasks(2, 60);
        let g = group(6, &all);
        let mut per_member: BTreeMap<String, usize> = BTreeMap::new();
        for holders in placement(1, &all, &g).into_values() {
            for h in holders {
                *per_member.entry(h).or_default() += 1;
            }
        }
        // 120 copies over 6 members: 20 each on average; none empty or
        // holding more than twice its share.
        assert_eq!(per_member.len(), 6, "{per_member:?}");
        assert!(
            per_member.values().all(|c| (5..=40).contains(c)),
            "{per_member:?}"
        );
    }

    #[test]
    fn a_member_joining_moves_only_copies_onto_it() {
        let all = tasks(2, 24);
        let before = group(5, &all);
        let mut after = before.clone();
        after.members.insert("instance-new".to_owned());
        let (p0, p1) = (placement(1, &all, &before), placement(1, &all, &after));
        for t in &all {
            if p0[t] != p1[t] {
                assert_eq!(p1[t], ["instance-new"], "task {t} moved elsewhere");
            }
        }
        assert!(p0 != p1, "the new member holds nothing");
    }

    #[test]
    fn a_member_leaving_moves_only_the_copies_it_held() {
        let all = tasks(2, 24);
        // The leaving member owns nothing (its tasks went elsewhere already).
        let mut before = group(5, &all);
        before.members.insert("instance-gone".to_owned());
        let after = group(5, &all);
        let (p0, p1) = (placement(1, &all, &before), placement(1, &all, &after));
        for t in &all {
            if p0[t] != p1[t] {
                assert_eq!(
                    p0[t],
                    ["instance-gone"],
                    "task {t} moved though its holder stayed"
                );
            }
        }
    }

    #[test]
    fn a_task_changing_owner_moves_at_most_its_own_copy() {
        let all = tasks(1, 12);
        let before = group(4, &all);
        let mut after = before.clone();
        let moved = TaskId::new(0, 5);
        let new_owner = placement(1, &all, &before)[&moved][0].clone();
        after.owners.insert(moved, new_owner);
        let (p0, p1) = (placement(1, &all, &before), placement(1, &all, &after));
        for t in &all {
            if *t != moved {
                assert_eq!(p0[t], p1[t], "task {t} moved with another's owner");
            }
        }
        assert_ne!(
            p1[&moved], p0[&moved],
            "the promoted copy's holder still copies"
        );
    }

    #[test]
    fn no_replicas_no_copies_and_an_unowned_task_may_go_anywhere() {
        let all = tasks(1, 4);
        let mut g = group(3, &all);
        assert!(copies_of(0, "instance-0", all.iter().copied(), &g).is_empty());
        g.owners.clear();
        for holders in placement(2, &all, &g).into_values() {
            assert_eq!(holders.len(), 2);
        }
    }
}
