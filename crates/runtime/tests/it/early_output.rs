//! Early output: what the tasks produce before a barrier reaches the
//! producer while the lanes still process, inside the epoch's transaction,
//! and commits once: with the barrier, not before; never after a crash
//! that left it in an open transaction; never after a commit that aborted
//! it.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use stoatflow_log::ErrorKind;
use stoatflow_runtime::{
    CommitBarrierConfig, ProcessingGuarantee, RuntimeConfig, StreamThreadExceptionResponse,
    StreamsApp,
};

use stoatflow_streams::{Produced, Serdes, StreamsBuilder, Topology};

use crate::commit_faults::{
    COPIES, Fault, Plan, at_least_once, copied, copies, flaky, once_each, prepared, run_to_end_on,
    until_stopped,
};
use crate::hooked_log::Durable;
use crate::support::*;

/// Enough records that each lane holds more than it keeps for the barrier.
const RECORDS: usize = 12_000;

/// A cadence no test here waits for: only the close cuts a barrier.
fn no_barrier_before_close(config: RuntimeConfig) -> RuntimeConfig {
    let long = Duration::from_secs(120);
    config.with_barrier(CommitBarrierConfig {
        interval: long,
        min_interval: long,
        max_interval: long,
        ..CommitBarrierConfig::default()
    })
}

/// Waits until the producer has been handed `at_least` records.
fn until_sent(plan: &Plan, at_least: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while plan.sends.load(Ordering::Acquire) < at_least {
        assert!(
            Instant::now() < deadline,
            "only {} records reached the producer before the barrier",
            plan.sends.load(Ordering::Acquire)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn committed_anything(plan: &Plan) -> bool {
    plan.ops.lock().unwrap().iter().any(|op| {
        matches!(
            op,
            Durable::Commit | Durable::Flush | Durable::CommitOffsets
        )
    })
}

#[test]
fn output_reaches_the_producer_before_its_barrier_and_commits_with_it_once() {
    for guarantee in [
        ProcessingGuarantee::ExactlyOnceV2,
        ProcessingGuarantee::AtLeastOnce,
    ] {
        let records = input(RECORDS, 50, 31);
        let log = prepared(&records);
        let plan = Plan::with([]);
        let early = no_barrier_before_close(config("early", 2)).with_guarantee(guarantee);
        let mut app = StreamsApp::with_log(copies(), early, flaky(&log, &plan)).unwrap();
        app.start().unwrap();
        // Most of the epoch reaches the producer while nothing commits.
        until_sent(&plan, RECORDS as u64 / 2);
        assert!(
            !committed_anything(&plan),
            "{guarantee:?}: a commit before the close"
        );
        assert!(
            copied(&log).is_empty(),
            "{guarantee:?}: early output is readable before its commit"
        );
        assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
        assert_eq!(copied(&log), once_each(&records), "{guarantee:?}");
    }
}

#[test]
fn early_output_of_a_crashed_epoch_is_never_read_and_the_restart_writes_it_once() {
    let records = input(RECORDS, 50, 32);
    let log = prepared(&records);
    let plan = Plan::with([]);
    {
        let crashing = no_barrier_before_close(config("early-crash", 2));
        let mut app = StreamsApp::with_log(copies(), crashing, flaky(&log, &plan)).unwrap();
        app.start().unwrap();
        until_sent(&plan, RECORDS as u64 / 2);
        // Dropped without close: its transaction never commits.
    }
    assert!(copied(&log).is_empty(), "the open transaction was read");
    run_to_end_on(copies(), config("early-crash", 2), log.clone());
    assert_eq!(copied(&log), once_each(&records));
}

#[test]
fn early_output_of_an_aborted_commit_is_discarded_and_written_again_once() {
    let records = input(RECORDS, 50, 33);
    let log = prepared(&records);
    // The close's commit, carrying the early output, aborts.
    let plan = Plan::with([(1, Fault::Fail(ErrorKind::AbortTransaction))]);
    let aborting = no_barrier_before_close(config("early-abort", 2));
    let mut app = StreamsApp::with_log(copies(), aborting, flaky(&log, &plan)).unwrap();
    app.set_uncaught_error_handler(|_| StreamThreadExceptionResponse::ShutdownClient);
    app.start().unwrap();
    until_sent(&plan, RECORDS as u64 / 2);
    assert!(
        !app.close(Duration::from_secs(30)),
        "the close's commit aborted, yet the close reports success"
    );
    until_stopped(&app);
    drop(app);
    assert!(copied(&log).is_empty(), "the aborted transaction was read");
    run_to_end_on(copies(), config("early-abort", 2), log.clone());
    assert_eq!(copied(&log), once_each(&records));
    // At-least-once's crash loses nothing of what went out early either.
    let log = prepared(&records);
    let plan = Plan::with([]);
    {
        let alos = no_barrier_before_close(at_least_once("early-alos"));
        let mut app = StreamsApp::with_log(copies(), alos, flaky(&log, &plan)).unwrap();
        app.start().unwrap();
        until_sent(&plan, RECORDS as u64 / 2);
    }
    run_to_end_on(copies(), at_least_once("early-alos"), log.clone());
    let seen = copied(&log);
    for (v, n) in once_each(&records) {
        assert!(seen.get(&v).is_some_and(|s| *s >= n), "value {v} lost");
    }
}

/// [`copies`], slowed by a millisecond every 100 records, so a run
/// lasts many barriers while each epoch still holds thousands of records.
fn slowed_copies() -> Topology {
    let mut builder = StreamsBuilder::new();
    source(&mut builder, INPUT)
        .map_values(|_k: &String, v: i64| {
            if v % 100 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            v
        })
        .to(COPIES, Produced::with(Serdes::string(), Serdes::i64()));
    builder.build().unwrap()
}

/// With barriers every few milliseconds a lane that crossed barrier N sends
/// epoch N+1's early output before the poll loop hands over job N: it must
/// wait for N's commit, not ride in it (ridden, it commits ahead of its
/// offsets, and a crash right after repeats it). Three crashes, at a tenth,
/// a quarter and two fifths of the input committed, then a run to the end:
/// every record once.
#[test]
fn early_output_under_frequent_barriers_commits_each_record_once_through_crashes() {
    let records = input(200_000, 50, 34);
    let log = prepared(&records);
    let all = once_each(&records).len();
    let mut mid_input = 0;
    for committed in [20_000, 50_000, 80_000] {
        let plan = Plan::with([]);
        let mut app = StreamsApp::with_log(
            slowed_copies(),
            config("early-often", 2),
            flaky(&log, &plan),
        )
        .unwrap();
        app.start().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while copied(&log).len() < committed {
            assert!(
                Instant::now() < deadline,
                "{committed} records never committed: state {}, error {:?}",
                app.state(),
                app.error()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(app); // without close
        if copied(&log).len() < all {
            mid_input += 1;
        }
    }
    assert!(
        mid_input > 0,
        "every crash came after the input was consumed"
    );
    run_to_end_on(slowed_copies(), config("early-often", 2), log.clone());
    assert_eq!(copied(&log), once_each(&records));
}
