//! The log's upkeep (repartition purges, the log's compaction and
//! retention) runs on a thread of its own: barriers go on committing while
//! a pass runs, a close commits its final barrier meanwhile and then waits
//! for the pass, a drop (a crash) waits for nothing, an engine replaced
//! meanwhile starts no second pass, and a failed pass is logged and
//! counted without stopping the application. A pass is held by
//! a hook of the log's upkeep until the test lets it go.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stoatflow_log::{EmbeddedLog, ErrorKind, LogError};
use stoatflow_runtime::{AppState, RuntimeConfig, StreamsApp};

use crate::hooked_log::{Durable, HookedLog, Hooks};
use crate::support::*;

/// The longest a test waits for something the runtime does at once.
const WAIT: Duration = Duration::from_secs(30);
/// How long the held pass waits for its release at most, so that a test
/// that fails does not hang.
const BACKSTOP: Duration = Duration::from_secs(120);
/// Batches of input that must each commit while one pass is held.
const BATCHES: usize = 5;

/// Holds the first pass of the log's upkeep until released; tells of each
/// commit and of the held pass's beginning and end.
#[derive(Debug)]
struct HeldPass {
    taken: AtomicBool,
    /// Calls of the log's upkeep.
    calls: AtomicU64,
    /// The next commit fails as aborted (the engine is replaced).
    fail_next_commit: AtomicBool,
    entered: Mutex<Sender<()>>,
    release: Mutex<Receiver<()>>,
    /// Whether the held pass's upkeep succeeded, once it ended.
    finished: Mutex<Sender<bool>>,
    commits: Mutex<Sender<()>>,
}

/// The test's side of a [`HeldPass`].
struct Control {
    entered: Receiver<()>,
    release: Sender<()>,
    finished: Receiver<bool>,
    commits: Receiver<()>,
}

fn held_pass() -> (Arc<HeldPass>, Control) {
    let (entered_tx, entered) = channel();
    let (release, release_rx) = channel();
    let (finished_tx, finished) = channel();
    let (commits_tx, commits) = channel();
    let hooks = HeldPass {
        taken: AtomicBool::new(false),
        calls: AtomicU64::new(0),
        fail_next_commit: AtomicBool::new(false),
        entered: Mutex::new(entered_tx),
        release: Mutex::new(release_rx),
        finished: Mutex::new(finished_tx),
        commits: Mutex::new(commits_tx),
    };
    let control = Control {
        entered,
        release,
        finished,
        commits,
    };
    (Arc::new(hooks), control)
}

impl Hooks for HeldPass {
    fn upkeep(&self, run: impl FnOnce() -> Result<(), LogError>) -> Result<(), LogError> {
        self.calls.fetch_add(1, Ordering::AcqRel);
        if self.taken.swap(true, Ordering::AcqRel) {
            return run();
        }
        let _ = self.entered.lock().unwrap().send(());
        // Released by the test, or by its end (the sender dropped).
        let _ = self.release.lock().unwrap().recv_timeout(BACKSTOP);
        let result = run();
        let _ = self.finished.lock().unwrap().send(result.is_ok());
        result
    }

    fn durable<T>(
        &self,
        op: Durable,
        run: impl FnOnce() -> Result<T, LogError>,
    ) -> Result<T, LogError> {
        if op == Durable::Commit && self.fail_next_commit.swap(false, Ordering::AcqRel) {
            return Err(LogError::Broker {
                op: "commit".into(),
                message: "aborted (injected)".into(),
                kind: ErrorKind::AbortTransaction,
            });
        }
        let out = run();
        if op == Durable::Commit && out.is_ok() {
            let _ = self.commits.lock().unwrap().send(());
        }
        out
    }
}

/// An upkeep due after every commit (1 ms).
fn eager_upkeep(app: &str) -> RuntimeConfig {
    let mut c = config(app, 2);
    c.purge_interval = Duration::from_millis(1);
    c
}

/// An app on `inner` behind a [`HeldPass`], started, whose first pass of
/// the upkeep has begun and is held.
fn started_with_a_held_pass(
    inner: &Arc<EmbeddedLog>,
    app: &str,
) -> (StreamsApp<HookedLog<HeldPass>>, Control) {
    let (hooks, control) = held_pass();
    let log = Arc::new(HookedLog {
        inner: inner.clone(),
        hooks,
    });
    let mut app = StreamsApp::with_log(tumbling_count(), eager_upkeep(app), log).unwrap();
    app.start().unwrap();
    control
        .entered
        .recv_timeout(WAIT)
        .expect("a pass of the log's upkeep began after the first commit");
    (app, control)
}

#[test]
fn barriers_keep_committing_while_a_pass_of_the_upkeep_runs() {
    let inner = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*inner);
    let records = input(1_200, 20, 31);
    let (first, rest) = records.split_at(200);
    produce(&*inner, first, 50);
    // Declared after the app, so dropped before it if the test fails: the
    // held pass is let go and the app's drop does not wait on it.
    let (mut app, control) = started_with_a_held_pass(&inner, "upkeep-apart");
    let held_from = Instant::now();
    let before = app.committed_barriers();
    for batch in rest.chunks(rest.len() / BATCHES) {
        produce(&*inner, batch, 50);
        assert!(
            app.wait_until_caught_up(WAIT).unwrap(),
            "a batch committed while the upkeep's pass was held; state {}, error {:?}",
            app.state(),
            app.error()
        );
    }
    let during = app.committed_barriers() - before;
    assert!(
        during >= BATCHES as u64,
        "{during} barriers committed during the pass"
    );
    assert!(
        app.handle().metrics().upkeep.skipped >= 1,
        "the ticks that fell during the pass were skipped"
    );
    let held_for = held_from.elapsed();
    control.release.send(()).unwrap();
    assert!(control.finished.recv_timeout(WAIT).expect("the pass ended"));
    assert!(app.close(WAIT), "closed: {:?}", app.error());
    // The duration of the held pass is at least as long as it was held.
    let upkeep = app.handle().metrics().upkeep;
    assert!(upkeep.passes >= 1, "{upkeep:?}");
    assert_eq!(upkeep.duration.count, upkeep.passes, "{upkeep:?}");
    assert!(
        upkeep.duration.sum_ms >= held_for.as_secs_f64() * 1_000.0,
        "{upkeep:?}, held for {held_for:?}"
    );
    assert_eq!(upkeep.failures, 0, "{upkeep:?}");
    let finals = read_output(&*inner);
    assert_each_once(&finals);
    assert_same_finals(
        &regular(finals),
        &regular(driver_finals(tumbling_count(), &records)),
    );
}

#[test]
fn a_close_commits_its_final_barrier_during_a_pass_then_lets_the_pass_end() {
    let inner = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*inner);
    let records = input(600, 20, 32);
    produce(&*inner, &records, 50);
    let (mut app, control) = started_with_a_held_pass(&inner, "upkeep-close");
    while control.commits.try_recv().is_ok() {}
    let closer = std::thread::spawn(move || {
        let closed = app.close(BACKSTOP);
        (app, closed)
    });
    control
        .commits
        .recv_timeout(WAIT)
        .expect("the close committed while the pass was held");
    assert!(!closer.is_finished(), "the close waits for the pass");
    control.release.send(()).unwrap();
    let (app, closed) = closer.join().unwrap();
    assert!(closed, "closed: {:?}", app.error());
    assert_eq!(app.state(), AppState::NotRunning);
    // The pass ended, and well, before the close returned.
    assert_eq!(control.finished.try_recv(), Ok(true));
    let finals = read_output(&*inner);
    assert_each_once(&finals);
    assert_same_finals(
        &regular(finals),
        &regular(driver_finals(tumbling_count(), &records)),
    );
}

#[test]
fn a_drop_during_a_pass_does_not_wait_for_it_and_the_pass_ends_cleanly() {
    let inner = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*inner);
    produce(&*inner, &input(300, 10, 33), 50);
    let (app, control) = started_with_a_held_pass(&inner, "upkeep-drop");
    let (dropped_tx, dropped) = channel();
    let dropper = std::thread::spawn(move || {
        drop(app);
        let _ = dropped_tx.send(());
    });
    dropped
        .recv_timeout(WAIT)
        .expect("the drop returned while the pass was held");
    control.release.send(()).unwrap();
    assert!(control.finished.recv_timeout(WAIT).expect("the pass ended"));
    dropper.join().unwrap();
}

/// The upkeep thread serves the application, not one engine: an engine
/// that replaces a failed one while a pass runs starts no second pass.
#[test]
fn an_engine_replaced_during_a_pass_starts_no_second_one() {
    let inner = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*inner);
    let records = input(800, 20, 35);
    let (first, rest) = records.split_at(200);
    produce(&*inner, first, 50);
    let (mut app, control) = started_with_a_held_pass(&inner, "upkeep-replaced");
    let hooks = app.log().hooks.clone();
    hooks.fail_next_commit.store(true, Ordering::Release);
    produce(&*inner, rest, 50);
    assert!(
        app.wait_until_caught_up(WAIT).unwrap(),
        "the replacement committed; state {}, error {:?}",
        app.state(),
        app.error()
    );
    assert_eq!(app.replacements(), 1);
    assert!(!hooks.fail_next_commit.load(Ordering::Acquire));
    assert_eq!(
        hooks.calls.load(Ordering::Acquire),
        1,
        "only the held pass called the log's upkeep"
    );
    control.release.send(()).unwrap();
    assert!(control.finished.recv_timeout(WAIT).expect("the pass ended"));
    assert!(app.close(WAIT), "closed: {:?}", app.error());
    let finals = read_output(&*inner);
    assert_each_once(&finals);
    assert_same_finals(
        &regular(finals),
        &regular(driver_finals(tumbling_count(), &records)),
    );
}

/// Fails every pass of the log's upkeep.
#[derive(Debug, Default)]
struct FailingUpkeep {
    failed: AtomicU64,
}

impl Hooks for FailingUpkeep {
    fn upkeep(&self, _run: impl FnOnce() -> Result<(), LogError>) -> Result<(), LogError> {
        self.failed.fetch_add(1, Ordering::AcqRel);
        Err(LogError::Broker {
            op: "upkeep".into(),
            message: "the disk is full (injected)".into(),
            kind: ErrorKind::Fatal,
        })
    }
}

#[test]
fn a_failed_pass_is_counted_and_the_application_goes_on() {
    let inner = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*inner);
    let records = input(600, 20, 34);
    produce(&*inner, &records, 50);
    let hooks = Arc::new(FailingUpkeep::default());
    let log = Arc::new(HookedLog {
        inner: inner.clone(),
        hooks: hooks.clone(),
    });
    let mut app =
        StreamsApp::with_log(tumbling_count(), eager_upkeep("upkeep-fails"), log).unwrap();
    start_and_finish(&mut app);
    let failed = hooks.failed.load(Ordering::Acquire);
    assert!(failed >= 1, "the first commit was followed by a pass");
    let upkeep = app.handle().metrics().upkeep;
    assert_eq!(upkeep.failures, failed, "{upkeep:?}");
    assert_eq!(upkeep.passes, failed, "{upkeep:?}");
    let finals = read_output(&*inner);
    assert_each_once(&finals);
    assert_same_finals(
        &regular(finals),
        &regular(driver_finals(tumbling_count(), &records)),
    );
}

/// Panics in the first pass of the log's upkeep.
#[derive(Debug, Default)]
struct PanickingUpkeep {
    calls: AtomicU64,
}

impl Hooks for PanickingUpkeep {
    fn upkeep(&self, _run: impl FnOnce() -> Result<(), LogError>) -> Result<(), LogError> {
        self.calls.fetch_add(1, Ordering::AcqRel);
        panic!("the compaction's index is out of step (injected)");
    }
}

/// A panic in the log's upkeep ends the upkeep thread, and says so with its
/// message (in the metrics, and logged): no later pass runs, and the
/// application goes on committing exactly its final results.
#[test]
fn a_panicking_pass_is_reported_with_its_message_and_the_application_goes_on() {
    let inner = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*inner);
    let records = input(600, 20, 34);
    produce(&*inner, &records, 50);
    let hooks = Arc::new(PanickingUpkeep::default());
    let log = Arc::new(HookedLog {
        inner: inner.clone(),
        hooks: hooks.clone(),
    });
    let mut app =
        StreamsApp::with_log(tumbling_count(), eager_upkeep("upkeep-panics"), log).unwrap();
    start_and_finish(&mut app);
    assert_eq!(
        hooks.calls.load(Ordering::Acquire),
        1,
        "no pass runs after the one that panicked"
    );
    let upkeep = app.handle().metrics().upkeep;
    assert_eq!(
        upkeep.panicked.as_deref(),
        Some("the compaction's index is out of step (injected)"),
        "{upkeep:?}"
    );
    assert_eq!(upkeep.passes, 0, "{upkeep:?}");
    let finals = read_output(&*inner);
    assert_each_once(&finals);
    assert_same_finals(
        &regular(finals),
        &regular(driver_finals(tumbling_count(), &records)),
    );
}
