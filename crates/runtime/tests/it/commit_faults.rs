//! Commit failures injected through a `Log` wrapper: at-least-once loses
//! nothing after a crash between its two commits and emits each result once
//! on the graceful path; an aborted commit replaces the engine in place,
//! resuming from the last commit; a retriable one is retried; a fenced
//! producer stops the application with a plain message; the uncaught-error
//! handler decides.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stoatflow_log::{EmbeddedLog, ErrorKind, Log, LogError, TopicPartition, TopicSpec};
use stoatflow_runtime::{
    AppState, ProcessingGuarantee, RuntimeConfig, StreamThreadExceptionResponse, StreamsApp,
};
use stoatflow_streams::{Produced, Serdes, StreamsBuilder, Topology};

use crate::hooked_log::{Durable, HookedLog, Hooks};
use crate::support::*;

/// What the `k`th commit (counted over every producer, from 1; under
/// at-least-once a flush and an offset commit count as one each) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Fails with this kind without committing.
    Fail(ErrorKind),
    /// Fails as a fenced producer, without committing.
    Fenced,
    /// Commits, then the process dies before it learns so: this and every
    /// later call fail.
    CrashAfter,
}

#[derive(Debug, Default)]
pub(crate) struct Plan {
    commits: AtomicU64,
    faults: Mutex<BTreeMap<u64, Fault>>,
    dead: AtomicBool,
    /// Every durable operation asked for, in order.
    pub(crate) ops: Mutex<Vec<Durable>>,
    /// Records sent, by any producer.
    pub(crate) sends: AtomicU64,
}

impl Plan {
    pub(crate) fn with(faults: impl IntoIterator<Item = (u64, Fault)>) -> Arc<Self> {
        Arc::new(Plan {
            faults: Mutex::new(faults.into_iter().collect()),
            ..Plan::default()
        })
    }
}

impl Hooks for Plan {
    fn sent(&self) {
        self.sends.fetch_add(1, Ordering::AcqRel);
    }

    fn alive(&self) -> Result<(), LogError> {
        match self.dead.load(Ordering::Acquire) {
            true => Err(broker(ErrorKind::Fatal, "the process died (injected)")),
            false => Ok(()),
        }
    }

    fn durable<T>(
        &self,
        op: Durable,
        commit: impl FnOnce() -> Result<T, LogError>,
    ) -> Result<T, LogError> {
        self.alive()?;
        self.ops.lock().unwrap().push(op);
        if !matches!(
            op,
            Durable::Commit | Durable::Flush | Durable::CommitOffsets
        ) {
            return commit();
        }
        let k = self.commits.fetch_add(1, Ordering::AcqRel) + 1;
        match self.faults.lock().unwrap().get(&k).copied() {
            None => commit(),
            Some(Fault::Fail(kind)) => Err(broker(kind, "commit failed (injected)")),
            Some(Fault::Fenced) => Err(LogError::Fenced {
                transactional_id: "faulty-0".into(),
                epoch: 1,
            }),
            Some(Fault::CrashAfter) => {
                commit()?;
                self.dead.store(true, Ordering::Release);
                Err(broker(ErrorKind::Fatal, "the process died (injected)"))
            }
        }
    }
}

fn broker(kind: ErrorKind, message: &str) -> LogError {
    LogError::Broker {
        op: "commit".into(),
        message: message.into(),
        kind,
    }
}

pub(crate) const COPIES: &str = "copies";

/// Every input record, value and all, to [`COPIES`]: nothing lost and
/// nothing repeated is checkable record by record.
pub(crate) fn copies() -> Topology {
    let mut builder = StreamsBuilder::new();
    source(&mut builder, INPUT).to(COPIES, Produced::with(Serdes::string(), Serdes::i64()));
    builder.build().unwrap()
}

/// How many times each input value reached [`COPIES`].
pub(crate) fn copied(log: &EmbeddedLog) -> BTreeMap<i64, usize> {
    let mut consumer = log.consumer("copies-reader").unwrap();
    let tps: Vec<_> = (0..PARTITIONS)
        .map(|p| TopicPartition::new(COPIES, p))
        .collect();
    let mut seen = BTreeMap::new();
    for r in stoatflow_log::contract::read_to_end(&mut consumer, &tps) {
        let v = i64::from_be_bytes(r.record.value.unwrap().try_into().unwrap());
        *seen.entry(v).or_insert(0) += 1;
    }
    seen
}

/// Each input value as often as the input holds it (the far-future
/// sentinels share a value).
pub(crate) fn once_each(records: &[Input]) -> BTreeMap<i64, usize> {
    let mut counts = BTreeMap::new();
    for r in records {
        *counts.entry(r.value).or_insert(0) += 1;
    }
    counts
}

pub(crate) fn prepared(records: &[Input]) -> Arc<EmbeddedLog> {
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    log.create_topic(&TopicSpec::new(COPIES, PARTITIONS))
        .unwrap();
    produce(&*log, records, 10);
    log
}

pub(crate) fn flaky(log: &Arc<EmbeddedLog>, plan: &Arc<Plan>) -> Arc<HookedLog<Plan>> {
    Arc::new(HookedLog {
        inner: log.clone(),
        hooks: plan.clone(),
    })
}

pub(crate) fn at_least_once(app: &str) -> RuntimeConfig {
    config(app, 2).with_guarantee(ProcessingGuarantee::AtLeastOnce)
}

/// Runs `topology` on `log` until the input is consumed, then closes it.
pub(crate) fn run_to_end_on<L: Log + 'static>(
    topology: Topology,
    config: RuntimeConfig,
    log: Arc<L>,
) {
    start_and_finish(&mut StreamsApp::with_log(topology, config, log).unwrap());
}

/// Waits until the app stopped (a crash injected by the plan).
pub(crate) fn until_stopped<L: Log + 'static>(app: &StreamsApp<L>) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !app.state().has_stopped() {
        assert!(std::time::Instant::now() < deadline, "never stopped");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn at_least_once_loses_nothing_when_it_dies_between_its_records_and_its_offsets() {
    let records = input(300, 6, 21);
    // An epoch flushes its records, then commits its offsets. The process
    // dies right after the first epoch's records were flushed.
    let log = prepared(&records);
    let plan = Plan::with([(1, Fault::CrashAfter)]);
    let mut app =
        StreamsApp::with_log(copies(), at_least_once("alos"), flaky(&log, &plan)).unwrap();
    app.set_uncaught_error_handler(|_| StreamThreadExceptionResponse::ShutdownClient);
    app.start().unwrap();
    until_stopped(&app);
    drop(app);
    run_to_end_on(copies(), at_least_once("alos"), log.clone());
    let ops = std::mem::take(&mut *plan.ops.lock().unwrap());
    assert_eq!(
        ops.last(),
        Some(&Durable::Flush),
        "the first run died at its first flush: {ops:?}"
    );
    assert!(!ops.contains(&Durable::CommitOffsets), "{ops:?}");

    let seen = copied(&log);
    let once = once_each(&records);
    for (v, n) in &once {
        assert!(seen.get(v).is_some_and(|s| s >= n), "value {v} lost");
    }
    // The epoch whose offsets never committed was read again.
    assert!(
        once.iter().any(|(v, n)| seen[v] > *n),
        "nothing repeated: were the offsets committed with the records?"
    );
}

#[test]
fn at_least_once_emits_each_result_once_on_the_graceful_path() {
    let records = input(300, 6, 22);
    let log = prepared(&records);
    let plan = Plan::with([]);
    run_to_end_on(copies(), at_least_once("alos-graceful"), flaky(&log, &plan));
    // No transaction: records flushed, then their offsets committed alone.
    let ops = std::mem::take(&mut *plan.ops.lock().unwrap());
    assert!(
        !ops.contains(&Durable::TakeProducerEpoch) && !ops.contains(&Durable::Commit),
        "at-least-once used a transactional producer: {ops:?}"
    );
    let commits: Vec<&Durable> = ops
        .iter()
        .filter(|op| **op != Durable::CreateTopic)
        .collect();
    assert!(
        !commits.is_empty()
            && commits
                .chunks(2)
                .all(|pair| pair == [&Durable::Flush, &Durable::CommitOffsets]),
        "each epoch flushes its records, then commits its offsets: {ops:?}"
    );
    // And a restart after the graceful close emits nothing again.
    run_to_end_on(copies(), at_least_once("alos-graceful"), log.clone());
    assert_eq!(copied(&log), once_each(&records));
    // Windowed final results too, each once.
    let log = prepared(&records);
    run_to_end_on(tumbling_count(), at_least_once("alos-windows"), log.clone());
    let engine = regular(read_output(&*log));
    assert_each_once(&engine);
    assert_eq!(engine, regular(driver_finals(tumbling_count(), &records)));
}

#[test]
fn an_aborted_commit_replaces_the_engine_in_place_and_resumes_from_the_last_commit() {
    let records = input(400, 6, 23);
    let expected = regular(driver_finals(tumbling_count(), &records));
    let log = prepared(&records);
    let plan = Plan::with([(2, Fault::Fail(ErrorKind::AbortTransaction))]);
    let mut app =
        StreamsApp::with_log(tumbling_count(), config("replaced", 2), flaky(&log, &plan)).unwrap();
    let states = Arc::new(Mutex::new(Vec::new()));
    let seen = states.clone();
    app.set_state_listener(move |new, _| seen.lock().unwrap().push(new));
    app.start().unwrap();
    // The second commit fails while the app runs (not the close's): wait for
    // the replacement before finishing, so the close commits normally.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while app.replacements() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no replacement: {:?}",
            app.error()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(app.wait_until_caught_up(Duration::from_secs(60)).unwrap());
    assert!(
        app.close(Duration::from_secs(30)),
        "closed: {:?}",
        app.error()
    );
    assert_eq!(app.replacements(), 1);
    assert!(app.error().is_none());
    // The restore figures are the replacement's own restore, not both
    // engines' added up.
    let metrics = app.handle().metrics();
    // Counters never go back when the engine is rebuilt: every input record
    // was processed at least once by this application.
    assert!(
        metrics.records_in >= records.len() as u64,
        "records_in {} for {} records",
        metrics.records_in,
        records.len()
    );
    // RUNNING, then restoring again for the replacement, then RUNNING.
    let states = states.lock().unwrap().clone();
    let running = states.iter().filter(|s| **s == AppState::Running).count();
    assert_eq!(running, 2, "{states:?}");
    let engine = regular(read_output(&*log));
    assert_each_once(&engine);
    assert_eq!(engine, expected);
}

#[test]
fn the_handler_can_shut_down_instead_of_replacing() {
    let records = input(100, 3, 24);
    let log = prepared(&records);
    let plan = Plan::with([(2, Fault::Fail(ErrorKind::AbortTransaction))]);
    let mut app = StreamsApp::with_log(copies(), config("shut", 1), flaky(&log, &plan)).unwrap();
    let told = Arc::new(Mutex::new(Vec::new()));
    let t = told.clone();
    app.set_uncaught_error_handler(move |e| {
        t.lock().unwrap().push(e.to_string());
        StreamThreadExceptionResponse::ShutdownClient
    });
    app.start().unwrap();
    until_stopped(&app);
    assert_eq!(app.state(), AppState::Error);
    assert_eq!(app.replacements(), 0);
    assert_eq!(told.lock().unwrap().len(), 1);
    assert!(told.lock().unwrap()[0].contains("commit failed (injected)"));
}

#[test]
fn a_retriable_commit_failure_is_retried_without_replacing_the_engine() {
    let records = input(200, 4, 25);
    let log = prepared(&records);
    let plan = Plan::with([
        (2, Fault::Fail(ErrorKind::Retriable)),
        (3, Fault::Fail(ErrorKind::Retriable)),
    ]);
    let mut app = StreamsApp::with_log(copies(), config("retried", 2), flaky(&log, &plan)).unwrap();
    start_and_finish(&mut app);
    assert_eq!(app.replacements(), 0);
    assert_eq!(copied(&log), once_each(&records));
}

#[test]
fn a_fenced_producer_stops_the_application_with_a_plain_message_whatever_the_handler_says() {
    let records = input(100, 3, 26);
    let log = prepared(&records);
    let plan = Plan::with([(2, Fault::Fenced)]);
    let mut app = StreamsApp::with_log(copies(), config("fenced", 1), flaky(&log, &plan)).unwrap();
    app.set_uncaught_error_handler(|_| StreamThreadExceptionResponse::ReplaceThread);
    app.start().unwrap();
    until_stopped(&app);
    assert_eq!(app.state(), AppState::Error);
    assert_eq!(app.replacements(), 0);
    let message = app.error().unwrap().to_string();
    assert!(message.contains("was fenced"), "{message}");
    assert!(message.contains("faulty-0"), "{message}");
}
