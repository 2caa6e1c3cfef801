//! Incremental (cooperative) rebalancing through a scripted consumer group
//! (docs/scale-out.md#incremental-rebalancing): three instances own one
//! input partition each under a constant flow; a fourth joins and the
//! group moves one task to it, as a cooperative assignor does: the member
//! giving it up hears `Removed` for that task only, the others an empty
//! `Added`, the joiner `Added` with the task once it was released. The
//! instances whose tasks do not move never rebalance and keep committing
//! barriers throughout (no gap longer than two commit intervals), and each
//! final result is committed once (read committed). With standby
//! replicas, an instance that keeps its tasks places its copies again
//! from the changed group without a rebuild.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stoatflow_log::{GroupEvent, MemberAssignment, TopicPartition};
use stoatflow_runtime::{AppState, CommitBarrierConfig, RuntimeConfig, StreamsApp, TaskId};

use crate::hooked_log::HookedLog;
use crate::scripted_group::{Script, ScriptedGroup, scripted_log};
use crate::support::*;

const APP: &str = "incremental-app";
const INTERVAL: Duration = Duration::from_millis(250);

type App = StreamsApp<HookedLog<Script>>;

fn member(id: &str) -> String {
    format!("{APP}-{id}")
}

fn partition(p: u32) -> Vec<TopicPartition> {
    vec![TopicPartition::new(INPUT, p)]
}

/// An instance committing every [`INTERVAL`]; every state it entered.
fn instance(log: &Arc<HookedLog<Script>>, id: &str) -> (App, Arc<Mutex<Vec<AppState>>>) {
    let mut config: RuntimeConfig = config(APP, 1).with_barrier(CommitBarrierConfig {
        interval: INTERVAL,
        min_interval: INTERVAL,
        max_interval: INTERVAL,
        ..CommitBarrierConfig::default()
    });
    config.instance_id = id.into();
    let app = StreamsApp::with_log(tumbling_count(), config, log.clone()).unwrap();
    let states = Arc::new(Mutex::new(Vec::new()));
    let seen = states.clone();
    app.set_state_listener(move |new, _old| seen.lock().unwrap().push(new));
    let mut app = app;
    app.start().unwrap();
    (app, states)
}

/// Waits until `app` runs exactly `active` and committed a barrier since.
fn until_running(app: &App, active: &[u32]) {
    let want: Vec<TaskId> = active.iter().map(|&p| TaskId::new(0, p)).collect();
    wait_for(
        &format!("the app to run {want:?}"),
        &[app],
        Duration::from_secs(60),
        || app.state() == AppState::Running && app.assignment().active == want,
    );
    let barriers = app.committed_barriers();
    wait_for(
        &format!("a barrier on {want:?}"),
        &[app],
        Duration::from_secs(60),
        || app.committed_barriers() > barriers,
    );
}

#[test]
fn an_instance_joining_three_under_flow_leaves_the_others_committing() {
    let (inner, group, log) = scripted_log();
    let records = input(40_000, 30, 17);
    let (regular_records, sentinels) = records.split_at(records.len() - PARTITIONS as usize);
    // The flow: 20 records every 10 ms until told to stop, then the
    // sentinels that close every window.
    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let (log, stop) = (log.clone(), stop.clone());
        let (regular_records, sentinels) = (regular_records.to_vec(), sentinels.to_vec());
        std::thread::spawn(move || {
            let mut sent = Vec::new();
            for chunk in regular_records.chunks(20) {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                produce(&*log, chunk, 20);
                sent.extend_from_slice(chunk);
                std::thread::sleep(Duration::from_millis(10));
            }
            produce(&*log, &sentinels, 10);
            sent.extend(sentinels);
            sent
        })
    };

    for (id, p) in [("a", 0), ("b", 1), ("c", 2)] {
        group.push(&member(id), GroupEvent::Added(partition(p)));
    }
    let (mut a, a_states) = instance(&log, "a");
    let (mut b, b_states) = instance(&log, "b");
    let (mut c, _) = instance(&log, "c");
    until_running(&a, &[0]);
    until_running(&b, &[1]);
    until_running(&c, &[2]);
    a_states.lock().unwrap().clear();
    b_states.lock().unwrap().clear();

    // D joins; the group moves task 0_2 from C to D.
    let joined_at = Instant::now();
    group.push(&member("d"), GroupEvent::Added(vec![]));
    let (mut d, _) = instance(&log, "d");
    group.push(&member("c"), GroupEvent::Removed(partition(2)));
    for id in ["a", "b"] {
        group.push(&member(id), GroupEvent::Added(vec![]));
    }
    wait_for(
        "C to release task 0_2",
        &[&c],
        Duration::from_secs(60),
        || group.released(&member("c")) > 0,
    );
    group.push(&member("c"), GroupEvent::Added(vec![]));
    group.push(&member("d"), GroupEvent::Added(partition(2)));
    until_running(&d, &[2]);
    wait_for(
        "C to run without task 0_2",
        &[&c],
        Duration::from_secs(60),
        || c.state() == AppState::Running && c.assignment().active.is_empty(),
    );
    let settled_at = Instant::now();
    stop.store(true, Ordering::Release);

    for (name, app, states) in [("A", &a, &a_states), ("B", &b, &b_states)] {
        let gap = app.timeline().longest_commit_gap(joined_at, settled_at);
        assert!(
            gap <= 2 * INTERVAL,
            "{name} kept its task but committed no barrier for {gap:?}"
        );
        assert_eq!(
            *states.lock().unwrap(),
            Vec::<AppState>::new(),
            "{name} kept its task but changed state"
        );
        assert_eq!(app.assignment().active.len(), 1, "{name} lost its task");
    }

    let sent = producer.join().unwrap();
    wait_for_input_committed(&*log, APP, &[&a, &b, &c, &d]);
    for app in [&mut a, &mut b, &mut c, &mut d] {
        assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
    }
    let finals = read_output(&*inner);
    assert_each_once(&finals);
    assert_same_finals(
        &regular(finals),
        &regular(driver_finals(tumbling_count(), &sent)),
    );
}

/// Describing the group answers each member's partitions.
fn describe(group: &ScriptedGroup, owners: &[(&str, &[u32])]) {
    group.describe(
        owners
            .iter()
            .map(|(id, ps)| MemberAssignment {
                member: member(id),
                partitions: ps.iter().flat_map(|&p| partition(p)).collect(),
            })
            .collect(),
    );
}

/// With one standby replica: A owns tasks 0_0 and 0_1, B owns 0_2, each
/// copies the other's. C joins and takes 0_1 from A. B keeps its task and
/// never rebalances, yet its copies follow the group: once settled, every
/// task has exactly one copy, never on its owner. (The instance ids are
/// such that the placement then gives the copy of 0_1 to A: a B keeping
/// its first copies would make two.)
#[test]
fn an_instance_keeping_its_tasks_places_its_copies_again_when_the_group_changes() {
    let (_inner, group, log) = scripted_log();
    produce(&*log, &input(600, 30, 5), 100);
    let dirs: Vec<_> = (0..3).map(|_| scratch_dir()).collect();
    let with_copies = |id: &str, dir: &std::path::Path| {
        let mut config: RuntimeConfig = config(APP, 1).with_state_dir(dir).with_standby_replicas(1);
        config.instance_id = id.into();
        let app = StreamsApp::with_log(tumbling_count(), config, log.clone()).unwrap();
        let states = Arc::new(Mutex::new(Vec::new()));
        let seen = states.clone();
        app.set_state_listener(move |new, _old| seen.lock().unwrap().push(new));
        let mut app = app;
        app.start().unwrap();
        (app, states)
    };
    describe(&group, &[("x", &[0, 1]), ("y", &[2])]);
    group.push(
        &member("x"),
        GroupEvent::Added([0, 1].iter().flat_map(|&p| partition(p)).collect()),
    );
    group.push(&member("y"), GroupEvent::Added(partition(2)));
    let (mut a, _) = with_copies("x", dirs[0].path());
    let (mut b, b_states) = with_copies("y", dirs[1].path());
    until_copies(&[&a, &b], &[&[0, 1], &[2]]);
    b_states.lock().unwrap().clear();

    // C joins; the group moves task 0_1 from A to C.
    describe(&group, &[("x", &[0]), ("y", &[2]), ("z", &[])]);
    group.push(&member("z"), GroupEvent::Added(vec![]));
    let (mut c, _) = with_copies("z", dirs[2].path());
    group.push(&member("x"), GroupEvent::Removed(partition(1)));
    group.push(&member("y"), GroupEvent::Added(vec![]));
    wait_for(
        "A to release task 0_1",
        &[&a],
        Duration::from_secs(60),
        || group.released(&member("x")) > 0,
    );
    describe(&group, &[("x", &[0]), ("y", &[2]), ("z", &[1])]);
    for id in ["x", "y"] {
        group.push(&member(id), GroupEvent::Added(vec![]));
    }
    group.push(&member("z"), GroupEvent::Added(partition(1)));
    until_copies(&[&a, &b, &c], &[&[0], &[2], &[1]]);
    assert_eq!(
        *b_states.lock().unwrap(),
        Vec::<AppState>::new(),
        "B kept its task but changed state"
    );
    for app in [&mut a, &mut b, &mut c] {
        assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
    }
}

/// Waits until each of `apps` runs `active[i]` and every task has exactly
/// one copy among them, never on its owner.
fn until_copies(apps: &[&App], active: &[&[u32]]) {
    let what = format!("the apps to run {active:?} with one copy of each task, never on its owner");
    wait_for(&what, apps, Duration::from_secs(30), || {
        let published: Vec<_> = apps.iter().map(|a| a.assignment()).collect();
        let running = apps
            .iter()
            .zip(active)
            .zip(&published)
            .all(|((app, want), got)| {
                app.state() == AppState::Running
                    && got.active == want.iter().map(|&p| TaskId::new(0, p)).collect::<Vec<_>>()
            });
        let one_copy_each = (0..PARTITIONS).all(|p| {
            let holders: Vec<_> = published
                .iter()
                .filter(|a| a.standby.contains(&TaskId::new(0, p)))
                .collect();
            holders.len() == 1 && !holders[0].active.contains(&TaskId::new(0, p))
        });
        running && one_copy_each
    });
}
