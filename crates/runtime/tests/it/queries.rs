//! Interactive queries on a running application (docs/queries.md): a
//! committed answer's final windows hold what the committed output holds
//! and never change, across barriers and a crash; open windows can; a
//! key-value answer says the barrier and position it reflects; both store
//! engines answer alike.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::EmbeddedLog;
use stoatflow_runtime::{
    AppState, Finality, KeyQuery, QueryError, RangeQuery, RuntimeConfig, SessionQuery,
    StateQueryRequest, StreamsApp, WindowQuery,
};
use stoatflow_streams::{
    EmitStrategy, Materialized, Produced, Serdes, SessionWindows, StoreType, StreamsBuilder,
    StreamsConfig, TimeWindows, Topology,
};

use crate::hooked_log::{Durable, HookedLog, Hooks};
use crate::support::*;

const COUNTS: &str = "window-counts";
const TOTALS: &str = "totals";
const SESSIONS: &str = "sessions";
/// Windowed stores keep their windows this long, so a final window stays
/// queryable (with the default retention it expires as it closes).
const KEPT: Duration = Duration::from_secs(3_600);

/// The tumbling count of [`tumbling_count`] in a store named [`COUNTS`],
/// and a running total per key in [`TOTALS`].
fn counts_and_totals() -> Topology {
    let mut builder = StreamsBuilder::new();
    let s = source(&mut builder, INPUT);
    s.group_by_key()
        .windowed_by(TimeWindows::of_size_and_grace(
            Duration::from_millis(WINDOW_MS as u64),
            Duration::from_millis(GRACE_MS as u64),
        ))
        .emit_strategy(EmitStrategy::on_window_close())
        .count_with(Materialized::as_(COUNTS).with_retention(KEPT))
        .to_stream()
        .to(
            OUTPUT,
            Produced::with(
                Serdes::time_windowed(Serdes::string(), WINDOW_MS),
                Serdes::i64(),
            ),
        );
    // Queried only: a table needs no downstream to keep its store.
    let _totals = s.group_by_key().count_with(Materialized::as_(TOTALS));
    builder.build().expect("the topology builds")
}

fn engine_config(app: &str, state: Option<&Path>) -> RuntimeConfig {
    let c = config(app, 2);
    match state {
        None => c,
        Some(dir) => c
            .with_state_dir(dir)
            .with_streams(StreamsConfig::new(app).with_default_dsl_store(StoreType::Persistent)),
    }
}

fn started(log: &Arc<EmbeddedLog>, config: RuntimeConfig) -> StreamsApp<EmbeddedLog> {
    let mut app = StreamsApp::with_log(counts_and_totals(), config, log.clone()).unwrap();
    app.start().unwrap();
    assert_eq!(
        app.wait_for_state(AppState::Running, Duration::from_secs(60)),
        AppState::Running,
        "{:?}",
        app.error()
    );
    app
}

type Windows = BTreeMap<(String, i64), (i64, Finality)>;

/// Every window of `keys`, committed.
fn windows_of(app: &StreamsApp<EmbeddedLog>, keys: &[String]) -> Windows {
    let mut out = Windows::new();
    for key in keys {
        let q =
            WindowQuery::<String, i64>::with_key_and_window_starts(key.clone(), i64::MIN, i64::MAX);
        let answer = app.query(StateQueryRequest::in_store(COUNTS, q)).unwrap();
        assert!(
            answer.barrier.is_some(),
            "a committed answer names its barrier"
        );
        for w in answer.answer {
            assert_eq!(w.end - w.start, WINDOW_MS);
            out.insert((key.clone(), w.start), (w.value.value, w.finality));
        }
    }
    out
}

/// Every window once reported final keeps its count in `later`, unless
/// it expired there.
fn assert_finals_kept(finals: &BTreeMap<(String, i64), i64>, later: &Windows) {
    for (window, count) in finals {
        match later.get(window) {
            Some((c, Finality::Final)) => assert_eq!(c, count, "final window {window:?} changed"),
            Some((_, Finality::Expired)) | None => {}
            Some((c, open)) => panic!("final window {window:?} ({count}) became {open:?} ({c})"),
        }
    }
}

fn note_finals(finals: &mut BTreeMap<(String, i64), i64>, now: &Windows) -> usize {
    let mut open = 0;
    for (window, (count, finality)) in now {
        match finality {
            Finality::Final => {
                finals.insert(window.clone(), *count);
            }
            Finality::Open { .. } => open += 1,
            Finality::Expired => {}
        }
    }
    open
}

/// Queried while input flows, over many barriers, then across a crash:
/// a window once final never changes, and holds the committed output's
/// count for it.
fn finals_never_change(state: Option<&Path>) {
    let records = input(600, 4, 11);
    let keys: Vec<String> = (0..4).map(|k| format!("k{k}")).collect();
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    let app = started(&log, engine_config("queries", state));
    let mut finals = BTreeMap::new();
    let mut open_seen = 0;
    let (body, tail) = records.split_at(600);
    for chunk in body.chunks(100) {
        produce(&*log, chunk, 25);
        assert!(app.wait_until_caught_up(Duration::from_secs(60)).unwrap());
        let now = windows_of(&app, &keys);
        assert_finals_kept(&finals, &now);
        open_seen += note_finals(&mut finals, &now);
    }
    assert!(open_seen > 0, "open windows were seen");
    assert!(!finals.is_empty(), "final windows were seen");
    drop(app); // a crash: nothing more commits
    let mut app = started(&log, engine_config("queries", state));
    let now = windows_of(&app, &keys);
    assert_finals_kept(&finals, &now);
    produce(&*log, tail, 25);
    assert!(app.wait_until_caught_up(Duration::from_secs(60)).unwrap());
    let now = windows_of(&app, &keys);
    assert_finals_kept(&finals, &now);
    note_finals(&mut finals, &now);
    assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
    let output = read_output(&*log);
    for (window, count) in &finals {
        assert_eq!(
            output.get(window),
            Some(&vec![*count]),
            "the committed output of final window {window:?}"
        );
    }
}

#[test]
fn a_final_window_never_changes_and_is_what_the_output_committed_in_memory() {
    finals_never_change(None);
}

#[test]
fn a_final_window_never_changes_and_is_what_the_output_committed_on_disk() {
    let dir = scratch_dir();
    finals_never_change(Some(dir.path()));
}

/// Once the input is consumed, a committed key-value answer is the count
/// of each key and reflects the input's end offsets; a range answers in
/// key order within its limit.
fn key_values(state: Option<&Path>) {
    let records = input(300, 5, 3);
    let log = log_with_input(&records, 50);
    let app = started(&log, engine_config("kv-queries", state));
    assert!(app.wait_until_caught_up(Duration::from_secs(60)).unwrap());
    let mut expected = BTreeMap::<String, i64>::new();
    for r in &records {
        *expected.entry(r.key.clone()).or_default() += 1;
    }
    for (key, count) in &expected {
        let q = KeyQuery::<String, i64>::with_key(key.clone());
        let answer = app.query(StateQueryRequest::in_store(TOTALS, q)).unwrap();
        assert_eq!(answer.answer.map(|v| v.value), Some(*count), "key {key}");
        let position: u64 = answer.position.iter().map(|p| p.offset).sum();
        assert_eq!(
            position,
            records.len() as u64,
            "every input record is behind it"
        );
        assert!(answer.barrier.is_some());
    }
    let q = KeyQuery::<String, i64>::with_key("absent".into());
    let latest = StateQueryRequest::in_store(TOTALS, q).latest_processed();
    let answer = app.query(latest).unwrap();
    assert_eq!(answer.answer, None);
    assert_eq!(answer.barrier, None, "a latest answer names no barrier");
    let q = RangeQuery::<String, i64>::with_range(Bound::Included("k1".into()), Bound::Unbounded)
        .with_limit(3);
    let range = app.query(StateQueryRequest::in_store(TOTALS, q)).unwrap();
    let got: Vec<(String, i64)> = range
        .answer
        .entries
        .iter()
        .map(|(k, v)| (k.clone(), v.value))
        .collect();
    let want: Vec<(String, i64)> = expected
        .range("k1".to_owned()..)
        .take(3)
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    assert_eq!(got, want);
    assert!(range.answer.truncated, "more keys lie past the limit");
}

#[test]
fn a_key_value_answer_is_the_committed_count_at_its_position_in_memory() {
    key_values(None);
}

#[test]
fn a_key_value_answer_is_the_committed_count_at_its_position_on_disk() {
    let dir = scratch_dir();
    key_values(Some(dir.path()));
}

#[test]
fn a_query_names_a_missing_store_and_a_wrong_type() {
    let log = log_with_input(&input(10, 2, 1), 10);
    let app = started(&log, engine_config("refused-queries", None));
    let q = || KeyQuery::<String, i64>::with_key("k0".into());
    let missing = app.query(StateQueryRequest::in_store("nope", q()));
    assert!(
        matches!(&missing, Err(QueryError::NoStore { store, known })
            if store == "nope" && known.contains(TOTALS) && known.contains(COUNTS)),
        "{missing:?}"
    );
    let wrong = app.query(StateQueryRequest::in_store(COUNTS, q()));
    assert!(
        matches!(&wrong, Err(QueryError::StoreType { store, .. }) if store == COUNTS),
        "{wrong:?}"
    );
}

#[test]
fn a_query_before_start_says_the_app_is_not_running() {
    let log = log_with_input(&[], 1);
    let app = StreamsApp::with_log(counts_and_totals(), config("idle", 1), log).unwrap();
    let q = KeyQuery::<String, i64>::with_key("k0".into());
    let answer = app.query(StateQueryRequest::in_store(TOTALS, q));
    assert_eq!(answer.unwrap_err(), QueryError::NotRunning);
}

#[test]
fn a_session_answer_says_each_session_is_final_once_closed() {
    let mut builder = StreamsBuilder::new();
    let _sessions = source(&mut builder, INPUT)
        .group_by_key()
        .windowed_by(SessionWindows::of_inactivity_gap_and_grace(
            Duration::from_secs(1),
            Duration::ZERO,
        ))
        .emit_strategy(EmitStrategy::on_window_close())
        .count_with(Materialized::as_(SESSIONS).with_retention(KEPT));
    let at = |key: &str, ts: i64| Input {
        key: key.into(),
        ts: START + ts,
        value: 0,
    };
    // Two sessions of k0, then one far-future record per partition (the
    // watermark is the lowest partition's) closing both but not their own.
    let sentinels = input(0, 1, 0);
    let mut closing = vec![at("k0", 0), at("k0", 100), at("k0", 10_000)];
    closing.extend(sentinels.iter().cloned());
    let log = log_with_input(&closing, 1);
    let mut app =
        StreamsApp::with_log(builder.build().unwrap(), config("sessions", 1), log).unwrap();
    app.start().unwrap();
    assert!(app.wait_until_caught_up(Duration::from_secs(60)).unwrap());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let sessions = loop {
        let q = SessionQuery::<String, i64>::with_key("k0".into());
        let answer = app.query(StateQueryRequest::in_store(SESSIONS, q)).unwrap();
        if answer.answer.iter().all(|s| s.finality == Finality::Final) {
            break answer.answer;
        }
        assert!(std::time::Instant::now() < deadline, "{:?}", answer.answer);
    };
    let got: Vec<(i64, i64, i64)> = sessions
        .iter()
        .map(|s| (s.start - START, s.end - START, s.value))
        .collect();
    assert_eq!(got, [(0, 100, 2), (10_000, 10_000, 1)]);
    let q = SessionQuery::<String, i64>::with_key(sentinels[0].key.clone());
    let answer = app.query(StateQueryRequest::in_store(SESSIONS, q)).unwrap();
    assert!(
        matches!(answer.answer[..], [ref s] if matches!(s.finality, Finality::Open { .. })),
        "the last session is open: {:?}",
        answer.answer
    );
}

/// Holds every transaction commit while `held`, until released.
#[derive(Debug, Default)]
struct CommitGate {
    held: std::sync::Mutex<bool>,
    released: std::sync::Condvar,
}

impl CommitGate {
    fn hold(&self, held: bool) {
        *self.held.lock().unwrap() = held;
        self.released.notify_all();
    }
}

impl Hooks for CommitGate {
    fn durable<T>(
        &self,
        op: Durable,
        run: impl FnOnce() -> Result<T, stoatflow_log::LogError>,
    ) -> Result<T, stoatflow_log::LogError> {
        if op == Durable::Commit {
            let mut held = self.held.lock().unwrap();
            while *held {
                held = self.released.wait(held).unwrap();
            }
        }
        run()
    }
}

/// While the transaction holding new records cannot commit, a latest read
/// shows them and a committed one shows nothing (it waits, here past its
/// timeout); once it commits, the committed read shows them.
#[test]
fn a_committed_read_never_shows_what_has_not_committed() {
    let k0 = |n: usize, from: i64| -> Vec<Input> {
        (0..n as i64)
            .map(|i| Input {
                key: "k0".into(),
                ts: START + (from + i) * 100,
                value: i,
            })
            .collect()
    };
    let inner = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*inner);
    produce(&*inner, &k0(10, 0), 10);
    let gate = Arc::new(CommitGate::default());
    let log = Arc::new(HookedLog {
        inner: inner.clone(),
        hooks: gate.clone(),
    });
    let mut app = StreamsApp::with_log(counts_and_totals(), config("gated", 1), log).unwrap();
    app.start().unwrap();
    assert!(app.wait_until_caught_up(Duration::from_secs(60)).unwrap());
    let total = |latest: bool, timeout: Duration| {
        let q = KeyQuery::<String, i64>::with_key("k0".into());
        let mut r = StateQueryRequest::in_store(TOTALS, q).with_timeout(timeout);
        if latest {
            r = r.latest_processed();
        }
        app.query(r).map(|a| a.answer.map(|v| v.value))
    };
    assert_eq!(total(false, Duration::from_secs(30)), Ok(Some(10)));
    gate.hold(true);
    produce(&*inner, &k0(5, 10), 5);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while total(true, Duration::from_secs(30)) != Ok(Some(15)) {
        assert!(
            std::time::Instant::now() < deadline,
            "the records are processed"
        );
    }
    let held = total(false, Duration::from_millis(300));
    assert_eq!(held, Err(QueryError::Timeout(Duration::from_millis(300))));
    gate.hold(false);
    assert_eq!(total(false, Duration::from_secs(30)), Ok(Some(15)));
    assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
}
