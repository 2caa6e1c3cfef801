//! Stream-stream joins, reproducing the outcomes of Kafka Streams'
//! `KStreamKStreamJoinTest`, `KStreamKStreamLeftJoinTest` and
//! `KStreamKStreamOuterJoinTest` scenarios (inputs and expected outputs
//! transcribed; the joiner is `TOSTRING_JOINER`: `left + "+" + right`, a
//! missing side `null`). Where stoatflow differs by design
//! (docs/emission.md#stream-stream-joins) the test is named after the
//! difference.

use std::time::Duration;

use stoatflow_streams::{
    Consumed, JoinWindows, Produced, Serdes, StreamJoined, StreamsBuilder, Topology,
};

use crate::harness::Step::{Advance, Restart};
use crate::harness::{LEFT, OUT, RIGHT, Step, expect_out, left, none, right, sides};

#[derive(Clone, Copy)]
enum Kind {
    Inner,
    Left,
    Outer,
}

fn topology(kind: Kind, windows: JoinWindows) -> Topology {
    let mut b = StreamsBuilder::new();
    let l = b.stream(LEFT, Consumed::with(Serdes::i32(), Serdes::string()));
    let r = b.stream(RIGHT, Consumed::with(Serdes::i32(), Serdes::string()));
    let sj = || StreamJoined::with(Serdes::i32(), Serdes::string(), Serdes::string());
    let s = |v: Option<&String>| v.map_or("null".to_owned(), Clone::clone);
    let joined = match kind {
        Kind::Inner => l.join(
            &r,
            |a: &String, b: &String| format!("{a}+{b}"),
            windows,
            sj(),
        ),
        Kind::Left => l.left_join(
            &r,
            move |a: &String, b: Option<&String>| format!("{a}+{}", s(b)),
            windows,
            sj(),
        ),
        Kind::Outer => l.outer_join(
            &r,
            move |a: Option<&String>, b: Option<&String>| format!("{}+{}", s(a), s(b)),
            windows,
            sj(),
        ),
    };
    joined.to(OUT, Produced::with(Serdes::i32(), Serdes::string()));
    b.build().expect("topology")
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `KStreamKStreamJoinTest.testJoin`: exact.
#[test]
fn inner_join_matches_kafka_streams_test_join() {
    let w = JoinWindows::of_time_difference_with_no_grace(ms(100));
    let keys = [0, 1, 2, 3];
    let name = |p: &str, k: i32| format!("{p}{k}");
    let mut steps: Vec<Step> = Vec::new();
    steps.extend(keys[..2].iter().map(|&k| left(k, &name("A", k), 0)));
    steps.push(none());
    steps.extend(keys[..2].iter().map(|&k| right(k, &name("a", k), 0)));
    steps.push(expect_out(&[(0, "A0+a0", 0), (1, "A1+a1", 0)]));
    steps.extend(keys.iter().map(|&k| left(k, &name("B", k), 0)));
    steps.push(expect_out(&[(0, "B0+a0", 0), (1, "B1+a1", 0)]));
    steps.extend(keys.iter().map(|&k| right(k, &name("b", k), 0)));
    steps.push(expect_out(&[
        (0, "A0+b0", 0),
        (0, "B0+b0", 0),
        (1, "A1+b1", 0),
        (1, "B1+b1", 0),
        (2, "B2+b2", 0),
        (3, "B3+b3", 0),
    ]));
    steps.extend(keys.iter().map(|&k| left(k, &name("C", k), 0)));
    steps.push(expect_out(&[
        (0, "C0+a0", 0),
        (0, "C0+b0", 0),
        (1, "C1+a1", 0),
        (1, "C1+b1", 0),
        (2, "C2+b2", 0),
        (3, "C3+b3", 0),
    ]));
    steps.extend(keys[..2].iter().map(|&k| right(k, &name("c", k), 0)));
    steps.push(expect_out(&[
        (0, "A0+c0", 0),
        (0, "B0+c0", 0),
        (0, "C0+c0", 0),
        (1, "A1+c1", 0),
        (1, "B1+c1", 0),
        (1, "C1+c1", 0),
    ]));
    sides(topology(Kind::Inner, w)).steps(steps).run();
}

/// Both window edges are inclusive and the output time is the larger of
/// the pair (`KStreamKStreamJoinTest.testWindowing` boundaries: 100 ms).
#[test]
fn inner_join_edges_are_inclusive_and_output_time_is_the_max() {
    let w = JoinWindows::of_time_difference_and_grace(ms(100), ms(1_000_000));
    sides(topology(Kind::Inner, w))
        .steps([
            left(0, "A0", 1000),
            right(0, "a0", 899),
            right(0, "b0", 900),
            right(0, "c0", 1100),
            right(0, "d0", 1101),
            expect_out(&[(0, "A0+b0", 1000), (0, "A0+c0", 1100)]),
        ])
        .run();
}

/// Asymmetric windows (`testAsymmetricWindowingBefore/After`): `before(0)`
/// joins only right records at or after the left one, up to `after`.
#[test]
fn inner_join_asymmetric_windows() {
    let w = JoinWindows::of_time_difference_with_no_grace(ms(0)).after(ms(100));
    sides(topology(Kind::Inner, w))
        .steps([
            left(0, "A0", 1000),
            right(0, "a0", 999),
            right(0, "b0", 1000),
            right(0, "c0", 1100),
            right(0, "d0", 1101),
            expect_out(&[(0, "A0+b0", 1000), (0, "A0+c0", 1100)]),
        ])
        .run();
}

/// `KStreamKStreamLeftJoinTest.testLeftJoinDuplicates`: exact outputs (the
/// two unmatched duplicates each give a null-join; joined duplicates both join).
#[test]
fn left_join_duplicates_match_kafka_streams() {
    let w = JoinWindows::of_time_difference_and_grace(ms(100), ms(10));
    sides(topology(Kind::Left, w))
        .steps([
            left(0, "A0", 0),
            left(0, "A0-0", 0),
            right(1, "a0", 111),
            right(2, "dummy", 500),
            expect_out(&[(0, "A0+null", 0), (0, "A0-0+null", 0)]),
            left(2, "A2", 1000),
            left(2, "A2-0", 1000),
            right(2, "a2", 1001),
            expect_out(&[(2, "A2+a2", 1001), (2, "A2-0+a2", 1001)]),
            right(3, "a3", 315),
            none(),
        ])
        .run();
}

/// `KStreamKStreamLeftJoinTest.runLeftJoin`: exact.
#[test]
fn left_join_matches_kafka_streams_run_left_join() {
    let w = JoinWindows::of_time_difference_and_grace(ms(100), ms(3_600_000 * 24));
    sides(topology(Kind::Left, w))
        .steps([
            left(0, "A0", 0),
            left(1, "A1", 0),
            none(),
            right(0, "a0", 0),
            right(1, "a1", 0),
            expect_out(&[(0, "A0+a0", 0), (1, "A1+a1", 0)]),
            left(0, "B0", 0),
            left(1, "B1", 0),
            left(2, "B2", 0),
            expect_out(&[(0, "B0+a0", 0), (1, "B1+a1", 0)]),
            right(0, "b0", 0),
            right(1, "b1", 0),
            right(2, "b2", 0),
            right(3, "b3", 0),
            expect_out(&[
                (0, "A0+b0", 0),
                (0, "B0+b0", 0),
                (1, "A1+b1", 0),
                (1, "B1+b1", 0),
                (2, "B2+b2", 0),
            ]),
            left(0, "C0", 0),
            left(1, "C1", 0),
            left(2, "C2", 0),
            left(3, "C3", 0),
            expect_out(&[
                (0, "C0+a0", 0),
                (0, "C0+b0", 0),
                (1, "C1+a1", 0),
                (1, "C1+b1", 0),
                (2, "C2+b2", 0),
                (3, "C3+b3", 0),
            ]),
            left(0, "dummy", 1000),
            none(),
        ])
        .run();
}

/// Divergence (docs/emission.md#stream-stream-joins): the null side is emitted by the emission pass
/// of the pipe whose watermark reaches its close `t + after + 1 + grace`,
/// after that record's own results — whichever side the record is on and
/// even if it is not at stream time (Kafka Streams waits for a record at
/// stream time to arrive).
#[test]
fn left_null_side_flushed_by_the_emission_pass_after_the_piped_records_results() {
    let w = JoinWindows::of_time_difference_and_grace(ms(100), ms(10));
    sides(topology(Kind::Left, w))
        .steps([
            left(0, "A0", 0),
            left(1, "A1", 105),
            none(),
            right(1, "a1", 150),
            // a1 joined A1 first, then the pass at watermark 150 >= 111 flushed A0.
            expect_out(&[(1, "A1+a1", 150), (0, "A0+null", 0)]),
            left(2, "A2", 300),
            Advance(410),
            none(),
            Advance(411),
            expect_out(&[(2, "A2+null", 300)]),
        ])
        .run();
}

/// Divergence (docs/emission.md#stream-stream-joins): several null sides in one pass leave in order of
/// close, then key (Kafka Streams: store order).
#[test]
fn null_sides_in_one_pass_are_ordered_by_close_then_key() {
    let w = JoinWindows::of_time_difference_and_grace(ms(10), ms(0)).after(ms(20));
    // Left closes at t + 21, right at t + 11.
    sides(topology(Kind::Outer, w))
        .steps([
            left(3, "A3", 0),
            left(1, "A1", 0),
            right(2, "b2", 10),
            right(0, "b0", 5),
            Advance(100),
            expect_out(&[
                (0, "null+b0", 5),
                (1, "A1+null", 0),
                (2, "null+b2", 10),
                (3, "A3+null", 0),
            ]),
        ])
        .run();
}

/// docs/emission.md#stream-stream-joins: N identical unmatched arrivals emit N null-joins.
#[test]
fn identical_unmatched_arrivals_emit_one_null_join_each() {
    let w = JoinWindows::of_time_difference_with_no_grace(ms(10));
    sides(topology(Kind::Outer, w))
        .steps([
            left(0, "A", 5),
            left(0, "A", 5),
            right(1, "b", 5),
            right(1, "b", 5),
            right(1, "b", 5),
            Advance(16),
            expect_out(&[
                (0, "A+null", 5),
                (0, "A+null", 5),
                (1, "null+b", 5),
                (1, "null+b", 5),
                (1, "null+b", 5),
            ]),
        ])
        .run();
}

/// `KStreamKStreamOuterJoinTest.testOuterJoinDuplicates`-style: a later
/// match removes the unmatched entries of the other side, both directions.
#[test]
fn outer_join_match_cancels_pending_null_sides() {
    let w = JoinWindows::of_time_difference_and_grace(ms(100), ms(10));
    sides(topology(Kind::Outer, w))
        .steps([
            left(0, "A0", 0),
            right(1, "a1", 0),
            right(0, "a0", 50),
            left(1, "A1", 90),
            expect_out(&[(0, "A0+a0", 50), (1, "A1+a1", 90)]),
            Advance(10_000),
            none(),
        ])
        .run();
}

/// Join inputs are never dropped as late (docs/late.md#joins): a record whose null
/// side already closed still joins what the stores hold, and its own null
/// side is emitted at once. The stores' retention (window + grace: 200 ms
/// here) bounds what can still match: at frontier 1500 an arrival at 1350 is
/// held, one at 1000 has expired (1000 + 200 < 1500) and matches nothing,
/// however the store's segments are sized (Kafka Streams' 60 s segments
/// would still hold it).
#[test]
fn late_join_inputs_are_not_dropped_and_match_within_retention() {
    let w = JoinWindows::of_time_difference_with_no_grace(ms(100));
    sides(topology(Kind::Left, w))
        .steps([
            right(0, "a0", 1350),
            right(2, "c0", 1000),
            left(9, "x", 1500),
            left(0, "A0", 1300),
            left(2, "C0", 950),
            left(1, "A1", 100),
            expect_out(&[(0, "A0+a0", 1350), (2, "C0+null", 950), (1, "A1+null", 100)]),
        ])
        .run();
}

/// The null sides are final across a restart: pending ones are emitted
/// once after it, emitted ones never again.
#[test]
fn null_sides_survive_a_restart_exactly_once() {
    let w = JoinWindows::of_time_difference_with_no_grace(ms(100));
    sides(topology(Kind::Left, w))
        .steps([
            left(0, "A0", 0),
            left(1, "A1", 200),
            expect_out(&[(0, "A0+null", 0)]),
            Restart,
            Advance(301),
            expect_out(&[(1, "A1+null", 200)]),
            Restart,
            Advance(1000),
            none(),
        ])
        .run();
}

// ---------------------------------------------------------------------------
// `KStreamKStreamOuterJoinTest` (apache/kafka). The right values there are
// longs; here they are the same digits as strings, so `TOSTRING_JOINER`
// output reads the same ("A1+11"). Headers are not compared by the harness.
// ---------------------------------------------------------------------------

/// `testOuterJoinWithDefaultSuppliers` (`runOuterJoin`): exact; everything
/// joins, so the dummy record at 400 flushes nothing.
#[test]
fn outer_join_matches_kafka_streams_run_outer_join() {
    let w = JoinWindows::of_time_difference_with_no_grace(ms(100));
    sides(topology(Kind::Outer, w))
        .steps([
            left(0, "A0", 0),
            left(1, "A1", 0),
            none(),
            right(0, "10", 0),
            right(1, "11", 0),
            expect_out(&[(0, "A0+10", 0), (1, "A1+11", 0)]),
            left(0, "B0", 0),
            left(1, "B1", 0),
            left(2, "B2", 0),
            expect_out(&[(0, "B0+10", 0), (1, "B1+11", 0)]),
            right(0, "20", 0),
            right(1, "21", 0),
            right(2, "22", 0),
            right(3, "23", 0),
            expect_out(&[
                (0, "A0+20", 0),
                (0, "B0+20", 0),
                (1, "A1+21", 0),
                (1, "B1+21", 0),
                (2, "B2+22", 0),
            ]),
            left(0, "C0", 0),
            left(1, "C1", 0),
            left(2, "C2", 0),
            left(3, "C3", 0),
            expect_out(&[
                (0, "C0+10", 0),
                (0, "C0+20", 0),
                (1, "C1+11", 0),
                (1, "C1+21", 0),
                (2, "C2+22", 0),
                (3, "C3+23", 0),
            ]),
            left(0, "dummy", 400),
            none(),
        ])
        .run();
}

/// `testLeftExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor`: exact.
#[test]
fn outer_join_left_null_sides_flushed_by_a_left_record() {
    let w = JoinWindows::of_time_difference_with_no_grace(ms(100));
    sides(topology(Kind::Outer, w))
        .steps([
            left(0, "A0", 1),
            left(1, "A1", 2),
            left(0, "A0-0", 3),
            none(),
            right(1, "11", 3),
            expect_out(&[(1, "A1+11", 3)]),
            left(2, "dummy", 401),
            expect_out(&[(0, "A0+null", 1), (0, "A0-0+null", 3)]),
            right(2, "100", 401),
            expect_out(&[(2, "dummy+100", 401)]),
        ])
        .run();
}

/// `testLeftExpiredNonJoinedRecordsAreEmittedByTheRightProcessor`: exact.
#[test]
fn outer_join_left_null_sides_flushed_by_a_right_record() {
    let w = JoinWindows::of_time_difference_and_grace(ms(100), ms(0));
    sides(topology(Kind::Outer, w))
        .steps([
            left(0, "A0", 1),
            left(1, "A1", 2),
            left(0, "A0-0", 3),
            none(),
            right(1, "11", 3),
            expect_out(&[(1, "A1+11", 3)]),
            right(2, "100", 401),
            expect_out(&[(0, "A0+null", 1), (0, "A0-0+null", 3)]),
            left(2, "dummy", 402),
            expect_out(&[(2, "dummy+100", 402)]),
        ])
        .run();
}

/// `testRightExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor`: exact.
#[test]
fn outer_join_right_null_sides_flushed_by_a_left_record() {
    let w = JoinWindows::of_time_difference_with_no_grace(ms(100));
    sides(topology(Kind::Outer, w))
        .steps([
            right(0, "10", 1),
            right(1, "11", 2),
            right(0, "12", 3),
            none(),
            left(1, "A1", 3),
            expect_out(&[(1, "A1+11", 3)]),
            left(2, "dummy", 401),
            expect_out(&[(0, "null+10", 1), (0, "null+12", 3)]),
            right(2, "100", 402),
            expect_out(&[(2, "dummy+100", 402)]),
        ])
        .run();
}

/// `testRightExpiredNonJoinedRecordsAreEmittedByTheRightProcessor`: exact.
#[test]
fn outer_join_right_null_sides_flushed_by_a_right_record() {
    let w = JoinWindows::of_time_difference_and_grace(ms(100), ms(0));
    sides(topology(Kind::Outer, w))
        .steps([
            right(0, "10", 1),
            right(1, "11", 2),
            right(0, "12", 3),
            none(),
            left(1, "A1", 3),
            expect_out(&[(1, "A1+11", 3)]),
            right(2, "100", 401),
            expect_out(&[(0, "null+10", 1), (0, "null+12", 3)]),
            left(2, "dummy", 402),
            expect_out(&[(2, "dummy+100", 402)]),
        ])
        .run();
}

/// `testShouldNotEmitLeftJoinResultForAsymmetricBeforeWindow`: exact.
/// `before(0)`: a left null side closes at `t + 101`, a right one at `t + 1`.
#[test]
fn outer_join_asymmetric_before_window_matches_kafka_streams() {
    let w = JoinWindows::of_time_difference_with_no_grace(ms(100)).before(ms(0));
    sides(topology(Kind::Outer, w))
        .steps([
            left(0, "A0", 0),
            left(1, "A1", 1),
            none(),
            right(0, "10", 100),
            expect_out(&[(0, "A0+10", 100)]),
            right(1, "11", 102),
            expect_out(&[(1, "A1+null", 1)]),
            right(2, "12", 103),
            expect_out(&[(1, "null+11", 102)]),
            left(2, "A2", 103),
            expect_out(&[(2, "A2+12", 103)]),
        ])
        .run();
}

/// `testShouldNotEmitLeftJoinResultForAsymmetricAfterWindow`: exact.
/// `after(0)`: a left null side closes at `t + 1`, a right one at `t + 101`.
#[test]
fn outer_join_asymmetric_after_window_matches_kafka_streams() {
    let w = JoinWindows::of_time_difference_with_no_grace(ms(100)).after(ms(0));
    sides(topology(Kind::Outer, w))
        .steps([
            left(0, "A0", 0),
            left(1, "A1", 1),
            expect_out(&[(0, "A0+null", 0)]),
            right(1, "11", 1),
            expect_out(&[(1, "A1+11", 1)]),
            right(2, "12", 101),
            none(),
            right(3, "13", 101),
            none(),
            left(2, "A2", 201),
            expect_out(&[(2, "A2+12", 201)]),
        ])
        .run();
}

/// `testWindowing` (its first part and `testUpperWindowBound`'s first two
/// steps): exact. Later right records at 1000.. flush the unmatched 12 and
/// 13 of time 0.
#[test]
fn outer_join_windowing_matches_kafka_streams() {
    let w = JoinWindows::of_time_difference_with_no_grace(ms(100));
    sides(topology(Kind::Outer, w))
        .steps([
            left(0, "A0", 0),
            left(1, "A1", 0),
            none(),
            right(0, "10", 0),
            right(1, "11", 0),
            right(2, "12", 0),
            right(3, "13", 0),
            expect_out(&[(0, "A0+10", 0), (1, "A1+11", 0)]),
            right(0, "20", 1000),
            right(1, "21", 1001),
            right(2, "22", 1002),
            right(3, "23", 1003),
            expect_out(&[(2, "null+12", 0), (3, "null+13", 0)]),
            left(0, "B0", 1100),
            left(1, "B1", 1100),
            left(2, "B2", 1100),
            left(3, "B3", 1100),
            expect_out(&[
                (0, "B0+20", 1100),
                (1, "B1+21", 1100),
                (2, "B2+22", 1100),
                (3, "B3+23", 1100),
            ]),
        ])
        .run();
}

/// `testShouldForwardPerRecordHeadersForMultipleBufferedOuterEmits`, values
/// and times only: exact. The four closes differ (111..114), so order by
/// close equals Kafka Streams' time order; the trigger's own null side is
/// still open.
#[test]
fn outer_join_several_buffered_null_sides_flush_in_time_order() {
    let w = JoinWindows::of_time_difference_and_grace(ms(100), ms(10));
    sides(topology(Kind::Outer, w))
        .steps([
            left(10, "A10", 0),
            right(11, "20", 1),
            left(12, "A12", 2),
            right(13, "30", 3),
            none(),
            left(99, "TRIG", 500),
            expect_out(&[
                (10, "A10+null", 0),
                (11, "null+20", 1),
                (12, "A12+null", 2),
                (13, "null+30", 3),
            ]),
        ])
        .run();
}

/// `testOuterJoinDuplicates`, a divergence (docs/emission.md#stream-stream-joins). Kafka Streams emits
/// the four null sides of time 0 only when the record at 211 arrives, in
/// store order (`null+11, null+12, A0+null, A0-0+null`). Here they close at
/// `0 + 100 + 1 + 10 = 111`, so the pass of the record at 111 emits them,
/// ordered by close then key (key 0 before key 1; equal keys in arrival
/// order). The joined duplicates and the final flush match exactly.
#[test]
fn outer_join_duplicates_flush_at_their_close_ordered_by_close_then_key() {
    let w = JoinWindows::of_time_difference_and_grace(ms(100), ms(10));
    sides(topology(Kind::Outer, w))
        .steps([
            left(0, "A0", 0),
            left(0, "A0-0", 0),
            right(1, "11", 0),
            right(1, "12", 0),
            none(),
            right(1, "10", 111),
            expect_out(&[
                (0, "A0+null", 0),
                (0, "A0-0+null", 0),
                (1, "null+11", 0),
                (1, "null+12", 0),
            ]),
            right(3, "100", 211),
            none(),
            left(2, "A2", 200),
            left(2, "A2-0", 200),
            right(2, "13", 201),
            right(2, "14", 201),
            expect_out(&[
                (2, "A2+13", 201),
                (2, "A2-0+13", 201),
                (2, "A2+14", 201),
                (2, "A2-0+14", 201),
            ]),
            right(3, "100", 1500),
            expect_out(&[(1, "null+10", 111), (3, "null+100", 211)]),
        ])
        .run();
}

/// `testOrdering`, a divergence (docs/test-driver.md#final-emission): Kafka Streams emits the
/// expired `A0+null` before the piped record's join `A1+11`; here the
/// emission pass runs after the piped record's own results.
#[test]
fn outer_join_ordering_own_results_before_the_flushed_null_side() {
    let w = JoinWindows::of_time_difference_with_no_grace(ms(100));
    sides(topology(Kind::Outer, w))
        .steps([
            left(0, "A0", 0),
            left(1, "A1", 100),
            none(),
            right(1, "11", 110),
            expect_out(&[(1, "A1+11", 110), (0, "A0+null", 0)]),
        ])
        .run();
}

/// The left-join form of `testOrdering`: same divergence
/// (docs/test-driver.md#final-emission).
#[test]
fn left_join_ordering_own_results_before_the_flushed_null_side() {
    let w = JoinWindows::of_time_difference_with_no_grace(ms(100));
    sides(topology(Kind::Left, w))
        .steps([
            left(0, "A0", 0),
            left(1, "A1", 100),
            none(),
            right(1, "11", 110),
            expect_out(&[(1, "A1+11", 110), (0, "A0+null", 0)]),
        ])
        .run();
}

/// `testGracePeriod`, a divergence in order only (docs/emission.md#stream-stream-joins): both null sides
/// of time 0 close at `0 + 100 + 1 + 10 = 111`, so at 112 they leave by key
/// (`A0+null` then `null+11`; Kafka Streams: `null+11` first). Nothing
/// closes at 101 (ended, not closed). Extension: the ones of time 101 close
/// at 212, again by key.
#[test]
fn outer_join_grace_period_null_sides_ordered_by_close_then_key() {
    let w = JoinWindows::of_time_difference_and_grace(ms(100), ms(10));
    sides(topology(Kind::Outer, w))
        .steps([
            left(0, "A0", 0),
            right(1, "11", 0),
            none(),
            left(1, "A1", 101),
            right(0, "10", 101),
            none(),
            right(0, "100", 112),
            expect_out(&[(0, "A0+null", 0), (1, "null+11", 0)]),
            Advance(211),
            none(),
            Advance(212),
            expect_out(&[(0, "null+10", 101), (1, "A1+null", 101)]),
        ])
        .run();
}

/// The left-join form of `testGracePeriod`: exact, since a left join has a
/// single null side here (`A0+null` at 112; none at 101).
#[test]
fn left_join_grace_period_emits_at_the_close() {
    let w = JoinWindows::of_time_difference_and_grace(ms(100), ms(10));
    sides(topology(Kind::Left, w))
        .steps([
            left(0, "A0", 0),
            right(1, "11", 0),
            none(),
            left(1, "A1", 101),
            right(0, "10", 101),
            none(),
            Advance(111),
            expect_out(&[(0, "A0+null", 0)]),
        ])
        .run();
}

/// `testEmitAllNonJoinedResultsForAsymmetricWindow`, a divergence in order
/// only (docs/emission.md#stream-stream-joins) (`before(5)`, `after(20)`: left closes at `t + 21`, right
/// at `t + 6`). At 50, `13` (close 42), `14` (43) and `A0` (50) leave by
/// close; Kafka Streams emits `A0+null` first.
#[test]
fn outer_join_asymmetric_window_null_sides_ordered_by_close() {
    let w = JoinWindows::of_time_difference_with_no_grace(ms(5)).after(ms(20));
    sides(topology(Kind::Outer, w))
        .steps([
            left(0, "A0", 29),
            left(1, "A1", 30),
            right(2, "12", 31),
            right(3, "13", 36),
            none(),
            right(4, "14", 37),
            expect_out(&[(2, "null+12", 31)]),
            right(5, "15", 50),
            expect_out(&[(3, "null+13", 36), (4, "null+14", 37), (0, "A0+null", 29)]),
        ])
        .run();
}

/// A null side is final only once the frontier reaches its close, on either
/// store engine: a left record at 30 with a 20 ms window closes at 51, so at
/// frontier 50 a right record at 50 is on time and joins it, and no null side
/// is ever emitted (the persistent engine once emitted it at 50, one
/// millisecond early, then the match contradicted it).
#[test]
fn left_null_side_waits_for_its_close_on_every_engine() {
    let w = JoinWindows::of_time_difference_with_no_grace(ms(20));
    sides(topology(Kind::Left, w))
        .named("null side at frontier 50, close 51")
        .steps([
            left(0, "A0", 30),
            Advance(50),
            none(),
            right(0, "a0", 50),
            expect_out(&[(0, "A0+a0", 50)]),
            Advance(51),
            none(),
            Advance(1_000),
            none(),
        ])
        .run();
}

/// The same pass order (close, then key, then side, then time) on both
/// engines, with negative keys: the unmatched store's key bytes once put the
/// side before the key and key `1` before `-1` (big-endian two's complement).
#[test]
fn null_sides_in_one_pass_order_by_close_then_key_with_negative_keys() {
    // Both sides close at t + 11.
    let w = JoinWindows::of_time_difference_with_no_grace(ms(10));
    sides(topology(Kind::Outer, w))
        .named("negative keys")
        .steps([
            left(1, "A1", 100),
            right(2, "b2", 100),
            left(-1, "A-1", 100),
            left(3, "A3", 100),
            right(-5, "b-5", 100),
            left(0, "A0", 90),
            none(),
            Advance(111),
            expect_out(&[
                (0, "A0+null", 90),
                (-5, "null+b-5", 100),
                (-1, "A-1+null", 100),
                (1, "A1+null", 100),
                (2, "null+b2", 100),
                (3, "A3+null", 100),
            ]),
        ])
        .run();
}

/// A close that saturates at the end of time (a grace of `Duration::MAX`) is
/// emitted by the final flush, a frontier at `i64::MAX`, on both engines.
#[test]
fn null_side_whose_close_saturates_is_emitted_at_the_end_of_time() {
    let w = JoinWindows::of_time_difference_and_grace(ms(10), Duration::MAX);
    sides(topology(Kind::Left, w))
        .named("saturated close")
        .steps([
            left(0, "A0", 5),
            Advance(i64::MAX - 1),
            none(),
            Advance(i64::MAX),
            expect_out(&[(0, "A0+null", 5)]),
        ])
        .run();
}
