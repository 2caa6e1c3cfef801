//! Incremental (cooperative) rebalancing on the test broker
//! (docs/scale-out.md#incremental-rebalancing): members configured with
//! `partition.assignment.strategy: cooperative-sticky` hear only what moves.
//! A second member joining takes half of the first's partitions: the first
//! is asked to give back only those (`Removed`), keeps the rest, and is
//! never handed a whole assignment again; the second is given its half
//! (`Added`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use stoatflow_kafka::KafkaLog;
use stoatflow_log::{GroupEvent, GroupMember, Log, TopicPartition, TopicSpec};

use crate::broker::TestBroker;

const GROUP: &str = "cooperative-app";
const TOPIC: &str = "cooperative-in";
const PARTITIONS: u32 = 6;

fn join(log: &KafkaLog, member: &str) -> Box<dyn GroupMember> {
    log.join_group(GROUP, member, &[TOPIC.to_owned()]).unwrap()
}

/// Serves every member in turns, applying each event to what it holds
/// (releasing what is taken back), until `done` says the holdings are
/// what the test waits for; every event each member saw, in order.
fn serve(
    members: &mut [&mut dyn GroupMember],
    held: &mut [BTreeSet<TopicPartition>],
    done: impl Fn(&[BTreeSet<TopicPartition>]) -> bool,
) -> Vec<Vec<GroupEvent>> {
    let mut seen = vec![Vec::new(); members.len()];
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done(held) {
        for (i, m) in members.iter_mut().enumerate() {
            let Some(event) = m.poll(Duration::from_millis(20)).unwrap() else {
                continue;
            };
            match &event {
                GroupEvent::Added(p) => held[i].extend(p.iter().cloned()),
                GroupEvent::Removed(p) => {
                    for tp in p {
                        held[i].remove(tp);
                    }
                    m.release().unwrap();
                }
                GroupEvent::Assigned(p) => held[i] = p.iter().cloned().collect(),
                GroupEvent::Revoked(_) => {
                    held[i].clear();
                    m.release().unwrap();
                }
                _ => held[i].clear(),
            }
            seen[i].push(event);
        }
        assert!(
            Instant::now() < deadline,
            "the group never settled: {seen:?}"
        );
    }
    seen
}

#[test]
fn a_member_joining_a_cooperative_group_takes_only_what_moves() {
    let broker = TestBroker::start("a_member_joining_a_cooperative_group_takes_only_what_moves");
    let config = broker
        .config()
        .with_property("partition.assignment.strategy", "cooperative-sticky")
        .unwrap();
    let (log_a, log_b) = (
        KafkaLog::connect(config.clone()).unwrap(),
        KafkaLog::connect(config).unwrap(),
    );
    log_a
        .create_topic(&TopicSpec::new(TOPIC, PARTITIONS))
        .unwrap();
    let mut a = join(&log_a, "a");
    let mut held = vec![BTreeSet::new(), BTreeSet::new()];
    let first = serve(&mut [&mut *a], &mut held[..1], |h| {
        h[0].len() == PARTITIONS as usize
    });
    assert!(
        matches!(first[0][..], [GroupEvent::Added(_)]),
        "A's first assignment: {first:?}"
    );
    let before = held[0].clone();

    let mut b = join(&log_b, "b");
    let seen = serve(&mut [&mut *a, &mut *b], &mut held, |h| {
        h.iter().all(|p| p.len() == 3)
    });
    // A gave back only B's half, and kept its other partitions throughout.
    assert!(held[0].is_subset(&before), "A's partitions moved: {held:?}");
    let taken: BTreeSet<TopicPartition> = seen[0]
        .iter()
        .filter_map(|e| match e {
            GroupEvent::Removed(p) => Some(p.iter().cloned()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(
        taken, held[1],
        "A gave back other partitions than B got: {seen:?}"
    );
    for e in &seen[0] {
        assert!(
            matches!(e, GroupEvent::Added(_) | GroupEvent::Removed(_)),
            "A saw a whole-assignment event: {seen:?}"
        );
    }
    eprintln!("cooperative rebalance on the test broker: {seen:?}");
}
