//! Real process kills against a real broker (docs/state.md#exactly-once): the runtime's windowed count
//! on a `KafkaLog` in a child process killed with SIGKILL at random moments and restarted,
//! and the broker itself stopped and restarted on its data directory while the application
//! commits (with SIGINT: under SIGKILL noida-db loses transactions it acknowledged, see
//! [`TestBroker::stop_and_restart`]). Read committed, every final result is there exactly once with the
//! count of the records it covers.
//!
//! The child is this test binary re-run on [`kill_9_of_the_app_on_kafka_then_restart_commits_each_final_result_once`]
//! with `STOATFLOW_KAFKA_KILL_CHILD` naming the broker: in that role the test runs the app
//! until the input is consumed, then closes it.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stoatflow_kafka::KafkaLog;
use stoatflow_log::{Log, TopicSpec};
use stoatflow_runtime::{AppState, StreamsApp};

use crate::broker::TestBroker;
use crate::runtime_eos::{
    INPUT, OUTPUT, PARTITIONS, config_for, expected, finish, produce, read_committed, read_topic,
    records, sentinels, topology,
};

const CHILD: &str = "STOATFLOW_KAFKA_KILL_CHILD";
const TEST: &str = "kill::kill_9_of_the_app_on_kafka_then_restart_commits_each_final_result_once";
const APP: &str = "killed-app";
/// Input appended before each child, so every child has work when it is killed.
const PER_ROUND: i64 = 300;
const MAX_ROUNDS: usize = 60;

fn heavy() -> bool {
    std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some()
}

fn connect(bootstrap: &str) -> KafkaLog {
    KafkaLog::connect(TestBroker::config_at(bootstrap)).expect("connect to the test broker")
}

/// The child's role: run the app until the input is consumed, close it.
fn run_child(bootstrap: &str) {
    let log = Arc::new(connect(bootstrap));
    let mut app = StreamsApp::with_log(topology(), config_for(APP), log).unwrap();
    app.start().unwrap();
    finish(&mut app);
}

fn create_topics(log: &KafkaLog) {
    log.create_topic(&TopicSpec::new(INPUT, PARTITIONS))
        .unwrap();
    log.create_topic(&TopicSpec::new(OUTPUT, PARTITIONS))
        .unwrap();
}

#[test]
fn kill_9_of_the_app_on_kafka_then_restart_commits_each_final_result_once() {
    if let Ok(bootstrap) = std::env::var(CHILD) {
        run_child(&bootstrap);
        return;
    }
    let broker = TestBroker::start(TEST);
    let log = broker.log();
    create_topics(&log);
    let wanted = if heavy() { 10 } else { 3 };
    let all = records(MAX_ROUNDS as i64 * PER_ROUND);
    let rounds: Vec<_> = all.chunks(PER_ROUND as usize).collect();
    let exe = std::env::current_exe().unwrap();
    let spawn = || {
        Command::new(&exe)
            .args(["--exact", TEST, "--test-threads=1", "--nocapture"])
            .env(CHILD, broker.bootstrap())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let (mut killed, mut used) = (0, 0);
    while killed < wanted {
        assert!(
            used < MAX_ROUNDS,
            "only {killed} of {wanted} kills in {MAX_ROUNDS} rounds: every child finished first"
        );
        produce(&log, rounds[used]);
        used += 1;
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // A child needs a second or two to restore and catch up on the broker: kill it
        // anywhere from its start to well into its run.
        let after = Duration::from_millis(200 + seed % 2_500);
        let mut child = spawn();
        let started = Instant::now();
        while started.elapsed() < after && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
            killed += 1;
        } else {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "child {used} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    produce(&log, &sentinels());
    let out = spawn().wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the final run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("kill -9 on Kafka: {killed} children killed mid-run in {used} rounds");
    let input: Vec<_> = all[..used * PER_ROUND as usize].to_vec();
    let got = read_committed(&log);
    assert!(!got.is_empty(), "no final result committed");
    assert_eq!(got, expected(&input));
}

/// Waits until `app` commits another barrier (it came through) or stops in ERROR (it did
/// not: a new app resumes from what is committed). Returns whether it came through.
fn came_through(app: &StreamsApp<KafkaLog>, barriers: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if app.committed_barriers() > barriers {
            return true;
        }
        if matches!(app.state(), AppState::Error | AppState::NotRunning) {
            return false;
        }
        assert!(
            Instant::now() < deadline,
            "neither committed nor stopped after the broker came back: {}",
            app.state()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn broker_stopped_and_restarted_while_the_app_commits_keeps_each_final_result_once() {
    let mut broker = TestBroker::start(
        "broker_stopped_and_restarted_while_the_app_commits_keeps_each_final_result_once",
    );
    let log = broker.log();
    create_topics(&log);
    let restarts = if heavy() { 3 } else { 1 };
    let all = records(PER_ROUND * (restarts + 1));
    let pieces: Vec<_> = all.chunks(PER_ROUND as usize).collect();
    let start = |bootstrap: &str| {
        let mut app =
            StreamsApp::with_log(topology(), config_for(APP), Arc::new(connect(bootstrap)))
                .unwrap();
        app.start().unwrap();
        app
    };
    produce(&log, pieces[0]);
    drop(log);
    let mut app = start(&broker.bootstrap());
    let (mut survived, mut replaced) = (0, 0);
    for piece in &pieces[1..] {
        // Barriers commit every 150 ms: after two, the broker goes in the middle of
        // whatever the app is doing, most often an open or committing transaction.
        let deadline = Instant::now() + Duration::from_secs(60);
        let base = app.committed_barriers();
        while app.committed_barriers() < base + 2 {
            assert!(Instant::now() < deadline, "no barrier: {:?}", app.error());
            std::thread::sleep(Duration::from_millis(5));
        }
        broker.stop_and_restart();
        let barriers = app.committed_barriers();
        if came_through(&app, barriers) {
            survived += 1;
        } else {
            replaced += 1;
            drop(app);
            app = start(&broker.bootstrap());
        }
        produce(&broker.log(), piece);
    }
    produce(&broker.log(), &sentinels());
    eprintln!(
        "broker stop and restart: {} times, the app came through {survived}, replaced {replaced}",
        restarts
    );
    finish(&mut app);
    let log = broker.log();
    let kept = read_topic(&log, INPUT).len();
    assert_eq!(
        kept,
        all.len() + PARTITIONS as usize,
        "the broker lost input"
    );
    assert_eq!(read_committed(&log), expected(&all));
}
