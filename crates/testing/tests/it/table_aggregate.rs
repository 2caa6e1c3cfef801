//! Table regrouping and its aggregations (`KTable::group_by` ->
//! `KGroupedTable` count / reduce / aggregate with a subtractor),
//! `KStream::to_table`, and `KTable::to_stream` forwarding tombstones.
//!
//! Inputs and expected outputs are transcribed from Kafka Streams'
//! `KTableAggregateTest` (`testAggBasic`, `testAggRepartition`,
//! `testCount`, `testRemoveOldBeforeAddNew`), `KGroupedTableImplTest`
//! (`shouldReduce`) and `KStreamImplTest`'s toTable cases, with their
//! timestamps. A Kafka Streams selector returning a null key or a null pair
//! (`testAggRepartition`'s keys `null` and `NULL`) is a `group_by_opt`
//! selector returning `None` here: the row is skipped.

use stoatflow_streams::{
    Consumed, Grouped, KTable, Materialized, Produced, Serdes, StreamsBuilder, Topology,
};

use crate::harness::{Cell, Engine, Scenario, Step, expect, out, pipe, pipe_to, tombstone};

fn strings() -> Consumed<String, String> {
    Consumed::with(Serdes::string(), Serdes::string())
}

/// `table` read from `input` (nullable values), its result on `out`.
fn scenario(topology: Topology) -> Scenario {
    Scenario::new(topology)
        .input::<String, Option<String>>("input")
        .output::<String, Option<String>>("out")
}

fn to_out(t: &KTable<String, String>) {
    t.to_stream()
        .to("out", Produced::with(Serdes::string(), Serdes::string()));
}

fn delete(key: &str, ts: i64) -> Step {
    pipe(key, Cell::Null, ts)
}

/// Kafka Streams' `MockAggregator.TOSTRING_ADDER` / `TOSTRING_REMOVER` over
/// the regrouped table `selector` gives.
fn to_string_aggregate(selector: fn(&String, &String) -> (String, String)) -> Topology {
    to_string_aggregate_opt(move |k, v| Some(selector(k, v)))
}

/// As [`to_string_aggregate`], the selector putting a row in no group where
/// it returns `None`.
fn to_string_aggregate_opt(
    selector: impl Fn(&String, &String) -> Option<(String, String)> + Send + Sync + 'static,
) -> Topology {
    let mut b = StreamsBuilder::new();
    let t = b
        .table("input", strings(), "input-table")
        .group_by_opt(selector, Grouped::with(Serdes::string(), Serdes::string()))
        .aggregate(
            || "0".to_owned(),
            |_, v, agg| format!("{agg}+{v}"),
            |_, v, agg| format!("{agg}-{v}"),
            Materialized::as_("topic1-Canonized").with_value_serde(Serdes::string()),
        );
    to_out(&t);
    b.build().unwrap()
}

#[test]
fn ktable_aggregate_agg_basic_subtracts_then_adds_in_one_update_when_the_key_stays() {
    scenario(to_string_aggregate(|k, v| (k.clone(), v.clone())))
        .steps([
            pipe("A", "1", 10),
            pipe("B", "2", 15),
            pipe("A", "3", 20),
            pipe("B", "4", 18),
            pipe("C", "5", 5),
            pipe("D", "6", 25),
            pipe("B", "7", 15),
            pipe("C", "8", 10),
            expect(
                "out",
                [
                    ("A", "0+1", 10),
                    ("B", "0+2", 15),
                    ("A", "0+1-1+3", 20),
                    ("B", "0+2-2+4", 18),
                    ("C", "0+5", 5),
                    ("D", "0+6", 25),
                    ("B", "0+2-2+4-4+7", 18),
                    ("C", "0+5-5+8", 10),
                ],
            ),
        ])
        .run();
}

#[test]
fn ktable_aggregate_agg_repartition_sends_a_moved_row_as_subtract_then_add() {
    // Kafka Streams' selector: key `null` selects a null key, key `NULL` a
    // null pair; both rows are skipped without output.
    let selector =
        |k: &String, v: &String| (k != "null" && k != "NULL").then(|| (v.clone(), v.clone()));
    scenario(to_string_aggregate_opt(selector))
        .steps([
            pipe("A", "1", 10),
            delete("A", 15),
            pipe("A", "1", 12),
            pipe("B", "2", 20),
            pipe("null", "3", 25),
            pipe("B", "4", 23),
            pipe("NULL", "5", 24),
            pipe("B", "7", 22),
            expect(
                "out",
                [
                    ("1", "0+1", 10),
                    ("1", "0+1-1", 15),
                    ("1", "0+1-1+1", 15),
                    ("2", "0+2", 20),
                    ("2", "0+2-2", 23),
                    ("4", "0+4", 23),
                    ("4", "0+4-4", 23),
                    ("7", "0+7", 22),
                ],
            ),
        ])
        .run();
}

#[test]
fn ktable_aggregate_count_moves_a_row_between_groups() {
    let mut b = StreamsBuilder::new();
    b.table("input", strings(), "input-table")
        .group_by(
            |_, v| (v.clone(), v.clone()),
            Grouped::with(Serdes::string(), Serdes::string()),
        )
        .count_with(Materialized::as_("count"))
        .to_stream()
        .map_values(|_, n| n.map(|n| n.to_string()))
        .to("out", Produced::with(Serdes::string(), Serdes::string()));
    scenario(b.build().unwrap())
        .steps([
            pipe("A", "green", 10),
            pipe("B", "green", 9),
            pipe("A", "blue", 12),
            pipe("C", "yellow", 15),
            pipe("D", "green", 11),
            expect(
                "out",
                [
                    ("green", "1", 10),
                    ("green", "2", 10),
                    ("green", "1", 12),
                    ("blue", "1", 12),
                    ("yellow", "1", 15),
                    ("green", "2", 12),
                ],
            ),
        ])
        .run();
}

#[test]
fn ktable_aggregate_removes_the_old_value_before_adding_the_new() {
    let mut b = StreamsBuilder::new();
    let t = b
        .table("input", strings(), "input-table")
        .group_by(
            |k, _| (k[..1].to_owned(), k[1..2].to_owned()),
            Grouped::with(Serdes::string(), Serdes::string()),
        )
        .aggregate(
            String::new,
            |_, v, agg| agg + v,
            |_, v, agg: String| agg.replace(v.as_str(), ""),
            Materialized::as_("someStore").with_value_serde(Serdes::string()),
        );
    to_out(&t);
    scenario(b.build().unwrap())
        .steps([
            pipe("11", "A", 10),
            pipe("12", "B", 8),
            delete("11", 12),
            pipe("12", "C", 6),
            expect(
                "out",
                [
                    ("1", "1", 10),
                    ("1", "12", 10),
                    ("1", "2", 12),
                    ("1", "2", 12),
                ],
            ),
        ])
        .run();
}

#[test]
fn kgrouped_table_reduce_uses_the_adder_and_the_subtractor() {
    let mut b = StreamsBuilder::new();
    b.table("input", strings(), "store")
        .group_by(
            |k, v| (k.clone(), v.parse::<f64>().expect("a number") as i64),
            Grouped::with(Serdes::string(), Serdes::i64()),
        )
        .reduce(|a, v| a + v, |a, v| a - v, Materialized::as_("reduced"))
        .to_stream()
        .map_values(|_, n| n.map(|n| n.to_string()))
        .to("out", Produced::with(Serdes::string(), Serdes::string()));
    scenario(b.build().unwrap())
        .steps([
            pipe("A", "1.1", 10),
            pipe("B", "2.2", 11),
            expect("out", [("A", "1", 10), ("B", "2", 11)]),
            pipe("A", "2.6", 30),
            pipe("B", "1.3", 30),
            pipe("A", "5.7", 50),
            pipe("B", "6.2", 20),
            expect(
                "out",
                [
                    ("A", "2", 30),
                    ("B", "1", 30),
                    ("A", "5", 50),
                    ("B", "6", 30),
                ],
            ),
        ])
        .run();
}

#[test]
fn regrouped_aggregates_survive_a_crash_and_keep_subtracting() {
    // The regrouping's remembered old values and the aggregate are both
    // changelogged: after a crash, a moved row still leaves its old group.
    scenario(to_string_aggregate(|_, v| (v.clone(), v.clone())))
        .steps([
            pipe("A", "1", 10),
            pipe("B", "1", 11),
            Step::Crash,
            pipe("A", "2", 12),
            expect(
                "out",
                [
                    ("1", "0+1", 10),
                    ("1", "0+1+1", 11),
                    ("1", "0+1+1-1", 12),
                    ("2", "0+2", 12),
                ],
            ),
        ])
        .run();
}

#[test]
fn table_to_stream_forwards_a_delete_as_a_tombstone() {
    // Kafka Streams' `KTableImplTest`/`KTableSourceTest`: `toStream()`
    // forwards null values, a delete of an absent key too.
    let mut b = StreamsBuilder::new();
    to_out(&b.table("input", strings(), "input-table"));
    scenario(b.build().unwrap())
        .steps([
            pipe("A", "01", 10),
            delete("A", 12),
            delete("B", 13),
            expect(
                "out",
                [out("A", "01", 10), tombstone("A", 12), tombstone("B", 13)],
            ),
        ])
        .run();
}

#[test]
fn kstream_to_table_materializes_the_latest_value_per_key() {
    // `KStreamImplTest.shouldMaterializeKTableFromKStream`: the store holds
    // the latest value per key.
    let mut b = StreamsBuilder::new();
    let t = b
        .stream("input", strings())
        .to_table_with(Materialized::as_("to-table-store"));
    assert_eq!(t.queryable_store_name(), Some("to-table-store"));
    let o = Scenario::new(b.build().unwrap())
        .input::<String, String>("input")
        .steps([pipe("A", "01", 0), pipe("B", "02", 0), pipe("A", "03", 0)])
        .run();
    let store = o.store::<stoatflow_streams::KeyValueStoreOf<String, String>>("to-table-store");
    let rows: Vec<_> = stoatflow_streams::KeyValueStore::all(&*store.borrow())
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k, v.value))
        .collect();
    assert_eq!(rows, [("A".into(), "03".into()), ("B".into(), "02".into())]);
}

#[test]
fn kstream_to_table_after_a_key_change_repartitions() {
    // `KStreamImplTest.shouldSupportKeyChangeKTableFromKStream`.
    let mut b = StreamsBuilder::new();
    b.stream("input", strings())
        .map(|k, v| (i32::from(k.as_bytes()[0]) - i32::from(b'A'), v))
        .to_table_with(Materialized::with(Serdes::i32(), Serdes::string()))
        .to_stream()
        .to("out", Produced::with(Serdes::i32(), Serdes::string()));
    let topology = b.build().unwrap();
    assert_eq!(topology.subtopology_count(), 2);
    Scenario::new(topology)
        .input::<String, String>("input")
        .output::<i32, Option<String>>("out")
        .steps([
            pipe("A", "01", 5),
            pipe("B", "02", 100),
            pipe("C", "03", 0),
            pipe("D", "04", 0),
            pipe("A", "05", 10),
            pipe("A", "06", 8),
            expect(
                "out",
                [
                    (0, "01", 5),
                    (1, "02", 100),
                    (2, "03", 0),
                    (3, "04", 0),
                    (0, "05", 10),
                    (0, "06", 8),
                ],
            ),
        ])
        .run();
}

#[test]
fn a_mapped_table_without_a_value_serde_regroups_and_restores() {
    // `map_values` loses the table's value serde; the regrouping remembers
    // each row's selected pair with `Grouped`'s serdes, so the topology is
    // accepted and a crash loses nothing.
    let mut b = StreamsBuilder::new();
    let t = b
        .table("input", strings(), "input-table")
        .map_values(|_, v| v.len())
        .group_by(
            |k, n: &usize| (format!("len{n}"), k.clone()),
            Grouped::with(Serdes::string(), Serdes::string()),
        )
        .aggregate(
            String::new,
            |_, v, agg| agg + v,
            |_, v, agg: String| agg.replace(v.as_str(), ""),
            Materialized::as_("by-length"),
        );
    to_out(&t);
    scenario(b.build().unwrap())
        .steps([
            pipe("a", "x", 1),
            pipe("b", "y", 2),
            Step::Crash,
            pipe("a", "xy", 3),
            expect(
                "out",
                [
                    ("len1", "a", 1),
                    ("len1", "ab", 2),
                    ("len1", "b", 3),
                    ("len2", "a", 3),
                ],
            ),
        ])
        .run();
}

fn nullable_strings() -> Consumed<String, Option<String>> {
    Consumed::with(Serdes::string(), Serdes::nullable(Serdes::string()))
}

/// The rows of the key-value store `name` a run left, on `engine`.
fn rows_on(s: &Scenario, engine: Engine, name: &str) -> Vec<(String, String)> {
    let o = s.run_on(engine);
    let store = o.store::<stoatflow_streams::KeyValueStoreOf<String, String>>(name);
    let all = stoatflow_streams::KeyValueStore::all(&*store.borrow()).unwrap();
    all.into_iter().map(|(k, v)| (k, v.value)).collect()
}

#[test]
fn kstream_to_table_deleting_deletes_on_a_null_and_forwards_the_delete() {
    // Kafka Streams' `stream(..).toTable()` on nulls: a null value deletes
    // the key's row and `toStream()` forwards it as a null, a delete of an
    // absent key too (as `table_to_stream_forwards_a_delete_as_a_tombstone`).
    let mut b = StreamsBuilder::new();
    let t = b
        .stream("input", nullable_strings())
        .to_table_deleting_with(Materialized::as_("to-table-store"));
    assert_eq!(t.queryable_store_name(), Some("to-table-store"));
    to_out(&t);
    let s = scenario(b.build().unwrap()).steps([
        pipe("A", "01", 10),
        pipe("B", "02", 11),
        delete("A", 12),
        delete("C", 13),
        expect(
            "out",
            [
                out("A", "01", 10),
                out("B", "02", 11),
                tombstone("A", 12),
                tombstone("C", 13),
            ],
        ),
    ]);
    s.run();
    for engine in [Engine::InMemory, Engine::Persistent] {
        assert_eq!(
            rows_on(&s, engine, "to-table-store"),
            [("B".to_owned(), "02".to_owned())],
            "{engine:?}"
        );
    }
}

#[test]
fn kstream_to_table_deleting_after_a_key_change_carries_the_null_through_the_repartition() {
    let mut b = StreamsBuilder::new();
    b.stream("input", nullable_strings())
        .map(|k, v| (i32::from(k.as_bytes()[0]) - i32::from(b'A'), v))
        .to_table_deleting_with(Materialized::with(Serdes::i32(), Serdes::string()))
        .to_stream()
        .to("out", Produced::with(Serdes::i32(), Serdes::string()));
    let topology = b.build().unwrap();
    assert_eq!(topology.subtopology_count(), 2);
    Scenario::new(topology)
        .input::<String, Option<String>>("input")
        .output::<i32, Option<String>>("out")
        .steps([
            pipe("A", "01", 5),
            pipe("B", "02", 6),
            delete("A", 7),
            expect("out", [out(0, "01", 5), out(1, "02", 6), tombstone(0, 7)]),
        ])
        .run();
}

#[test]
fn a_delete_through_to_table_deleting_is_subtracted_from_its_group() {
    // `KTableAggregateTest.testCount`'s shape on a `stream(..).toTable()`:
    // a deleted row leaves its group's count.
    let mut b = StreamsBuilder::new();
    b.stream("input", nullable_strings())
        .to_table_deleting()
        .group_by(
            |_, v| (v.clone(), v.clone()),
            Grouped::with(Serdes::string(), Serdes::string()),
        )
        .count()
        .to_stream()
        .map_values(|_, n| n.map(|n| n.to_string()))
        .to("out", Produced::with(Serdes::string(), Serdes::string()));
    scenario(b.build().unwrap())
        .steps([
            pipe("A", "green", 10),
            pipe("B", "green", 9),
            delete("A", 12),
            expect(
                "out",
                [("green", "1", 10), ("green", "2", 10), ("green", "1", 12)],
            ),
        ])
        .run();
}

#[test]
fn a_delete_through_to_table_deleting_retracts_a_table_table_join_result() {
    // `KTableKTableInnerJoinTest`'s rule on a `stream(..).toTable()` side:
    // removing a row makes its result a tombstone.
    let mut b = StreamsBuilder::new();
    let left = b.stream("input", nullable_strings()).to_table_deleting();
    let right = b.table("right", strings(), "right-table");
    left.join(&right, |l, r| format!("{l}+{r}"))
        .to_stream()
        .to("out", Produced::with(Serdes::string(), Serdes::string()));
    scenario(b.build().unwrap())
        .input::<String, String>("right")
        .steps([
            pipe_to("right", "A", "Y0", 1),
            pipe("A", "X0", 5),
            expect("out", [out("A", "X0+Y0", 5)]),
            delete("A", 6),
            expect("out", [tombstone("A", 6)]),
        ])
        .run();
}

#[test]
fn a_row_whose_new_value_selects_no_group_leaves_its_old_group() {
    // Kafka Streams' `KTableRepartitionMap`: the old value's pair is
    // subtracted from its group; a new value that selects nothing adds
    // nothing, and the next update has no old pair to subtract.
    let selector = |_: &String, v: &String| (v != "skip").then(|| (v.clone(), v.clone()));
    scenario(to_string_aggregate_opt(selector))
        .steps([
            pipe("A", "1", 10),
            pipe("A", "skip", 11),
            pipe("A", "2", 12),
            pipe("A", "skip", 13),
            delete("A", 14),
            expect(
                "out",
                [
                    ("1", "0+1", 10),
                    ("1", "0+1-1", 11),
                    ("2", "0+2", 12),
                    ("2", "0+2-2", 13),
                ],
            ),
        ])
        .run();
}

#[test]
fn kstream_group_by_opt_drops_the_records_it_selects_no_key_for() {
    // Kafka Streams' `KStream.groupBy` with a selector returning null: the
    // record is dropped before the repartition topic, and counts nowhere.
    let mut b = StreamsBuilder::new();
    b.stream("input", strings())
        .group_by_opt(
            |_, v: &String| {
                v.split(':')
                    .next()
                    .filter(|g| !g.is_empty())
                    .map(str::to_owned)
            },
            Grouped::with(Serdes::string(), Serdes::string()),
        )
        .count()
        .to_stream()
        .map_values(|_, n| n.map(|n| n.to_string()))
        .to("out", Produced::with(Serdes::string(), Serdes::string()));
    let topology = b.build().unwrap();
    assert_eq!(topology.subtopology_count(), 2);
    Scenario::new(topology)
        .input::<String, String>("input")
        .output::<String, Option<String>>("out")
        .steps([
            pipe("A", "x:1", 1),
            pipe("B", ":2", 2),
            pipe("C", "y:3", 3),
            pipe("D", "x:4", 4),
            expect("out", [("x", "1", 1), ("y", "1", 3), ("x", "2", 4)]),
        ])
        .run();
}

#[test]
fn a_to_table_deleting_store_restores_its_rows_and_deletes_after_a_crash() {
    // The store's values go through the stream's nullable serde (no value
    // serde given): its changelog restores the rows a crash lost, and a
    // delete before the crash stays a delete.
    let mut b = StreamsBuilder::new();
    let t = b
        .stream("input", nullable_strings())
        .to_table_deleting_with(Materialized::as_("restored"));
    to_out(&t);
    let s = scenario(b.build().unwrap()).steps([
        pipe("A", "01", 10),
        pipe("B", "02", 11),
        pipe("C", "03", 12),
        delete("A", 13),
        Step::Crash,
        delete("B", 14),
        pipe("D", "04", 15),
        expect(
            "out",
            [
                out("A", "01", 10),
                out("B", "02", 11),
                out("C", "03", 12),
                tombstone("A", 13),
                tombstone("B", 14),
                out("D", "04", 15),
            ],
        ),
    ]);
    s.run();
    let want = [("C".to_owned(), "03".to_owned()), ("D".into(), "04".into())];
    for engine in [Engine::InMemory, Engine::Persistent] {
        assert_eq!(rows_on(&s, engine, "restored"), want, "{engine:?}");
    }
}
