//! Sliding windows: the outcomes of Kafka Streams'
//! `KStreamSlidingWindowAggregateTest` (aggregate and reduce, small and early
//! inputs, both emit strategies), and the late rule at `start + D + 1 + grace`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use stoatflow_streams::{DropReason, EmitStrategy, Materialized, Serdes, SlidingWindows};

use crate::harness::{
    INPUT, Out, Scenario, Step, expect, grouped_ints, grouped_text, nothing, out, pipe, pipe_to,
    to_topic_windowed,
};

#[derive(Clone, Copy, Debug)]
pub enum Agg {
    /// `aggregate("0", agg + "+" + v)`.
    Aggregate,
    /// `reduce(a + "+" + b)`.
    Reduce,
    /// `count()`.
    Count,
}

/// A sliding aggregation (`D`, `grace`) of `input`, its updates on `out`.
pub fn sliding(agg: Agg, emit: EmitStrategy, d: u64, grace: u64) -> Scenario {
    Scenario::build(move |b| {
        let windowed = grouped_text(b, INPUT)
            .windowed_by(SlidingWindows::of_time_difference_and_grace(
                Duration::from_millis(d),
                Duration::from_millis(grace),
            ))
            .emit_strategy(emit);
        match agg {
            Agg::Aggregate => to_topic_windowed(
                windowed
                    .aggregate(
                        || "0".to_string(),
                        |_, v: &String, a: String| format!("{a}+{v}"),
                        Materialized::as_("store").with_value_serde(Serdes::string()),
                    )
                    .to_stream(),
                "out",
            ),
            Agg::Reduce => to_topic_windowed(
                windowed
                    .reduce(|a, b| format!("{a}+{b}"), Materialized::as_("store"))
                    .to_stream(),
                "out",
            ),
            Agg::Count => to_topic_windowed(
                windowed.count_with(Materialized::as_("store")).to_stream(),
                "out",
            ),
        }
    })
    .input::<String, String>(INPUT)
    .output::<String, Option<String>>("out")
}

/// Kafka Streams' `gatherOutput`: window start → set of (value, timestamp).
fn gather(outs: &[Out]) -> BTreeMap<i64, BTreeSet<(String, i64)>> {
    let mut m: BTreeMap<i64, BTreeSet<(String, i64)>> = BTreeMap::new();
    for o in outs {
        let start: i64 = o
            .key
            .split('@')
            .nth(1)
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        m.entry(start)
            .or_default()
            .insert((o.value.clone().unwrap(), o.ts));
    }
    m
}

fn expected(rows: &[(i64, &[(&str, i64)])]) -> BTreeMap<i64, BTreeSet<(String, i64)>> {
    rows.iter()
        .map(|(start, vs)| {
            (
                *start,
                vs.iter().map(|(v, t)| (v.to_string(), *t)).collect(),
            )
        })
        .collect()
}

struct Case {
    name: &'static str,
    agg: Agg,
    emit: EmitStrategy,
    d: u64,
    grace: u64,
    input: &'static [(&'static str, i64)],
    expected: &'static [(i64, &'static [(&'static str, i64)])],
}

const SMALL: &[(&str, i64)] = &[
    ("1", 10),
    ("2", 10),
    ("3", 14),
    ("4", 15),
    ("5", 20),
    ("6", 22),
    ("7", 30),
];
const REDUCE_SMALL: &[(&str, i64)] = &[
    ("1", 10),
    ("2", 14),
    ("3", 15),
    ("4", 22),
    ("5", 26),
    ("6", 30),
];
const EARLY: &[(&str, i64)] = &[
    ("1", 0),
    ("2", 5),
    ("3", 6),
    ("4", 3),
    ("5", 13),
    ("6", 10),
    ("7", 70),
];

const CASES: &[Case] = &[
    Case {
        name: "testAggregateSmallInput / update",
        agg: Agg::Aggregate,
        emit: EmitStrategy::OnWindowUpdate,
        d: 10,
        grace: 5,
        input: SMALL,
        expected: &[
            (0, &[("0+1", 10), ("0+1+2", 10)]),
            (4, &[("0+1+2+3", 14)]),
            (5, &[("0+1+2+3+4", 15)]),
            (10, &[("0+1+2+3+4+5", 20)]),
            (11, &[("0+3", 14), ("0+3+4", 15), ("0+3+4+5", 20)]),
            (12, &[("0+3+4+5+6", 22)]),
            (15, &[("0+4", 15), ("0+4+5", 20), ("0+4+5+6", 22)]),
            (16, &[("0+5", 20), ("0+5+6", 22)]),
            (20, &[("0+5+6+7", 30)]),
            (21, &[("0+6", 22), ("0+6+7", 30)]),
            (23, &[("0+7", 30)]),
        ],
    },
    Case {
        name: "testAggregateSmallInput / close",
        agg: Agg::Aggregate,
        emit: EmitStrategy::OnWindowClose,
        d: 10,
        grace: 5,
        input: SMALL,
        expected: &[
            (0, &[("0+1+2", 10)]),
            (4, &[("0+1+2+3", 14)]),
            (5, &[("0+1+2+3+4", 15)]),
            (10, &[("0+1+2+3+4+5", 20)]),
            (11, &[("0+3+4+5", 20)]),
            (12, &[("0+3+4+5+6", 22)]),
        ],
    },
    Case {
        name: "testReduceSmallInput / update",
        agg: Agg::Reduce,
        emit: EmitStrategy::OnWindowUpdate,
        d: 10,
        grace: 5,
        input: REDUCE_SMALL,
        expected: &[
            (0, &[("1", 10)]),
            (4, &[("1+2", 14)]),
            (5, &[("1+2+3", 15)]),
            (11, &[("2", 14), ("2+3", 15)]),
            (12, &[("2+3+4", 22)]),
            (15, &[("3", 15), ("3+4", 22)]),
            (16, &[("4", 22), ("4+5", 26)]),
            (20, &[("4+5+6", 30)]),
            (23, &[("5", 26), ("5+6", 30)]),
            (27, &[("6", 30)]),
        ],
    },
    Case {
        name: "testReduceSmallInput / close",
        agg: Agg::Reduce,
        emit: EmitStrategy::OnWindowClose,
        d: 10,
        grace: 5,
        input: REDUCE_SMALL,
        expected: &[
            (0, &[("1", 10)]),
            (4, &[("1+2", 14)]),
            (5, &[("1+2+3", 15)]),
            (11, &[("2+3", 15)]),
            (12, &[("2+3+4", 22)]),
        ],
    },
    Case {
        name: "testEarlyRecordsSmallInput / update",
        agg: Agg::Aggregate,
        emit: EmitStrategy::OnWindowUpdate,
        d: 50,
        grace: 0,
        input: EARLY,
        expected: &[
            (
                0,
                &[
                    ("0+1", 0),
                    ("0+1+2", 5),
                    ("0+1+2+3", 6),
                    ("0+1+2+3+4", 6),
                    ("0+1+2+3+4+5", 13),
                    ("0+1+2+3+4+5+6", 13),
                ],
            ),
            (
                1,
                &[
                    ("0+2", 5),
                    ("0+2+3", 6),
                    ("0+2+3+4", 6),
                    ("0+2+3+4+5", 13),
                    ("0+2+3+4+5+6", 13),
                ],
            ),
            (4, &[("0+2+3", 6), ("0+2+3+5", 13), ("0+2+3+5+6", 13)]),
            (6, &[("0+3", 6), ("0+3+5", 13), ("0+3+5+6", 13)]),
            (7, &[("0+5", 13), ("0+5+6", 13)]),
            (11, &[("0+5", 13)]),
            (20, &[("0+7", 70)]),
        ],
    },
    Case {
        name: "testEarlyRecordsSmallInput / close",
        agg: Agg::Aggregate,
        emit: EmitStrategy::OnWindowClose,
        d: 50,
        grace: 0,
        input: EARLY,
        expected: &[
            (0, &[("0+1+2+3+4+5+6", 13)]),
            (1, &[("0+2+3+4+5+6", 13)]),
            (4, &[("0+2+3+5+6", 13)]),
            (6, &[("0+3+5+6", 13)]),
            (7, &[("0+5+6", 13)]),
            (11, &[("0+5", 13)]),
        ],
    },
];

#[test]
fn kafka_streams_sliding_window_aggregate_outcomes() {
    for case in CASES {
        let steps: Vec<Step> = case.input.iter().map(|(v, t)| pipe("A", v, *t)).collect();
        let outcome = sliding(case.agg, case.emit, case.d, case.grace)
            .named(case.name)
            .steps(steps)
            .run_until_error();
        assert_eq!(outcome.error, None, "{}", case.name);
        assert_eq!(
            gather(&outcome.all("out")),
            expected(case.expected),
            "{}",
            case.name
        );
    }
}

#[test]
fn a_sliding_record_is_late_when_its_window_closes_at_the_floor() {
    // D = 10, grace = 5: the window [t, t + 10] of a record at t closes at t + 16.
    let steps = [pipe("A", "1", 100), pipe("A", "2", 84), pipe("A", "3", 95)];
    let outcome = sliding(Agg::Count, EmitStrategy::OnWindowUpdate, 10, 5)
        .steps(steps)
        .run();
    // 84 + 16 = 100 <= floor 100: dropped; 95 + 16 = 111: admitted (its left
    // window [85, 95] closes at 101).
    assert_eq!(outcome.metrics.dropped(DropReason::LateWindow), 1);
    assert!(outcome.at(1, "out").is_empty());
    assert!(!outcome.at(2, "out").is_empty());
}

/// The emission pass lists the windows it closes by close, then key, on both
/// engines: with `i32` keys the persistent store's byte order put `1` and `2`
/// before `-3` and `-1` (big-endian two's complement).
#[test]
fn closed_sliding_windows_leave_in_key_order_with_negative_keys() {
    Scenario::build(|b| {
        to_topic_windowed(
            grouped_ints(b, INPUT)
                .windowed_by(SlidingWindows::of_time_difference_and_grace(
                    Duration::from_millis(10),
                    Duration::ZERO,
                ))
                .emit_strategy(EmitStrategy::on_window_close())
                .count_with(Materialized::as_("store"))
                .to_stream(),
            "out",
        )
    })
    .named("negative sliding keys")
    .input::<i32, String>(INPUT)
    .output::<String, Option<String>>("out")
    .steps([
        pipe_to(INPUT, 1, "a", 20),
        pipe_to(INPUT, -1, "b", 20),
        pipe_to(INPUT, 2, "c", 20),
        pipe_to(INPUT, -3, "d", 20),
        nothing("out"),
        // [10, 20] closes at 10 + 10 + 1.
        Step::Advance(21),
        expect(
            "out",
            [
                out("[-3@10/20]", "1", 20),
                out("[-1@10/20]", "1", 20),
                out("[1@10/20]", "1", 20),
                out("[2@10/20]", "1", 20),
            ],
        ),
    ])
    .run();
}
