//! Table-table joins: inner, left and outer. The inputs and the expected
//! outputs (values and timestamps) are transcribed from Kafka Streams'
//! `KTableKTableInnerJoinTest`, `KTableKTableLeftJoinTest` and
//! `KTableKTableOuterJoinTest` (`testJoin`): one input sequence, eight
//! checks, each side's update recomputing the key's result against the
//! other side, a removed row a tombstone. Their null-key inputs are left
//! out (a typed key cannot be null; Kafka Streams drops them).

use stoatflow_streams::{Consumed, KTable, Produced, Serdes, StreamsBuilder, Topology};

use crate::harness::{LEFT, RIGHT, Step, delete, expect_rows, pipe_to, table_sides};

const KEYS: [i32; 4] = [0, 1, 2, 3];

#[derive(Clone, Copy)]
enum Kind {
    Inner,
    Left,
    Outer,
}

fn shown(v: Option<&String>) -> &str {
    v.map_or("null", String::as_str)
}

fn topology(kind: Kind) -> Topology {
    let mut b = StreamsBuilder::new();
    let consumed = || Consumed::with(Serdes::i32(), Serdes::string());
    let t1: KTable<i32, String> = b.table(LEFT, consumed(), "left-table");
    let t2: KTable<i32, String> = b.table(RIGHT, consumed(), "right-table");
    let joined = match kind {
        Kind::Inner => t1.join(&t2, |a, b| format!("{a}+{b}")),
        Kind::Left => t1.left_join(&t2, |a, b| format!("{a}+{}", shown(b))),
        Kind::Outer => t1.outer_join(&t2, |a, b| format!("{}+{}", shown(a), shown(b))),
    };
    joined
        .to_stream()
        .to("out", Produced::with(Serdes::i32(), Serdes::string()));
    b.build().unwrap()
}

type Rows = &'static [(i32, Option<&'static str>, i64)];

fn put(topic: &'static str, key: i32, value: String, ts: i64) -> Step {
    pipe_to(topic, key, value, ts)
}

/// Kafka Streams' input sequence, with `expected[i]` checked after step i.
fn run(kind: Kind, expected: [Rows; 8]) {
    let mut steps = Vec::new();
    steps.extend((0..2).map(|i| put(LEFT, KEYS[i], format!("X{}", KEYS[i]), 5 + i as i64)));
    steps.push(expect_rows(expected[0]));
    steps.extend((0..2).map(|i| put(RIGHT, KEYS[i], format!("Y{}", KEYS[i]), 10 * i as i64)));
    steps.push(expect_rows(expected[1]));
    steps.extend(KEYS.map(|k| put(LEFT, k, format!("XX{k}"), 7)));
    steps.push(expect_rows(expected[2]));
    steps.extend(KEYS.map(|k| put(RIGHT, k, format!("YY{k}"), i64::from(k) * 5)));
    steps.push(expect_rows(expected[3]));
    steps.extend(KEYS.map(|k| put(LEFT, k, format!("XXX{k}"), 6)));
    steps.push(expect_rows(expected[4]));
    steps.extend([delete(RIGHT, KEYS[0], 5), delete(RIGHT, KEYS[1], 7)]);
    steps.push(expect_rows(expected[5]));
    steps.extend(KEYS.map(|k| put(LEFT, k, format!("XXXX{k}"), 13)));
    steps.push(expect_rows(expected[6]));
    steps.extend([
        delete(LEFT, KEYS[0], 0),
        delete(LEFT, KEYS[1], 42),
        delete(LEFT, KEYS[2], 5),
        delete(LEFT, KEYS[3], 20),
    ]);
    steps.push(expect_rows(expected[7]));
    table_sides(topology(kind)).steps(steps).run();
}

/// What the three joins share after the fourth check.
const XXX_YY: Rows = &[
    (0, Some("XXX0+YY0"), 6),
    (1, Some("XXX1+YY1"), 6),
    (2, Some("XXX2+YY2"), 10),
    (3, Some("XXX3+YY3"), 15),
];
const XX_YY: Rows = &[
    (0, Some("XX0+YY0"), 7),
    (1, Some("XX1+YY1"), 7),
    (2, Some("XX2+YY2"), 10),
    (3, Some("XX3+YY3"), 15),
];

#[test]
fn ktable_ktable_inner_join_as_kafka_streams() {
    run(
        Kind::Inner,
        [
            &[],
            &[(0, Some("X0+Y0"), 5), (1, Some("X1+Y1"), 10)],
            &[(0, Some("XX0+Y0"), 7), (1, Some("XX1+Y1"), 10)],
            XX_YY,
            XXX_YY,
            &[(0, None, 6), (1, None, 7)],
            &[(2, Some("XXXX2+YY2"), 13), (3, Some("XXXX3+YY3"), 15)],
            &[(2, None, 10), (3, None, 20)],
        ],
    );
}

/// Left and outer agree until the left side is deleted.
const LEFT_AND_OUTER: [Rows; 7] = [
    &[(0, Some("X0+null"), 5), (1, Some("X1+null"), 6)],
    &[(0, Some("X0+Y0"), 5), (1, Some("X1+Y1"), 10)],
    &[
        (0, Some("XX0+Y0"), 7),
        (1, Some("XX1+Y1"), 10),
        (2, Some("XX2+null"), 7),
        (3, Some("XX3+null"), 7),
    ],
    XX_YY,
    XXX_YY,
    &[(0, Some("XXX0+null"), 6), (1, Some("XXX1+null"), 7)],
    &[
        (0, Some("XXXX0+null"), 13),
        (1, Some("XXXX1+null"), 13),
        (2, Some("XXXX2+YY2"), 13),
        (3, Some("XXXX3+YY3"), 15),
    ],
];

#[test]
fn ktable_ktable_left_join_as_kafka_streams() {
    let [a, b, c, d, e, f, g] = LEFT_AND_OUTER;
    let deleted: Rows = &[(0, None, 0), (1, None, 42), (2, None, 10), (3, None, 20)];
    run(Kind::Left, [a, b, c, d, e, f, g, deleted]);
}

#[test]
fn ktable_ktable_outer_join_as_kafka_streams() {
    let [a, b, c, d, e, f, g] = LEFT_AND_OUTER;
    let deleted: Rows = &[
        (0, None, 0),
        (1, None, 42),
        (2, Some("null+YY2"), 10),
        (3, Some("null+YY3"), 20),
    ];
    run(Kind::Outer, [a, b, c, d, e, f, g, deleted]);
}

#[test]
fn a_mapped_table_joins_with_the_serde_map_values_with_gives_it() {
    // A struct value has no standard serde: `map_values_with` gives the
    // mapped table one (and a store), so the join's side store has a
    // changelog serde and the driver accepts the topology.
    #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
    struct Len {
        n: usize,
    }
    let mut b = StreamsBuilder::new();
    let consumed = || Consumed::with(Serdes::i32(), Serdes::string());
    let lens = b.table(LEFT, consumed(), "left-table").map_values_with(
        |_, v: String| Len { n: v.len() },
        stoatflow_streams::Materialized::as_("lens").with_value_serde(Serdes::json::<Len>()),
    );
    assert_eq!(lens.queryable_store_name(), Some("lens"));
    let right: KTable<i32, String> = b.table(RIGHT, consumed(), "right-table");
    lens.join(&right, |l, r| format!("{}+{r}", l.n))
        .to_stream()
        .to("out", Produced::with(Serdes::i32(), Serdes::string()));
    table_sides(b.build().unwrap())
        .steps([
            put(LEFT, 0, "abc".into(), 1),
            put(RIGHT, 0, "R".into(), 2),
            expect_rows(&[(0, Some("3+R"), 2)]),
            Step::Crash,
            delete(LEFT, 0, 3),
            expect_rows(&[(0, None, 3)]),
        ])
        .run();
}
