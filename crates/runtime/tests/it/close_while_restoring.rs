//! A close while the lanes restore keeps its timeout: a graceful close
//! waits for the restore (its flush barrier may owe results from the
//! committed state), but once the timeout runs out the restore (here one
//! that would only end at its 30 s stall timeout) is stopped, not waited
//! for.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use stoatflow_log::EmbeddedLog;
use stoatflow_runtime::{AppState, StreamsApp};

use crate::hooked_log::{HookedLog, Hooks};
use crate::support::*;

/// Lanes fetch nothing: their restore never ends on its own.
#[derive(Debug)]
struct StarvedLanes;

impl Hooks for StarvedLanes {
    fn starve_fetch(&self) -> bool {
        std::thread::current()
            .name()
            .is_some_and(|n| n.contains("-lane-"))
    }
}

#[test]
fn a_close_while_the_stores_restore_keeps_its_timeout() {
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    produce(&*log, &input(300, 10, 5), 50);
    // A first run leaves changelogs behind: the next start has a restore.
    run_to_end(&log, "restoring", 2);
    let hooked = Arc::new(HookedLog {
        inner: log,
        hooks: Arc::new(StarvedLanes),
    });
    let mut app = StreamsApp::with_log(tumbling_count(), config("restoring", 2), hooked).unwrap();
    app.start().unwrap();
    assert_eq!(
        app.wait_for_state(AppState::Rebalancing, Duration::from_secs(10)),
        AppState::Rebalancing
    );
    // The lanes are in their restore's fetch loop by now.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(app.state(), AppState::Rebalancing, "{:?}", app.error());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let closed = app.close(Duration::from_millis(300));
        let _ = tx.send((closed, app.state()));
    });
    let (closed, state) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("close() returned well before the restore's 30 s stall timeout");
    assert!(!closed, "the restore cannot end within the close's timeout");
    assert_eq!(state, AppState::NotRunning);
}
