//! "One committing, one processing" (docs/barriers.md#epochs): while
//! transaction N commits, the lanes already process epoch N+1's records; and
//! input that was only handed to the tasks, not yet committed, is committed
//! by `close()`'s final barrier.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use stoatflow_log::{EmbeddedLog, LogError};
use stoatflow_runtime::{CommitBarrierConfig, StreamsApp};
use stoatflow_streams::TimeWindows;

use crate::hooked_log::{Durable, HookedLog, Hooks};
use crate::support::*;

/// Commits that begin while input is still unprocessed wait (up to
/// [`PATIENCE`]) for a record processed after they began; the first
/// [`WATCHED`] of them are counted, and those that saw one.
#[derive(Debug, Default)]
struct WatchCommits {
    processed: Arc<AtomicU64>,
    /// Records the input holds.
    total: u64,
    watched: AtomicUsize,
    overlapped: AtomicUsize,
}

const WATCHED: usize = 2;
const PATIENCE: Duration = Duration::from_secs(10);
const RECORD_COST: Duration = Duration::from_micros(5);

impl Hooks for WatchCommits {
    fn durable<T>(
        &self,
        op: Durable,
        run: impl FnOnce() -> Result<T, LogError>,
    ) -> Result<T, LogError> {
        let before = self.processed.load(Ordering::Acquire);
        if op == Durable::Commit
            && before < self.total
            && self.watched.fetch_add(1, Ordering::AcqRel) < WATCHED
        {
            let until = Instant::now() + PATIENCE;
            while Instant::now() < until {
                if self.processed.load(Ordering::Acquire) > before {
                    self.overlapped.fetch_add(1, Ordering::AcqRel);
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        run()
    }
}

fn counted_tumbling_count(processed: Arc<AtomicU64>) -> stoatflow_streams::Topology {
    windowed_count(
        TimeWindows::of_size_and_grace(
            Duration::from_millis(WINDOW_MS as u64),
            Duration::from_millis(GRACE_MS as u64),
        ),
        WINDOW_MS,
        move |s| {
            s.peek(move |_, _| {
                // Slow records: barriers fall while most input is still
                // to be processed.
                let until = Instant::now() + RECORD_COST;
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
                processed.fetch_add(1, Ordering::AcqRel);
            })
        },
    )
}

#[test]
fn the_lanes_process_the_next_epoch_while_the_last_one_commits() {
    let inner = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*inner);
    // Far more input than the lanes' inboxes hold: every watched commit
    // starts with records still to dispatch.
    let records = input(400_000, 50, 17);
    produce(&*inner, &records, 5_000);
    let hooks = Arc::new(WatchCommits {
        total: records.len() as u64,
        ..WatchCommits::default()
    });
    let log = Arc::new(HookedLog {
        inner: inner.clone(),
        hooks: hooks.clone(),
    });
    let topology = counted_tumbling_count(hooks.processed.clone());
    let mut app = StreamsApp::with_log(topology, config("overlap", 2), log).unwrap();
    start_and_finish(&mut app);
    assert!(
        hooks.watched.load(Ordering::Acquire) >= WATCHED,
        "{WATCHED} commits began with input still unprocessed"
    );
    assert_eq!(
        hooks.overlapped.load(Ordering::Acquire),
        WATCHED,
        "a record of the next epoch was processed during each watched commit"
    );
    let finals = read_output(&*inner);
    assert_each_once(&finals);
    assert_same_finals(
        &regular(finals),
        &regular(driver_finals(tumbling_count(), &records)),
    );
}

#[test]
fn input_handed_to_the_tasks_is_committed_by_close() {
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    let records = input(2_000, 20, 5);
    produce(&*log, &records, 500);
    // No barrier for five seconds: what `wait_until_consumed` reports is
    // not committed yet, and only the final barrier commits it.
    let config = config("consumed", 2).with_barrier(CommitBarrierConfig {
        interval: Duration::from_secs(5),
        min_interval: Duration::from_secs(5),
        max_interval: Duration::from_secs(5),
        ..CommitBarrierConfig::default()
    });
    let mut app = StreamsApp::with_log(tumbling_count(), config, log.clone()).unwrap();
    app.start().unwrap();
    assert!(
        app.wait_until_consumed(Duration::from_secs(4)).unwrap(),
        "consumed within 4 s; state {}, error {:?}",
        app.state(),
        app.error()
    );
    assert_eq!(app.committed_barriers(), 0, "nothing committed yet");
    assert!(read_output(&*log).is_empty());
    assert!(
        app.close(Duration::from_secs(30)),
        "closed: {:?}",
        app.error()
    );
    assert_eq!(app.committed_barriers(), 1, "the final barrier alone");
    let finals = read_output(&*log);
    assert_each_once(&finals);
    assert_eq!(
        regular(finals),
        regular(driver_finals(tumbling_count(), &records))
    );
}
