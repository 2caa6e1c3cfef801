//! Table-table joins: inner, left and outer. The inputs and the expected
//! outputs (values and timestamps) are transcribed from Kafka Streams'
//! `KTableKTableInnerJoinTest`, `KTableKTableLeftJoinTest` and
//! `KTableKTableOuterJoinTest` (`testJoin`): one input sequence, eight
//! checks, each side's update recomputing the key's result against the
//! other side, a removed row a tombstone. Their null-key inputs are left
//! out (a typed key cannot be null; Kafka Streams drops them). The
//! materialized forms (`join_with` and its kin, `testQueryableJoin`) give
//! the same output and keep each key's latest result in their store.

use stoatflow_streams::{
    Consumed, KTable, KeyValueStore, KeyValueStoreOf, Materialized, Produced, Serdes,
    StreamsBuilder, Topology,
};

use crate::harness::{
    Engine, LEFT, RIGHT, Scenario, Step, delete, expect_rows, pipe_to, table_sides,
};

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

/// The join of `kind`; with `store`, its `_with` form materialized there.
fn topology(kind: Kind, store: Option<&str>) -> Topology {
    let mut b = StreamsBuilder::new();
    let consumed = || Consumed::with(Serdes::i32(), Serdes::string());
    let t1: KTable<i32, String> = b.table(LEFT, consumed(), "left-table");
    let t2: KTable<i32, String> = b.table(RIGHT, consumed(), "right-table");
    let inner = |a: &String, b: &String| format!("{a}+{b}");
    let left = |a: &String, b: Option<&String>| format!("{a}+{}", shown(b));
    let outer = |a: Option<&String>, b: Option<&String>| format!("{}+{}", shown(a), shown(b));
    let joined = match (kind, store) {
        (Kind::Inner, None) => t1.join(&t2, inner),
        (Kind::Left, None) => t1.left_join(&t2, left),
        (Kind::Outer, None) => t1.outer_join(&t2, outer),
        (Kind::Inner, Some(s)) => t1.join_with(&t2, inner, Materialized::as_(s)),
        (Kind::Left, Some(s)) => t1.left_join_with(&t2, left, Materialized::as_(s)),
        (Kind::Outer, Some(s)) => t1.outer_join_with(&t2, outer, Materialized::as_(s)),
    };
    assert_eq!(joined.queryable_store_name(), store);
    joined
        .to_stream()
        .to("out", Produced::with(Serdes::i32(), Serdes::string()));
    b.build().unwrap()
}

type Rows = &'static [(i32, Option<&'static str>, i64)];

fn put(topic: &'static str, key: i32, value: String, ts: i64) -> Step {
    pipe_to(topic, key, value, ts)
}

/// Kafka Streams' input sequence, with `expected[i]` checked after step i;
/// then, as Kafka Streams' `testQueryableJoin`, the `_with` form over the
/// same input, whose store holds each key's latest result (none for a key
/// whose latest is a tombstone) after the seventh check and at the end.
fn run(kind: Kind, expected: [Rows; 8]) {
    let steps = steps(expected);
    table_sides(topology(kind, None))
        .steps(steps.iter().flatten().cloned())
        .run();
    for checks in [7, 8] {
        let s = table_sides(topology(kind, Some(JOINED)))
            .steps(steps[..checks].iter().flatten().cloned());
        s.run();
        let mut latest = std::collections::BTreeMap::new();
        for &(k, v, _) in expected[..checks].iter().copied().flatten() {
            match v {
                Some(v) => latest.insert(k, v.to_owned()),
                None => latest.remove(&k),
            };
        }
        let latest: Vec<(i32, String)> = latest.into_iter().collect();
        for engine in [Engine::InMemory, Engine::Persistent] {
            assert_eq!(
                joined_rows(&s, engine),
                latest,
                "{engine:?}, {checks} checks"
            );
        }
    }
}

const JOINED: &str = "joined";

/// The rows of the [`JOINED`] store a run on `engine` left.
fn joined_rows(s: &Scenario, engine: Engine) -> Vec<(i32, String)> {
    let o = s.run_on(engine);
    let store = o.store::<KeyValueStoreOf<i32, String>>(JOINED);
    let all = KeyValueStore::all(&*store.borrow()).unwrap();
    all.into_iter().map(|(k, v)| (k, v.value)).collect()
}

/// The input sequence in eight groups, each ending with its check.
fn steps(expected: [Rows; 8]) -> Vec<Vec<Step>> {
    let mut groups = Vec::new();
    let mut steps = Vec::new();
    steps.extend((0..2).map(|i| put(LEFT, KEYS[i], format!("X{}", KEYS[i]), 5 + i as i64)));
    steps.push(expect_rows(expected[0]));
    groups.push(std::mem::take(&mut steps));
    steps.extend((0..2).map(|i| put(RIGHT, KEYS[i], format!("Y{}", KEYS[i]), 10 * i as i64)));
    steps.push(expect_rows(expected[1]));
    groups.push(std::mem::take(&mut steps));
    steps.extend(KEYS.map(|k| put(LEFT, k, format!("XX{k}"), 7)));
    steps.push(expect_rows(expected[2]));
    groups.push(std::mem::take(&mut steps));
    steps.extend(KEYS.map(|k| put(RIGHT, k, format!("YY{k}"), i64::from(k) * 5)));
    steps.push(expect_rows(expected[3]));
    groups.push(std::mem::take(&mut steps));
    steps.extend(KEYS.map(|k| put(LEFT, k, format!("XXX{k}"), 6)));
    steps.push(expect_rows(expected[4]));
    groups.push(std::mem::take(&mut steps));
    steps.extend([delete(RIGHT, KEYS[0], 5), delete(RIGHT, KEYS[1], 7)]);
    steps.push(expect_rows(expected[5]));
    groups.push(std::mem::take(&mut steps));
    steps.extend(KEYS.map(|k| put(LEFT, k, format!("XXXX{k}"), 13)));
    steps.push(expect_rows(expected[6]));
    groups.push(std::mem::take(&mut steps));
    steps.extend([
        delete(LEFT, KEYS[0], 0),
        delete(LEFT, KEYS[1], 42),
        delete(LEFT, KEYS[2], 5),
        delete(LEFT, KEYS[3], 20),
    ]);
    steps.push(expect_rows(expected[7]));
    groups.push(steps);
    groups
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

#[test]
fn a_materialized_join_result_is_a_table_for_the_operators_after_it() {
    // The joined table, materialized, joins a third table as any table does:
    // its rows (and their deletes) reach the second join.
    let mut b = StreamsBuilder::new();
    let consumed = || Consumed::with(Serdes::i32(), Serdes::string());
    let t1: KTable<i32, String> = b.table(LEFT, consumed(), "left-table");
    let t2: KTable<i32, String> = b.table(RIGHT, consumed(), "right-table");
    let t3: KTable<i32, String> = b.table("third", consumed(), "third-table");
    t1.join_with(&t2, |a, b| format!("{a}+{b}"), Materialized::as_(JOINED))
        .join(&t3, |ab, c| format!("{ab}+{c}"))
        .to_stream()
        .to("out", Produced::with(Serdes::i32(), Serdes::string()));
    table_sides(b.build().unwrap())
        .input::<i32, Option<String>>("third")
        .steps([
            put(LEFT, 0, "X0".into(), 1),
            put(RIGHT, 0, "Y0".into(), 2),
            put("third", 0, "Z0".into(), 3),
            expect_rows(&[(0, Some("X0+Y0+Z0"), 3)]),
            put(RIGHT, 0, "YY0".into(), 4),
            expect_rows(&[(0, Some("X0+YY0+Z0"), 4)]),
            delete(LEFT, 0, 5),
            expect_rows(&[(0, None, 5)]),
        ])
        .run();
}
