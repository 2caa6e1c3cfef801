//! Restore progress is visible while a restore runs and truthful at its
//! end: the records read grow as the changelog is read (not only once all of
//! it is), never fewer than those restored, and at RUNNING both equal what
//! the start says it restored.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use stoatflow_log::EmbeddedLog;
use stoatflow_runtime::{AppState, StreamsApp};

use crate::hooked_log::{HookedLog, Hooks};
use crate::support::*;

/// The restore's reading thread fetches once, then gets nothing until
/// released. The changelog is written large enough (several MiB a
/// partition) that one fetch, at most 1 MiB a partition, never reads a
/// partition to its end; a small one was read whole by the first fetch,
/// and the restore could end before the test looked.
#[derive(Debug, Default)]
struct PausedReader {
    fetches: AtomicU64,
    released: AtomicBool,
}

impl Hooks for PausedReader {
    fn starve_fetch(&self) -> bool {
        // The lanes' restores read there (on a thread of their own).
        let reader = std::thread::current()
            .name()
            .is_some_and(|n| n.contains("-lane-"));
        reader
            && !self.released.load(Ordering::Acquire)
            && self.fetches.fetch_add(1, Ordering::AcqRel) >= 1
    }
}

#[test]
fn restore_progress_shows_while_the_changelog_is_read_and_adds_up_at_the_end() {
    let state = scratch_dir();
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    produce(&*log, &input(200_000, 50_000, 3), 1_000);
    let config = || config("progress", 1).with_state_dir(state.path());
    {
        let mut app = StreamsApp::with_log(tumbling_count(), config(), log.clone()).unwrap();
        app.start().unwrap();
        assert!(app.wait_until_caught_up(Duration::from_secs(120)).unwrap());
        // A crash: no checkpoint, so the restart restores in full.
    }
    let hooks = Arc::new(PausedReader::default());
    let hooked = Arc::new(HookedLog {
        inner: log,
        hooks: hooks.clone(),
    });
    let mut app = StreamsApp::with_log(tumbling_count(), config(), hooked).unwrap();
    app.start().unwrap();
    let handle = app.handle();
    let deadline = Instant::now() + Duration::from_secs(60);
    let part_way = loop {
        let restore = handle.metrics().restore;
        if restore.records_total > 0 {
            break restore;
        }
        assert!(Instant::now() < deadline, "no progress shown: {restore:?}");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(app.state(), AppState::Rebalancing, "{:?}", app.error());
    assert!(
        part_way.records_restored <= part_way.records_total,
        "{part_way:?}"
    );
    hooks.released.store(true, Ordering::Release);
    assert_eq!(
        app.wait_for_state(AppState::Running, Duration::from_secs(60)),
        AppState::Running,
        "{:?}",
        app.error()
    );
    let done = handle.metrics().restore;
    assert!(
        done.records_total > part_way.records_total,
        "the progress seen was not part way: {part_way:?}, then {done:?}"
    );
    assert_eq!(done.records_restored, done.records_total);
    assert_eq!(done.records_restored, app.restored_records());
    assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
}
