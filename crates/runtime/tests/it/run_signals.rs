//! `StreamsApp::run` in a child process: it runs until SIGTERM, then closes
//! gracefully, so every final result the input closes is committed once,
//! and it returns `Ok` (the child exits 0).
//!
//! The child is this test binary re-run on this one test with
//! `STOATFLOW_RUN_CHILD_DIR` naming the on-disk log.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use stoatflow_log::{EmbeddedLog, LogError};
use stoatflow_runtime::{Backend, RuntimeError, StreamsApp};

use crate::support::*;

const CHILD_DIR: &str = "STOATFLOW_RUN_CHILD_DIR";
const TEST: &str = "run_signals::run_closes_gracefully_on_sigterm";

/// Opens the log in `dir`, waiting out a lock that a sibling test's fork
/// may hold for a moment.
fn open(dir: &Path) -> EmbeddedLog {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match EmbeddedLog::open(dir) {
            Ok(log) => return log,
            Err(LogError::Locked { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// The child: runs the app with `run()`, printing `CONSUMED` once its tasks
/// have processed `expected` records.
fn child(dir: &Path, expected: u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let app = loop {
        let mut config = config("signalled", 2);
        config.backend = Backend::Embedded {
            dir: dir.to_owned(),
        };
        match StreamsApp::new(tumbling_count(), config) {
            Ok(app) => break app,
            Err(RuntimeError::Log(LogError::Locked { .. })) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("{e}"),
        }
    };
    let handle = app.handle();
    std::thread::spawn(move || {
        while handle.metrics().records_in < expected {
            std::thread::sleep(Duration::from_millis(10));
        }
        println!("CONSUMED");
    });
    app.run().expect("run() ends cleanly on SIGTERM");
}

#[test]
fn run_closes_gracefully_on_sigterm() {
    let records = input(1_000, 9, 41);
    if let Some(dir) = std::env::var_os(CHILD_DIR) {
        child(Path::new(&dir), records.len() as u64);
        return;
    }
    let dir = scratch_dir();
    {
        let log = open(dir.path());
        create_topics(&log);
        produce(&log, &records, 100);
    }
    let mut process = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR, dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = process.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // The harness may have begun the line with the test's name.
            if line.trim_end().ends_with("CONSUMED") {
                let _ = tx.send(());
            } else {
                // The child's own report (a failure shows here).
                eprintln!("child: {line}");
            }
        }
    });
    if rx.recv_timeout(Duration::from_secs(60)).is_err() {
        let _ = process.kill();
        panic!("the child never consumed its input");
    }
    let sent = Command::new("kill")
        .args(["-s", "TERM", &process.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -s TERM");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = process.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = process.kill();
            panic!("the child did not exit within 60 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "the child exited with {status}");
    let log = Arc::new(open(dir.path()));
    let engine = regular(read_output(&*log));
    assert_each_once(&engine);
    assert_eq!(engine, regular(driver_finals(tumbling_count(), &records)));
}
