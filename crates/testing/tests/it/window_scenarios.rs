//! Kafka Streams' `KStreamWindowAggregateTest` and `TimeWindowedKStreamImplTest`
//! scenarios, as data, through the scenario harness.

use std::time::Duration;

use stoatflow_streams::DropReason::LateWindow;
use stoatflow_streams::{EmitStrategy, Materialized, Produced, Serdes, TimeWindows, Windowed};

use crate::harness::Step::{Advance, Commit};
use crate::harness::{INPUT, Scenario, Step, grouped_text, nothing, pipe};

const OUTPUT: &str = "output";
const UPDATE: EmitStrategy = EmitStrategy::OnWindowUpdate;
const CLOSE: EmitStrategy = EmitStrategy::OnWindowClose;

/// Which aggregation a scenario builds over `input` (String keys and values).
#[derive(Debug, Clone, Copy)]
enum Agg {
    /// `count()`, values rendered as decimal.
    Count,
    /// `reduce(a + "+" + v)`.
    Reduce,
    /// `aggregate(|| "0", |_, v, a| a + "+" + v)` (Kafka Streams' MockAggregator.TOSTRING_ADDER).
    Aggregate,
    /// `aggregate(|| "", |_, v, a| a + "+" + v)`.
    AggregateEmptyInit,
}

/// A windowed aggregation of `input` written to [`OUTPUT`] as
/// `([key@start/end], value)`.
fn windowed(name: &str, windows: TimeWindows, emit: EmitStrategy, agg: Agg) -> Scenario {
    Scenario::build(|builder| {
        let grouped = grouped_text(builder, INPUT)
            .windowed_by(windows)
            .emit_strategy(emit);
        let table = match agg {
            Agg::Count => grouped.count().map_values(|_, c| c.to_string()),
            Agg::Reduce => grouped.reduce(|a, v| format!("{a}+{v}"), Materialized::as_("store")),
            Agg::Aggregate => grouped.aggregate(
                || "0".to_string(),
                |_, v: &String, a: String| format!("{a}+{v}"),
                Materialized::as_("store").with_value_serde(Serdes::string()),
            ),
            Agg::AggregateEmptyInit => grouped.aggregate(
                String::new,
                |_, v: &String, a: String| format!("{a}+{v}"),
                Materialized::as_("store").with_value_serde(Serdes::string()),
            ),
        };
        table
            .to_stream()
            .map(|k: Windowed<String>, v| {
                (
                    format!("[{}@{}/{}]", k.key, k.window.start, k.window.end),
                    v,
                )
            })
            .to(OUTPUT, Produced::with(Serdes::string(), Serdes::string()));
    })
    .named(name)
    .config(stoatflow_streams::StreamsConfig::new("scenario"))
    .input::<String, String>("input")
    .output::<String, String>(OUTPUT)
}

/// Pipes `(key, value, ts)` rows into `input`.
fn pipes(rows: &[(&str, &str, i64)]) -> impl Iterator<Item = Step> {
    rows.iter().map(|&(k, v, t)| pipe(k, v, t))
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

const TWKS_INPUT: &[(&str, &str, i64)] = &[
    ("1", "1", 10),
    ("1", "2", 15),
    ("1", "3", 500),
    ("2", "10", 550),
    ("2", "20", 500),
    ("2", "30", 1000),
];

fn twks(name: &str, agg: Agg, emit: EmitStrategy) -> Scenario {
    windowed(name, TimeWindows::of_size_with_no_grace(ms(500)), emit, agg).steps(pipes(TWKS_INPUT))
}

#[test]
fn time_windowed_kstream_on_window_update() {
    let cases = [
        twks("count/update", Agg::Count, UPDATE).expect(
            OUTPUT,
            [
                ("[1@0/500]", "1", 10),
                ("[1@0/500]", "2", 15),
                ("[1@500/1000]", "1", 500),
                ("[2@500/1000]", "1", 550),
                ("[2@500/1000]", "2", 550),
                ("[2@1000/1500]", "1", 1000),
            ],
        ),
        twks("reduce/update", Agg::Reduce, UPDATE).expect(
            OUTPUT,
            [
                ("[1@0/500]", "1", 10),
                ("[1@0/500]", "1+2", 15),
                ("[1@500/1000]", "3", 500),
                ("[2@500/1000]", "10", 550),
                ("[2@500/1000]", "10+20", 550),
                ("[2@1000/1500]", "30", 1000),
            ],
        ),
        twks("aggregate/update", Agg::Aggregate, UPDATE).expect(
            OUTPUT,
            [
                ("[1@0/500]", "0+1", 10),
                ("[1@0/500]", "0+1+2", 15),
                ("[1@500/1000]", "0+3", 500),
                ("[2@500/1000]", "0+10", 550),
                ("[2@500/1000]", "0+10+20", 550),
                ("[2@1000/1500]", "0+30", 1000),
            ],
        ),
    ];
    for case in cases {
        case.dropped(LateWindow, 0).run();
    }
}

#[test]
fn time_windowed_kstream_on_window_close_orders_by_window_then_key() {
    let cases = [
        twks("count/close", Agg::Count, CLOSE).expect(
            OUTPUT,
            [
                ("[1@0/500]", "2", 15),
                ("[1@500/1000]", "1", 500),
                ("[2@500/1000]", "2", 550),
            ],
        ),
        twks("reduce/close", Agg::Reduce, CLOSE).expect(
            OUTPUT,
            [
                ("[1@0/500]", "1+2", 15),
                ("[1@500/1000]", "3", 500),
                ("[2@500/1000]", "10+20", 550),
            ],
        ),
        twks("aggregate/close", Agg::Aggregate, CLOSE).expect(
            OUTPUT,
            [
                ("[1@0/500]", "0+1+2", 15),
                ("[1@500/1000]", "0+3", 500),
                ("[2@500/1000]", "0+10+20", 550),
            ],
        ),
    ];
    for case in cases {
        case.dropped(LateWindow, 0).run();
    }
}

#[test]
fn window_aggregate_hopping_basic() {
    // KStreamWindowAggregateTest.testAggBasic: hopping 10/5 with a grace that drops nothing.
    let windows = TimeWindows::of_size_and_grace(ms(10), ms(86_400_000)).advance_by(ms(5));
    windowed("testAggBasic", windows, UPDATE, Agg::Aggregate)
        .steps(pipes(&[
            ("A", "1", 0),
            ("B", "2", 1),
            ("C", "3", 2),
            ("D", "4", 3),
            ("A", "1", 4),
            ("A", "1", 5),
            ("B", "2", 6),
            ("D", "4", 7),
            ("B", "2", 8),
            ("C", "3", 9),
            ("A", "1", 10),
            ("B", "2", 11),
            ("D", "4", 12),
            ("B", "2", 13),
            ("C", "3", 14),
            ("B", "1", 3),
            ("B", "2", 2),
            ("B", "3", 9),
        ]))
        .expect(
            OUTPUT,
            [
                ("[A@0/10]", "0+1", 0),
                ("[B@0/10]", "0+2", 1),
                ("[C@0/10]", "0+3", 2),
                ("[D@0/10]", "0+4", 3),
                ("[A@0/10]", "0+1+1", 4),
                ("[A@0/10]", "0+1+1+1", 5),
                ("[A@5/15]", "0+1", 5),
                ("[B@0/10]", "0+2+2", 6),
                ("[B@5/15]", "0+2", 6),
                ("[D@0/10]", "0+4+4", 7),
                ("[D@5/15]", "0+4", 7),
                ("[B@0/10]", "0+2+2+2", 8),
                ("[B@5/15]", "0+2+2", 8),
                ("[C@0/10]", "0+3+3", 9),
                ("[C@5/15]", "0+3", 9),
                ("[A@5/15]", "0+1+1", 10),
                ("[A@10/20]", "0+1", 10),
                ("[B@5/15]", "0+2+2+2", 11),
                ("[B@10/20]", "0+2", 11),
                ("[D@5/15]", "0+4+4", 12),
                ("[D@10/20]", "0+4", 12),
                ("[B@5/15]", "0+2+2+2+2", 13),
                ("[B@10/20]", "0+2+2", 13),
                ("[C@5/15]", "0+3+3", 14),
                ("[C@10/20]", "0+3", 14),
                ("[B@0/10]", "0+2+2+2+1", 8),
                ("[B@0/10]", "0+2+2+2+1+2", 8),
                ("[B@0/10]", "0+2+2+2+1+2+3", 9),
                ("[B@5/15]", "0+2+2+2+2+3", 13),
            ],
        )
        .dropped(LateWindow, 0)
        .run();
}

#[test]
fn window_aggregate_drops_at_the_exact_end_plus_grace_boundary() {
    // KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindowByGrace:
    // tumbling 10 ms, grace 90 ms. Window [100,110) closes at 200: with the
    // watermark at 200 it is closed (inclusive), so 100..105 are dropped; so is 6.
    let windows = TimeWindows::of_size_and_grace(ms(10), ms(90));
    windowed("expired-by-grace", windows, UPDATE, Agg::AggregateEmptyInit)
        .steps(pipes(&[
            ("k", "100", 200),
            ("k", "0", 100),
            ("k", "1", 101),
            ("k", "2", 102),
            ("k", "3", 103),
            ("k", "4", 104),
            ("k", "5", 105),
            ("k", "6", 6),
        ]))
        .expect(OUTPUT, [("[k@200/210]", "+100", 200)])
        .dropped(LateWindow, 7)
        .run();
}

#[test]
fn out_of_order_within_grace_is_folded_in_and_one_tick_later_is_dropped() {
    let windows = TimeWindows::of_size_and_grace(ms(10), ms(5));
    let cases = [
        // Watermark 14: window [0,10) closes at 15, so a record at 3 is still in.
        windowed("within-grace", windows, UPDATE, Agg::Count)
            .steps(pipes(&[("k", "a", 1), ("k", "b", 14), ("k", "c", 3)]))
            .expect(
                OUTPUT,
                [
                    ("[k@0/10]", "1", 1),
                    ("[k@10/20]", "1", 14),
                    ("[k@0/10]", "2", 3),
                ],
            )
            .dropped(LateWindow, 0),
        // Watermark 15 = close: closed, the record is dropped.
        windowed("at-close", windows, UPDATE, Agg::Count)
            .steps(pipes(&[("k", "a", 1), ("k", "b", 15), ("k", "c", 3)]))
            .expect(OUTPUT, [("[k@0/10]", "1", 1), ("[k@10/20]", "1", 15)])
            .dropped(LateWindow, 1),
    ];
    for case in cases {
        case.run();
    }
}

#[test]
fn hopping_record_updates_one_window_and_is_dropped_for_another() {
    // Size 10, advance 5, no grace. Watermark 15 closes [0,10) (close 10) and
    // [5,15) (close 15); a record at 12 belongs to [5,15) (closed) and [10,20) (open).
    let windows = TimeWindows::of_size_with_no_grace(ms(10)).advance_by(ms(5));
    windowed("hopping-partial-drop", windows, UPDATE, Agg::Count)
        .steps(pipes(&[("k", "a", 15), ("k", "b", 12)]))
        .expect(
            OUTPUT,
            [
                ("[k@10/20]", "1", 15),
                ("[k@15/25]", "1", 15),
                ("[k@10/20]", "2", 15),
            ],
        )
        .dropped(LateWindow, 1)
        .run();
}

#[test]
fn on_window_close_hopping_emits_each_window_once_in_window_then_key_order() {
    let windows = TimeWindows::of_size_with_no_grace(ms(10)).advance_by(ms(5));
    windowed("hopping-close", windows, CLOSE, Agg::Count)
        .steps(pipes(&[("b", "x", 1), ("a", "x", 6), ("b", "x", 7)]))
        .steps([Advance(10), Advance(10), Advance(25)])
        .expect(
            OUTPUT,
            [
                ("[a@0/10]", "1", 6),
                ("[b@0/10]", "2", 7),
                ("[a@5/15]", "1", 6),
                ("[b@5/15]", "1", 7),
            ],
        )
        .dropped(LateWindow, 0)
        .run();
}

#[test]
fn windows_never_start_below_zero() {
    let windows = TimeWindows::of_size_with_no_grace(ms(10)).advance_by(ms(3));
    windowed("non-negative-starts", windows, UPDATE, Agg::Count)
        .steps(pipes(&[("k", "x", 2)]))
        .expect(OUTPUT, [("[k@0/10]", "1", 2)])
        .dropped(LateWindow, 0)
        .run();
}

#[test]
fn with_commit_per_pipe_off_output_waits_for_the_barrier() {
    // Outputs are epoch-gated: nothing is readable until commit_barrier().
    let windows = TimeWindows::of_size_with_no_grace(ms(10));
    let uncommitted = windowed("manual-uncommitted", windows, UPDATE, Agg::Count)
        .manual_commit()
        .steps(pipes(&[("k", "a", 1), ("k", "b", 2)]));
    uncommitted
        .clone()
        .step(nothing(OUTPUT))
        .dropped(LateWindow, 0)
        .run();
    uncommitted
        .step(Commit)
        .expect(OUTPUT, [("[k@0/10]", "1", 1), ("[k@0/10]", "2", 2)])
        .dropped(LateWindow, 0)
        .run();
}
