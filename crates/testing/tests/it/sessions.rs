//! Session windows: the outcomes of Kafka Streams'
//! `SessionWindowedKStreamImplTest` and
//! `KStreamSessionWindowAggregateProcessorTest`, and where docs/late.md#sessions
//! makes us differ (a closed session is left out of the merge scan).

use std::time::Duration;

use stoatflow_streams::{DropReason, EmitStrategy, Materialized, Serdes, SessionWindows};

use crate::harness::{
    INPUT, Out, Outcome, Scenario, Step, grouped_ints, grouped_text, out, pipe, pipe_to,
    to_topic_windowed, tombstone,
};

#[derive(Clone, Copy, Debug)]
pub enum Agg {
    Count,
    /// `reduce(a + "+" + b)`.
    Reduce,
    /// `aggregate("0", agg + "+" + v, a + "+" + b)`.
    Aggregate,
}

/// A session aggregation (`gap`, `grace`) of `input`, its updates on `out`.
pub fn sessions(agg: Agg, emit: EmitStrategy, gap: u64, grace: u64) -> Scenario {
    Scenario::build(move |b| {
        let windowed = grouped_text(b, INPUT)
            .windowed_by(SessionWindows::of_inactivity_gap_and_grace(
                Duration::from_millis(gap),
                Duration::from_millis(grace),
            ))
            .emit_strategy(emit);
        match agg {
            Agg::Count => to_topic_windowed(
                windowed.count_with(Materialized::as_("store")).to_stream(),
                "out",
            ),
            Agg::Reduce => to_topic_windowed(
                windowed
                    .reduce(|a, b| format!("{a}+{b}"), Materialized::as_("store"))
                    .to_stream(),
                "out",
            ),
            Agg::Aggregate => to_topic_windowed(
                windowed
                    .aggregate(
                        || "0".to_string(),
                        |_, v: &String, a: String| format!("{a}+{v}"),
                        |_, a: String, b: String| format!("{a}+{b}"),
                        Materialized::as_("store").with_value_serde(Serdes::string()),
                    )
                    .to_stream(),
                "out",
            ),
        }
    })
    .input::<String, String>(INPUT)
    .output::<String, Option<String>>("out")
}

/// Runs `steps` through [`sessions`].
fn run_sessions(agg: Agg, emit: EmitStrategy, gap: u64, grace: u64, steps: &[Step]) -> Outcome {
    sessions(agg, emit, gap, grace)
        .steps(steps.iter().cloned())
        .run_until_error()
}

/// `SessionWindowedKStreamImplTest.processData`.
fn process_data() -> Vec<Step> {
    vec![
        pipe("1", "1", 10),
        pipe("1", "2", 15),
        pipe("1", "3", 600),
        pipe("2", "1", 600),
        pipe("2", "2", 599),
    ]
}

const GAP_MS: i64 = 5 * 60 * 1000;

struct Case {
    name: &'static str,
    agg: Agg,
    emit: EmitStrategy,
    gap: u64,
    grace: u64,
    steps: fn() -> Vec<Step>,
    expected: fn() -> Vec<Out>,
    late_session_drops: u64,
}

fn multiple_sessions() -> Vec<Step> {
    let (g, h) = (GAP_MS, GAP_MS / 2);
    vec![
        pipe("a", "1", 0),
        pipe("b", "1", 0),
        pipe("c", "1", 0),
        pipe("d", "1", 0),
        pipe("d", "2", h),
        pipe("a", "2", g + 1),
        pipe("b", "2", g + 1),
        pipe("a", "3", g + 1 + h),
        pipe("c", "3", g + 1 + h),
    ]
}

fn late_with_grace() -> Vec<Step> {
    vec![
        pipe("dummy", "dummy", 0),
        pipe("OnTime1", "1", 0),
        pipe("dummy", "dummy", 11),
        pipe("OnTime2", "1", 0),
        pipe("dummy", "dummy", 12),
        pipe("Late1", "1", 0),
    ]
}

const CASES: &[Case] = &[
    Case {
        name: "shouldCountSessionWindowed / update",
        agg: Agg::Count,
        emit: EmitStrategy::OnWindowUpdate,
        gap: 500,
        grace: 0,
        steps: process_data,
        expected: || {
            vec![
                out("[1@10/10]", "1", 10),
                tombstone("[1@10/10]", 10),
                out("[1@10/15]", "2", 15),
                out("[1@600/600]", "1", 600),
                out("[2@600/600]", "1", 600),
                tombstone("[2@600/600]", 600),
                out("[2@599/600]", "2", 600),
            ]
        },
        late_session_drops: 0,
    },
    Case {
        name: "shouldCountSessionWindowed / close",
        agg: Agg::Count,
        emit: EmitStrategy::OnWindowClose,
        gap: 500,
        grace: 0,
        steps: process_data,
        expected: || vec![out("[1@10/15]", "2", 15)],
        late_session_drops: 0,
    },
    Case {
        name: "shouldReduceWindowed / update",
        agg: Agg::Reduce,
        emit: EmitStrategy::OnWindowUpdate,
        gap: 500,
        grace: 0,
        steps: process_data,
        expected: || {
            vec![
                out("[1@10/10]", "1", 10),
                tombstone("[1@10/10]", 10),
                out("[1@10/15]", "1+2", 15),
                out("[1@600/600]", "3", 600),
                out("[2@600/600]", "1", 600),
                tombstone("[2@600/600]", 600),
                out("[2@599/600]", "1+2", 600),
            ]
        },
        late_session_drops: 0,
    },
    Case {
        name: "shouldReduceWindowed / close",
        agg: Agg::Reduce,
        emit: EmitStrategy::OnWindowClose,
        gap: 500,
        grace: 0,
        steps: process_data,
        expected: || vec![out("[1@10/15]", "1+2", 15)],
        late_session_drops: 0,
    },
    Case {
        name: "shouldAggregateSessionWindowed / update",
        agg: Agg::Aggregate,
        emit: EmitStrategy::OnWindowUpdate,
        gap: 500,
        grace: 0,
        steps: process_data,
        expected: || {
            vec![
                out("[1@10/10]", "0+1", 10),
                tombstone("[1@10/10]", 10),
                out("[1@10/15]", "0+0+1+2", 15),
                out("[1@600/600]", "0+3", 600),
                out("[2@600/600]", "0+1", 600),
                tombstone("[2@600/600]", 600),
                out("[2@599/600]", "0+0+1+2", 600),
            ]
        },
        late_session_drops: 0,
    },
    Case {
        name: "shouldAggregateSessionWindowed / close",
        agg: Agg::Aggregate,
        emit: EmitStrategy::OnWindowClose,
        gap: 500,
        grace: 0,
        steps: process_data,
        expected: || vec![out("[1@10/15]", "0+0+1+2", 15)],
        late_session_drops: 0,
    },
    Case {
        name: "shouldHandleMultipleSessionsAndMerging / update",
        agg: Agg::Count,
        emit: EmitStrategy::OnWindowUpdate,
        gap: GAP_MS as u64,
        grace: 0,
        steps: multiple_sessions,
        expected: || {
            let (g, h) = (GAP_MS, GAP_MS / 2);
            vec![
                out("[a@0/0]", "1", 0),
                out("[b@0/0]", "1", 0),
                out("[c@0/0]", "1", 0),
                out(format!("[d@0/{h}]"), "2", h),
                out(format!("[b@{0}/{0}]", g + 1), "1", g + 1),
                out(format!("[a@{}/{}]", g + 1, g + 1 + h), "2", g + 1 + h),
                out(format!("[c@{0}/{0}]", g + 1 + h), "1", g + 1 + h),
            ]
        },
        late_session_drops: 0,
    },
    Case {
        name: "shouldHandleMultipleSessionsAndMerging / close",
        agg: Agg::Count,
        emit: EmitStrategy::OnWindowClose,
        gap: GAP_MS as u64,
        grace: 0,
        steps: multiple_sessions,
        expected: || {
            vec![
                out("[a@0/0]", "1", 0),
                out("[b@0/0]", "1", 0),
                out("[c@0/0]", "1", 0),
                out(format!("[d@0/{}]", GAP_MS / 2), "2", GAP_MS / 2),
            ]
        },
        late_session_drops: 0,
    },
    Case {
        name: "shouldLogAndMeterWhenSkippingLateRecordWithNonzeroGrace",
        agg: Agg::Count,
        emit: EmitStrategy::OnWindowUpdate,
        gap: 10,
        grace: 1,
        steps: late_with_grace,
        expected: || {
            vec![
                out("[dummy@0/0]", "1", 0),
                out("[OnTime1@0/0]", "1", 0),
                // 11 is more than the gap (10) after 0: a second session.
                out("[dummy@11/11]", "1", 11),
                out("[OnTime2@0/0]", "1", 0),
                tombstone("[dummy@11/11]", 11),
                out("[dummy@11/12]", "2", 12),
                // Late1 at 0 closes at 0 + 10 + 1 + 1 = 12 <= floor 12: dropped.
            ]
        },
        late_session_drops: 1,
    },
];

/// A table from its updates: the last value per key, tombstones deleting.
pub fn final_table(outs: &[Out]) -> std::collections::BTreeMap<String, (String, i64)> {
    let mut t = std::collections::BTreeMap::new();
    for o in outs {
        match &o.value {
            Some(v) => {
                t.insert(o.key.clone(), (v.clone(), o.ts));
            }
            None => {
                t.remove(&o.key);
            }
        }
    }
    t
}

#[test]
fn kafka_streams_session_window_outcomes() {
    for case in CASES {
        let outcome = run_sessions(case.agg, case.emit, case.gap, case.grace, &(case.steps)());
        assert_eq!(outcome.error, None, "{}", case.name);
        if case.name.starts_with("shouldHandleMultipleSessions") {
            // The processor test runs over a cached store, which collapses
            // consecutive updates of a key: compare the resulting tables.
            assert_eq!(
                final_table(&outcome.all("out")),
                final_table(&(case.expected)()),
                "{}",
                case.name
            );
        } else {
            assert_eq!(outcome.all("out"), (case.expected)(), "{}", case.name);
        }
        assert_eq!(
            outcome.metrics.dropped(DropReason::LateSession),
            case.late_session_drops,
            "{}",
            case.name
        );
    }
}

/// docs/late.md#sessions: a closed session is not a merge candidate, so an
/// on-time record within its gap starts a new session. Kafka Streams would merge
/// `[k@0/0]` (already final) into `[k@0/5]` and retract it.
#[test]
fn closed_session_is_left_out_of_the_merge_scan() {
    let steps = [pipe("k", "a", 0), pipe("other", "x", 6), pipe("k", "b", 5)];
    for emit in [EmitStrategy::OnWindowUpdate, EmitStrategy::OnWindowClose] {
        // gap 5: [k@0/0] closes at 0 + 5 + 1 = 6, the floor when k@5 arrives.
        let outcome = run_sessions(Agg::Count, emit, 5, 0, &steps);
        let mine: Vec<Out> = outcome
            .all("out")
            .into_iter()
            .filter(|o| o.key.starts_with("[k@"))
            .collect();
        let expected = match emit {
            // Updates flow at once: a new session, no tombstone for [k@0/0].
            EmitStrategy::OnWindowUpdate => vec![out("[k@0/0]", "1", 0), out("[k@5/5]", "1", 5)],
            // [k@0/0] was final at 6; [k@5/5] closes at 11.
            _ => vec![out("[k@0/0]", "1", 0)],
        };
        assert_eq!(mine, expected, "[k@0/0] is never retracted ({emit:?})");
        let after = run_sessions(
            Agg::Count,
            emit,
            5,
            0,
            &[steps.to_vec(), vec![pipe("other", "y", 100)]].concat(),
        );
        let mine: Vec<Out> = after
            .all("out")
            .into_iter()
            .filter(|o| o.key.starts_with("[k@"))
            .collect();
        assert_eq!(
            mine,
            vec![out("[k@0/0]", "1", 0), out("[k@5/5]", "1", 5)],
            "{emit:?}"
        );
        assert_eq!(after.metrics.dropped(DropReason::LateSession), 0);
    }
}

/// docs/late.md#sessions: sessions are judged after the merge; a record late on its own
/// that merges into an open session is rescued (and a closed neighbour is
/// still left out).
#[test]
fn late_record_merging_into_an_open_session_is_rescued() {
    // gap 5: [k@1/1] closes at 7, [k@10/10] at 16. At floor 12 a record at 6
    // alone would close at 12 (late), but merged with [k@10/10] at 16.
    let steps = [
        pipe("k", "a", 1),
        pipe("k", "b", 10),
        pipe("other", "x", 12),
        pipe("k", "c", 6),
    ];
    let outcome = run_sessions(Agg::Count, EmitStrategy::OnWindowUpdate, 5, 0, &steps);
    assert_eq!(
        outcome.at(3, "out"),
        vec![tombstone("[k@10/10]", 10), out("[k@6/10]", "2", 10)]
    );
    assert_eq!(outcome.metrics.dropped(DropReason::LateSession), 0);
    // Alone it is dropped, counted as late_session.
    let alone = run_sessions(
        Agg::Count,
        EmitStrategy::OnWindowUpdate,
        5,
        0,
        &[pipe("other", "x", 12), pipe("k", "c", 6)],
    );
    assert!(alone.at(1, "out").is_empty());
    assert_eq!(alone.metrics.dropped(DropReason::LateSession), 1);
}

#[test]
fn session_updates_and_tombstones_carry_the_session_end() {
    let outcome = run_sessions(
        Agg::Count,
        EmitStrategy::OnWindowUpdate,
        10,
        0,
        &[pipe("k", "a", 20), pipe("k", "b", 12)],
    );
    assert_eq!(
        outcome.all("out"),
        vec![
            out("[k@20/20]", "1", 20),
            tombstone("[k@20/20]", 20),
            out("[k@12/20]", "2", 20),
        ]
    );
}

/// The emission pass lists the sessions it closes by close, then key, then
/// start, on both engines: with `i32` keys the persistent store's byte order
/// put `1` and `2` before `-3` and `-1` (big-endian two's complement).
#[test]
fn closed_sessions_leave_in_key_order_with_negative_keys() {
    Scenario::build(|b| {
        to_topic_windowed(
            grouped_ints(b, INPUT)
                .windowed_by(SessionWindows::of_inactivity_gap_and_grace(
                    Duration::from_millis(10),
                    Duration::ZERO,
                ))
                .emit_strategy(EmitStrategy::on_window_close())
                .count_with(Materialized::as_("store"))
                .to_stream(),
            "out",
        )
    })
    .named("negative session keys")
    .input::<i32, String>(INPUT)
    .output::<String, Option<String>>("out")
    .steps([
        pipe_to(INPUT, 1, "a", 5),
        pipe_to(INPUT, -1, "b", 5),
        pipe_to(INPUT, 2, "c", 3),
        pipe_to(INPUT, 2, "c", 5),
        pipe_to(INPUT, -3, "d", 5),
        Step::Advance(15),
        crate::harness::nothing("out"),
        Step::Advance(16),
        crate::harness::expect(
            "out",
            [
                out("[-3@5/5]", "1", 5),
                out("[-1@5/5]", "1", 5),
                out("[1@5/5]", "1", 5),
                out("[2@3/5]", "2", 5),
            ],
        ),
    ])
    .run();
}
