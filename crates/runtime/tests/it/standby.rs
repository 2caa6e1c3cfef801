//! Standby replicas (`num.standby.replicas`) through a scripted consumer
//! group: two instances on one log share the input's three partitions; each
//! keeps a warm copy of the other's tasks. One crashes (dropped without
//! `close`), the group hands its task to the survivor, and the survivor's
//! promotion restores only what its copy had not applied yet, against the
//! whole changelog a cold restore reads (the same scenario without standby
//! replicas reads exactly that). The committed output is the uninterrupted
//! run's, each final result once.

use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::{Consumer, EmbeddedLog, GroupEvent, Log, TopicPartition};
use stoatflow_runtime::{AppState, RuntimeConfig, StreamsApp, TaskId};

use crate::hooked_log::HookedLog;
use crate::scripted_group::{Script, scripted_log};
use crate::support::*;

const APP: &str = "standby-app";

fn input_partitions(ps: &[u32]) -> Vec<TopicPartition> {
    ps.iter().map(|&p| TopicPartition::new(INPUT, p)).collect()
}

fn instance(
    log: &Arc<HookedLog<Script>>,
    id: &str,
    state: &std::path::Path,
    replicas: u32,
) -> StreamsApp<HookedLog<Script>> {
    let mut config: RuntimeConfig = config(APP, 2)
        .with_state_dir(state)
        .with_standby_replicas(replicas);
    config.instance_id = id.into();
    let mut app = StreamsApp::with_log(tumbling_count(), config, log.clone()).unwrap();
    app.start().unwrap();
    app
}

fn task(partition: u32) -> TaskId {
    TaskId {
        subtopology: 0,
        partition,
    }
}

/// Waits until `app` runs exactly `active` (and, if any, keeps `standby`).
fn until_assigned(app: &StreamsApp<HookedLog<Script>>, active: &[u32], standby: &[u32]) {
    let want: (Vec<TaskId>, Vec<TaskId>) = (
        active.iter().map(|&p| task(p)).collect(),
        standby.iter().map(|&p| task(p)).collect(),
    );
    let what = format!("the app to run and keep {want:?}");
    wait_for(&what, &[app], Duration::from_secs(60), || {
        let a = app.assignment();
        app.state() == AppState::Running && (a.active, a.standby) == want
    });
}

/// The committed records of task `p`'s window store changelog partition:
/// what a cold restore of its store on disk reads (the emit-frontier
/// store, in memory, restores in full either way).
fn changelog_records(log: &EmbeddedLog, p: u32) -> u64 {
    let mut consumer = log.consumer("standby-cold").unwrap();
    log.topics()
        .iter()
        .filter(|t| t.name.starts_with(APP) && t.name.ends_with("-changelog"))
        .filter(|t| !t.name.contains("stoatflow-watermark") && !t.name.contains("emitfrontier"))
        .map(|t| {
            let tp = TopicPartition::new(t.name.as_str(), p);
            consumer.end_offset(&tp).unwrap().0 - consumer.beginning_offset(&tp).unwrap().0
        })
        .sum()
}

/// Runs the scenario with `replicas` standby replicas; returns (what the
/// promotion restored, what a cold restore of the moved task reads).
fn crash_and_promote(replicas: u32) -> (u64, u64) {
    let (inner, group, log) = scripted_log();
    let all = input(3_000, 60, 7);
    let (first, rest) = all.split_at(2_000);
    let (middle, last) = rest.split_at(500);
    produce(&*log, first, 100);

    let (a_id, b_id) = (format!("{APP}-a"), format!("{APP}-b"));
    group.push(&a_id, GroupEvent::Assigned(input_partitions(&[0, 1])));
    group.push(&b_id, GroupEvent::Assigned(input_partitions(&[2])));
    let (dir_a, dir_b) = (scratch_dir(), scratch_dir());
    let a = instance(&log, "a", dir_a.path(), replicas);
    let b = instance(&log, "b", dir_b.path(), replicas);
    let (standby_a, standby_b): (&[u32], &[u32]) = if replicas > 0 {
        (&[2], &[0, 1])
    } else {
        (&[], &[])
    };
    until_assigned(&a, &[0, 1], standby_a);
    until_assigned(&b, &[2], standby_b);
    wait_for_input_committed(&*log, APP, &[&a, &b]);
    if replicas > 0 {
        // A's copy of task 2 catches up with what B committed.
        wait_for(
            "A's copy of task 2 to catch up",
            &[&a],
            Duration::from_secs(30),
            || a.standby_records() >= changelog_records(&inner, 2),
        );
        // It measures that it is at the changelog's end.
        wait_for(
            "A's standby lag to be zero",
            &[&a],
            Duration::from_secs(30),
            || a.standby_lag() == Some(0),
        );
    }
    // More input; B commits part of it, then crashes.
    produce(&*log, middle, 100);
    wait_for_input_committed(&*log, APP, &[&a, &b]);
    drop(b);

    // The group moves task 2 to A.
    group.push(&a_id, GroupEvent::Revoked(input_partitions(&[0, 1])));
    group.push(&a_id, GroupEvent::Assigned(input_partitions(&[0, 1, 2])));
    until_assigned(&a, &[0, 1, 2], &[]);
    assert_eq!(a.standby_lag(), Some(0), "no copies, no lag");
    let promoted = a.restored_records();
    let cold = changelog_records(&inner, 2);

    produce(&*log, last, 100);
    wait_for_input_committed(&*log, APP, &[&a]);
    let mut a = a;
    assert!(a.close(Duration::from_secs(30)), "{:?}", a.error());
    let finals = regular(read_output(&*inner));
    assert_each_once(&finals);
    assert_same_finals(&finals, &regular(driver_finals(tumbling_count(), &all)));
    (promoted, cold)
}

#[test]
fn a_promoted_standby_restores_only_the_tail_and_each_final_result_is_committed_once() {
    let (warm, cold) = crash_and_promote(1);
    let (without, cold_without) = crash_and_promote(0);
    println!(
        "promotion restored {warm} of {cold} changelog records with one standby replica, \
         {without} of {cold_without} without"
    );
    assert!(cold > 200, "the moved task has state to restore: {cold}");
    assert!(warm * 10 < cold, "with a standby: {warm} of {cold}");
    // Without a copy the promotion reads the moved task's whole changelog
    // (the survivor's own window stores resume from their checkpoints; its
    // in-memory emit-frontier stores, a few records each, restore in full).
    assert!(without >= cold_without, "{without} of {cold_without}");
}
