//! Kafka Streams' `KStreamWindowAggregateTest` and `TimeWindowedKStreamImplTest`
//! scenarios, as data, through the one scenario helper.

use stoatflow_streams::{EmitStrategy, TimeWindows};

use crate::scenario::{Agg, Scenario, Step, ms, run};

const TWKS_INPUT: &[(&str, &str, i64)] = &[
    ("1", "1", 10),
    ("1", "2", 15),
    ("1", "3", 500),
    ("2", "10", 550),
    ("2", "20", 500),
    ("2", "30", 1000),
];

fn twks(name: &'static str, agg: Agg) -> Scenario {
    Scenario::new(name, TimeWindows::of_size_with_no_grace(ms(500)), agg).pipes(TWKS_INPUT)
}

#[test]
fn time_windowed_kstream_on_window_update() {
    let cases = [
        twks("count/update", Agg::Count).expect(&[
            ("[1@0/500]", "1", 10),
            ("[1@0/500]", "2", 15),
            ("[1@500/1000]", "1", 500),
            ("[2@500/1000]", "1", 550),
            ("[2@500/1000]", "2", 550),
            ("[2@1000/1500]", "1", 1000),
        ]),
        twks("reduce/update", Agg::Reduce).expect(&[
            ("[1@0/500]", "1", 10),
            ("[1@0/500]", "1+2", 15),
            ("[1@500/1000]", "3", 500),
            ("[2@500/1000]", "10", 550),
            ("[2@500/1000]", "10+20", 550),
            ("[2@1000/1500]", "30", 1000),
        ]),
        twks("aggregate/update", Agg::Aggregate).expect(&[
            ("[1@0/500]", "0+1", 10),
            ("[1@0/500]", "0+1+2", 15),
            ("[1@500/1000]", "0+3", 500),
            ("[2@500/1000]", "0+10", 550),
            ("[2@500/1000]", "0+10+20", 550),
            ("[2@1000/1500]", "0+30", 1000),
        ]),
    ];
    cases.iter().for_each(run);
}

#[test]
fn time_windowed_kstream_on_window_close_orders_by_window_then_key() {
    let close = EmitStrategy::on_window_close();
    let cases = [
        twks("count/close", Agg::Count).emit(close).expect(&[
            ("[1@0/500]", "2", 15),
            ("[1@500/1000]", "1", 500),
            ("[2@500/1000]", "2", 550),
        ]),
        twks("reduce/close", Agg::Reduce).emit(close).expect(&[
            ("[1@0/500]", "1+2", 15),
            ("[1@500/1000]", "3", 500),
            ("[2@500/1000]", "10+20", 550),
        ]),
        twks("aggregate/close", Agg::Aggregate)
            .emit(close)
            .expect(&[
                ("[1@0/500]", "0+1+2", 15),
                ("[1@500/1000]", "0+3", 500),
                ("[2@500/1000]", "0+10+20", 550),
            ]),
    ];
    cases.iter().for_each(run);
}

#[test]
fn window_aggregate_hopping_basic() {
    // KStreamWindowAggregateTest.testAggBasic: hopping 10/5 with a grace that drops nothing.
    let windows = TimeWindows::of_size_and_grace(ms(10), ms(86_400_000)).advance_by(ms(5));
    let s = Scenario::new("testAggBasic", windows, Agg::Aggregate)
        .pipes(&[
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
        ])
        .expect(&[
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
        ]);
    run(&s);
}

#[test]
fn window_aggregate_drops_at_the_exact_end_plus_grace_boundary() {
    // KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindowByGrace:
    // tumbling 10 ms, grace 90 ms. Window [100,110) closes at 200: with the
    // watermark at 200 it is closed (inclusive), so 100..105 are dropped; so is 6.
    let windows = TimeWindows::of_size_and_grace(ms(10), ms(90));
    let s = Scenario::new("expired-by-grace", windows, Agg::AggregateEmptyInit)
        .pipes(&[
            ("k", "100", 200),
            ("k", "0", 100),
            ("k", "1", 101),
            ("k", "2", 102),
            ("k", "3", 103),
            ("k", "4", 104),
            ("k", "5", 105),
            ("k", "6", 6),
        ])
        .expect(&[("[k@200/210]", "+100", 200)])
        .drops(7);
    run(&s);
}

#[test]
fn out_of_order_within_grace_is_folded_in_and_one_tick_later_is_dropped() {
    let windows = TimeWindows::of_size_and_grace(ms(10), ms(5));
    let cases = [
        // Watermark 14: window [0,10) closes at 15, so a record at 3 is still in.
        Scenario::new("within-grace", windows, Agg::Count)
            .pipes(&[("k", "a", 1), ("k", "b", 14), ("k", "c", 3)])
            .expect(&[
                ("[k@0/10]", "1", 1),
                ("[k@10/20]", "1", 14),
                ("[k@0/10]", "2", 3),
            ]),
        // Watermark 15 = close: closed, the record is dropped.
        Scenario::new("at-close", windows, Agg::Count)
            .pipes(&[("k", "a", 1), ("k", "b", 15), ("k", "c", 3)])
            .expect(&[("[k@0/10]", "1", 1), ("[k@10/20]", "1", 15)])
            .drops(1),
    ];
    cases.iter().for_each(run);
}

#[test]
fn hopping_record_updates_one_window_and_is_dropped_for_another() {
    // Size 10, advance 5, no grace. Watermark 15 closes [0,10) (close 10) and
    // [5,15) (close 15); a record at 12 belongs to [5,15) (closed) and [10,20) (open).
    let windows = TimeWindows::of_size_with_no_grace(ms(10)).advance_by(ms(5));
    let s = Scenario::new("hopping-partial-drop", windows, Agg::Count)
        .pipes(&[("k", "a", 15), ("k", "b", 12)])
        .expect(&[
            ("[k@10/20]", "1", 15),
            ("[k@15/25]", "1", 15),
            ("[k@10/20]", "2", 15),
        ])
        .drops(1);
    run(&s);
}

#[test]
fn on_window_close_hopping_emits_each_window_once_in_window_then_key_order() {
    let windows = TimeWindows::of_size_with_no_grace(ms(10)).advance_by(ms(5));
    let s = Scenario::new("hopping-close", windows, Agg::Count)
        .emit(EmitStrategy::on_window_close())
        .pipes(&[("b", "x", 1), ("a", "x", 6), ("b", "x", 7)])
        .step(Step::Advance(10))
        .step(Step::Advance(10))
        .step(Step::Advance(25))
        .expect(&[
            ("[a@0/10]", "1", 6),
            ("[b@0/10]", "2", 7),
            ("[a@5/15]", "1", 6),
            ("[b@5/15]", "1", 7),
        ]);
    run(&s);
}

#[test]
fn windows_never_start_below_zero() {
    let windows = TimeWindows::of_size_with_no_grace(ms(10)).advance_by(ms(3));
    let s = Scenario::new("non-negative-starts", windows, Agg::Count)
        .pipes(&[("k", "x", 2)])
        .expect(&[("[k@0/10]", "1", 2)]);
    run(&s);
}

#[test]
fn with_commit_per_pipe_off_output_waits_for_the_barrier() {
    // Outputs are epoch-gated: nothing is readable until commit_barrier().
    let windows = TimeWindows::of_size_with_no_grace(ms(10));
    let uncommitted = Scenario::new("manual-uncommitted", windows, Agg::Count)
        .manual_commit()
        .pipes(&[("k", "a", 1), ("k", "b", 2)]);
    run(&uncommitted.clone().expect(&[]));
    run(&uncommitted
        .step(Step::Commit)
        .expect(&[("[k@0/10]", "1", 1), ("[k@0/10]", "2", 2)]));
}
