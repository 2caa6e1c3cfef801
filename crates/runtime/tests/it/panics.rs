//! A panic in user code on a record lane (a processor, a serde, a store
//! supplier): the application stops in ERROR with an error naming the lane,
//! the task and the panic's message, whether it struck while the lanes
//! restore or while they process, and `close()` returns.
//!
//! A panic in a callback (the state listener, the uncaught-error handler, a
//! punctuator, a timestamp assigner, a watermark generator): the application
//! stops in ERROR with an error naming the callback, and what is committed is
//! whole epochs only: the committed output is exactly the copies of the input
//! below the committed offsets.

use std::sync::mpsc;
use std::time::Duration;

use stoatflow_log::{EmbeddedLog, Log, TopicPartition};
use stoatflow_runtime::partition_for_key;
use stoatflow_runtime::{AppState, RuntimeError, StreamsApp};
use stoatflow_streams::{
    Consumed, ProcessError, Processor, ProcessorContext, Produced, PunctuationType, Record, Serdes,
    StreamsBuilder, Topology,
};
use stoatflow_time::{
    EventTime, Watermark, WatermarkGenerator, WatermarkOutput, WatermarkStrategy,
};

use crate::support::*;

/// The value that makes the topology's `map_values` panic.
const POISON: i64 = 999_999;

/// A tumbling count whose `map_values` panics on [`POISON`].
fn panicking_on_poison() -> Topology {
    tumbling_count_after(|s| {
        s.map_values(|_, v| {
            assert_ne!(v, POISON, "poisoned value {POISON}");
            v
        })
    })
}

/// A pass-through whose processor supplier panics when the task is built on
/// lane 1 (lanes are threads named `<application id>-lane-<n>`).
fn panicking_on_lane_1() -> Topology {
    let mut b = StreamsBuilder::new();
    source(&mut b, INPUT)
        .process(
            || {
                let lane = std::thread::current().name().unwrap_or("").to_owned();
                assert!(
                    !lane.ends_with("-lane-1"),
                    "this supplier refuses lane 1 ({lane})"
                );
                PassThrough
            },
            &[],
        )
        .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
    b.build().unwrap()
}

struct PassThrough;

impl stoatflow_streams::Processor<String, i64, String, i64> for PassThrough {
    fn process(
        &mut self,
        ctx: &mut stoatflow_streams::ProcessorContext<'_, String, i64>,
        r: stoatflow_streams::Record<String, i64>,
    ) -> Result<(), stoatflow_streams::ProcessError> {
        ctx.forward(r)
    }
}

/// Closes `app` on another thread; fails the test if that takes more than
/// 30 s (a close that hangs would otherwise hang the suite).
fn close_within_30s(mut app: StreamsApp<EmbeddedLog>) -> StreamsApp<EmbeddedLog> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        app.close(Duration::from_secs(5));
        let _ = tx.send(app);
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("close() returned within 30 s")
}

#[test]
fn a_panic_while_processing_stops_the_app_in_error_naming_the_task() {
    let mut records = input(600, 12, 7);
    records[300].value = POISON;
    let log = log_with_input(&records, 50);
    let poisoned = partition_for_key(records[300].key.as_bytes(), PARTITIONS);
    let mut app = StreamsApp::with_log(panicking_on_poison(), config("poison", 2), log).unwrap();
    let message = starts_into_error(&mut app).to_string();
    assert!(message.contains("panicked"), "{message}");
    assert!(message.contains("poisoned value 999999"), "{message}");
    assert!(message.contains(&format!("task 0_{poisoned}")), "{message}");
    let app = close_within_30s(app);
    assert_eq!(app.state(), AppState::Error);
}

#[test]
fn a_panic_while_the_lanes_restore_stops_the_app_in_error() {
    let log = log_with_input(&input(60, 6, 3), 20);
    let mut app = StreamsApp::with_log(panicking_on_lane_1(), config("supplier", 2), log).unwrap();
    let message = starts_into_error(&mut app).to_string();
    assert!(message.contains("record lane 1"), "{message}");
    assert!(
        message.contains("this supplier refuses lane 1"),
        "{message}"
    );
    let app = close_within_30s(app);
    assert_eq!(app.state(), AppState::Error);
}

/// A copy of every input record to [`OUTPUT`], its source reading event
/// time with `strategy`.
fn copies_with(strategy: WatermarkStrategy<String, i64>) -> Topology {
    let mut b = StreamsBuilder::new();
    b.stream(
        INPUT,
        Consumed::with(Serdes::string(), Serdes::i64()).with_watermark_strategy(strategy),
    )
    .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
    b.build().unwrap()
}

/// [`copies_with`] the tests' usual bounded-out-of-orderness strategy.
fn copies() -> Topology {
    copies_with(WatermarkStrategy::for_bounded_out_of_orderness(
        Duration::from_millis(BOUND_MS),
    ))
}

/// 600 records over 12 keys in transactions of 50, [`POISON`] at the 300th.
fn poisoned_log() -> std::sync::Arc<EmbeddedLog> {
    let mut records = input(600, 12, 11);
    records[300].value = POISON;
    log_with_input(&records, 50)
}

/// The input partitions.
fn input_partitions() -> Vec<TopicPartition> {
    (0..PARTITIONS)
        .map(|p| TopicPartition::new(INPUT, p))
        .collect()
}

/// Asserts that what `app_id` committed is whole epochs: the committed
/// output holds exactly one copy of each input record below the committed
/// offsets and nothing else (no output of an epoch whose offsets were not
/// committed, no committed offset without its output). Returns how many
/// records were committed.
fn assert_whole_epochs(log: &EmbeddedLog, app_id: &str) -> usize {
    let committed = log.committed_offsets(app_id, &input_partitions()).unwrap();
    let below = |tp: &TopicPartition, offset: u64| {
        committed
            .iter()
            .find(|(c, _)| c == tp)
            .and_then(|(_, om)| om.as_ref())
            .is_some_and(|om| offset < om.offset.0)
    };
    let pair = |r: &stoatflow_log::FetchedRecord| (r.record.key.clone(), r.record.value.clone());
    let mut expected: Vec<_> = read_topic(log, INPUT, PARTITIONS)
        .iter()
        .filter(|r| below(&r.partition, r.offset.0))
        .map(pair)
        .collect();
    let mut output: Vec<_> = read_topic(log, OUTPUT, PARTITIONS)
        .iter()
        .map(pair)
        .collect();
    expected.sort();
    output.sort();
    assert_eq!(
        output.len(),
        expected.len(),
        "committed copies vs input below the committed offsets {committed:?}"
    );
    assert!(
        output == expected,
        "the committed copies are not the committed input"
    );
    output.len()
}

/// The error `app` stopped with, which must be a callback's panic: its
/// callback and message.
fn callback_panic(app: &StreamsApp<EmbeddedLog>) -> (String, String) {
    match app.error().as_deref() {
        Some(RuntimeError::CallbackPanicked { callback, message }) => {
            (callback.clone(), message.clone())
        }
        other => panic!("not a callback's panic: {other:?}"),
    }
}

#[test]
fn a_state_listener_panicking_on_running_stops_the_app_in_error_before_any_work() {
    let log = poisoned_log();
    let mut app =
        StreamsApp::with_log(copies(), config("listener-running", 2), log.clone()).unwrap();
    app.set_state_listener(|new, _| {
        assert_ne!(new, AppState::Running, "this listener refuses RUNNING");
    });
    let error = starts_into_error(&mut app).to_string();
    assert!(
        error.starts_with("the state listener panicked: assertion `left != right` failed: this listener refuses RUNNING"),
        "{error}"
    );
    let app = close_within_30s(app);
    assert_eq!(app.state(), AppState::Error);
    assert_eq!(assert_whole_epochs(&log, "listener-running"), 0);
    let committed = log
        .committed_offsets("listener-running", &input_partitions())
        .unwrap();
    assert!(
        committed.iter().all(|(_, om)| om.is_none()),
        "{committed:?}"
    );
}

#[test]
fn a_state_listener_panicking_on_close_stops_in_error_without_the_final_commit() {
    let log = poisoned_log();
    let mut app = StreamsApp::with_log(copies(), config("listener-close", 2), log.clone()).unwrap();
    app.set_state_listener(|new, _| {
        assert_ne!(
            new,
            AppState::PendingShutdown,
            "this listener refuses to close"
        );
    });
    app.start().unwrap();
    assert!(app.wait_until_consumed(Duration::from_secs(30)).unwrap());
    let mut app = close_within_30s(app);
    assert_eq!(app.state(), AppState::Error, "{:?}", app.error());
    let (callback, message) = callback_panic(&app);
    assert_eq!(callback, "the state listener");
    assert!(
        message.contains("this listener refuses to close"),
        "{message}"
    );
    assert_whole_epochs(&log, "listener-close");
    // Closing again changes nothing.
    assert!(!app.close(Duration::from_secs(1)));
    assert_eq!(app.state(), AppState::Error);

    // Never started: the close runs the listener on the caller's thread.
    let mut idle = StreamsApp::with_log(copies(), config("listener-idle", 1), log).unwrap();
    idle.set_state_listener(|new, _| {
        assert_ne!(
            new,
            AppState::PendingShutdown,
            "this listener refuses to close"
        );
    });
    assert!(!idle.close(Duration::from_secs(1)));
    assert_eq!(idle.state(), AppState::Error);
    assert_eq!(callback_panic(&idle).0, "the state listener");
}

#[test]
fn a_panicking_error_handler_stops_in_error_naming_it_and_the_error_it_was_handed() {
    let log = poisoned_log();
    let mut app =
        StreamsApp::with_log(panicking_on_poison(), config("handler", 2), log.clone()).unwrap();
    app.set_uncaught_error_handler(|e| -> () { panic!("the handler cannot cope with: {e}") });
    starts_into_error(&mut app);
    let (callback, message) = callback_panic(&app);
    assert_eq!(callback, "the uncaught-error handler");
    assert!(
        message.starts_with("the handler cannot cope with: task 0_"),
        "{message}"
    );
    let (_, handed) = message
        .split_once(" (it was handed: ")
        .unwrap_or_else(|| panic!("no handed error in {message}"));
    assert!(
        handed.starts_with("task 0_") && handed.contains("poisoned value 999999"),
        "{handed}"
    );
    let app = close_within_30s(app);
    assert_eq!(app.state(), AppState::Error);
}

/// Copies every record; its stream-time punctuator panics once the
/// watermark passes 20 s of input.
struct FragilePunctuator;

impl Processor<String, i64, String, i64> for FragilePunctuator {
    fn init(&mut self, ctx: &mut ProcessorContext<'_, String, i64>) -> Result<(), ProcessError> {
        ctx.schedule(
            Duration::from_secs(1),
            PunctuationType::StreamTime,
            |_, now| {
                assert!(now < START + 20_000, "too late at {now}");
                Ok(())
            },
        );
        Ok(())
    }

    fn process(
        &mut self,
        ctx: &mut ProcessorContext<'_, String, i64>,
        r: Record<String, i64>,
    ) -> Result<(), ProcessError> {
        ctx.forward(r)
    }
}

#[test]
fn a_panicking_punctuator_stops_in_error_naming_it_and_commits_whole_epochs() {
    let log = log_with_input(&input(600, 12, 5), 50);
    let mut b = StreamsBuilder::new();
    source(&mut b, INPUT)
        .process(|| FragilePunctuator, &[])
        .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
    let mut app =
        StreamsApp::with_log(b.build().unwrap(), config("punctuator", 2), log.clone()).unwrap();
    let error = starts_into_error(&mut app).to_string();
    assert!(
        error.contains(": processor KSTREAM-PROCESSOR-")
            && error.contains(": its stream-time punctuator panicked: too late at"),
        "{error}"
    );
    let app = close_within_30s(app);
    assert_eq!(app.state(), AppState::Error);
    assert_whole_epochs(&log, "punctuator");
}

#[test]
fn a_panicking_timestamp_assigner_stops_in_error_naming_it_and_commits_whole_epochs() {
    let log = poisoned_log();
    let strategy = WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(BOUND_MS))
        .with_timestamp_assigner(|_: &String, v: &i64, ts: i64| {
            assert_ne!(*v, POISON, "no time for {v}");
            ts
        });
    let mut app =
        StreamsApp::with_log(copies_with(strategy), config("assigner", 2), log.clone()).unwrap();
    starts_into_error(&mut app);
    let (callback, message) = callback_panic(&app);
    assert!(
        callback.starts_with(&format!(
            "the timestamp assigner of topic {INPUT} (or a deserializer it reads with), at {INPUT}-"
        )),
        "{callback}"
    );
    assert!(message.contains("no time for 999999"), "{message}");
    let app = close_within_30s(app);
    assert_eq!(app.state(), AppState::Error);
    let committed = assert_whole_epochs(&log, "assigner");
    assert!(
        committed < 600,
        "the poisoned record's epoch is not committed"
    );
}

/// A bounded-out-of-orderness generator that panics on an event 30 s into
/// the input.
#[derive(Debug, Default)]
struct FragileGenerator {
    max: Option<i64>,
}

impl WatermarkGenerator for FragileGenerator {
    fn on_event(&mut self, t: EventTime, _: &mut WatermarkOutput) {
        assert!(
            t.as_millis() < START + 30_000,
            "cannot place {}",
            t.as_millis()
        );
        self.max = Some(self.max.unwrap_or(i64::MIN).max(t.as_millis()));
    }

    fn on_periodic_emit(&mut self, out: &mut WatermarkOutput) {
        if let Some(m) = self.max {
            out.emit_watermark(Watermark::from_millis(m - BOUND_MS as i64));
        }
    }
}

#[test]
fn a_panicking_watermark_generator_stops_in_error_naming_it_and_commits_whole_epochs() {
    let log = log_with_input(&input(600, 12, 9), 50);
    let strategy = WatermarkStrategy::for_generator(FragileGenerator::default);
    let mut app =
        StreamsApp::with_log(copies_with(strategy), config("generator", 2), log.clone()).unwrap();
    starts_into_error(&mut app);
    let (callback, message) = callback_panic(&app);
    assert_eq!(callback, "a watermark generator of sub-topology 0");
    assert!(message.starts_with("cannot place "), "{message}");
    let app = close_within_30s(app);
    assert_eq!(app.state(), AppState::Error);
    assert!(assert_whole_epochs(&log, "generator") < 600);
}

#[test]
fn a_panic_elsewhere_on_the_poll_thread_stops_the_app_in_error() {
    // The generator's factory runs when the engine registers the partitions.
    let log = log_with_input(&input(60, 6, 3), 20);
    let strategy =
        WatermarkStrategy::for_generator(|| -> FragileGenerator { panic!("no generator today") });
    let mut app =
        StreamsApp::with_log(copies_with(strategy), config("factory", 1), log.clone()).unwrap();
    starts_into_error(&mut app);
    assert_eq!(
        callback_panic(&app),
        ("the poll loop".into(), "no generator today".into())
    );
    let app = close_within_30s(app);
    assert_eq!(app.state(), AppState::Error);
    assert_eq!(assert_whole_epochs(&log, "factory"), 0);
}

/// A log whose transaction commits panic (a fault of the backend's, on the
/// committer thread).
#[derive(Debug)]
struct CommitPanics;

impl crate::hooked_log::Hooks for CommitPanics {
    fn durable<T>(
        &self,
        op: crate::hooked_log::Durable,
        run: impl FnOnce() -> Result<T, stoatflow_log::LogError>,
    ) -> Result<T, stoatflow_log::LogError> {
        assert!(
            op != crate::hooked_log::Durable::Commit,
            "the commit blew up"
        );
        run()
    }
}

#[test]
fn a_panic_on_the_committer_thread_stops_the_app_naming_the_thread_and_the_barrier() {
    let log = crate::commit_faults::prepared(&input(200, 10, 3));
    let hooked = std::sync::Arc::new(crate::hooked_log::HookedLog {
        inner: log,
        hooks: std::sync::Arc::new(CommitPanics),
    });
    let mut app = StreamsApp::with_log(
        crate::commit_faults::copies(),
        config("commit-panics", 2),
        hooked,
    )
    .unwrap();
    let error = starts_into_error(&mut app).to_string();
    assert!(
        error.starts_with(
            "runtime thread commit-panics-commit stopped unexpectedly: it panicked committing barrier "
        ) && error.ends_with(": the commit blew up"),
        "{error}"
    );
    app.close(Duration::from_secs(30));
}
