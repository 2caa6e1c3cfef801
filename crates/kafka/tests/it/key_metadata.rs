//! Key metadata on a real broker (docs/queries.md#metadata): two instances
//! share a 6-partition input through the consumer group, each advertising
//! its `application.server` and keeping one standby replica. Both name, for
//! a key of every partition, the instance that owns its task (as its own
//! assignment says) with that instance's endpoint, and the other one as the
//! standby holder: owners from the group's description, endpoints from the
//! endpoints topic.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stoatflow_kafka::KafkaLog;
use stoatflow_log::{Log, TopicSpec};
use stoatflow_runtime::{HostInfo, StreamsApp, TaskId, partition_for_key};
use stoatflow_streams::Serdes;

use crate::broker::TestBroker;
use crate::groups::{APP, SIX, until_shared};
use crate::runtime_eos::{INPUT, OUTPUT, config_for, topology};

/// The topology's one window store.
const STORE: &str = "KSTREAM-AGGREGATE-STATE-STORE-0000000001";

fn instance(log: &Arc<KafkaLog>, id: &str, server: &str, state: &Path) -> StreamsApp<KafkaLog> {
    let mut config = config_for(APP)
        .with_state_dir(state)
        .with_standby_replicas(1)
        .with_application_server(server);
    config.instance_id = id.into();
    let mut app = StreamsApp::with_log(topology(), config, log.clone()).unwrap();
    app.start().unwrap();
    app
}

#[test]
fn two_instances_on_a_broker_name_each_keys_owner_and_standby_holder() {
    let broker =
        TestBroker::start("two_instances_on_a_broker_name_each_keys_owner_and_standby_holder");
    let connect = || Arc::new(KafkaLog::connect(broker.config()).unwrap());
    let (log_a, log_b) = (connect(), connect());
    log_a.create_topic(&TopicSpec::new(INPUT, SIX)).unwrap();
    log_a.create_topic(&TopicSpec::new(OUTPUT, SIX)).unwrap();
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let servers = ["10.0.0.1:7001", "10.0.0.2:7002"];
    let mut a = instance(&log_a, "a", servers[0], dir_a.path());
    let mut b = instance(&log_b, "b", servers[1], dir_b.path());
    until_shared(&[&a, &b], &[3, 3]);
    let members = [format!("{APP}-a"), format!("{APP}-b")];
    let apps = [&a, &b];

    let string = Serdes::string();
    for p in 0..SIX {
        let key = (0..)
            .map(|i| format!("key{i}"))
            .find(|k| partition_for_key(k.as_bytes(), SIX) == p)
            .unwrap();
        let owner = usize::from(!a.assignment().active.contains(&TaskId::new(0, p)));
        let holder = 1 - owner;
        for (asker, app) in apps.iter().enumerate() {
            // Right after a rebalance the description may still be of the
            // one before: ask until it is this generation's.
            let deadline = Instant::now() + Duration::from_secs(30);
            let m = loop {
                match app.query_metadata_for_key(STORE, &key, &string) {
                    Ok(m) => break m,
                    Err(e) => {
                        assert!(Instant::now() < deadline, "instance {asker}: {e}");
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            };
            let seen = format!("instance {asker}, key {key}: {m:?}");
            assert_eq!(m.task, TaskId::new(0, p), "{seen}");
            assert_eq!(m.active.member, members[owner], "{seen}");
            assert_eq!(m.active.local, asker == owner, "{seen}");
            assert_eq!(
                m.active_host(),
                Some(&HostInfo::parse(servers[owner]).unwrap()),
                "{seen}"
            );
            assert_eq!(m.standbys.len(), 1, "{seen}");
            assert_eq!(m.standbys[0].member, members[holder], "{seen}");
            assert_eq!(
                m.standby_hosts(),
                [&HostInfo::parse(servers[holder]).unwrap()],
                "{seen}"
            );
        }
    }
    for app in [&mut a, &mut b] {
        assert!(app.close(Duration::from_secs(60)), "{:?}", app.error());
    }
}
