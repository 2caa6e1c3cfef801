//! Crashes (the app dropped without `close`) at varied points, then a
//! restart on the same log: every final result exactly once, equal to an
//! uninterrupted run. A graceful close then restart emits nothing again.

use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::EmbeddedLog;
use stoatflow_runtime::{AppState, StreamsApp};
use stoatflow_streams::{DropReason, StreamsConfig};

use crate::support::*;

fn crash_after_barriers(log: &Arc<EmbeddedLog>, app_id: &str, barriers: u64, lanes: usize) {
    let mut app =
        StreamsApp::with_log(tumbling_count(), config(app_id, lanes), log.clone()).unwrap();
    app.start().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while app.committed_barriers() < barriers && std::time::Instant::now() < deadline {
        if app.state() == AppState::Error {
            panic!("failed: {:?}", app.error());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    drop(app); // a crash: nothing more commits
}

#[test]
fn a_crash_at_varied_points_then_restart_emits_each_final_result_once() {
    let records = input(800, 9, 4);
    let expected = regular(driver_finals(tumbling_count(), &records));
    let runs: u64 = if std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some() {
        12
    } else {
        5
    };
    for run in 0..runs {
        let log = Arc::new(EmbeddedLog::in_memory());
        create_topics(&*log);
        // Input arrives in pieces so that barriers fall between them.
        let (first, rest) = records.split_at(records.len() / 2);
        produce(&*log, first, 25);
        let app_id = format!("crash-{run}");
        let lanes = 1 + (run as usize % 3);
        crash_after_barriers(&log, &app_id, run % 4, lanes);
        produce(&*log, rest, 25);
        if run % 2 == 1 {
            // A second crash, during or right after recovery.
            crash_after_barriers(&log, &app_id, 1, lanes);
        }
        run_to_end(&log, &app_id, lanes);
        let engine = regular(read_output(&*log));
        assert_each_once(&engine);
        assert_eq!(engine, expected, "run {run}");
    }
}

#[test]
fn graceful_close_then_restart_emits_nothing_again() {
    let records = input(300, 4, 5);
    let log = log_with_input(&records, 30);
    run_to_end(&log, "graceful", 2);
    let first = read_output(&*log);
    run_to_end(&log, "graceful", 2);
    assert_eq!(read_output(&*log), first);
    assert_each_once(&first);
}

/// A restart's floor is the newest stamp its watermark store committed
/// (docs/state.md#crash-restart; a crash leaves the newest stamp out of the
/// frontier only): a record for a window that closed at or before it is
/// dropped as late, counted under `late_window`, and changes no result. The
/// close's barrier is the only one here (barriers every 10 s), so without the
/// seeded floor nothing would be below it.
#[test]
fn after_a_graceful_close_the_floor_is_its_final_stamp() {
    let records = input(300, 4, 8);
    let log = log_with_input(&records, 30);
    let slow = |app: &str| {
        config(app, 2).with_barrier(stoatflow_runtime::CommitBarrierConfig {
            interval: Duration::from_secs(10),
            ..stoatflow_runtime::CommitBarrierConfig::default()
        })
    };
    let run = |log: &Arc<EmbeddedLog>| {
        let mut app = StreamsApp::with_log(tumbling_count(), slow("floored"), log.clone()).unwrap();
        app.start().unwrap();
        assert!(app.wait_until_consumed(Duration::from_secs(30)).unwrap());
        assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
        let late = app
            .handle()
            .metrics()
            .dropped
            .iter()
            .find(|(reason, _)| *reason == DropReason::LateWindow)
            .map_or(0, |(_, n)| *n);
        (app.timeline().barriers().count(), late)
    };
    assert_eq!(run(&log), (1, 0), "the close's barrier only, nothing late");
    let first = read_output(&*log);
    assert_each_once(&first);
    // A day before everything: its window closed long before the stamp.
    let late = Input {
        key: "late".into(),
        ts: START - 86_400_000,
        value: 1,
    };
    produce(&*log, &[late], 1);
    assert_eq!(run(&log), (1, 1), "the record is dropped as late");
    assert_eq!(read_output(&*log), first, "the late record made a result");
}

#[test]
fn the_state_listener_sees_the_lifecycle() {
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    let app = StreamsApp::with_log(tumbling_count(), config("listener", 1), log.clone()).unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    app.set_state_listener(move |new, old| s.lock().unwrap().push((old, new)));
    let mut app = app;
    app.start().unwrap();
    assert_eq!(
        app.wait_for_state(AppState::Running, Duration::from_secs(10)),
        AppState::Running
    );
    assert_eq!(app.state().code(), 4);
    assert!(app.close(Duration::from_secs(10)));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            (AppState::Created, AppState::Rebalancing),
            (AppState::Rebalancing, AppState::Running),
            (AppState::Running, AppState::PendingShutdown),
            (AppState::PendingShutdown, AppState::NotRunning),
        ]
    );
}

/// Without changelogs there are no stamp rings to seed the floor from: a
/// restart starts it at the watermark the committed partition times give,
/// so a record for a window emitted before the restart is dropped as late
/// instead of making a second "final" result (the in-memory emit frontier
/// is gone with the changelogs).
#[test]
fn without_changelogs_a_restart_drops_what_closed_before_it() {
    let records = input(300, 4, 9);
    let log = log_with_input(&records, 30);
    let unlogged =
        || config("unlogged", 2).with_streams(StreamsConfig::new("unlogged").with_changelog(false));
    let run = |log: &Arc<EmbeddedLog>| {
        let mut app = StreamsApp::with_log(tumbling_count(), unlogged(), log.clone()).unwrap();
        app.start().unwrap();
        assert!(app.wait_until_consumed(Duration::from_secs(30)).unwrap());
        assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
        app.handle()
            .metrics()
            .dropped
            .iter()
            .find(|(reason, _)| *reason == DropReason::LateWindow)
            .map_or(0, |(_, n)| *n)
    };
    assert_eq!(run(&log), 0);
    let first = read_output(&*log);
    assert_eq!(
        regular(first.clone()),
        regular(driver_finals(tumbling_count(), &records))
    );
    // Into the first window, emitted long ago.
    let late = Input {
        value: 1,
        ..records[0].clone()
    };
    produce(&*log, &[late], 1);
    assert_eq!(run(&log), 1, "the record is dropped as late");
    assert_eq!(read_output(&*log), first, "a window was emitted twice");
}
