//! Crashes (the app dropped without `close`) at varied points, then a
//! restart on the same log: every final result exactly once, equal to an
//! uninterrupted run. A graceful close then restart emits nothing again.

use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::EmbeddedLog;
use stoatflow_runtime::{AppState, StreamsApp};

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
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    produce(&*log, &records, 30);
    run_to_end(&log, "graceful", 2);
    let first = read_output(&*log);
    run_to_end(&log, "graceful", 2);
    assert_eq!(read_output(&*log), first);
    assert_each_once(&first);
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
