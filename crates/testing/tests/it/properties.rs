//! Property test: for random in-order inputs, sliding and session counts
//! (both emit strategies) equal a simple reference model; sliding counts
//! also for out-of-order inputs within the grace.

use std::collections::BTreeMap;

use proptest::prelude::*;

use crate::harness::{Out, Scenario, Step, pipe};
use crate::sessions::{self, final_table};
use crate::sliding;
use stoatflow_streams::EmitStrategy;

/// Reference sliding windows: for each record at `t`, the window starting at
/// `max(0, t − D)`, and `t + 1` if a later record lies in `(t, t + 1 + D]`;
/// each counts the records in `[start, start + D]`, stamped with the latest.
fn sliding_model(records: &[(String, i64)], d: i64) -> BTreeMap<String, (String, i64)> {
    let mut by_key: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for (k, t) in records {
        by_key.entry(k).or_default().push(*t);
    }
    let mut out = BTreeMap::new();
    for (k, ts) in by_key {
        let mut starts: Vec<i64> = ts.iter().map(|t| (t - d).max(0)).collect();
        for t in &ts {
            if ts.iter().any(|u| u > t && *u <= t + 1 + d) {
                starts.push(t + 1);
            }
        }
        for s in starts {
            let inside: Vec<i64> = ts
                .iter()
                .copied()
                .filter(|t| *t >= s && *t <= s + d)
                .collect();
            let max = *inside.iter().max().unwrap();
            out.insert(
                format!("[{k}@{s}/{}]", s + d),
                (inside.len().to_string(), max),
            );
        }
    }
    out
}

/// Reference sessions: per key, split sorted times where the gap exceeds `gap`.
fn session_model(records: &[(String, i64)], gap: i64) -> BTreeMap<String, (String, i64)> {
    let mut by_key: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for (k, t) in records {
        by_key.entry(k).or_default().push(*t);
    }
    let mut out = BTreeMap::new();
    for (k, ts) in by_key {
        let mut sessions: Vec<(i64, i64, usize)> = Vec::new();
        for t in ts {
            match sessions.last_mut() {
                Some((_, end, n)) if t - *end <= gap => {
                    *end = t;
                    *n += 1;
                }
                _ => sessions.push((t, t, 1)),
            }
        }
        for (s, e, n) in sessions {
            out.insert(format!("[{k}@{s}/{e}]"), (n.to_string(), e));
        }
    }
    out
}

fn inputs() -> impl Strategy<Value = Vec<(String, i64)>> {
    prop::collection::vec((prop::sample::select(vec!["a", "b", "c"]), 0i64..12), 1..40).prop_map(
        |v| {
            let mut t = 0;
            v.into_iter()
                .map(|(k, dt)| {
                    t += dt;
                    (k.to_string(), t)
                })
                .collect()
        },
    )
}

/// Records in any order, all within a grace of 100 of the newest.
fn unordered_inputs() -> impl Strategy<Value = Vec<(String, i64)>> {
    prop::collection::vec(
        (prop::sample::select(vec!["a", "b", "c"]), 0i64..60).prop_map(|(k, t)| (k.to_string(), t)),
        1..40,
    )
}

fn steps(records: &[(String, i64)]) -> Vec<Step> {
    let mut s: Vec<Step> = records.iter().map(|(k, t)| pipe(k, "v", *t)).collect();
    s.push(Step::Advance(1_000_000));
    s
}

/// Final results: each window emitted exactly once.
fn emitted_once(outs: &[Out]) -> BTreeMap<String, (String, i64)> {
    let table = final_table(outs);
    assert_eq!(
        table.len(),
        outs.len(),
        "a window was emitted twice: {outs:?}"
    );
    table
}

/// A sliding count with no grace.
fn sliding_count(emit: EmitStrategy, d: u64) -> Scenario {
    sliding::sliding(sliding::Agg::Count, emit, d, 0)
}

/// A session count with no grace.
fn session_count(emit: EmitStrategy, gap: u64) -> Scenario {
    sessions::sessions(sessions::Agg::Count, emit, gap, 0)
}

fn cases() -> u32 {
    if std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some() {
        512
    } else {
        64
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn sliding_counts_equal_the_reference_model(records in inputs(), d in 1i64..15) {
        let model = sliding_model(&records, d);
        let update = sliding_count(EmitStrategy::OnWindowUpdate, d as u64).steps(steps(&records)).run();
        prop_assert_eq!(final_table(&update.all("out")), model.clone());
        let close = sliding_count(EmitStrategy::OnWindowClose, d as u64).steps(steps(&records)).run();
        prop_assert_eq!(emitted_once(&close.all("out")), model);
    }

    /// The operator reads its window set from the store and folds in place:
    /// out-of-order arrivals (updating older windows, creating left windows
    /// from earlier ones) must still give every window its exact count.
    #[test]
    fn out_of_order_sliding_counts_equal_the_reference_model(
        records in unordered_inputs(), d in 1i64..15
    ) {
        let model = sliding_model(&records, d);
        for emit in [EmitStrategy::OnWindowUpdate, EmitStrategy::OnWindowClose] {
            let outcome = sliding::sliding(sliding::Agg::Count, emit, d as u64, 100)
                .steps(steps(&records))
                .run_until_error();
            prop_assert_eq!(&outcome.error, &None);
            let got = if emit == EmitStrategy::OnWindowUpdate {
                final_table(&outcome.all("out"))
            } else {
                emitted_once(&outcome.all("out"))
            };
            prop_assert_eq!(got, model.clone());
        }
    }

    #[test]
    fn session_counts_equal_the_reference_model(records in inputs(), gap in 1i64..15) {
        let model = session_model(&records, gap);
        let update = session_count(EmitStrategy::OnWindowUpdate, gap as u64).steps(steps(&records)).run();
        prop_assert_eq!(final_table(&update.all("out")), model.clone());
        let close = session_count(EmitStrategy::OnWindowClose, gap as u64).steps(steps(&records)).run();
        prop_assert_eq!(emitted_once(&close.all("out")), model);
    }
}
