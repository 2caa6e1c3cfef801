//! Incremental (cooperative) rebalancing on the test broker
//! (docs/scale-out.md#incremental-rebalancing): members configured with
//! `partition.assignment.strategy: cooperative-sticky` hear only what moves.
//! A second member joining takes half of the first's partitions: the first
//! is asked to give back only those (`Removed`), keeps the rest, and is
//! never handed a whole assignment again; the second is given its half
//! (`Added`). Then the runtime: a fourth instance joining three under a
//! constant flow leaves those that keep their tasks committing, and with
//! standby replicas the copies follow the join without a rebuild.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stoatflow_kafka::KafkaLog;
use stoatflow_log::{GroupEvent, GroupMember, Log, TopicPartition, TopicSpec};
use stoatflow_runtime::{AppState, StreamsApp, TaskId};

use crate::broker::TestBroker;
use crate::groups::{
    APP, BATCH, INTERVAL, Load, SIX, assert_no_error, every, owned, records, until_group_caught_up,
};
use crate::runtime_eos::{
    INPUT, OUTPUT, config_for, expected, produce_of, read_committed_of, sentinels_of, topology,
};

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

/// An instance of the groups' application on its own connection, members
/// joining with `cooperative-sticky`, committing every [`INTERVAL`]; every
/// state it entered.
fn instance(broker: &TestBroker, id: &str) -> (StreamsApp<KafkaLog>, Arc<Mutex<Vec<AppState>>>) {
    let log = Arc::new(cooperative_log(broker));
    let mut config = config_for(APP).with_barrier(every(INTERVAL));
    config.instance_id = id.into();
    let mut app = StreamsApp::with_log(topology(), config, log).unwrap();
    let states = Arc::new(Mutex::new(Vec::new()));
    let seen = states.clone();
    app.set_state_listener(move |new, _old| seen.lock().unwrap().push(new));
    app.start().unwrap();
    (app, states)
}

fn cooperative_log(broker: &TestBroker) -> KafkaLog {
    let config = broker
        .config()
        .with_property("partition.assignment.strategy", "cooperative-sticky")
        .unwrap();
    KafkaLog::connect(config).unwrap()
}

/// Waits until the instances own every input partition between them, each
/// once, in shares of `sizes` (in any order); what each owns.
fn until_spread(apps: &[&StreamsApp<KafkaLog>], sizes: &[usize]) -> Vec<BTreeSet<String>> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let sets: Vec<BTreeSet<String>> = apps.iter().map(|a| owned(a)).collect();
        let all: BTreeSet<&String> = sets.iter().flatten().collect();
        let mut got: Vec<usize> = sets.iter().map(BTreeSet::len).collect();
        got.sort_unstable();
        if all.len() == SIX as usize && got == sizes {
            return sets;
        }
        assert_no_error(apps);
        assert!(
            Instant::now() < deadline,
            "never spread as {sizes:?}: {sets:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Three instances share six partitions under a constant flow; a fourth
/// joins. With `cooperative-sticky` two of the three keep their tasks: they
/// never rebalance and keep committing barriers (no gap longer than two
/// commit intervals); read committed, each final result is in the output
/// once.
#[test]
fn an_instance_joining_three_on_the_broker_leaves_those_keeping_their_tasks_committing() {
    let broker = TestBroker::start(
        "an_instance_joining_three_on_the_broker_leaves_those_keeping_their_tasks_committing",
    );
    let admin = Arc::new(cooperative_log(&broker));
    admin.create_topic(&TopicSpec::new(INPUT, SIX)).unwrap();
    admin.create_topic(&TopicSpec::new(OUTPUT, SIX)).unwrap();
    let load = Load::start(Arc::new(cooperative_log(&broker)));
    load.until_more(BATCH);
    let mut apps: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|id| instance(&broker, id))
        .collect();
    let before = until_spread(&apps.iter().map(|(a, _)| a).collect::<Vec<_>>(), &[2, 2, 2]);
    load.until_more(2 * BATCH);
    for (_, states) in &apps {
        states.lock().unwrap().clear();
    }

    let joined_at = Instant::now();
    apps.push(instance(&broker, "d"));
    let after = until_spread(
        &apps.iter().map(|(a, _)| a).collect::<Vec<_>>(),
        &[1, 1, 2, 2],
    );
    let settled_at = Instant::now();
    let kept: Vec<usize> = (0..3).filter(|&i| after[i] == before[i]).collect();
    assert!(
        !kept.is_empty(),
        "every instance's tasks moved: {before:?} → {after:?}"
    );
    for &i in &kept {
        let (app, states) = &apps[i];
        let gap = app.timeline().longest_commit_gap(joined_at, settled_at);
        assert!(
            gap <= 2 * INTERVAL,
            "instance {i} kept its tasks but committed no barrier for {gap:?}"
        );
        assert_eq!(
            *states.lock().unwrap(),
            Vec::<AppState>::new(),
            "instance {i} kept its tasks but changed state"
        );
    }
    eprintln!(
        "joined in {:?}; kept their tasks: {kept:?}; {before:?} → {after:?}",
        settled_at - joined_at
    );

    load.until_more(2 * BATCH);
    let mut all = load.stop();
    let sentinels = sentinels_of(SIX);
    produce_of(&admin, &sentinels, SIX);
    all.extend(sentinels);
    until_group_caught_up(&admin, &apps.iter().map(|(a, _)| a).collect::<Vec<_>>());
    for (mut app, _) in apps {
        assert!(app.close(Duration::from_secs(60)), "{:?}", app.error());
    }
    assert_eq!(read_committed_of(&admin, SIX), expected(&all));
}

/// Whether every task has exactly one copy among `apps`, never on its owner.
fn one_copy_each(apps: &[&StreamsApp<KafkaLog>]) -> bool {
    let mut copies: Vec<TaskId> = apps.iter().flat_map(|a| a.assignment().standby).collect();
    copies.sort();
    let mut tasks: Vec<TaskId> = apps.iter().flat_map(|a| a.assignment().active).collect();
    tasks.sort();
    copies == tasks
        && apps.iter().all(|app| {
            let a = app.assignment();
            a.standby.iter().all(|t| !a.active.contains(t))
        })
}

/// With one standby replica on the broker: after a fourth instance joins
/// three, the copies are again one per task, never on its owner, though
/// the instances that keep their tasks never rebalance: they place their
/// copies again from the group's new description.
#[test]
fn copies_follow_a_cooperative_join_on_the_broker() {
    let broker = TestBroker::start("copies_follow_a_cooperative_join_on_the_broker");
    let admin = Arc::new(cooperative_log(&broker));
    admin.create_topic(&TopicSpec::new(INPUT, SIX)).unwrap();
    admin.create_topic(&TopicSpec::new(OUTPUT, SIX)).unwrap();
    produce_of(&admin, &records(0, 600), SIX);
    let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    let start = |i: usize| {
        let mut config = config_for(APP)
            .with_state_dir(dirs[i].path())
            .with_standby_replicas(1);
        config.instance_id = format!("i{i}");
        let mut app =
            StreamsApp::with_log(topology(), config, Arc::new(cooperative_log(&broker))).unwrap();
        let states = Arc::new(Mutex::new(Vec::new()));
        let seen = states.clone();
        app.set_state_listener(move |new, _old| seen.lock().unwrap().push(new));
        app.start().unwrap();
        (app, states)
    };
    let mut apps: Vec<_> = (0..3).map(start).collect();
    let before = until_spread(&apps.iter().map(|(a, _)| a).collect::<Vec<_>>(), &[2, 2, 2]);
    until_placed(&apps.iter().map(|(a, _)| a).collect::<Vec<_>>());
    for (_, states) in &apps {
        states.lock().unwrap().clear();
    }

    apps.push(start(3));
    let refs: Vec<_> = apps.iter().map(|(a, _)| a).collect();
    let after = until_spread(&refs, &[1, 1, 2, 2]);
    until_placed(&refs);
    let kept: Vec<usize> = (0..3).filter(|&i| after[i] == before[i]).collect();
    assert!(
        !kept.is_empty(),
        "every instance's tasks moved: {before:?} → {after:?}"
    );
    for &i in &kept {
        assert_eq!(
            *apps[i].1.lock().unwrap(),
            Vec::<AppState>::new(),
            "instance {i} kept its tasks but changed state"
        );
    }
    for (mut app, _) in apps {
        assert!(app.close(Duration::from_secs(60)), "{:?}", app.error());
    }
}

/// Waits until every task has exactly one copy among `apps`.
fn until_placed(apps: &[&StreamsApp<KafkaLog>]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !one_copy_each(apps) {
        assert_no_error(apps);
        let published: Vec<_> = apps.iter().map(|a| a.assignment()).collect();
        assert!(
            Instant::now() < deadline,
            "copies never one per task: {published:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
