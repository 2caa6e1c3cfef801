//! The windowed workloads on a small input, driven exactly as the benchmark
//! drives them, against a straightforward reference computation over the
//! same records.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use stoatflow_bench::run::{RunOptions, run_join, run_windowed};
use stoatflow_bench::workloads::{
    self, JOIN_WINDOW, KeyedInput, SESSION_GAP, SLIDING_DIFFERENCE, TUMBLING_INPUT, TUMBLING_KEYS,
    TUMBLING_WINDOW_MS, WINDOWED_INPUT, join_record, tumbling_record, windowed_record,
};
use stoatflow_streams::{KStream, StreamsBuilder, Windowed};

/// 20 s of the windowed shape: each key has two or three bursts, 8 s apart,
/// so sliding windows span bursts and sessions do not.
const WINDOWED_EVENTS: u64 = 20_000;
/// 6,000 pairs, 0.6 s of event time, all within one join window: the right
/// side covers 6,000 of the 10,000 keys in another order than the left, so
/// about 60% of the left records match and the rest match nothing.
const JOIN_EVENTS: u64 = 12_000;

/// The figures' settings (a barrier every 10,000 records, changelogs on) on `events` records.
fn opts(events: u64) -> RunOptions {
    RunOptions {
        events,
        ..RunOptions::default()
    }
}

/// A sink that keeps what reaches it.
fn collector<K: Clone + Send + 'static, V: Clone + Send + 'static>() -> (
    Arc<Mutex<Vec<(K, V)>>>,
    impl Fn(&K, &V) + Send + Sync + 'static,
) {
    let out = Arc::new(Mutex::new(Vec::new()));
    let sink = out.clone();
    (out, move |k: &K, v: &V| {
        sink.lock().expect("sink").push((k.clone(), v.clone()))
    })
}

/// Runs a windowed count workload; returns (key, start, end) → count, and
/// checks each window was emitted once.
fn windowed(
    query: &'static str,
    build: fn(&mut StreamsBuilder) -> KStream<Windowed<i64>, i64>,
    input: &KeyedInput,
    events: u64,
) -> BTreeMap<(i64, i64, i64), i64> {
    let (out, sink) = collector::<Windowed<i64>, i64>();
    run_windowed(query, build, input, sink, &opts(events)).expect("run");
    let out = out.lock().expect("sink");
    let got: BTreeMap<_, _> = out
        .iter()
        .map(|(w, n)| ((w.key, w.window.start, w.window.end), *n))
        .collect();
    assert_eq!(
        got.len(),
        out.len(),
        "each window is emitted once, on close"
    );
    got
}

/// Each key's event times, in order.
fn times_by_key() -> BTreeMap<i64, Vec<i64>> {
    let mut by_key: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for i in 0..WINDOWED_EVENTS {
        let (k, t) = windowed_record(i);
        by_key.entry(k).or_default().push(t);
    }
    by_key
}

/// 25 s of the tumbling shape: 25,000 records, 2 full 10 s windows and a
/// half one per key.
const TUMBLING_EVENTS: u64 = 25_000;

#[test]
fn tumbling_counts_match_a_count_per_key_and_window() {
    let size = TUMBLING_WINDOW_MS as i64;
    let mut expected: BTreeMap<(i64, i64, i64), i64> = BTreeMap::new();
    for i in 0..TUMBLING_EVENTS {
        let (k, t) = tumbling_record(i);
        let start = t - t.rem_euclid(size);
        *expected.entry((k, start, start + size)).or_default() += 1;
    }
    let got = windowed(
        "tumbling",
        workloads::tumbling,
        &TUMBLING_INPUT,
        TUMBLING_EVENTS,
    );
    assert_eq!(
        expected.len() as i64,
        3 * TUMBLING_KEYS,
        "three windows per key"
    );
    assert!(
        expected.values().any(|&n| n == 5),
        "the last window is partial"
    );
    assert_eq!(got, expected);
}

#[test]
fn sliding_counts_match_every_distinct_window() {
    let d = SLIDING_DIFFERENCE.as_millis() as i64;
    let mut expected = BTreeMap::new();
    for (k, ts) in times_by_key() {
        // Kafka's sliding windows: each record's left window [t - D, t], and
        // its right window [t + 1, t + 1 + D] when a later record falls
        // within D of it; a window counts the records inside, both ends
        // inclusive.
        let mut starts: Vec<i64> = ts.iter().map(|t| t - d).collect();
        starts.extend(
            ts.iter()
                .filter(|&&t| ts.iter().any(|&u| u > t && u <= t + d))
                .map(|t| t + 1),
        );
        for s in starts {
            let n = ts.iter().filter(|&&t| t >= s && t <= s + d).count() as i64;
            expected.insert((k, s, s + d), n);
        }
    }
    let got = windowed(
        "sliding",
        workloads::sliding,
        &WINDOWED_INPUT,
        WINDOWED_EVENTS,
    );
    assert!(got.values().any(|&n| n > 8), "some windows span two bursts");
    assert_eq!(got, expected);
}

#[test]
fn session_counts_match_runs_within_the_gap() {
    let gap = SESSION_GAP.as_millis() as i64;
    let mut expected = BTreeMap::new();
    for (k, ts) in times_by_key() {
        let mut run = (ts[0], ts[0], 0);
        for &t in &ts {
            if t - run.1 > gap {
                expected.insert((k, run.0, run.1), run.2);
                run = (t, t, 0);
            }
            run.1 = t;
            run.2 += 1;
        }
        expected.insert((k, run.0, run.1), run.2);
    }
    let got = windowed(
        "session",
        workloads::session,
        &WINDOWED_INPUT,
        WINDOWED_EVENTS,
    );
    assert!(expected.len() > 2 * 1_000, "keys have several sessions");
    assert_eq!(got, expected);
}

/// (key, left value, right value) of every pair at most the window apart.
fn matched_pairs() -> Vec<(i64, i64, Option<i64>)> {
    let window = JOIN_WINDOW.as_millis() as i64;
    let pairs: Vec<(i64, i64, i64)> = (0..JOIN_EVENTS / 2).map(join_record).collect();
    let mut rights: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
    for (i, &(_, rk, t)) in pairs.iter().enumerate() {
        rights.entry(rk).or_default().push((i as i64, t));
    }
    let mut out = Vec::new();
    for (i, &(lk, _, t)) in pairs.iter().enumerate() {
        let matched: Vec<i64> = rights
            .get(&lk)
            .into_iter()
            .flatten()
            .filter(|(_, u)| (t - u).abs() <= window)
            .map(|(j, _)| *j)
            .collect();
        if matched.is_empty() {
            out.push((lk, i as i64, None));
        }
        out.extend(matched.into_iter().map(|j| (lk, i as i64, Some(j))));
    }
    out.sort_unstable();
    out
}

#[test]
fn inner_join_emits_every_pair_within_the_window() {
    let (out, sink) = collector::<i64, (i64, i64)>();
    run_join(
        "join-inner",
        workloads::join_inner,
        sink,
        &opts(JOIN_EVENTS),
    )
    .expect("run");
    let mut got: Vec<(i64, i64, Option<i64>)> = out
        .lock()
        .expect("sink")
        .iter()
        .map(|&(k, (l, r))| (k, l, Some(r)))
        .collect();
    got.sort_unstable();
    let expected: Vec<_> = matched_pairs()
        .into_iter()
        .filter(|p| p.2.is_some())
        .collect();
    assert!(expected.len() > 1_000, "many left records match");
    assert_eq!(got, expected);
}

#[test]
fn left_join_emits_every_pair_and_each_unmatched_left_once() {
    let (out, sink) = collector::<i64, (i64, Option<i64>)>();
    run_join("join-left", workloads::join_left, sink, &opts(JOIN_EVENTS)).expect("run");
    let mut got: Vec<(i64, i64, Option<i64>)> = out
        .lock()
        .expect("sink")
        .iter()
        .map(|&(k, (l, r))| (k, l, r))
        .collect();
    got.sort_unstable();
    assert!(
        got.iter().filter(|p| p.2.is_none()).count() > 1_000,
        "many left records match nothing"
    );
    assert_eq!(got, matched_pairs());
}

/// Join memory follows the live arrivals: over 10 s of input (100,000 pairs,
/// 10 per ms), each side's store holds at most retention (2 s, the window
/// both ways, no grace) + one segment (2 s) + one barrier step (0.5 s) of
/// arrivals; with 60 s segments it held the whole run (200,000 entries).
#[test]
fn join_stores_hold_window_plus_grace_of_arrivals() {
    let (_, sink) = collector::<i64, (i64, i64)>();
    let events = 200_000;
    run_join("join-inner", workloads::join_inner, sink, &opts(events)).expect("run");
    let peak = stoatflow_bench::pipeline::peak_store_entries();
    // 10 arrivals per ms per side, 4.5 s, two sides; plus the emit-frontier entries.
    assert!(peak <= 2 * 10 * 4_500 + 10, "peak {peak} entries");
    assert!(peak >= 2 * 10 * 2_000, "the live window is kept: {peak}");
}
