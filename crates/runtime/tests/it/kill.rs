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

/// Kills the test makes mid-run (the parent appends a round of input before
/// each child, so every child has work when it is killed); rounds whose
/// child finishes first do not count, up to [`MAX_ROUNDS`].
const KILLS_LIGHT: usize = 12;
const KILLS_HEAVY: usize = 50;
const MAX_ROUNDS: usize = 200;
const PER_ROUND: usize = 200;

fn kills_wanted() -> usize {
    if std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some() {
        KILLS_HEAVY
    } else {
        KILLS_LIGHT
    }
}

/// The input of `rounds` rounds, then the far-future records that close
/// every window.
fn records_for(rounds: usize) -> Vec<Input> {
    let all = input(MAX_ROUNDS * PER_ROUND, 13, 7);
    let (regular, sentinels) = all.split_at(all.len() - PARTITIONS as usize);
    let mut out = regular[..rounds * PER_ROUND].to_vec();
    out.extend_from_slice(sentinels);
    out
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
    produce(&log, &records_for(KILLS_LIGHT), 100);
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

fn check(dir: &std::path::Path, records: &[Input]) {
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
    assert_eq!(engine, regular(driver_finals(tumbling_count(), records)));
}

#[test]
fn child_runs_the_app_to_the_end() {
    match std::env::var_os(CHILD_DIR) {
        Some(dir) => run_app_in(std::path::Path::new(&dir)),
        None => {
            let dir = scratch_dir();
            prepare(dir.path());
            run_app_in(dir.path());
            check(dir.path(), &records_for(KILLS_LIGHT));
        }
    }
}

#[test]
fn kill_9_at_random_moments_then_restart_commits_each_final_result_once() {
    let dir = scratch_dir();
    {
        let log = EmbeddedLog::open(dir.path()).unwrap();
        create_topics(&log);
    }
    let wanted = kills_wanted();
    let all = records_for(MAX_ROUNDS);
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
    let mut rounds = 0;
    let chunks: Vec<&[Input]> = all[..MAX_ROUNDS * PER_ROUND].chunks(PER_ROUND).collect();
    while killed < wanted {
        assert!(
            rounds < MAX_ROUNDS,
            "only {killed} of {wanted} kills in {MAX_ROUNDS} rounds: every child finished first"
        );
        append(dir.path(), chunks[rounds]);
        rounds += 1;
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let after = Duration::from_millis(5 + seed % 80);
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
                "child {rounds} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    // The far-future records that close every window, then a run to the end.
    append(dir.path(), &all[all.len() - PARTITIONS as usize..]);
    let out = spawn().wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the final run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("kill -9: {killed} children killed mid-run in {rounds} rounds");
    let mut used = all[..rounds * PER_ROUND].to_vec();
    used.extend_from_slice(&all[all.len() - PARTITIONS as usize..]);
    check(dir.path(), &used);
}
