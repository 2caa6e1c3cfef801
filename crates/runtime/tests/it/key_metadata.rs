//! Key metadata across instances (docs/queries.md#metadata): two instances
//! in a scripted group, each advertising its `application.server`, agree on
//! which one owns a key's task and which keeps its standby copy; a single
//! instance without a group names itself; an unknown store and a key the
//! serde refuses are errors naming them.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::{GroupEvent, MemberAssignment, TopicPartition};
use stoatflow_runtime::{
    AppState, HostInfo, MetadataError, RuntimeConfig, StreamsApp, TaskId, partition_for_key,
};
use stoatflow_streams::{Materialized, Serde, SerdeError, Serdes, StreamsBuilder, Topology};

use crate::hooked_log::HookedLog;
use crate::scripted_group::{Script, scripted_log};
use crate::support::*;

const APP: &str = "metadata-app";
const TOTALS: &str = "totals";

/// A running count per key, in the store [`TOTALS`].
fn totals() -> Topology {
    let mut b = StreamsBuilder::new();
    let _ = source(&mut b, INPUT)
        .group_by_key()
        .count_with(Materialized::as_(TOTALS));
    b.build().unwrap()
}

/// Instance `id`, advertising `server`, with one standby replica.
fn instance(
    log: &Arc<HookedLog<Script>>,
    id: &str,
    server: &str,
    state: &Path,
) -> StreamsApp<HookedLog<Script>> {
    let mut config: RuntimeConfig = config(APP, 1)
        .with_state_dir(state)
        .with_standby_replicas(1)
        .with_application_server(server);
    config.instance_id = id.into();
    let mut app = StreamsApp::with_log(totals(), config, log.clone()).unwrap();
    app.start().unwrap();
    app
}

/// A key of the input whose partition is `p`.
fn key_in(p: u32) -> String {
    (0..)
        .map(|i| format!("key{i}"))
        .find(|k| partition_for_key(k.as_bytes(), PARTITIONS) == p)
        .unwrap()
}

fn host(text: &str) -> HostInfo {
    HostInfo::parse(text).unwrap()
}

fn wait_running<L: stoatflow_log::Log>(apps: &[&StreamsApp<L>]) {
    wait_for(
        "the instances to run",
        apps,
        Duration::from_secs(60),
        || apps.iter().all(|a| a.state() == AppState::Running),
    );
}

#[test]
fn two_instances_agree_on_a_keys_owner_and_its_standby_holder() {
    let (_inner, group, log) = scripted_log();
    let (a, b) = (format!("{APP}-a"), format!("{APP}-b"));
    // a owns partitions 0 and 1, b owns 2.
    let owned = |ps: &[u32]| -> Vec<TopicPartition> {
        ps.iter().map(|p| TopicPartition::new(INPUT, *p)).collect()
    };
    group.describe(vec![
        MemberAssignment {
            member: a.clone(),
            partitions: owned(&[0, 1]),
        },
        MemberAssignment {
            member: b.clone(),
            partitions: owned(&[2]),
        },
    ]);
    group.push(&a, GroupEvent::Assigned(owned(&[0, 1])));
    group.push(&b, GroupEvent::Assigned(owned(&[2])));
    let (dir_a, dir_b) = (scratch_dir(), scratch_dir());
    let mut app_a = instance(&log, "a", "127.0.0.1:7001", dir_a.path());
    let mut app_b = instance(&log, "b", "127.0.0.1:7002", dir_b.path());
    wait_running(&[&app_a, &app_b]);

    let string = Serdes::string();
    for (p, owner, holder) in [(2, &b, &a), (0, &a, &b), (1, &a, &b)] {
        let key = key_in(p);
        for (asker, name) in [(&app_a, &a), (&app_b, &b)] {
            let m = asker.query_metadata_for_key(TOTALS, &key, &string).unwrap();
            let seen = format!("{name} on key {key}: {m:?}");
            assert_eq!(m.partition, p, "{seen}");
            assert_eq!(m.task, TaskId::new(0, p), "{seen}");
            assert_eq!(&m.active.member, owner, "{seen}");
            assert_eq!(m.active.local, owner == name, "{seen}");
            let port = |member: &str| if member == a { "7001" } else { "7002" };
            assert_eq!(
                m.active_host(),
                Some(&host(&format!("127.0.0.1:{}", port(owner)))),
                "{seen}"
            );
            assert_eq!(m.standbys.len(), 1, "{seen}");
            assert_eq!(&m.standbys[0].member, holder, "{seen}");
            assert_eq!(
                m.standby_hosts(),
                [&host(&format!("127.0.0.1:{}", port(holder)))],
                "{seen}"
            );
        }
    }
    for app in [&mut app_a, &mut app_b] {
        assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
    }
}

#[test]
fn a_single_instance_names_itself_and_refuses_what_it_cannot_place() {
    let log = log_with_input(&input(20, 5, 1), 10);
    let config = config("metadata-single", 1).with_application_server("localhost:8080");
    let mut app = StreamsApp::with_log(totals(), config, log).unwrap();
    app.start().unwrap();
    wait_running(&[&app]);
    let string = Serdes::string();
    for p in 0..PARTITIONS {
        let m = app
            .query_metadata_for_key(TOTALS, &key_in(p), &string)
            .unwrap();
        assert!(m.active.local, "{m:?}");
        assert_eq!(m.active_host(), Some(&host("localhost:8080")));
        assert_eq!(m.partition, p);
        assert!(m.standbys.is_empty(), "{m:?}");
    }

    let err = app
        .query_metadata_for_key("nope", &"k".to_owned(), &string)
        .unwrap_err();
    assert!(
        matches!(&err, MetadataError::UnknownStore { store, known } if store == "nope" && known == TOTALS),
        "{err:?}"
    );
    let err = app
        .handle()
        .query_metadata_for_key(TOTALS, &"k".to_owned(), &Refusing)
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains(TOTALS) && message.contains("refusing") && message.contains("no k"),
        "{message}"
    );
    assert!(app.close(Duration::from_secs(30)));
}

/// A key serde that refuses every key.
#[derive(Debug)]
struct Refusing;

impl Serde<String> for Refusing {
    fn name(&self) -> &str {
        "refusing"
    }

    fn serialize(&self, topic: &str, _: &String, _: &mut Vec<u8>) -> Result<(), SerdeError> {
        Err(SerdeError::Unwritable {
            serde: "refusing".into(),
            topic: topic.into(),
            reason: "no key is written".into(),
        })
    }

    fn deserialize(&self, topic: &str, bytes: &[u8]) -> Result<String, SerdeError> {
        Err(SerdeError::Malformed {
            serde: "refusing".into(),
            topic: topic.into(),
            len: bytes.len(),
            reason: "nothing is read".into(),
        })
    }
}
