//! Queries against copies that may be behind (docs/queries.md#stale): two
//! instances on one log through a scripted group; A owns every input
//! partition, B owns none and keeps a standby copy of each task. B refuses
//! a query on a store it has only as standby copies, naming the tasks and
//! why; with stale answers allowed it answers from its copies, saying how
//! far behind each is, with no window final, and once the copies caught up
//! with the same values A's committed answer holds. A task still restoring
//! (its restore held) is refused, then answered with stale answers allowed,
//! saying how far its restore has to go, on both store engines.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use stoatflow_log::{EmbeddedLog, GroupEvent, TopicPartition};
use stoatflow_runtime::{
    AppState, Finality, KeyQuery, QueryAnswer, QueryError, RuntimeConfig, StaleSource,
    StateQueryRequest, StreamsApp, TaskId, WindowQuery,
};
use stoatflow_state::ValueAndTimestamp;
use stoatflow_streams::{
    EmitStrategy, Materialized, Produced, Serdes, StoreType, StreamsBuilder, StreamsConfig,
    TimeWindows, Topology,
};

use crate::hooked_log::{HookedLog, Hooks};
use crate::scripted_group::{Script, scripted_log};
use crate::support::*;

const APP: &str = "stale-app";
const COUNTS: &str = "stale-window-counts";
const TOTALS: &str = "stale-totals";

/// A tumbling count in [`COUNTS`] (kept a day, so final windows stay
/// queryable) and a running count per key in [`TOTALS`].
fn counts_and_totals() -> Topology {
    let mut builder = StreamsBuilder::new();
    let s = source(&mut builder, INPUT);
    s.group_by_key()
        .windowed_by(TimeWindows::of_size_and_grace(
            Duration::from_millis(WINDOW_MS as u64),
            Duration::from_millis(GRACE_MS as u64),
        ))
        .emit_strategy(EmitStrategy::on_window_close())
        .count_with(Materialized::as_(COUNTS).with_retention(Duration::from_secs(86_400)))
        .to_stream()
        .to(
            OUTPUT,
            Produced::with(
                Serdes::time_windowed(Serdes::string(), WINDOW_MS),
                Serdes::i64(),
            ),
        );
    let _totals = s.group_by_key().count_with(Materialized::as_(TOTALS));
    builder.build().expect("the topology builds")
}

fn instance(
    log: &Arc<HookedLog<Script>>,
    id: &str,
    state: &Path,
    store: StoreType,
) -> StreamsApp<HookedLog<Script>> {
    let mut config: RuntimeConfig = config(APP, 2)
        .with_state_dir(state)
        .with_standby_replicas(1)
        .with_streams(StreamsConfig::new(APP).with_default_dsl_store(store));
    config.instance_id = id.into();
    let mut app = StreamsApp::with_log(counts_and_totals(), config, log.clone()).unwrap();
    app.start().unwrap();
    app
}

fn tasks() -> Vec<TaskId> {
    (0..PARTITIONS).map(|p| TaskId::new(0, p)).collect()
}

/// Waits until `app` runs, owning `active` and keeping `standby`.
fn until_assigned(app: &StreamsApp<HookedLog<Script>>, active: &[TaskId], standby: &[TaskId]) {
    let what = format!("the app to run {active:?} and keep {standby:?}");
    wait_for(&what, &[app], Duration::from_secs(60), || {
        let a = app.assignment();
        app.state() == AppState::Running && a.active == active && a.standby == standby
    });
}

/// A (owning every task) and B (owning none, a copy of each) running,
/// with `records` processed and committed and B's copies caught up.
struct Pair {
    a: StreamsApp<HookedLog<Script>>,
    b: StreamsApp<HookedLog<Script>>,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

fn pair(records: &[Input], store: StoreType) -> Pair {
    let (_inner, group, log) = scripted_log();
    produce(&*log, records, 50);
    let all: Vec<_> = (0..PARTITIONS)
        .map(|p| TopicPartition::new(INPUT, p))
        .collect();
    group.push(&format!("{APP}-a"), GroupEvent::Assigned(all));
    group.push(&format!("{APP}-b"), GroupEvent::Assigned(Vec::new()));
    let dirs = (scratch_dir(), scratch_dir());
    let a = instance(&log, "a", dirs.0.path(), store);
    let b = instance(&log, "b", dirs.1.path(), store);
    until_assigned(&a, &tasks(), &[]);
    until_assigned(&b, &[], &tasks());
    wait_for_input_committed(&*log, APP, &[&a, &b]);
    Pair { a, b, _dirs: dirs }
}

/// B's answer (stale allowed) for `key`'s total, retried until it equals
/// A's committed one (the copy catches up); the last answer.
fn caught_up_total(p: &Pair, key: &str) -> QueryAnswer<Option<ValueAndTimestamp<i64>>> {
    let q = || KeyQuery::<String, i64>::with_key(key.to_owned());
    let want =
        p.a.query(StateQueryRequest::in_store(TOTALS, q()))
            .unwrap()
            .answer
            .map(|v| v.value);
    assert!(want.is_some(), "A counted {key}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stale = StateQueryRequest::in_store(TOTALS, q()).enable_stale();
        let answer = p.b.query(stale).unwrap();
        let behind = answer
            .stale
            .iter()
            .flat_map(|s| &s.changelogs)
            .any(|c| c.behind != Some(0));
        let got = answer.answer.as_ref().map(|v| v.value);
        if got == want && !behind {
            return answer;
        }
        assert!(
            Instant::now() < deadline,
            "B's copy never caught up: {got:?} vs {want:?}, {:?}",
            answer.stale
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_standby_copy_is_refused_unless_stale_answers_are_allowed_then_says_how_far_behind() {
    let records = input(600, 6, 11);
    let mut p = pair(&records, StoreType::Persistent);
    let q = || KeyQuery::<String, i64>::with_key("k1".into());

    let refused = p.b.query(StateQueryRequest::in_store(TOTALS, q()));
    let Err(QueryError::Stale { store, why }) = &refused else {
        panic!("B answered without stale answers allowed: {refused:?}");
    };
    assert_eq!(store, TOTALS);
    for t in tasks() {
        assert!(
            why.contains(&format!("task {t} is a standby copy (allow stale answers")),
            "{why}"
        );
    }

    let answer = caught_up_total(&p, "k1");
    assert_eq!(answer.barrier, None, "a copy reflects no barrier of B's");
    assert!(answer.position.is_empty());
    let read: Vec<TaskId> = answer.stale.iter().map(|s| s.task).collect();
    assert_eq!(read, tasks(), "every copy read");
    for s in &answer.stale {
        assert_eq!(s.source, StaleSource::Standby);
        assert_eq!(s.changelogs.len(), 1, "{s:?}");
        let c = &s.changelogs[0];
        assert!(c.topic.contains(TOTALS), "{c:?}");
        assert_eq!(c.partition as u32, s.task.partition);
        assert!(c.position > 0 && c.end >= Some(c.position), "{c:?}");
    }

    // Windows: the values A commits, none of them final on the copy.
    let windows = |app: &StreamsApp<HookedLog<Script>>, stale: bool| {
        let q = WindowQuery::<String, i64>::with_key_and_window_starts(
            "k1".into(),
            START - WINDOW_MS,
            START + 600 * 100,
        );
        let mut r = StateQueryRequest::in_store(COUNTS, q);
        if stale {
            r = r.enable_stale();
        }
        let a = app.query(r).unwrap();
        a.answer
            .iter()
            .map(|w| (w.start, (w.value.value, w.finality)))
            .collect::<BTreeMap<i64, (i64, Finality)>>()
    };
    let committed = windows(&p.a, false);
    assert!(
        committed.values().any(|(_, f)| *f == Finality::Final),
        "A has final windows: {committed:?}"
    );
    let copied = windows(&p.b, true);
    assert_eq!(
        copied
            .iter()
            .map(|(s, (v, _))| (*s, *v))
            .collect::<Vec<_>>(),
        committed
            .iter()
            .map(|(s, (v, _))| (*s, *v))
            .collect::<Vec<_>>()
    );
    assert!(
        copied
            .values()
            .all(|(_, f)| matches!(f, Finality::Open { .. })),
        "a copy calls no window final: {copied:?}"
    );
    assert!(p.a.close(Duration::from_secs(30)), "{:?}", p.a.error());
    assert!(p.b.close(Duration::from_secs(30)), "{:?}", p.b.error());
}

#[test]
fn a_standby_keeps_no_copy_of_a_store_in_memory_and_says_so() {
    let records = input(100, 4, 5);
    let mut p = pair(&records, StoreType::InMemory);
    let q = KeyQuery::<String, i64>::with_key("k1".into());
    let refused =
        p.b.query(StateQueryRequest::in_store(TOTALS, q).enable_stale());
    let Err(QueryError::Stale { store, why }) = &refused else {
        panic!("B answered from a store it does not copy: {refused:?}");
    };
    assert_eq!(store, TOTALS);
    assert!(
        why.contains("task 0_0 is a standby copy, which keeps no copy of a store in memory"),
        "{why}"
    );
    assert!(p.a.close(Duration::from_secs(30)), "{:?}", p.a.error());
    assert!(p.b.close(Duration::from_secs(30)), "{:?}", p.b.error());
}

/// The restore's readers (`<lane>-reader` threads) fetch nothing while
/// held: a restore that cannot end until released.
#[derive(Debug, Default)]
struct HeldReaders(AtomicBool);

impl Hooks for HeldReaders {
    fn starve_fetch(&self) -> bool {
        self.0.load(Ordering::Acquire)
            && std::thread::current()
                .name()
                .is_some_and(|n| n.ends_with("-reader"))
    }
}

/// A task still restoring is refused without stale answers allowed, and
/// answered with them, saying how far its restore has to go; released, it
/// answers committed what the first run counted. On `store`.
fn a_restoring_task(store: StoreType) {
    let app_id = format!("restoring-{store:?}").to_lowercase();
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    produce(&*log, &input(300, 6, 3), 50);
    let config = |dir: &Path| {
        stoatflow_runtime::RuntimeConfig::new(&app_id, stoatflow_runtime::Backend::InMemory)
            .with_lanes(2)
            .with_state_dir(dir)
            .with_streams(StreamsConfig::new(&app_id).with_default_dsl_store(store))
    };
    // A first run fills the changelogs; the next, on a fresh state
    // directory, restores them in full.
    let first_dir = scratch_dir();
    let mut first =
        StreamsApp::with_log(counts_and_totals(), config(first_dir.path()), log.clone()).unwrap();
    first.start().unwrap();
    assert!(first.wait_until_caught_up(Duration::from_secs(60)).unwrap());
    let q = || KeyQuery::<String, i64>::with_key("k1".into());
    let counted = first
        .query(StateQueryRequest::in_store(TOTALS, q()))
        .unwrap()
        .answer
        .map(|v| v.value);
    assert!(counted.is_some());
    assert!(first.close(Duration::from_secs(30)), "{:?}", first.error());

    let held = Arc::new(HeldReaders(AtomicBool::new(true)));
    let hooked = Arc::new(HookedLog {
        inner: log,
        hooks: held.clone(),
    });
    let dir = scratch_dir();
    let mut app = StreamsApp::with_log(counts_and_totals(), config(dir.path()), hooked).unwrap();
    app.start().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let why = loop {
        match app.query(StateQueryRequest::in_store(TOTALS, q())) {
            Err(QueryError::Stale { store, why }) => {
                assert_eq!(store, TOTALS);
                break why;
            }
            Err(QueryError::NotRunning) => {}
            other => panic!("a restoring app answered: {other:?}"),
        }
        assert!(Instant::now() < deadline, "the lanes never restored");
        std::thread::sleep(Duration::from_millis(10));
    };
    for t in tasks() {
        assert!(
            why.contains(&format!("task {t} is still restoring (allow stale answers")),
            "{why}"
        );
    }
    let stale = app
        .query(StateQueryRequest::in_store(TOTALS, q()).enable_stale())
        .unwrap();
    assert_eq!(stale.answer, None, "nothing restored yet");
    assert_eq!(stale.barrier, None);
    let read: Vec<TaskId> = stale.stale.iter().map(|s| s.task).collect();
    assert_eq!(read, tasks());
    let behind: u64 = stale
        .stale
        .iter()
        .inspect(|s| assert_eq!(s.source, StaleSource::Restoring))
        .flat_map(|s| &s.changelogs)
        .map(|c| {
            assert!(c.topic.contains(TOTALS), "{c:?}");
            c.behind.unwrap()
        })
        .sum();
    assert!(
        behind > 0,
        "the restore has records to go: {:?}",
        stale.stale
    );
    assert_eq!(app.state(), AppState::Rebalancing);

    held.0.store(false, Ordering::Release);
    assert_eq!(
        app.wait_for_state(AppState::Running, Duration::from_secs(60)),
        AppState::Running
    );
    let answer = app.query(StateQueryRequest::in_store(TOTALS, q())).unwrap();
    assert_eq!(answer.answer.map(|v| v.value), counted);
    assert!(answer.stale.is_empty());
    assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
}

#[test]
fn a_restoring_task_is_refused_unless_stale_answers_are_allowed_in_memory() {
    a_restoring_task(StoreType::InMemory);
}

#[test]
fn a_restoring_task_is_refused_unless_stale_answers_are_allowed_on_disk() {
    a_restoring_task(StoreType::Persistent);
}
