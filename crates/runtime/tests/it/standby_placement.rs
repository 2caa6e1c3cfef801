//! Standby placement that follows `num.standby.replicas`
//! (docs/scale-out.md#standbys), through a scripted consumer group that the
//! instances can describe: six instances share the input's tasks, each
//! with one standby replica, and once they run every task has exactly one
//! copy on disk, never on its owner's. The group forms in one step, so no
//! earlier placement left copies behind.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::{GroupEvent, MemberAssignment, TopicPartition};
use stoatflow_runtime::{AppState, RuntimeConfig, StreamsApp, TaskId};

use crate::hooked_log::HookedLog;
use crate::scripted_group::{Script, scripted_log};
use crate::support::*;

const APP: &str = "placement-app";
const INSTANCES: usize = 6;

fn instance(log: &Arc<HookedLog<Script>>, id: &str, state: &Path) -> StreamsApp<HookedLog<Script>> {
    let mut config: RuntimeConfig = config(APP, 1)
        .with_state_dir(state)
        .with_standby_replicas(1);
    config.instance_id = id.into();
    let mut app = StreamsApp::with_log(tumbling_count(), config, log.clone()).unwrap();
    app.start().unwrap();
    app
}

/// Instance `i` owns input partition `i` (the last three own nothing).
fn owned_by(i: usize) -> Vec<TopicPartition> {
    (0..PARTITIONS)
        .filter(|p| *p as usize == i)
        .map(|p| TopicPartition::new(INPUT, p))
        .collect()
}

/// The tasks whose directory is in `state`.
fn on_disk(state: &Path) -> BTreeSet<String> {
    std::fs::read_dir(state)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn six_instances_with_one_replica_keep_exactly_one_copy_of_each_task_on_disk() {
    let (_inner, group, log) = scripted_log();
    produce(&*log, &input(600, 30, 3), 100);
    let names: Vec<String> = (0..INSTANCES).map(|i| format!("{APP}-i{i}")).collect();
    group.describe(
        names
            .iter()
            .enumerate()
            .map(|(i, member)| MemberAssignment {
                member: member.clone(),
                partitions: owned_by(i),
            })
            .collect(),
    );
    for (i, name) in names.iter().enumerate() {
        group.push(name, GroupEvent::Assigned(owned_by(i)));
    }
    let dirs: Vec<_> = (0..INSTANCES).map(|_| scratch_dir()).collect();
    let mut apps: Vec<_> = (0..INSTANCES)
        .map(|i| instance(&log, &format!("i{i}"), dirs[i].path()))
        .collect();

    // Every instance runs, and the copies have opened their stores.
    let refs: Vec<_> = apps.iter().collect();
    wait_for(
        "the instances to run with their copies caught up",
        &refs,
        Duration::from_secs(60),
        || {
            apps.iter()
                .all(|a| a.state() == AppState::Running && a.standby_lag() == Some(0))
        },
    );

    for p in 0..PARTITIONS {
        let task = TaskId::new(0, p).to_string();
        let holders: Vec<usize> = (0..INSTANCES)
            .filter(|i| *i != p as usize && on_disk(dirs[*i].path()).contains(&task))
            .collect();
        assert_eq!(
            holders.len(),
            1,
            "copies of task {task}: on instances {holders:?}"
        );
        let published: Vec<usize> = (0..INSTANCES)
            .filter(|i| apps[*i].assignment().standby.contains(&TaskId::new(0, p)))
            .collect();
        assert_eq!(published, holders, "task {task}: published vs on disk");
    }
    for a in &mut apps {
        assert!(a.close(Duration::from_secs(30)), "{:?}", a.error());
    }
}
