//! Restarts on the test broker with the state directories kept
//! (docs/scale-out.md#rolling-restart): static members, so a closed
//! instance does not leave the group; it comes back within the session
//! timeout to the same tasks, restoring only its changelogs' tails, while
//! the other instances never rebalance and keep committing. First one of
//! two instances; then a rolling restart of three under a constant flow,
//! each closed and started again in turn. Read committed, each final
//! result is in the output exactly once.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stoatflow_kafka::KafkaLog;
use stoatflow_log::{Log, TopicSpec};
use stoatflow_runtime::{AppState, RuntimeConfig, StreamsApp, TaskId};

use crate::broker::TestBroker;
use crate::groups::{
    APP, BATCH, INTERVAL, Load, SIX, assert_no_error, every, owned, records, state_dir,
    until_group_caught_up, until_shared,
};
use crate::runtime_eos::{
    INPUT, OUTPUT, config_for, expected, produce_of, read_committed_of, sentinels_of, topology,
};
use crate::standby::{WINDOW_CHANGELOG, changelog_records, cold_restore};

/// Instance `id` of the groups' application, its stores in `state`.
fn config(id: &str, state: &Path) -> RuntimeConfig {
    let mut config = config_for(APP).with_state_dir(state);
    config.instance_id = id.into();
    config
}

/// `config`'s instance, started on its own connection.
fn start(broker: &TestBroker, config: RuntimeConfig) -> StreamsApp<KafkaLog> {
    let log = Arc::new(broker.log());
    let mut app = StreamsApp::with_log(topology(), config, log).unwrap();
    app.start().unwrap();
    app
}

fn instance(broker: &TestBroker, id: &str, state: &Path) -> StreamsApp<KafkaLog> {
    start(broker, config(id, state))
}

#[test]
fn a_static_instance_restarted_with_its_state_moves_nothing_and_restores_only_tails() {
    let broker = TestBroker::start(
        "a_static_instance_restarted_with_its_state_moves_nothing_and_restores_only_tails",
    );
    let log = broker.log();
    log.create_topic(&TopicSpec::new(INPUT, SIX)).unwrap();
    log.create_topic(&TopicSpec::new(OUTPUT, SIX)).unwrap();
    let mut all = records(0, 1_500);
    produce_of(&log, &all, SIX);

    let dirs: Vec<_> = (0..2).map(|_| state_dir()).collect();
    let mut a = instance(&broker, "a", dirs[0].path());
    let mut b = instance(&broker, "b", dirs[1].path());
    until_shared(&[&a, &b], &[3, 3]);
    until_group_caught_up(&log, &[&a, &b]);
    let b_partitions = owned(&b);
    let b_tasks: BTreeSet<TaskId> = b.assignment().active.into_iter().collect();

    // From here on, A must never stop for a rebalance.
    let rebalances = Arc::new(AtomicUsize::new(0));
    let seen = rebalances.clone();
    a.set_state_listener(move |new, _old| {
        if new == AppState::Rebalancing {
            seen.fetch_add(1, Ordering::AcqRel);
        }
    });
    let barriers_before = a.committed_barriers();

    // B closes (checkpointing its stores) and comes back as the same
    // instance with the same state directory; records flow meanwhile.
    assert!(b.close(Duration::from_secs(60)), "{:?}", b.error());
    let closed_at = Instant::now();
    let more = records(1_500, 300);
    produce_of(&log, &more, SIX);
    all.extend(more);
    let mut b = instance(&broker, "b", dirs[1].path());
    until_shared(&[&a, &b], &[3, 3]);
    assert!(
        closed_at.elapsed() < Duration::from_secs(10),
        "back within the session timeout"
    );
    assert_eq!(owned(&b), b_partitions, "B came back to other partitions");
    until_group_caught_up(&log, &[&a, &b]);

    assert_eq!(
        rebalances.load(Ordering::Acquire),
        0,
        "A rebalanced while B restarted"
    );
    assert!(
        a.committed_barriers() > barriers_before,
        "A stopped committing"
    );
    let restored = b.restored_records();
    let cold = cold_restore(&log, &b_tasks);
    eprintln!("B's restart restored {restored} changelog records; a cold restore reads {cold}");
    assert!(cold > 100, "B's tasks have state: {cold}");
    assert!(restored * 10 < cold, "B restored {restored} of {cold}");

    let ends = sentinels_of(SIX);
    produce_of(&log, &ends, SIX);
    all.extend(ends);
    until_group_caught_up(&log, &[&a, &b]);
    assert_no_error(&[&a, &b]);
    assert!(a.close(Duration::from_secs(60)), "{:?}", a.error());
    assert!(b.close(Duration::from_secs(60)), "{:?}", b.error());
    assert_eq!(read_committed_of(&log, SIX), expected(&all));
}

/// The changelog of the window store's emit frontiers (in memory).
const FRONTIER_CHANGELOG: &str =
    "group-app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-emitfrontier-changelog";

/// An instance of the rolling restart: committing every [`INTERVAL`], and
/// the states it entered since the last `clear`.
struct Rolled {
    app: StreamsApp<KafkaLog>,
    states: Arc<Mutex<Vec<AppState>>>,
}

impl Rolled {
    fn start(broker: &TestBroker, id: &str, state: &Path) -> Rolled {
        let app = start(broker, config(id, state).with_barrier(every(INTERVAL)));
        let states = Arc::new(Mutex::new(Vec::new()));
        let seen = states.clone();
        app.set_state_listener(move |new, _old| seen.lock().unwrap().push(new));
        Rolled { app, states }
    }
}

/// Waits until `app` runs on `partitions` and has committed a barrier.
fn until_committing(app: &StreamsApp<KafkaLog>, partitions: &BTreeSet<String>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while owned(app) != *partitions || app.committed_barriers() == 0 {
        assert_no_error(&[app]);
        assert!(
            Instant::now() < deadline,
            "not back on {partitions:?}: {:?}, {} barriers",
            owned(app),
            app.committed_barriers()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Three instances share six partitions while a writer keeps producing;
/// each in turn is closed and started again as the same instance with the
/// same state directory, the next one only once it runs and commits again.
/// Each comes back to its tasks within the session timeout, restoring only
/// its changelogs' tails (counted against a cold restore of its tasks); the
/// two others never leave RUNNING and commit barriers throughout (no gap
/// longer than two commit intervals). Read committed, each final result is
/// in the output once with its count.
#[test]
fn a_rolling_restart_of_three_under_flow_moves_nothing_and_loses_nothing() {
    let broker =
        TestBroker::start("a_rolling_restart_of_three_under_flow_moves_nothing_and_loses_nothing");
    let admin = broker.log();
    admin.create_topic(&TopicSpec::new(INPUT, SIX)).unwrap();
    admin.create_topic(&TopicSpec::new(OUTPUT, SIX)).unwrap();
    let load = Load::start(Arc::new(broker.log()));
    load.until_more(BATCH);
    let ids = ["a", "b", "c"];
    let dirs: Vec<_> = ids.iter().map(|_| state_dir()).collect();
    let mut apps: Vec<Rolled> = ids
        .iter()
        .zip(&dirs)
        .map(|(id, dir)| Rolled::start(&broker, id, dir.path()))
        .collect();
    until_shared(&apps.iter().map(|r| &r.app).collect::<Vec<_>>(), &[2, 2, 2]);
    // Every task has state in its changelog before the first restart: ten
    // batches written, and committed by the group (a loaded machine
    // writes them faster than the instances process them).
    load.until_more(10 * BATCH);
    until_group_caught_up(&admin, &apps.iter().map(|r| &r.app).collect::<Vec<_>>());

    for i in 0..ids.len() {
        let partitions = owned(&apps[i].app);
        let tasks: BTreeSet<TaskId> = apps[i].app.assignment().active.into_iter().collect();
        for r in &apps {
            r.states.lock().unwrap().clear();
        }
        let closing_at = Instant::now();
        assert!(
            apps[i].app.close(Duration::from_secs(60)),
            "{:?}",
            apps[i].app.error()
        );
        apps[i] = Rolled::start(&broker, ids[i], dirs[i].path());
        until_committing(&apps[i].app, &partitions);
        let back_at = Instant::now();
        assert!(
            back_at - closing_at < Duration::from_secs(10),
            "{} back within the session timeout",
            ids[i]
        );
        for (j, r) in apps.iter().enumerate().filter(|&(j, _)| j != i) {
            let timeline = r.app.timeline();
            let gap = timeline.longest_commit_gap(closing_at, back_at);
            // Each barrier's cut and commit, in ms from the close.
            let since = |t: Instant| t.saturating_duration_since(closing_at).as_millis();
            let barriers: Vec<(u128, u128)> = timeline
                .barriers()
                .filter(|b| b.committed > closing_at && b.committed < back_at)
                .map(|b| (since(b.cut), since(b.committed)))
                .collect();
            assert!(
                gap <= 2 * INTERVAL,
                "{} committed no barrier for {gap:?} while {} restarted (back at {} ms; \
                 barriers cut, committed at {barriers:?} ms)",
                ids[j],
                ids[i],
                since(back_at)
            );
            assert_eq!(
                *r.states.lock().unwrap(),
                Vec::<AppState>::new(),
                "{} changed state while {} restarted",
                ids[j],
                ids[i]
            );
        }
        // The window store on disk reads only its changelog's tail past
        // its checkpoint; the emit frontiers, in memory, are read in full
        // (the stamp rings are read apart, not counted as restored).
        let restored = apps[i].app.restored_records();
        let window = changelog_records(&admin, WINDOW_CHANGELOG, &tasks);
        let frontiers = changelog_records(&admin, FRONTIER_CHANGELOG, &tasks);
        eprintln!(
            "{} back in {:?}, restored {restored} changelog records; its tasks' window \
             changelog holds {window}, their emit frontiers' {frontiers}",
            ids[i],
            back_at - closing_at
        );
        assert!(window > 100, "{}'s tasks have state: {window}", ids[i]);
        assert!(
            restored <= frontiers + window / 10,
            "{} restored {restored}: more than a tenth of {window} window records \
             past its {frontiers} emit frontiers",
            ids[i]
        );
    }

    load.until_more(2 * BATCH);
    let mut all = load.stop();
    let ends = sentinels_of(SIX);
    produce_of(&admin, &ends, SIX);
    all.extend(ends);
    let refs: Vec<_> = apps.iter().map(|r| &r.app).collect();
    until_group_caught_up(&admin, &refs);
    for mut r in apps {
        assert!(r.app.close(Duration::from_secs(60)), "{:?}", r.app.error());
    }
    assert_eq!(read_committed_of(&admin, SIX), expected(&all));
}
