//! Exactly-once under a crash at every point (docs/state.md#exactly-once, at
//! the log's granularity): on a [`FaultyLog`] the power goes right before or
//! right after durable operation k, the application stops, and a fresh
//! application is started on what is durable. For every k up to the
//! uninterrupted run's count, both ways, the committed output must equal the
//! uninterrupted run's: each final result once, every timer fired once, no
//! late record admitted that the uninterrupted run dropped. A sample of
//! double crashes (a second crash during the recovery) too.
//!
//! Input is written in pieces while the app runs. A piece either follows a
//! short pause, or waits until the log holds a committed barrier stamp at
//! or above a watermark: what depends on where barriers fall (a record's
//! lateness, a timer due only under the floor of a later barrier, a
//! session merged in a later epoch) is then fixed by the input, the same in
//! every run. Such a gate reads the durable log, so after a crash it is
//! decided by what survived, and the restarted run writes what is left.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stoatflow_log::{EmbeddedLog, Log, TopicSpec};
use stoatflow_runtime::{AppState, StreamsApp, partition_for_key};
use stoatflow_state::{WATERMARK_STORE_NAME, changelog_topic};
use stoatflow_streams::Topology;

use crate::families::{
    OTHER, Raw, hopping, left_join, outer_join, read_raw, repartition_hop, session, sliding,
    suppressed, suppressed_time_limit, suppressed_until_barrier,
};
use crate::faulty_log::{Cut, FaultyLog, Power};
use crate::hooked_log::HookedLog;
use crate::support::*;
use crate::timed::{bucket_id, timed_processor};

/// What a piece waits for before it is written.
#[derive(Debug, Clone, Copy)]
enum Gate {
    /// [`PIECE_GAP`]; written even after the power went.
    Pause,
    /// A committed barrier stamp at or above this watermark (ms) in every
    /// partition of the application's watermark changelog.
    Stamp(i64),
}

#[derive(Debug, Clone)]
struct Piece {
    gate: Gate,
    records: Vec<(&'static str, Vec<Input>)>,
}

/// How a crashed run's output is compared with the uninterrupted run's.
#[derive(Debug, Clone, Copy)]
enum Compare {
    /// The same records (final results: each once).
    Exact,
    /// `until_barrier`'s releases depend on where barriers fall: per key,
    /// the values rise strictly (a repeat is an epoch emitted twice) and
    /// the last is the uninterrupted run's.
    LastPerKey,
}

/// A family: its topology, its input in pieces (the first written before
/// the app starts), and what it must show.
struct Family {
    name: &'static str,
    topology: fn() -> Topology,
    pieces: Vec<Piece>,
    compare: Compare,
    /// Committed output records (sentinels left out) a run waits for before
    /// it closes: results made by wall-clock timers, which a close does not
    /// flush.
    settle: Option<usize>,
    /// What the uninterrupted run's output must show (so the scenario the
    /// family is built for really happened).
    shape: Option<fn(&Raw)>,
    /// Its stores on disk (persistent, in a state directory kept across the
    /// crash and the restart) rather than in memory.
    on_disk: bool,
}

impl Family {
    /// A family whose input goes in [`PIECES`] pieces, a pause apart.
    fn paced(
        name: &'static str,
        topology: fn() -> Topology,
        inputs: Vec<(&'static str, Vec<Input>)>,
    ) -> Family {
        let mut pieces = vec![
            Piece {
                gate: Gate::Pause,
                records: Vec::new(),
            };
            PIECES
        ];
        for (topic, records) in inputs {
            let size = records.len().div_ceil(PIECES);
            for (i, chunk) in records.chunks(size).enumerate() {
                pieces[i].records.push((topic, chunk.to_vec()));
            }
        }
        Family {
            name,
            topology,
            pieces,
            compare: Compare::Exact,
            settle: None,
            shape: None,
            on_disk: false,
        }
    }

    /// The same, with its stores on disk.
    fn on_disk(mut self) -> Family {
        self.on_disk = true;
        self
    }
}

fn families() -> Vec<Family> {
    vec![
        Family::paced("tumbling", tumbling_count, vec![(INPUT, input(120, 5, 31))]),
        Family::paced(
            "tumbling-on-disk",
            tumbling_count,
            vec![(INPUT, input(120, 5, 41))],
        )
        .on_disk(),
        Family::paced("hopping", hopping, vec![(INPUT, input(120, 5, 38))]),
        Family::paced("sliding", sliding, vec![(INPUT, input(120, 5, 32))]),
        Family::paced("session", session, vec![(INPUT, input(120, 9, 33))]),
        Family::paced("suppress", suppressed, vec![(INPUT, input(120, 5, 34))]),
        Family::paced(
            "left-join",
            left_join,
            vec![(INPUT, input(80, 7, 35)), (OTHER, input(80, 7, 36))],
        ),
        Family::paced(
            "outer-join",
            outer_join,
            vec![(INPUT, input(80, 9, 39)), (OTHER, input(80, 9, 40))],
        ),
        Family::paced(
            "repartition-hop",
            repartition_hop,
            vec![(INPUT, input(120, 40, 37))],
        ),
        Family::paced(
            "suppress-time-limit",
            suppressed_time_limit,
            vec![(INPUT, input(120, 5, 41))],
        ),
        Family {
            compare: Compare::LastPerKey,
            ..Family::paced(
                "suppress-until-barrier",
                suppressed_until_barrier,
                vec![(INPUT, input(120, 5, 42))],
            )
        },
        Family::paced(
            "dynamic-sink",
            crate::dynamic_sinks::dynamic_tumbling,
            vec![(INPUT, input(120, 5, 43))],
        ),
        session_merges(),
        timers(),
        late_records(),
    ]
}

/// Pieces: the first is written before the app starts, the others while it
/// runs (so a run spans several epochs and a crash can fall between them).
const PIECES: usize = 4;
/// Between two paced pieces.
const PIECE_GAP: Duration = Duration::from_millis(25);

/// The regular records of [`input`] (its far-future sentinels left out).
fn regular_input(n: usize, keys: usize, seed: u64) -> Vec<Input> {
    let mut all = input(n, keys, seed);
    all.truncate(n);
    all
}

/// One record per partition at `ts`, keyed `<prefix><i>` (the prefix starts
/// with `end`, so the output they cause is left out of comparisons).
fn per_partition(prefix: &str, ts: i64) -> Vec<Input> {
    (0..PARTITIONS)
        .map(|p| {
            let key = (0..)
                .map(|i| format!("{prefix}{i}"))
                .find(|k| partition_for_key(k.as_bytes(), PARTITIONS) == p)
                .expect("some key lands in every partition");
            Input { key, ts, value: -1 }
        })
        .collect()
}

fn piece(gate: Gate, records: Vec<Input>) -> Piece {
    Piece {
        gate,
        records: vec![(INPUT, records)],
    }
}

/// Sessions that merge in a later epoch than the ones they join: per key
/// `m<i>`, two sessions 3 s apart (gap 2 s) in the first piece, and a record
/// between them only once a barrier past both has committed.
fn session_merges() -> Family {
    let regular = regular_input(120, 9, 43);
    let (early, late) = regular.split_at(60);
    let edge = START + 59 * 100;
    let merging: Vec<String> = (0..4).map(|i| format!("m{i}")).collect();
    let mut first = early.to_vec();
    for (i, key) in merging.iter().enumerate() {
        for ts in [edge - 4_000, edge - 1_000] {
            first.push(Input {
                key: key.clone(),
                ts,
                value: i as i64,
            });
        }
    }
    // Last in every partition: a committed stamp at `pace - BOUND` means
    // everything before it was dispatched, and committed, in an earlier epoch.
    let pace = edge + 500;
    first.extend(per_partition("endp", pace));
    let mut bridge: Vec<Input> = merging
        .iter()
        .map(|key| Input {
            key: key.clone(),
            ts: edge - 2_500,
            value: 100,
        })
        .collect();
    bridge.extend_from_slice(late);
    let end = START + 120 * 100 + 3_600_000;
    Family {
        name: "session-merges",
        topology: session,
        pieces: vec![
            piece(Gate::Pause, first),
            piece(Gate::Stamp(pace - BOUND_MS as i64), bridge),
            piece(Gate::Pause, per_partition("end", end)),
        ],
        compare: Compare::Exact,
        settle: None,
        on_disk: false,
        shape: Some(|out| {
            // Each `m<i>` has one session, of the three records, merged.
            let merged = out
                .iter()
                .filter(|(k, _)| k.starts_with(b"m"))
                .map(|(_, v)| i64::from_be_bytes(v.as_slice().try_into().unwrap()))
                .collect::<Vec<_>>();
            assert_eq!(merged, vec![3; 4], "the merged sessions: {out:?}");
        }),
    }
}

/// The Processor API topology ([`crate::timed`]). Event-time timers fire
/// on watermark events against the floor; the last buckets' timers fire
/// only if a barrier that raised the floor past them is followed by one
/// more event, though the watermark no longer moves.
fn timers() -> Family {
    let regular = regular_input(120, 5, 44);
    let buckets: std::collections::BTreeSet<String> =
        regular.iter().map(|r| bucket_id(&r.key, r.ts)).collect();
    let end = START + 120 * 100 + 3_600_000;
    let mut pieces: Vec<Piece> = regular
        .chunks(40)
        .map(|c| piece(Gate::Pause, c.to_vec()))
        .collect();
    pieces.push(piece(Gate::Pause, per_partition("end", end)));
    Family {
        name: "processor-timers",
        topology: timed_processor,
        pieces,
        compare: Compare::Exact,
        // One event-time and one wall-clock result per bucket.
        settle: Some(2 * buckets.len()),
        on_disk: false,
        shape: None,
    }
}

/// The window of the records [`late_records`] writes late.
const LATE_WINDOW: i64 = START + 100_000;

/// Records late under the uninterrupted run's floor: the watermark jumps
/// past [`LATE_WINDOW`]'s close, and only once a barrier stamped at or above
/// that close has committed are records of that window written. The
/// uninterrupted run drops them (no result for the window); a run crashed
/// at any point must drop them too.
fn late_records() -> Family {
    let regular = regular_input(300, 5, 45);
    let (a, b) = regular.split_at(150);
    let jump = START + 200_000;
    let close = LATE_WINDOW + WINDOW_MS + GRACE_MS;
    let mut after: Vec<Input> = (0..20)
        .map(|i| Input {
            key: format!("k{}", i % 5),
            ts: LATE_WINDOW + i * 400,
            value: 1_000 + i,
        })
        .collect();
    after.extend((0..30).map(|i| Input {
        key: format!("k{}", i % 5),
        ts: jump + i * 100,
        value: 2_000 + i,
    }));
    after.extend(per_partition("end", jump + 3_600_000));
    Family {
        name: "late-records",
        topology: tumbling_count,
        pieces: vec![
            piece(Gate::Pause, a.to_vec()),
            piece(Gate::Pause, b.to_vec()),
            piece(Gate::Pause, per_partition("endj", jump)),
            piece(Gate::Stamp(close), after),
        ],
        compare: Compare::Exact,
        settle: None,
        on_disk: false,
        shape: Some(|out| {
            let admitted = out
                .iter()
                .filter(|(k, _)| k.ends_with(&LATE_WINDOW.to_be_bytes()))
                .count();
            assert_eq!(admitted, 0, "the late records were dropped");
            assert!(
                out.iter()
                    .any(|(k, _)| k.ends_with(&(START + 200_000).to_be_bytes())),
                "what follows them was counted"
            );
        }),
    }
}

/// What survives a crash: the log, and the state directory of a family
/// whose stores are on disk.
struct Rig {
    log: Arc<EmbeddedLog>,
    state: tempfile::TempDir,
}

/// A log with the family's topics and its first piece, written without
/// faults; the other pieces are returned for [`run`] to write.
fn prepared(family: &Family) -> (Rig, Vec<Piece>) {
    let log = Arc::new(EmbeddedLog::in_memory());
    log.create_topic(&TopicSpec::new(OUTPUT, PARTITIONS))
        .unwrap();
    let mut topics: Vec<&str> = family
        .pieces
        .iter()
        .flat_map(|p| p.records.iter().map(|(t, _)| *t))
        .collect();
    topics.sort_unstable();
    topics.dedup();
    for topic in topics {
        log.create_topic(&TopicSpec::new(topic, PARTITIONS))
            .unwrap();
    }
    let mut pieces = family.pieces.clone();
    write(&log, &pieces.remove(0));
    let state = scratch_dir();
    (Rig { log, state }, pieces)
}

fn write(log: &EmbeddedLog, piece: &Piece) {
    for (topic, records) in &piece.records {
        produce_to(log, topic, records, 20);
    }
}

/// The least, over the watermark changelog's partitions, of the newest
/// committed stamp (`i64::MIN` before the first).
fn committed_stamp(log: &EmbeddedLog, app_id: &str) -> i64 {
    let topic = changelog_topic(app_id, WATERMARK_STORE_NAME);
    let Some(shape) = log.describe_topic(&topic).unwrap() else {
        return i64::MIN;
    };
    let mut newest = vec![i64::MIN; shape.partitions as usize];
    for r in read_topic(log, &topic, shape.partitions) {
        let (Some(key), Some(value)) = (r.record.key, r.record.value) else {
            continue;
        };
        if key.first() == Some(&b's') {
            let w = i64::from_be_bytes(value.as_slice().try_into().unwrap());
            let i = r.partition.partition.0 as usize;
            newest[i] = newest[i].max(w);
        }
    }
    newest.into_iter().min().unwrap_or(i64::MIN)
}

/// Writes `pieces` to `log` on a thread, each after its gate; returns those
/// a gate held back when the power went first.
fn feed(
    log: &Arc<EmbeddedLog>,
    app_id: &str,
    power: &Arc<Power>,
    pieces: Vec<Piece>,
) -> std::thread::JoinHandle<Vec<Piece>> {
    let (log, app_id, power) = (log.clone(), app_id.to_owned(), power.clone());
    std::thread::spawn(move || {
        let mut pieces = std::collections::VecDeque::from(pieces);
        while let Some(piece) = pieces.front() {
            match piece.gate {
                Gate::Pause => std::thread::sleep(PIECE_GAP),
                Gate::Stamp(w) => {
                    let deadline = Instant::now() + Duration::from_secs(60);
                    loop {
                        let dead = power.is_dead();
                        if committed_stamp(&log, &app_id) >= w {
                            break;
                        }
                        if dead {
                            return pieces.into();
                        }
                        assert!(Instant::now() < deadline, "no stamp reached {w}");
                        std::thread::sleep(Duration::from_millis(2));
                    }
                }
            }
            write(&log, piece);
            pieces.pop_front();
        }
        Vec::new()
    })
}

/// Waits until the committed output holds `n` results (or the power went).
fn settled(log: &EmbeddedLog, n: usize, power: &Power) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while read_raw(log).len() < n {
        if power.is_dead() {
            return false;
        }
        if Instant::now() > deadline {
            let got: Vec<String> = read_raw(log)
                .iter()
                .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
                .collect();
            panic!("{} of {n} results: {got:?}", got.len());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// What one run did.
struct Ran {
    ops: u64,
    crashed: bool,
    /// Pieces its gates held back (the next run writes them).
    left: Vec<Piece>,
}

/// Runs the family's app on `log` with the power going at `cut` (if the run
/// gets that far), writing `pieces` as it goes.
fn run(
    family: &Family,
    rig: &Rig,
    app_id: &str,
    cut: Option<(u64, Cut)>,
    pieces: Vec<Piece>,
) -> Ran {
    let power = Arc::new(Power {
        cut,
        ..Power::default()
    });
    let log = &rig.log;
    let faulty: Arc<FaultyLog> = Arc::new(HookedLog {
        inner: log.clone(),
        hooks: power.clone(),
    });
    let mut config = config(app_id, 2);
    if family.on_disk {
        config = config.with_state_dir(rig.state.path());
    }
    let mut app = StreamsApp::with_log((family.topology)(), config, faulty).unwrap();
    app.start().unwrap();
    // The input is all written before the run can count as finished.
    let left = feed(log, app_id, &power, pieces)
        .join()
        .expect("the input feeder failed");
    let finished = left.is_empty()
        && app
            .wait_until_caught_up(Duration::from_secs(60))
            .unwrap_or(false)
        && family.settle.is_none_or(|n| settled(log, n, &power))
        && app.close(Duration::from_secs(30));
    let crashed = power.is_dead();
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
    Ran {
        ops: power.ops.load(std::sync::atomic::Ordering::Acquire),
        crashed,
        left,
    }
}

/// Each key's committed values, in offset order (sentinels left out).
fn per_key(log: &EmbeddedLog) -> BTreeMap<Vec<u8>, Vec<i64>> {
    let mut out: BTreeMap<Vec<u8>, Vec<i64>> = BTreeMap::new();
    for (k, v) in read_committed(log) {
        if !k.starts_with(b"end") {
            out.entry(k)
                .or_default()
                .push(i64::from_be_bytes(v.as_slice().try_into().unwrap()));
        }
    }
    out
}

/// The last value per key, once each key's values were checked to rise.
fn last_per_key(family: &Family, log: &EmbeddedLog, what: &str) -> BTreeMap<Vec<u8>, i64> {
    per_key(log)
        .into_iter()
        .map(|(k, values)| {
            assert!(
                values.windows(2).all(|w| w[0] < w[1]),
                "{}: {what}: key {} released {values:?}",
                family.name,
                String::from_utf8_lossy(&k)
            );
            (k, *values.last().expect("a key has a value"))
        })
        .collect()
}

/// The uninterrupted run's output, in the family's terms.
#[derive(Debug, PartialEq)]
enum Expected {
    Exact(Raw),
    LastPerKey(BTreeMap<Vec<u8>, i64>),
}

fn observed(family: &Family, log: &EmbeddedLog, what: &str) -> Expected {
    match family.compare {
        Compare::Exact => Expected::Exact(read_raw(log)),
        Compare::LastPerKey => Expected::LastPerKey(last_per_key(family, log, what)),
    }
}

fn check(family: &Family, expected: &Expected, log: &EmbeddedLog, what: &str) {
    let got = observed(family, log, what);
    assert_eq!(&got, expected, "{}: {what}", family.name);
}

/// Runs after a crash until one finishes, writing what the gates held back.
fn finish(family: &Family, rig: &Rig, app_id: &str, left: Vec<Piece>) {
    let ran = run(family, rig, app_id, None, left);
    assert!(!ran.crashed && ran.left.is_empty());
}

#[test]
fn a_crash_before_or_after_every_durable_operation_keeps_every_final_result_once() {
    let heavy = std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some();
    let mut report = Vec::new();
    let mut total = 0u64;
    // `STOATFLOW_CRASH_FAMILIES=a,b` runs only those (while working on one).
    let only = std::env::var("STOATFLOW_CRASH_FAMILIES").ok();
    for family in families().into_iter().filter(|f| {
        only.as_ref()
            .is_none_or(|o| o.split(',').any(|n| n == f.name))
    }) {
        let (rig, pieces) = prepared(&family);
        let log = &*rig.log;
        let clean = run(&family, &rig, "clean", None, pieces);
        assert!(!clean.crashed && clean.left.is_empty());
        let expected = observed(&family, log, "the uninterrupted run");
        assert!(
            !read_raw(log).is_empty(),
            "{}: nothing emitted",
            family.name
        );
        if let Some(shape) = family.shape {
            shape(&read_raw(log));
        }
        let mut points = 0u64;
        for k in 1..=clean.ops {
            for cut in [Cut::Before, Cut::After] {
                let (rig, pieces) = prepared(&family);
                let log = &rig.log;
                let app_id = format!("crash-{k}");
                let ran = run(&family, &rig, &app_id, Some((k, cut)), pieces);
                if ran.crashed {
                    points += 1;
                }
                finish(&family, &rig, &app_id, ran.left);
                check(
                    &family,
                    &expected,
                    log,
                    &format!("crash {cut:?} operation {k}"),
                );
            }
        }
        // Double crashes: a second crash during the recovery, on a sample.
        let step = if heavy { 1 } else { (clean.ops / 4).max(1) };
        for k in (1..=clean.ops).step_by(step as usize) {
            let (rig, pieces) = prepared(&family);
            let log = &rig.log;
            let app_id = format!("double-{k}");
            let first = run(&family, &rig, &app_id, Some((k, Cut::After)), pieces);
            let second = run(
                &family,
                &rig,
                &app_id,
                Some((1 + k % 7, Cut::Before)),
                first.left,
            );
            finish(&family, &rig, &app_id, second.left);
            check(&family, &expected, log, &format!("double crash at {k}"));
        }
        assert!(points > 0, "{}: no crash happened", family.name);
        report.push(format!("{} {points}", family.name));
        total += points;
    }
    eprintln!("crash points: {} (total {total})", report.join(", "));
}
