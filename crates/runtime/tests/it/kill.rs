//! `kill -9` of a child process running the app on the on-disk embedded
//! log, at random moments, many times, each time restarted: every final
//! result committed exactly once, equal to the driver's.
//!
//! The child is this test binary re-run on one test,
//! [`child_runs_the_app_to_the_end`], with `STOATFLOW_KILL_CHILD_DIR` naming
//! the log's directory. Without the variable that test runs the same app
//! on a fresh directory in-process and checks its output, so it is a test
//! of its own too.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stoatflow_log::EmbeddedLog;
use stoatflow_runtime::{Backend, StreamsApp};

use crate::support::*;

const CHILD_DIR: &str = "STOATFLOW_KILL_CHILD_DIR";

/// Rounds of input; the parent appends one between kills, so every child
/// has work when it is killed.
const ROUNDS_LIGHT: usize = 12;
const ROUNDS_HEAVY: usize = 60;
const PER_ROUND: usize = 400;

fn rounds() -> usize {
    if std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some() {
        ROUNDS_HEAVY
    } else {
        ROUNDS_LIGHT
    }
}

fn records() -> Vec<Input> {
    input(rounds() * PER_ROUND, 13, 7)
}

/// Opens the log in `dir`, runs the app until the input is consumed, closes.
fn run_app_in(dir: &std::path::Path) {
    // The other test of this module forks children: for the moment between
    // a fork and its exec a child shares our descriptors, so a lock we just
    // released can still be held. Retry briefly.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut app = loop {
        let config = config("killed", 2).with_streams_backend(dir);
        match StreamsApp::new(tumbling_count(), config) {
            Ok(app) => break app,
            Err(stoatflow_runtime::RuntimeError::Log(stoatflow_log::LogError::Locked {
                ..
            })) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("{e}"),
        }
    };
    app.start().unwrap();
    assert!(
        app.wait_until_caught_up(Duration::from_secs(120)).unwrap(),
        "{:?}",
        app.error()
    );
    assert!(app.close(Duration::from_secs(60)), "{:?}", app.error());
}

trait OnDisk {
    fn with_streams_backend(self, dir: &std::path::Path) -> Self;
}

impl OnDisk for stoatflow_runtime::RuntimeConfig {
    fn with_streams_backend(mut self, dir: &std::path::Path) -> Self {
        self.backend = Backend::Embedded {
            dir: dir.to_owned(),
        };
        self
    }
}

fn prepare(dir: &std::path::Path) {
    let log = EmbeddedLog::open(dir).unwrap();
    create_topics(&log);
    produce(&log, &records(), 100);
}

/// Appends `records` to the log in `dir` (waiting out a lock a dead
/// child's fork window may still hold).
fn append(dir: &std::path::Path, records: &[Input]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let log = loop {
        match EmbeddedLog::open(dir) {
            Ok(log) => break log,
            Err(stoatflow_log::LogError::Locked { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("{e}"),
        }
    };
    produce(&log, records, 100);
}

fn check(dir: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let log = loop {
        match EmbeddedLog::open(dir) {
            Ok(log) => break Arc::new(log),
            Err(stoatflow_log::LogError::Locked { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("{e}"),
        }
    };
    let engine = regular(read_output(&*log));
    assert_each_once(&engine);
    assert_eq!(engine, regular(driver_finals(tumbling_count(), &records())));
}

#[test]
fn child_runs_the_app_to_the_end() {
    match std::env::var_os(CHILD_DIR) {
        Some(dir) => run_app_in(std::path::Path::new(&dir)),
        None => {
            let dir = tempfile::tempdir().unwrap();
            prepare(dir.path());
            run_app_in(dir.path());
            check(dir.path());
        }
    }
}

#[test]
fn kill_9_at_random_moments_then_restart_commits_each_final_result_once() {
    let dir = tempfile::tempdir().unwrap();
    {
        let log = EmbeddedLog::open(dir.path()).unwrap();
        create_topics(&log);
    }
    let all = records();
    let exe = std::env::current_exe().unwrap();
    let spawn = || {
        Command::new(&exe)
            .args([
                "--exact",
                "kill::child_runs_the_app_to_the_end",
                "--test-threads=1",
                "--nocapture",
            ])
            .env(CHILD_DIR, dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut killed = 0;
    let chunks: Vec<&[Input]> = all.chunks(PER_ROUND).collect();
    for (round, chunk) in chunks.iter().enumerate() {
        append(dir.path(), chunk);
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let after = Duration::from_millis(10 + seed % 150);
        let mut child = spawn();
        let started = Instant::now();
        while started.elapsed() < after && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(1));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
            killed += 1;
        } else {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "child {round} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let out = spawn().wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the final run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "kill -9: {killed} of {} children killed mid-run",
        chunks.len()
    );
    if rounds() == ROUNDS_HEAVY {
        assert!(
            killed >= 50,
            "only {killed} kills; the heavy run promises 50"
        );
    }
    assert!(
        killed * 2 >= chunks.len(),
        "only {killed} of {} children were killed mid-run",
        chunks.len()
    );
    check(dir.path());
}
