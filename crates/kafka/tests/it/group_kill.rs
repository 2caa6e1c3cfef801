//! Three instances of one application on a real broker, one killed with
//! SIGKILL while records flow and started again
//! (docs/scale-out.md#consumer-group): the killed instance is a child process
//! (this test binary re-run with `STOATFLOW_GROUP_KILL_CHILD` naming the
//! broker), the other two run in this process. Static membership: the
//! restarted instance takes its own place in the group back and fences the
//! transaction it left open. Every instance keeps standby copies of the
//! others' tasks meanwhile (the killed one's copies and stores, unclean, are
//! rebuilt). Read committed, each final result is in the output exactly once.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stoatflow_kafka::KafkaLog;
use stoatflow_log::{Log, TopicSpec};
use stoatflow_runtime::StreamsApp;

use crate::broker::TestBroker;
use crate::groups::{APP, SIX, assert_no_error, owned, records, until_group_caught_up};
use crate::runtime_eos::{
    INPUT, OUTPUT, config_for, expected, produce_of, read_committed_of, sentinels_of, topology,
};

const CHILD: &str = "STOATFLOW_GROUP_KILL_CHILD";
/// The file whose appearance tells the child to close and exit.
const STOP_FILE: &str = "STOATFLOW_GROUP_KILL_STOP";
const TEST: &str =
    "group_kill::one_of_three_instances_killed_and_restarted_keeps_each_final_result_once";

fn heavy() -> bool {
    std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some()
}

fn instance(bootstrap: &str, id: &str, state: &Path) -> StreamsApp<KafkaLog> {
    let log = Arc::new(KafkaLog::connect(TestBroker::config_at(bootstrap)).unwrap());
    let mut config = config_for(APP)
        .with_state_dir(state)
        .with_standby_replicas(1);
    config.instance_id = id.into();
    let mut app = StreamsApp::with_log(topology(), config, log).unwrap();
    app.start().unwrap();
    app
}

/// The child's role: run instance "b" until the stop file appears, then close.
fn run_child(bootstrap: &str) {
    let state = std::env::var("STOATFLOW_GROUP_KILL_STATE").unwrap();
    let stop = std::env::var(STOP_FILE).unwrap();
    let mut app = instance(bootstrap, "b", Path::new(&state));
    while !Path::new(&stop).exists() {
        assert!(app.error().is_none(), "{:?}", app.error());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(app.close(Duration::from_secs(60)), "{:?}", app.error());
}

#[test]
fn one_of_three_instances_killed_and_restarted_keeps_each_final_result_once() {
    if let Ok(bootstrap) = std::env::var(CHILD) {
        run_child(&bootstrap);
        return;
    }
    let broker = TestBroker::start(TEST);
    let log = broker.log();
    log.create_topic(&TopicSpec::new(INPUT, SIX)).unwrap();
    log.create_topic(&TopicSpec::new(OUTPUT, SIX)).unwrap();
    let mut all = records(0, 600);
    produce_of(&log, &all, SIX);

    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let stop = dirs[1].path().join("stop");
    let exe = std::env::current_exe().unwrap();
    let spawn_b = || -> Child {
        Command::new(&exe)
            .args(["--exact", TEST, "--test-threads=1", "--nocapture"])
            .env(CHILD, broker.bootstrap())
            .env("STOATFLOW_GROUP_KILL_STATE", dirs[1].path().join("state"))
            .env(STOP_FILE, &stop)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut a = instance(&broker.bootstrap(), "a", dirs[0].path());
    let mut b = spawn_b();
    let mut c = instance(&broker.bootstrap(), "c", dirs[2].path());
    // B, out of sight, owns the two partitions A and C do not.
    until_shared_with_b(&a, &c);

    let kills = if heavy() { 3 } else { 1 };
    let mut next = 600;
    for _ in 0..kills {
        // Records flow from another thread while B is killed and restarted.
        let piece = records(next, 600);
        next += 600;
        all.extend(piece.iter().cloned());
        let bootstrap = broker.bootstrap();
        let writer = std::thread::spawn(move || {
            let log = KafkaLog::connect(TestBroker::config_at(&bootstrap)).unwrap();
            for chunk in piece.chunks(100) {
                produce_of(&log, chunk, SIX);
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        std::thread::sleep(Duration::from_millis(300));
        b.kill().unwrap(); // SIGKILL
        b.wait().unwrap();
        b = spawn_b();
        writer.join().unwrap();
        until_shared_with_b(&a, &c);
        assert_no_error(&[&a, &c]);
    }
    let ends = sentinels_of(SIX);
    produce_of(&log, &ends, SIX);
    all.extend(ends);
    until_group_caught_up(&log, &[&a, &c]);
    std::fs::write(&stop, b"").unwrap();
    let out = b.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "instance b failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(a.close(Duration::from_secs(60)), "{:?}", a.error());
    assert!(c.close(Duration::from_secs(60)), "{:?}", c.error());
    eprintln!("three instances: b killed {kills} time(s) while records flowed");
    assert_eq!(read_committed_of(&log, SIX), expected(&all));
}

/// Waits until A and C run, owning two input partitions each (B, out of
/// sight, the other two).
fn until_shared_with_b(a: &StreamsApp<KafkaLog>, c: &StreamsApp<KafkaLog>) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (oa, oc) = (owned(a), owned(c));
        if oa.len() == 2 && oc.len() == 2 && oa.is_disjoint(&oc) {
            return;
        }
        assert_no_error(&[a, c]);
        assert!(
            Instant::now() < deadline,
            "A owns {oa:?} and C {oc:?}, not two each"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
