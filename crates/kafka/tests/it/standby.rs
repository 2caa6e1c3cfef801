//! Standby replicas on a real broker (docs/scale-out.md#standbys): three
//! instances of one application share a 6-partition input through the
//! consumer group, each with `num.standby.replicas` = 1 and its stores on
//! disk. Placed from the group's description, every task has exactly one
//! copy, never on its owner. One instance leaves; the group (librdkafka's
//! assignor, which does not know where the copies are) moves its two tasks
//! to the other two: a task that lands on its copy's holder restores only
//! what the copy had not applied, one that lands elsewhere its whole
//! changelog. Read committed, each final result is in the output exactly
//! once.
//!
//! (The broker the tests start, noida-db, never hands a killed member's
//! partitions to the others: the promotion is driven by a leave. A kill and
//! restart of an instance is `kill.rs`.)

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stoatflow_kafka::KafkaLog;
use stoatflow_log::{Log, TopicSpec};
use stoatflow_runtime::{StreamsApp, TaskId};

use crate::broker::TestBroker;
use crate::groups::{
    APP, SIX, assert_no_error, records, state_dir, until_group_caught_up, until_shared,
};
use crate::history::History;
use crate::runtime_eos::{
    INPUT, OUTPUT, config_for, expected, produce_of, read_committed_of, read_topic_of,
    sentinels_of, topology,
};

/// The changelog of the topology's one window store (on disk).
pub(crate) const WINDOW_CHANGELOG: &str =
    "group-app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog";

fn instance(log: &Arc<KafkaLog>, id: &str, state: &Path) -> StreamsApp<KafkaLog> {
    instance_recorded(log, id, state, &History::new())
}

/// [`instance`], its state changes recorded in `history` from the start.
fn instance_recorded(
    log: &Arc<KafkaLog>,
    id: &str,
    state: &Path,
    history: &History,
) -> StreamsApp<KafkaLog> {
    let mut config = config_for(APP)
        .with_state_dir(state)
        .with_standby_replicas(1);
    config.instance_id = id.into();
    let mut app = StreamsApp::with_log(topology(), config, log.clone()).unwrap();
    history.attach(id, &app);
    app.start().unwrap();
    app
}

/// The committed records of the window store's changelog in `tasks`'
/// partitions: what a cold restore of them reads.
pub(crate) fn cold_restore(log: &KafkaLog, tasks: &BTreeSet<TaskId>) -> u64 {
    changelog_records(log, WINDOW_CHANGELOG, tasks)
}

/// The committed records of `changelog` in `tasks`' partitions (the
/// topology has one sub-topology: task `0_p` writes partition `p`).
pub(crate) fn changelog_records(log: &KafkaLog, changelog: &str, tasks: &BTreeSet<TaskId>) -> u64 {
    read_topic_of(log, changelog, SIX)
        .iter()
        .filter(|r| tasks.iter().any(|t| t.partition == r.partition.partition.0))
        .count() as u64
}

/// Waits until `app`'s copies (if any) are at their changelogs' ends,
/// measured twice, the second time after every commit the first could miss.
fn until_copies_caught_up(app: &StreamsApp<KafkaLog>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut level_since: Option<Instant> = None;
    loop {
        let lag = app.standby_lag();
        match (lag == Some(0), level_since) {
            (true, Some(t)) if t.elapsed() > Duration::from_millis(1_200) => return,
            (true, None) => level_since = Some(Instant::now()),
            (true, Some(_)) => {}
            (false, _) => level_since = None,
        }
        assert!(
            Instant::now() < deadline,
            "copies of {:?} lag {lag:?}",
            app.assignment().standby
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_leaving_instances_tasks_are_promoted_from_standby_copies_each_final_result_once() {
    let broker = TestBroker::start(
        "a_leaving_instances_tasks_are_promoted_from_standby_copies_each_final_result_once",
    );
    // Dynamic membership: a closing instance leaves the group at once (see groups.rs).
    let connect =
        || Arc::new(KafkaLog::connect(broker.config().with_static_membership(false)).unwrap());
    let (log_a, log_b, log_c) = (connect(), connect(), connect());
    log_a.create_topic(&TopicSpec::new(INPUT, SIX)).unwrap();
    log_a.create_topic(&TopicSpec::new(OUTPUT, SIX)).unwrap();
    let mut all = records(0, 3_000);
    produce_of(&log_a, &all, SIX);

    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut a = instance(&log_a, "a", dirs[0].path());
    let mut b = instance(&log_b, "b", dirs[1].path());
    let mut c = instance(&log_c, "c", dirs[2].path());
    until_shared(&[&a, &b, &c], &[2, 2, 2]);
    until_group_caught_up(&log_a, &[&a, &b, &c]);
    let moved: BTreeSet<TaskId> = b.assignment().active.into_iter().collect();
    for app in [&a, &b, &c] {
        until_copies_caught_up(app);
    }
    assert_one_copy_each(&[&a, &b, &c]);
    let copies: Vec<BTreeSet<TaskId>> = [&a, &c]
        .iter()
        .map(|app| app.assignment().standby.into_iter().collect())
        .collect();

    // B leaves; A and C take its tasks over from their copies.
    assert!(b.close(Duration::from_secs(60)), "{:?}", b.error());
    until_shared(&[&a, &c], &[3, 3]);
    let promoted = a.restored_records() + c.restored_records();
    let cold = cold_restore(&log_a, &moved);
    // The moved tasks that landed where their copy was not.
    let landed_cold: BTreeSet<TaskId> = [&a, &c]
        .iter()
        .zip(&copies)
        .flat_map(|(app, copies)| {
            let moved = &moved;
            app.assignment()
                .active
                .into_iter()
                .filter(move |t| moved.contains(t) && !copies.contains(t))
        })
        .collect();
    let unavoidable = cold_restore(&log_a, &landed_cold);
    eprintln!(
        "promotion of {moved:?} restored {promoted} changelog records; a cold restore reads \
         {cold}, of which {unavoidable} for {landed_cold:?}, which landed away from their copy"
    );
    assert!(cold > 100, "the moved tasks have state: {cold}");
    assert!(
        promoted < unavoidable + cold / 10,
        "a promotion restored {promoted} of {cold} ({unavoidable} without a copy)"
    );

    let rest: Vec<_> = records(3_000, 300)
        .into_iter()
        .chain(sentinels_of(SIX))
        .collect();
    produce_of(&log_a, &rest, SIX);
    all.extend(rest);
    until_group_caught_up(&log_a, &[&a, &c]);
    assert_no_error(&[&a, &c]);
    assert!(a.close(Duration::from_secs(60)), "{:?}", a.error());
    assert!(c.close(Duration::from_secs(60)), "{:?}", c.error());
    assert_eq!(read_committed_of(&log_a, SIX), expected(&all));
}

/// Every task has exactly one copy among `apps`, never on its owner.
fn assert_one_copy_each(apps: &[&StreamsApp<KafkaLog>]) {
    let mut copies: Vec<TaskId> = apps.iter().flat_map(|a| a.assignment().standby).collect();
    copies.sort();
    let mut tasks: Vec<TaskId> = apps.iter().flat_map(|a| a.assignment().active).collect();
    tasks.sort();
    assert_eq!(copies, tasks, "one copy of each task");
    for app in apps {
        let a = app.assignment();
        assert!(
            a.standby.iter().all(|t| !a.active.contains(t)),
            "a copy on its owner: {a:?}"
        );
    }
}

/// Four instances (six under `STOATFLOW_HEAVY_TESTS`) with one standby
/// replica each: once the group settles, the copies the instances keep,
/// placed from the broker's description of the group, are one per task,
/// never on its owner, and each is on its holder's disk. (Copies of
/// placements before the group settled stay on disk too: nothing deletes a
/// task directory, so the disk alone is counted on the scripted group, in
/// the runtime's `standby_placement.rs`.)
#[test]
fn instances_keep_one_copy_of_each_task_whatever_their_number() {
    let n = if std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some() {
        6
    } else {
        4
    };
    let broker = TestBroker::start("instances_keep_one_copy_of_each_task_whatever_their_number");
    let log = broker.log();
    log.create_topic(&TopicSpec::new(INPUT, SIX)).unwrap();
    log.create_topic(&TopicSpec::new(OUTPUT, SIX)).unwrap();
    produce_of(&log, &records(0, 600), SIX);
    let dirs: Vec<_> = (0..n).map(|_| state_dir()).collect();
    let history = History::new();
    let mut apps: Vec<StreamsApp<KafkaLog>> = (0..n)
        .map(|i| {
            let id = format!("i{i}");
            instance_recorded(&Arc::new(broker.log()), &id, dirs[i].path(), &history)
        })
        .collect();
    let refs: Vec<&StreamsApp<KafkaLog>> = apps.iter().collect();
    until_spread(&refs, &history);
    until_group_caught_up(&log, &refs);
    for app in &refs {
        until_copies_caught_up(app);
    }
    assert_one_copy_each(&refs);
    for (app, dir) in refs.iter().zip(&dirs) {
        for task in app.assignment().standby {
            assert!(
                dir.path().join(task.to_string()).is_dir(),
                "copy of {task} not on its holder's disk"
            );
        }
    }
    for app in &mut apps {
        assert!(app.close(Duration::from_secs(60)), "{:?}", app.error());
    }
}

/// Waits until every input partition is owned by exactly one of `apps`
/// and each owns at least one; if they never are, says what each went
/// through.
fn until_spread(apps: &[&StreamsApp<KafkaLog>], history: &History) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let sets: Vec<_> = apps.iter().map(|a| crate::groups::owned(a)).collect();
        let all: BTreeSet<&String> = sets.iter().flatten().collect();
        let total: usize = sets.iter().map(BTreeSet::len).sum();
        if all.len() == SIX as usize && total == SIX as usize && sets.iter().all(|s| !s.is_empty())
        {
            return;
        }
        assert_no_error(apps);
        assert!(
            Instant::now() < deadline,
            "partitions never spread: {sets:?}\nassignments: {:?}\nstate changes:\n{}",
            apps.iter().map(|a| a.assignment()).collect::<Vec<_>>(),
            history.render()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
