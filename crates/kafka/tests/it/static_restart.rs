//! Closing a group member on the test broker (docs/scale-out.md#rolling-restart):
//! a static member (`group.instance.id`) does not leave the group when it is
//! closed, so coming back within the session timeout gives it its partitions
//! back and the other member sees no rebalance at all; a dynamic member
//! leaves, and the other takes its partitions at once.
//!
//! The members are served from one thread, in turns, so the eager protocol's
//! rule makes the absence of a rebalance observable: the group cannot give
//! the returning member an assignment in a new generation before every
//! other member has been revoked and rejoined, so if the other member has
//! seen nothing by then, nothing happened to it.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use stoatflow_kafka::KafkaLog;
use stoatflow_log::{GroupEvent, GroupMember, Log, TopicPartition, TopicSpec};

use crate::broker::TestBroker;

const GROUP: &str = "restart-app";
pub(crate) const TOPIC: &str = "restart-in";
pub(crate) const PARTITIONS: u32 = 6;

/// What each member holds, and every event each has seen, in order.
#[derive(Default)]
pub(crate) struct Seen {
    pub(crate) held: Vec<BTreeSet<TopicPartition>>,
    pub(crate) events: Vec<Vec<String>>,
}

/// Serves every member in turns (releasing revocations) until `done` says
/// the holdings are what the test waits for.
pub(crate) fn serve(
    members: &mut [&mut dyn GroupMember],
    seen: &mut Seen,
    done: impl Fn(&[BTreeSet<TopicPartition>]) -> bool,
) {
    seen.held.resize(members.len(), BTreeSet::new());
    seen.events.resize(members.len(), Vec::new());
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done(&seen.held) {
        for (i, m) in members.iter_mut().enumerate() {
            let event = m.poll(Duration::from_millis(20)).unwrap();
            match &event {
                Some(GroupEvent::Assigned(p)) => seen.held[i] = p.iter().cloned().collect(),
                Some(GroupEvent::Revoked(_)) => {
                    seen.held[i].clear();
                    m.release().unwrap();
                }
                Some(GroupEvent::Lost(_)) => seen.held[i].clear(),
                _ => {}
            }
            if let Some(e) = event {
                seen.events[i].push(format!("{e:?}"));
            }
        }
        assert!(
            Instant::now() < deadline,
            "the group never settled: {:?}",
            seen.events
        );
    }
}

/// Two members that hold three partitions each.
pub(crate) fn split(held: &[BTreeSet<TopicPartition>]) -> bool {
    held.iter().all(|h| h.len() == 3)
}

fn connect(broker: &TestBroker, static_membership: bool) -> KafkaLog {
    KafkaLog::connect(broker.config().with_static_membership(static_membership)).unwrap()
}

fn join(log: &KafkaLog, member: &str) -> Box<dyn GroupMember> {
    log.join_group(GROUP, member, &[TOPIC.to_owned()]).unwrap()
}

#[test]
fn a_static_member_closed_and_back_within_the_session_gets_its_partitions_with_no_rebalance() {
    let broker = TestBroker::start(
        "a_static_member_closed_and_back_within_the_session_gets_its_partitions_with_no_rebalance",
    );
    let (log_a, log_b) = (connect(&broker, true), connect(&broker, true));
    log_a
        .create_topic(&TopicSpec::new(TOPIC, PARTITIONS))
        .unwrap();
    let (mut a, mut b) = (join(&log_a, "a"), join(&log_b, "b"));
    let mut seen = Seen::default();
    serve(&mut [&mut *a, &mut *b], &mut seen, split);
    let before = seen.held.clone();

    // B closes and comes back as the same instance, well within the
    // session timeout (10 s).
    drop(b);
    let closed_at = Instant::now();
    let mut b = join(&log_b, "b");
    let mut again = Seen::default();
    serve(&mut [&mut *a, &mut *b], &mut again, |held| {
        !held[1].is_empty()
    });
    assert!(closed_at.elapsed() < Duration::from_secs(10));

    assert_eq!(again.held[1], before[1], "B got other partitions back");
    assert_eq!(
        again.events[0],
        Vec::<String>::new(),
        "A saw a rebalance while B restarted"
    );
}

#[test]
fn a_dynamic_member_that_closes_leaves_and_the_other_takes_its_partitions() {
    let broker =
        TestBroker::start("a_dynamic_member_that_closes_leaves_and_the_other_takes_its_partitions");
    let (log_a, log_b) = (connect(&broker, false), connect(&broker, false));
    log_a
        .create_topic(&TopicSpec::new(TOPIC, PARTITIONS))
        .unwrap();
    let (mut a, mut b) = (join(&log_a, "a"), join(&log_b, "b"));
    let mut seen = Seen::default();
    serve(&mut [&mut *a, &mut *b], &mut seen, split);

    drop(b);
    let closed_at = Instant::now();
    let mut after = Seen::default();
    serve(&mut [&mut *a], &mut after, |held| {
        held[0].len() == PARTITIONS as usize
    });
    // Well before the session (10 s) would have expired.
    assert!(closed_at.elapsed() < Duration::from_secs(8));
}
