//! `late.records.total` and the record counters beside it, against what a
//! test counts from outside. A late arrival is a record dispatched below
//! the global watermark; input out of order by less than the source's bound
//! has none, on any lane count. Each is counted once, in the epoch that
//! committed it: an engine replaced in place neither forgets what the
//! engine before it committed nor counts twice the epoch it read again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use stoatflow_log::{ErrorKind, LogError};
use stoatflow_runtime::{MetricsSnapshot, StreamsApp};
use stoatflow_streams::DropReason;

use crate::hooked_log::{Durable, HookedLog, Hooks};
use crate::support::*;

/// Fails the next transaction commit once armed: the engine is replaced in
/// place and reads the aborted epoch again.
#[derive(Debug, Default)]
struct AbortNext {
    armed: AtomicBool,
}

impl Hooks for AbortNext {
    fn durable<T>(
        &self,
        op: Durable,
        run: impl FnOnce() -> Result<T, LogError>,
    ) -> Result<T, LogError> {
        if op == Durable::Commit && self.armed.swap(false, Ordering::AcqRel) {
            return Err(LogError::Broker {
                op: "commit".into(),
                message: "commit aborted (injected)".into(),
                kind: ErrorKind::AbortTransaction,
            });
        }
        run()
    }
}

/// `n` records stamped in the first window of [`input`]: far below the
/// watermark once its far-future records were read, so each is a late
/// arrival, and its window closed long ago, so each is dropped.
fn late(n: usize, first_value: i64) -> Vec<Input> {
    (0..n)
        .map(|i| Input {
            key: format!("k{}", i % 4),
            ts: START + i as i64 * 10,
            value: first_value + i as i64,
        })
        .collect()
}

fn late_arrivals(m: &MetricsSnapshot) -> u64 {
    m.watermark
        .as_ref()
        .expect("the watermark published")
        .late_records_total
}

fn dropped_late(m: &MetricsSnapshot) -> u64 {
    m.dropped
        .iter()
        .find(|(r, _)| *r == DropReason::LateWindow)
        .map_or(0, |(_, n)| *n)
}

fn caught_up<L: stoatflow_log::Log + 'static>(app: &StreamsApp<L>) {
    assert!(
        app.wait_until_caught_up(Duration::from_secs(60)).unwrap(),
        "caught up: {:?}",
        app.error()
    );
}

#[test]
fn input_out_of_order_within_the_bound_has_no_late_arrival_on_two_lanes() {
    // Jittered by up to 2 s against a 3 s bound, on 3 partitions read by
    // 2 lanes, with one far-future record per partition at the end.
    let records = input(1_500, 40, 71);
    let log = log_with_input(&records, 40);
    let mut app =
        StreamsApp::with_log(tumbling_count(), config("on-time", 2), log.clone()).unwrap();
    start_and_finish(&mut app);
    let m = app.handle().metrics();
    assert_eq!(late_arrivals(&m), 0);
    assert_eq!(dropped_late(&m), 0);
    assert_eq!(m.records_in, records.len() as u64);
    assert_eq!(m.records_out, read_committed(&*log).len() as u64);
    assert_same_finals(
        &regular(read_output(&*log)),
        &regular(driver_finals(tumbling_count(), &records)),
    );
}

#[test]
fn late_arrivals_are_counted_once_each_across_an_engine_replacement() {
    let records = input(300, 6, 72);
    let log = log_with_input(&records, 30);
    let hooks = Arc::new(AbortNext::default());
    let hooked = Arc::new(HookedLog {
        inner: log.clone(),
        hooks: hooks.clone(),
    });
    let mut app = StreamsApp::with_log(tumbling_count(), config("late-once", 2), hooked).unwrap();
    app.start().unwrap();
    caught_up(&app);
    // Seven late arrivals, committed by the first engine.
    let (first, second, third) = (late(7, 10_000), late(5, 20_000), late(4, 30_000));
    produce(&*log, &first, 7);
    caught_up(&app);
    // The commit after the next five fails: the engine is replaced, and
    // whatever the aborted epoch held is read again by its replacement.
    hooks.armed.store(true, Ordering::Release);
    produce(&*log, &second, 5);
    let deadline = Instant::now() + Duration::from_secs(30);
    while app.replacements() == 0 {
        assert!(
            Instant::now() < deadline,
            "no replacement: {:?}",
            app.error()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    caught_up(&app);
    // Four more, for the replacement alone.
    produce(&*log, &third, 4);
    caught_up(&app);
    assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
    assert_eq!(app.replacements(), 1);

    let m = app.handle().metrics();
    let n = (first.len() + second.len() + third.len()) as u64;
    assert_eq!(late_arrivals(&m), n, "late arrivals");
    assert_eq!(dropped_late(&m), n, "late drops");
    assert_eq!(m.records_in, records.len() as u64 + n, "records in");
    assert_eq!(
        m.records_out,
        read_committed(&*log).len() as u64,
        "records out"
    );
    // The late records changed no result.
    assert_same_finals(
        &regular(read_output(&*log)),
        &regular(driver_finals(tumbling_count(), &records)),
    );
}
