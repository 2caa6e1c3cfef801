//! The order an epoch's output records are written in
//! (docs/barriers.md#output-order): the final output of every output
//! partition is the same sequence whatever the lane count and scheduling.
//!
//! Each task's records keep their order, with one exception: the final
//! results (records an emission pass produced, marked
//! [`Emitted`](stoatflow_streams::Emitted)) go first, merged across tasks by
//! (close, key bytes, start). Every task of a sub-topology runs its pass on
//! the same frontier, so the closes an epoch emits are exactly those in
//! (previous frontier, frontier]: the epochs cut one sorted sequence into
//! consecutive pieces, and their concatenation is that sequence whatever
//! the barriers' timing, the lane count or the task a key lives on. Records
//! that are not final results (on-update output, stateless output) follow
//! in task order; across tasks their interleaving cannot be fixed by the
//! runtime, and Kafka Streams does not fix it either. (Some of them may
//! already have gone ahead of this job as early output, from tasks that
//! held no final results: see the committer. The final results' sequence,
//! and each task's order, are unchanged by that.)
//!
//! Pure: knows the epoch's commits, nothing of the producer.

use stoatflow_streams::EpochCommit;

use crate::task_id::TaskId;

/// The epoch's output records in the order they are written: (commit
/// index, record index) pairs.
pub(crate) fn output_order(commits: &[(TaskId, EpochCommit)]) -> Vec<(u32, u32)> {
    // One pass: the final results with their sort keys, the rest by place.
    // Sorted by (close, key bytes (a null key first), start), then by
    // place: the same key closing the same window in two tasks (possible
    // only after a re-key) keeps task order.
    let mut finals: Vec<(i64, Option<&[u8]>, i64, (u32, u32))> = Vec::new();
    let mut rest = Vec::new();
    for (c, (_, commit)) in commits.iter().enumerate() {
        for (r, out) in commit.outputs.iter().enumerate() {
            let at = (c as u32, r as u32);
            match out.emitted {
                Some(e) => finals.push((e.close, out.key.as_deref(), e.start, at)),
                None => rest.push(at),
            }
        }
    }
    // The stable sort finds the runs each task's pass already emitted in
    // order and merges them: about linear for a typical epoch.
    finals.sort();
    let mut order: Vec<(u32, u32)> = Vec::with_capacity(finals.len() + rest.len());
    order.extend(finals.into_iter().map(|(.., at)| at));
    order.extend(rest);
    order
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use stoatflow_streams::{Emitted, Headers, OutputRecord};

    use super::*;

    fn out(key: &str, emitted: Option<(i64, i64)>) -> OutputRecord {
        OutputRecord {
            topic: Arc::from("out"),
            key: Some(key.as_bytes().to_vec()),
            value: None,
            timestamp: 0,
            headers: Headers::empty(),
            emitted: emitted.map(|(close, start)| Emitted { close, start }),
        }
    }

    fn commit(task: u32, outputs: Vec<OutputRecord>) -> (TaskId, EpochCommit) {
        (
            TaskId::new(0, task),
            EpochCommit {
                epoch: 1,
                outputs,
                changelogs: Vec::new(),
            },
        )
    }

    fn written(commits: &[(TaskId, EpochCommit)]) -> Vec<String> {
        output_order(commits)
            .into_iter()
            .map(|(c, r)| {
                let o = &commits[c as usize].1.outputs[r as usize];
                String::from_utf8(o.key.clone().unwrap()).unwrap()
            })
            .collect()
    }

    #[test]
    fn final_results_of_several_tasks_merge_by_close_key_start_and_the_rest_follow_in_task_order() {
        let commits = vec![
            commit(
                0,
                vec![
                    out("b@20", Some((20, 10))),
                    out("x", None),
                    out("a@30", Some((30, 20))),
                ],
            ),
            commit(
                1,
                vec![
                    out("y", None),
                    out("a@20", Some((20, 10))),
                    out("c@20", Some((20, 5))),
                ],
            ),
        ];
        assert_eq!(
            written(&commits),
            ["a@20", "b@20", "c@20", "a@30", "x", "y"]
        );
    }

    #[test]
    fn where_the_epochs_cut_the_final_results_does_not_change_their_sequence() {
        // Windows closing at 10, 20, ..., 80 for keys k0..k5; key k lives on
        // task k mod tasks. However the frontiers cut them into epochs and
        // however many tasks hold them, the written sequence is the same.
        let windows: Vec<(i64, String)> = (1..=8)
            .flat_map(|w| (0..6).map(move |k| (w * 10, format!("k{k}@{w}"))))
            .collect();
        let run = |tasks: u32, frontiers: &[i64]| -> Vec<String> {
            let mut written_all = Vec::new();
            let mut from = i64::MIN;
            for &to in frontiers {
                let commits: Vec<_> = (0..tasks)
                    .map(|t| {
                        let outputs = windows
                            .iter()
                            .enumerate()
                            .filter(|(i, (close, _))| {
                                (*i as u32 % 6) % tasks == t && *close > from && *close <= to
                            })
                            // A task's own pass order need not match the
                            // merge's: reversed here.
                            .rev()
                            .map(|(_, (close, key))| out(key, Some((*close, close - 10))))
                            .collect();
                        commit(t, outputs)
                    })
                    .collect();
                written_all.extend(written(&commits));
                from = to;
            }
            written_all
        };
        let one = run(1, &[80]);
        assert_eq!(one.len(), 48);
        for (tasks, frontiers) in [
            (2, &[25, 80][..]),
            (3, &[10, 40, 41, 80]),
            (6, &[5, 15, 70, 80]),
        ] {
            assert_eq!(
                run(tasks, frontiers),
                one,
                "{tasks} tasks, frontiers {frontiers:?}"
            );
        }
    }
}
