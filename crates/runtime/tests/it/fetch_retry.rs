//! A fetch that fails with a retriable error (a broker restarting, a
//! dropped connection) is tried again by the poll loop: no engine is
//! replaced, nothing is restored again, and the output is the driver's,
//! also when the failed fetch had taken records from the consumer before
//! failing (that fetch is not retried: the engine is replaced and reads
//! them again from the last commit, none is skipped).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use stoatflow_log::LogError;
use stoatflow_runtime::StreamsApp;

use crate::hooked_log::{HookedLog, Hooks};
use crate::support::*;

/// The poll loop's first `failures` fetches time out.
#[derive(Debug)]
struct FlakyFetches {
    failures: AtomicU32,
}

impl Hooks for FlakyFetches {
    fn fetch_fault(&self) -> Option<LogError> {
        let poll = std::thread::current()
            .name()
            .is_some_and(|n| n.ends_with("-poll"));
        if !poll {
            return None;
        }
        let left = self
            .failures
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        left.is_ok().then(|| LogError::Timeout {
            op: "fetching (injected)".into(),
            after_ms: 100,
        })
    }
}

/// Runs the tumbling count on a log behind `hooks`: each final result is
/// the driver's, once; returns how many engines were replaced.
fn runs_as_the_driver<H: Hooks>(hooks: H, app: &str, seed: u64) -> u64 {
    let records = input(400, 7, seed);
    let log = log_with_input(&records, 40);
    let hooked = Arc::new(HookedLog {
        inner: log.clone(),
        hooks: Arc::new(hooks),
    });
    let mut app = StreamsApp::with_log(tumbling_count(), config(app, 2), hooked).unwrap();
    start_and_finish(&mut app);
    let engine = regular(read_output(&*log));
    assert_each_once(&engine);
    assert_eq!(engine, regular(driver_finals(tumbling_count(), &records)));
    app.replacements()
}

#[test]
fn a_retriable_fetch_failure_is_retried_without_replacing_the_engine() {
    let hooks = FlakyFetches {
        failures: AtomicU32::new(4),
    };
    let replaced = runs_as_the_driver(hooks, "flaky-fetch", 61);
    assert_eq!(replaced, 0, "a retriable fetch failure replaced the engine");
}

/// The poll loop's first `failures` fetches take their records and fail.
#[derive(Debug)]
struct SwallowingFetches {
    failures: AtomicU32,
}

impl Hooks for SwallowingFetches {
    fn swallow_fetch(&self) -> bool {
        let poll = std::thread::current()
            .name()
            .is_some_and(|n| n.ends_with("-poll"));
        poll && self
            .failures
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }
}

#[test]
fn records_a_failed_fetch_took_are_not_skipped() {
    let hooks = SwallowingFetches {
        failures: AtomicU32::new(3),
    };
    // Not retried: the engine is replaced and reads them again from the
    // last commit.
    assert!(runs_as_the_driver(hooks, "swallowed", 62) >= 1);
}
