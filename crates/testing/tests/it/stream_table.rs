//! Stream-table joins: the stream record sees the table as it is when the
//! record arrives; a later table update emits nothing and changes only later
//! joins (Kafka Streams' `KStreamKTableJoinTest` / `KStreamKTableLeftJoinTest`).

use std::time::Duration;

use stoatflow_streams::{Consumed, Joined, Produced, Serdes, StreamsBuilder, Topology};

use crate::harness::{LEFT, OUT, RIGHT, expect_out, left, none, right, sides};

fn topology(left: bool) -> Topology {
    let mut b = StreamsBuilder::new();
    let s = b.stream(LEFT, Consumed::with(Serdes::i32(), Serdes::string()));
    let t = b.table(
        RIGHT,
        Consumed::with(Serdes::i32(), Serdes::string()),
        "right-table",
    );
    let joined = Joined::with(Serdes::i32(), Serdes::string(), Serdes::string())
        .with_grace_period(Duration::from_secs(60));
    assert_eq!(joined.grace_period(), Some(Duration::from_secs(60)));
    let out = if left {
        s.left_join_table(
            &t,
            |a: &String, b: Option<&String>| format!("{a}+{}", b.map_or("null", |b| b.as_str())),
            joined,
        )
    } else {
        s.join_table(&t, |a: &String, b: &String| format!("{a}+{b}"), joined)
    };
    out.to(OUT, Produced::with(Serdes::i32(), Serdes::string()));
    b.build().expect("topology")
}

#[test]
fn inner_stream_table_join_sees_the_table_at_arrival() {
    sides(topology(false))
        .steps([
            left(0, "A0", 0),
            none(),
            right(0, "Y0", 0),
            right(1, "Y1", 0),
            none(),
            left(0, "B0", 1),
            left(1, "B1", 1),
            left(2, "B2", 1),
            expect_out(&[(0, "B0+Y0", 1), (1, "B1+Y1", 1)]),
            // An update after the stream record: nothing re-emitted, later records see it.
            right(0, "Z0", 2),
            none(),
            left(0, "C0", 3),
            expect_out(&[(0, "C0+Z0", 3)]),
        ])
        .run();
}

#[test]
fn left_stream_table_join_joins_null_without_a_row_and_has_no_grace() {
    sides(topology(true))
        .steps([
            left(0, "A0", 100),
            expect_out(&[(0, "A0+null", 100)]),
            right(0, "Y0", 200),
            none(),
            // Out of order and far behind the watermark: still joined, never dropped.
            left(0, "B0", 0),
            expect_out(&[(0, "B0+Y0", 0)]),
        ])
        .run();
}
