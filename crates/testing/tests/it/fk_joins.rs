//! Foreign-key table joins, inner and left. The scenarios are transcribed
//! from Kafka Streams' `KTableKTableForeignKeyJoinIntegrationTest` (inputs,
//! expected outputs, for both joins): its keys `lhsN` / `rhsN` are the
//! integers N here, a left value `lhsValueN|rhsM` is `lhsValueN|M`, and the
//! foreign key is what follows the bar. Output timestamps are checked too:
//! a response carries the later of the subscribing row's and the right
//! row's timestamps, a right update fans out at its own.

use stoatflow_streams::{
    Consumed, KTable, KeyValueStore, KeyValueStoreOf, Materialized, Produced, Serdes,
    StreamsBuilder, Topology,
};

use crate::harness::{Engine, LEFT, RIGHT, Step, delete, expect_rows, pipe_to, table_sides};

const B: i64 = 1_000;

fn fk(v: &str) -> i32 {
    v.rsplit('|')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(-1)
}

/// How the left table is made.
#[derive(Clone, Copy)]
enum Lhs {
    /// `builder.table(..)`.
    Table,
    /// Kafka Streams' `builder.stream(..).toTable()`: a stream of nullable
    /// values whose nulls delete.
    StreamToTable,
}

fn topology_on(left_join: bool, made: Lhs) -> Topology {
    topology_into(left_join, made, None)
}

/// The join; with `store`, its `_with` form materialized there.
fn topology_into(left_join: bool, made: Lhs, store: Option<&str>) -> Topology {
    let mut b = StreamsBuilder::new();
    let consumed = || Consumed::with(Serdes::i32(), Serdes::string());
    let lhs: KTable<i32, String> = match made {
        Lhs::Table => b.table(LEFT, consumed(), "left-table"),
        Lhs::StreamToTable => b
            .stream(
                LEFT,
                Consumed::with(Serdes::i32(), Serdes::nullable(Serdes::string())),
            )
            .to_table_deleting(),
    };
    let rhs: KTable<i32, String> = b.table(RIGHT, consumed(), "right-table");
    let left =
        |l: &String, r: Option<&String>| format!("({l},{})", r.map_or("null", String::as_str));
    let inner = |l: &String, r: &String| format!("({l},{r})");
    let joined = match (left_join, store) {
        (true, None) => lhs.left_join_on_foreign_key(&rhs, |v: &String| fk(v), left),
        (false, None) => lhs.join_on_foreign_key(&rhs, |v: &String| fk(v), inner),
        (true, Some(s)) => {
            lhs.left_join_on_foreign_key_with(&rhs, |v| fk(v), left, Materialized::as_(s))
        }
        (false, Some(s)) => {
            lhs.join_on_foreign_key_with(&rhs, |v| fk(v), inner, Materialized::as_(s))
        }
    };
    assert_eq!(joined.queryable_store_name(), store);
    joined
        .to_stream()
        .to("out", Produced::with(Serdes::i32(), Serdes::string()));
    b.build().unwrap()
}

fn left(key: i32, value: &str, ts: i64) -> Step {
    pipe_to(LEFT, key, value.to_owned(), ts)
}

fn right(key: i32, value: &str, ts: i64) -> Step {
    pipe_to(RIGHT, key, value.to_owned(), ts)
}

fn both(steps: impl Fn(bool) -> Vec<Step>) {
    both_on(Lhs::Table, steps);
}

fn both_on(made: Lhs, steps: impl Fn(bool) -> Vec<Step>) {
    for left_join in [false, true] {
        table_sides(topology_on(left_join, made))
            .steps(steps(left_join))
            .run();
    }
}

/// `(lhsValueN|M,null)` in a left join, a tombstone in an inner one.
fn half(left_join: bool, l: &'static str) -> Option<&'static str> {
    left_join.then_some(l)
}

#[test]
fn join_from_left_then_delete_left_entity() {
    both(|_| {
        vec![
            right(1, "rhsValue1", B),
            right(2, "rhsValue2", B + 1),
            right(3, "rhsValue3", B + 2),
            expect_rows(&[]),
            left(1, "lhsValue1|1", B + 3),
            left(2, "lhsValue2|2", B + 4),
            expect_rows(&[
                (1, Some("(lhsValue1|1,rhsValue1)"), B + 3),
                (2, Some("(lhsValue2|2,rhsValue2)"), B + 4),
            ]),
            left(3, "lhsValue3|1", B + 5),
            expect_rows(&[(3, Some("(lhsValue3|1,rhsValue1)"), B + 5)]),
            delete(LEFT, 1, B + 6),
            expect_rows(&[(1, None, B + 6)]),
        ]
    });
}

#[test]
fn join_from_left_then_update_fk_then_revert_back() {
    both(|_| {
        vec![
            right(1, "rhsValue1", B),
            right(2, "rhsValue2", B + 1),
            left(1, "lhsValue1|1", B + 3),
            expect_rows(&[(1, Some("(lhsValue1|1,rhsValue1)"), B + 3)]),
            left(1, "lhsValue1|2", B + 5),
            expect_rows(&[(1, Some("(lhsValue1|2,rhsValue2)"), B + 5)]),
            left(1, "lhsValue1|1", B + 6),
            expect_rows(&[(1, Some("(lhsValue1|1,rhsValue1)"), B + 6)]),
        ]
    });
}

#[test]
fn join_from_right_then_delete_right_entity_fans_out_to_every_subscriber() {
    both(|lj| {
        let mut steps = vec![
            left(1, "lhsValue1|1", B),
            left(2, "lhsValue2|2", B + 1),
            left(3, "lhsValue3|1", B + 2),
        ];
        steps.push(if lj {
            expect_rows(&[
                (1, Some("(lhsValue1|1,null)"), B),
                (2, Some("(lhsValue2|2,null)"), B + 1),
                (3, Some("(lhsValue3|1,null)"), B + 2),
            ])
        } else {
            expect_rows(&[])
        });
        steps.extend([
            right(1, "rhsValue1", B + 3),
            expect_rows(&[
                (1, Some("(lhsValue1|1,rhsValue1)"), B + 3),
                (3, Some("(lhsValue3|1,rhsValue1)"), B + 3),
            ]),
            right(2, "rhsValue2", B + 4),
            expect_rows(&[(2, Some("(lhsValue2|2,rhsValue2)"), B + 4)]),
            // An unreferenced foreign key shows up nowhere.
            right(3, "rhsValue3", B + 5),
            expect_rows(&[]),
            delete(RIGHT, 1, B + 6),
            expect_rows(&[
                (1, half(lj, "(lhsValue1|1,null)"), B + 6),
                (3, half(lj, "(lhsValue3|1,null)"), B + 6),
            ]),
        ]);
        steps
    });
}

#[test]
fn deleting_non_joining_and_non_existing_rows() {
    both(|lj| {
        vec![
            // Deleting a row that never existed emits nothing.
            delete(LEFT, 2, B),
            expect_rows(&[]),
            left(1, "lhsValue1|1", B),
            expect_rows(if lj {
                &[(1, Some("(lhsValue1|1,null)"), B)]
            } else {
                &[]
            }),
            // A tombstone for both joins (unnecessary for the inner one: it
            // cannot know whether a result was emitted).
            delete(LEFT, 1, B + 1),
            expect_rows(&[(1, None, B + 1)]),
            // Deleting again is idempotent.
            delete(LEFT, 1, B + 2),
            expect_rows(&[]),
        ]
    });
}

#[test]
fn moving_between_non_matching_and_matching_foreign_keys() {
    both(|lj| {
        vec![
            left(1, "lhsValue1|1", B),
            expect_rows(if lj {
                &[(1, Some("(lhsValue1|1,null)"), B)]
            } else {
                &[]
            }),
            left(1, "lhsValue1|2", B + 1),
            expect_rows(&[(1, half(lj, "(lhsValue1|2,null)"), B + 1)]),
            left(1, "lhsValue1|3", B + 2),
            expect_rows(&[(1, half(lj, "(lhsValue1|3,null)"), B + 2)]),
            // The old foreign key 1 was unsubscribed: no change.
            right(1, "rhsValue1", B + 3),
            expect_rows(&[]),
            left(1, "lhsValue1|1", B + 4),
            expect_rows(&[(1, Some("(lhsValue1|1,rhsValue1)"), B + 4)]),
            left(1, "lhsValue1|2", B + 5),
            expect_rows(&[(1, half(lj, "(lhsValue1|2,null)"), B + 5)]),
        ]
    });
}

#[test]
fn an_update_of_the_old_foreign_key_reaches_nobody() {
    both(|_| {
        vec![
            right(1, "rhsValue1", B),
            right(2, "rhsValue2", B + 1),
            left(1, "lhsValue1|1", B + 2),
            expect_rows(&[(1, Some("(lhsValue1|1,rhsValue1)"), B + 2)]),
            left(1, "lhsValue1|2", B + 3),
            expect_rows(&[(1, Some("(lhsValue1|2,rhsValue2)"), B + 3)]),
            right(1, "rhsValue1Delta", B + 4),
            expect_rows(&[]),
        ]
    });
}

#[test]
fn a_left_table_without_a_value_serde_is_refused_at_build() {
    let mut b = StreamsBuilder::new();
    let consumed = || Consumed::with(Serdes::i32(), Serdes::string());
    let lhs: KTable<i32, String> = b.table(LEFT, consumed(), "left-table");
    let rhs: KTable<i32, String> = b.table(RIGHT, consumed(), "right-table");
    // A pair has no inferred serde: its values cannot be hashed.
    let pairs = lhs.map_values(|_: &i32, v: String| (fk(&v), v));
    let _joined =
        pairs.join_on_foreign_key(&rhs, |p: &(i32, String)| p.0, |p, r| format!("{}{r}", p.1));
    let err = b.build().unwrap_err().to_string();
    assert!(
        err.contains("foreign-key join") && err.contains("value serde"),
        "{err}"
    );
}

/// A right row's update reaches its subscribers in primary-key order on both
/// engines: the subscription store's byte order put `1` before `-2` and `-1`
/// (big-endian two's complement).
#[test]
fn a_right_update_fans_out_in_primary_key_order_with_negative_keys() {
    both(|left_join| {
        // A left row with no right row: `(l,null)` in a left join, nothing in an inner one.
        let unmatched = |k: i32, l: &'static str, ts: i64| {
            let rows: Vec<_> = left_join.then_some((k, Some(l), ts)).into_iter().collect();
            expect_rows(&rows)
        };
        vec![
            left(1, "lhsValue1|1", B),
            unmatched(1, "(lhsValue1|1,null)", B),
            left(-1, "lhsValue-1|1", B + 1),
            unmatched(-1, "(lhsValue-1|1,null)", B + 1),
            left(-2, "lhsValue-2|1", B + 2),
            unmatched(-2, "(lhsValue-2|1,null)", B + 2),
            right(1, "rhsValue1", B + 3),
            expect_rows(&[
                (-2, Some("(lhsValue-2|1,rhsValue1)"), B + 3),
                (-1, Some("(lhsValue-1|1,rhsValue1)"), B + 3),
                (1, Some("(lhsValue1|1,rhsValue1)"), B + 3),
            ]),
        ]
    });
}

/// `doJoinFromLeftThenDeleteLeftEntity` with the left table made by
/// `stream(..).toTable()`: a null value for a key deletes its row, and the
/// key's join result is retracted (a tombstone), as from a table source.
#[test]
fn a_stream_to_table_left_side_deletes_on_null_and_retracts_the_result() {
    both_on(Lhs::StreamToTable, |_| {
        vec![
            right(1, "rhsValue1", B),
            right(2, "rhsValue2", B + 1),
            left(1, "lhsValue1|1", B + 3),
            left(2, "lhsValue2|2", B + 4),
            expect_rows(&[
                (1, Some("(lhsValue1|1,rhsValue1)"), B + 3),
                (2, Some("(lhsValue2|2,rhsValue2)"), B + 4),
            ]),
            delete(LEFT, 1, B + 6),
            expect_rows(&[(1, None, B + 6)]),
            // The row is gone: a right update reaches only key 2's row.
            right(1, "rhsValue1Delta", B + 7),
            expect_rows(&[]),
            right(2, "rhsValue2Delta", B + 8),
            expect_rows(&[(2, Some("(lhsValue2|2,rhsValue2Delta)"), B + 8)]),
        ]
    });
}

/// `doJoinFromLeftThenDeleteLeftEntity`'s non-joining cases on a
/// `stream(..).toTable()` left side: deleting a key never seen emits nothing,
/// deleting an unmatched row retracts (a tombstone for both joins), deleting
/// again emits nothing.
#[test]
fn a_stream_to_table_left_side_deletes_non_joining_and_absent_rows() {
    both_on(Lhs::StreamToTable, |lj| {
        vec![
            delete(LEFT, 2, B),
            expect_rows(&[]),
            left(1, "lhsValue1|1", B),
            expect_rows(if lj {
                &[(1, Some("(lhsValue1|1,null)"), B)]
            } else {
                &[]
            }),
            delete(LEFT, 1, B + 1),
            expect_rows(&[(1, None, B + 1)]),
            delete(LEFT, 1, B + 2),
            expect_rows(&[]),
        ]
    });
}

/// `doJoinFromLeftThenDeleteLeftEntity` with `materialized` set, as Kafka
/// Streams' parameterized run: the output is the unmaterialized join's, and
/// the store holds the joined rows after the left inserts and after the
/// delete, on both engines and for a left side from a table or from
/// `stream(..).toTable()`.
#[test]
fn a_materialized_foreign_key_join_keeps_its_rows_in_a_store() {
    let inserts = vec![
        right(1, "rhsValue1", B),
        right(2, "rhsValue2", B + 1),
        right(3, "rhsValue3", B + 2),
        left(1, "lhsValue1|1", B + 3),
        left(2, "lhsValue2|2", B + 4),
        expect_rows(&[
            (1, Some("(lhsValue1|1,rhsValue1)"), B + 3),
            (2, Some("(lhsValue2|2,rhsValue2)"), B + 4),
        ]),
        left(3, "lhsValue3|1", B + 5),
        expect_rows(&[(3, Some("(lhsValue3|1,rhsValue1)"), B + 5)]),
    ];
    let mut deleted = inserts.clone();
    deleted.extend([delete(LEFT, 1, B + 6), expect_rows(&[(1, None, B + 6)])]);
    let row = |k: i32, v: &str| (k, v.to_owned());
    let after_inserts = vec![
        row(1, "(lhsValue1|1,rhsValue1)"),
        row(2, "(lhsValue2|2,rhsValue2)"),
        row(3, "(lhsValue3|1,rhsValue1)"),
    ];
    let after_delete = after_inserts[1..].to_vec();
    for made in [Lhs::Table, Lhs::StreamToTable] {
        for left_join in [false, true] {
            for (steps, want) in [(&inserts, &after_inserts), (&deleted, &after_delete)] {
                let s = table_sides(topology_into(left_join, made, Some("fk-result")))
                    .steps(steps.iter().cloned());
                s.run();
                for engine in [Engine::InMemory, Engine::Persistent] {
                    let o = s.run_on(engine);
                    let store = o.store::<KeyValueStoreOf<i32, String>>("fk-result");
                    let rows: Vec<(i32, String)> = KeyValueStore::all(&*store.borrow())
                        .unwrap()
                        .into_iter()
                        .map(|(k, v)| (k, v.value))
                        .collect();
                    assert_eq!(&rows, want, "{engine:?}, left join {left_join}");
                }
            }
        }
    }
}
