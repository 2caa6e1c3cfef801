//! A graceful rebalance on persistent stores: the engine commits at a
//! barrier, checkpoints its stores and is rebuilt for the new assignment.
//! What the rebuilt engine reads from its checkpoint must hold every window
//! whose final result is not committed yet. The rebalance barrier's
//! emission pass (its frontier moved) expires what it emits, so that barrier
//! must commit what it emits: it is a flush barrier, as a close's is.

use std::time::{Duration, Instant};

use stoatflow_log::{GroupEvent, TopicPartition};
use stoatflow_runtime::{AppState, CommitBarrierConfig, StreamsApp};

use crate::scripted_group::scripted_log;
use crate::support::*;

const APP: &str = "rebalance-app";

#[test]
fn a_rebalance_right_after_a_barrier_commits_what_its_pass_emits() {
    let (inner, group, log) = scripted_log();
    // All input up front, far-future sentinels included: the first
    // barrier's stamp closes every window, and only the pass at the next
    // barrier (on that stamp) emits them.
    let records = input(1_500, 30, 11);
    produce(&*log, &records, 100);
    let all: Vec<TopicPartition> = (0..PARTITIONS)
        .map(|p| TopicPartition::new(INPUT, p))
        .collect();
    let member = format!("{APP}-a");
    group.push(&member, GroupEvent::Assigned(all.clone()));
    let state = scratch_dir();
    // Barriers a second apart: the rebalance lands between the first and
    // the second.
    let mut config =
        config(APP, 2)
            .with_state_dir(state.path())
            .with_barrier(CommitBarrierConfig {
                interval: Duration::from_secs(1),
                min_interval: Duration::from_secs(1),
                max_interval: Duration::from_secs(1),
                ..CommitBarrierConfig::default()
            });
    config.instance_id = "a".into();
    let mut app = StreamsApp::with_log(tumbling_count(), config, log.clone()).unwrap();
    app.start().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while app.committed_barriers() < 1 {
        assert!(Instant::now() < deadline, "no barrier: {:?}", app.error());
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        read_output(&*inner).is_empty(),
        "the first barrier's pass had no frontier to emit on"
    );
    group.push(&member, GroupEvent::Revoked(all.clone()));
    group.push(&member, GroupEvent::Assigned(all));
    // The rebalance barrier commits (the state is REBALANCING from before
    // it), then the rebuilt engine runs.
    while app.committed_barriers() < 2 || app.state() != AppState::Running {
        assert!(Instant::now() < deadline, "not rebuilt: {:?}", app.error());
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
    let finals = read_output(&*inner);
    assert_each_once(&finals);
    assert_same_finals(
        &regular(finals),
        &regular(driver_finals(tumbling_count(), &records)),
    );
}
