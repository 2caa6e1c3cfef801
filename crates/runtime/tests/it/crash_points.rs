//! Exactly-once under a crash at every point (issue 17 items 1 and 2, at the
//! log's granularity): a log wrapper counts every operation that changes
//! durable state — creating a topic, taking a producer epoch, committing or
//! aborting a transaction (sends and offsets are buffered in the producer
//! until the commit, so a crash between them is a crash before the commit) —
//! and "loses power" right before or right after operation k: that
//! operation and every later call fail, the application stops, and a fresh
//! application is started on what is durable. For every k up to the
//! uninterrupted run's count, both ways, the committed final output must
//! equal the uninterrupted run's, each final result once. A sample of double
//! crashes (a second crash during the recovery) too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use stoatflow_log::{EmbeddedLog, ErrorKind, Log, LogError, TopicSpec};
use stoatflow_runtime::{AppState, StreamsApp};
use stoatflow_streams::Topology;

use crate::families::{
    OTHER, Raw, hopping, left_join, outer_join, read_raw, repartition_hop, session, sliding,
    suppressed,
};
use crate::hooked_log::{Durable, HookedLog, Hooks};
use crate::support::*;

/// When the power goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// Operation k does not happen.
    Before,
    /// Operation k happens; the process dies before it learns so.
    After,
}

#[derive(Debug, Default)]
struct Power {
    ops: AtomicU64,
    cut: Option<(u64, Cut)>,
    dead: AtomicBool,
}

fn lost() -> LogError {
    LogError::Broker {
        op: "anything".into(),
        message: "power lost (injected)".into(),
        kind: ErrorKind::Fatal,
    }
}

impl Hooks for Power {
    fn alive(&self) -> Result<(), LogError> {
        if self.dead.load(Ordering::Acquire) {
            Err(lost())
        } else {
            Ok(())
        }
    }

    /// A durable operation: counted, and the power may go around it.
    fn durable<T>(
        &self,
        _: Durable,
        op: impl FnOnce() -> Result<T, LogError>,
    ) -> Result<T, LogError> {
        self.alive()?;
        let k = self.ops.fetch_add(1, Ordering::AcqRel) + 1;
        match self.cut {
            Some((at, cut)) if at == k => {
                self.dead.store(true, Ordering::Release);
                if cut == Cut::After {
                    let _ = op();
                }
                Err(lost())
            }
            _ => op(),
        }
    }
}

/// A family: its topology and its input per topic.
struct Family {
    name: &'static str,
    topology: fn() -> Topology,
    inputs: Vec<(&'static str, Vec<Input>)>,
    /// Its stores on disk (persistent, in a state directory kept across the
    /// crash and the restart) rather than in memory.
    on_disk: bool,
}

fn families() -> Vec<Family> {
    vec![
        Family {
            name: "tumbling",
            topology: tumbling_count,
            inputs: vec![(INPUT, input(120, 5, 31))],
            on_disk: false,
        },
        Family {
            name: "tumbling-on-disk",
            topology: tumbling_count,
            inputs: vec![(INPUT, input(120, 5, 41))],
            on_disk: true,
        },
        Family {
            name: "hopping",
            topology: hopping,
            inputs: vec![(INPUT, input(120, 5, 38))],
            on_disk: false,
        },
        Family {
            name: "sliding",
            topology: sliding,
            inputs: vec![(INPUT, input(120, 5, 32))],
            on_disk: false,
        },
        Family {
            name: "session",
            topology: session,
            inputs: vec![(INPUT, input(120, 9, 33))],
            on_disk: false,
        },
        Family {
            name: "suppress",
            topology: suppressed,
            inputs: vec![(INPUT, input(120, 5, 34))],
            on_disk: false,
        },
        Family {
            name: "left-join",
            topology: left_join,
            inputs: vec![(INPUT, input(80, 7, 35)), (OTHER, input(80, 7, 36))],
            on_disk: false,
        },
        Family {
            name: "outer-join",
            topology: outer_join,
            inputs: vec![(INPUT, input(80, 9, 39)), (OTHER, input(80, 9, 40))],
            on_disk: false,
        },
        Family {
            name: "repartition-hop",
            topology: repartition_hop,
            inputs: vec![(INPUT, input(120, 40, 37))],
            on_disk: false,
        },
    ]
}

/// Input pieces: the first is written before the app starts, the others
/// while it runs (so a run spans several epochs and a crash can fall
/// between them).
const PIECES: usize = 4;
/// Between two pieces written while the app runs.
const PIECE_GAP: Duration = Duration::from_millis(25);

type Pieces = Vec<Vec<(&'static str, Vec<Input>)>>;

/// A log with the family's topics and its first input piece, written
/// without faults; the other pieces are returned for [`run`] to write.
fn prepared(family: &Family) -> (Arc<EmbeddedLog>, Pieces, tempfile::TempDir) {
    let log = Arc::new(EmbeddedLog::in_memory());
    log.create_topic(&TopicSpec::new(OUTPUT, PARTITIONS))
        .unwrap();
    let mut pieces: Pieces = vec![Vec::new(); PIECES];
    for (topic, records) in &family.inputs {
        log.create_topic(&TopicSpec::new(*topic, PARTITIONS))
            .unwrap();
        let size = records.len().div_ceil(PIECES);
        for (i, chunk) in records.chunks(size).enumerate() {
            pieces[i].push((*topic, chunk.to_vec()));
        }
    }
    for (topic, records) in pieces.remove(0) {
        produce_to(&*log, topic, &records, 20);
    }
    (log, pieces, tempfile::tempdir().unwrap())
}

/// Writes `pieces` to `log`, one every [`PIECE_GAP`], on a thread.
fn feed(log: &Arc<EmbeddedLog>, pieces: Pieces) -> std::thread::JoinHandle<()> {
    let log = log.clone();
    std::thread::spawn(move || {
        for piece in pieces {
            std::thread::sleep(PIECE_GAP);
            for (topic, records) in piece {
                produce_to(&*log, topic, &records, 20);
            }
        }
    })
}

/// Runs the family's app on `log` with the power going at `cut` (if the run
/// gets that far). Returns the operations it made and whether it crashed.
fn run(
    family: &Family,
    (log, state): (&Arc<EmbeddedLog>, &tempfile::TempDir),
    app_id: &str,
    cut: Option<(u64, Cut)>,
    pieces: Pieces,
) -> (u64, bool) {
    let power = Arc::new(Power {
        cut,
        ..Power::default()
    });
    let faulty = Arc::new(HookedLog {
        inner: log.clone(),
        hooks: power.clone(),
    });
    let mut config = config(app_id, 2);
    if family.on_disk {
        config = config.with_state_dir(state.path());
    }
    let mut app = StreamsApp::with_log((family.topology)(), config, faulty).unwrap();
    app.start().unwrap();
    let feeder = feed(log, pieces);
    // The input is all written before the run can count as finished.
    let fed = feeder.join();
    assert!(fed.is_ok(), "the input feeder failed");
    let finished = app
        .wait_until_caught_up(Duration::from_secs(60))
        .unwrap_or(false)
        && app.close(Duration::from_secs(30));
    let crashed = power.dead.load(Ordering::Acquire);
    assert!(
        finished || crashed,
        "{}: neither finished nor crashed: {:?} {:?}",
        family.name,
        app.state(),
        app.error()
    );
    if crashed {
        // The engine meets the lost log on its next call.
        let state = app.wait_for_state(AppState::Error, Duration::from_secs(10));
        assert!(
            matches!(state, AppState::Error | AppState::NotRunning),
            "{}: a lost log stops the app, state {state}",
            family.name,
        );
    }
    (power.ops.load(Ordering::Acquire), crashed)
}

fn check(family: &Family, expected: &Raw, log: &EmbeddedLog, what: &str) {
    let got = read_raw(log);
    assert_eq!(&got, expected, "{}: {what}", family.name);
}

#[test]
fn a_crash_before_or_after_every_durable_operation_keeps_every_final_result_once() {
    let heavy = std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some();
    let mut report = Vec::new();
    let mut total = 0u64;
    for family in families() {
        let (log, pieces, state) = prepared(&family);
        let (ops, crashed) = run(&family, (&log, &state), "clean", None, pieces);
        assert!(!crashed);
        let expected = read_raw(&*log);
        assert!(!expected.is_empty(), "{}: nothing emitted", family.name);
        let mut points = 0u64;
        for k in 1..=ops {
            for cut in [Cut::Before, Cut::After] {
                let (log, pieces, state) = prepared(&family);
                let app_id = format!("crash-{k}");
                let (_, crashed) = run(&family, (&log, &state), &app_id, Some((k, cut)), pieces);
                if crashed {
                    points += 1;
                }
                let (_, again) = run(&family, (&log, &state), &app_id, None, Vec::new());
                assert!(!again);
                check(
                    &family,
                    &expected,
                    &log,
                    &format!("crash {cut:?} operation {k}"),
                );
            }
        }
        // Double crashes: a second crash during the recovery, on a sample.
        let step = if heavy { 1 } else { (ops / 4).max(1) };
        for k in (1..=ops).step_by(step as usize) {
            let (log, pieces, state) = prepared(&family);
            let app_id = format!("double-{k}");
            run(
                &family,
                (&log, &state),
                &app_id,
                Some((k, Cut::After)),
                pieces,
            );
            run(
                &family,
                (&log, &state),
                &app_id,
                Some((1 + k % 7, Cut::Before)),
                Vec::new(),
            );
            run(&family, (&log, &state), &app_id, None, Vec::new());
            check(&family, &expected, &log, &format!("double crash at {k}"));
        }
        assert!(points > 0, "{}: no crash happened", family.name);
        report.push(format!("{} {points}", family.name));
        total += points;
    }
    eprintln!("crash points: {} (total {total})", report.join(", "));
}
