//! Stream–global-table joins (docs/global-tables.md): a record piped into the
//! global topic updates the store at once; a stream record joins the row its key
//! mapper names as the store is when the record is processed; global updates
//! emit nothing. The tables transcribe the expectations of Kafka Streams'
//! `KStreamGlobalKTableJoinTest` and `KStreamGlobalKTableLeftJoinTest`: stream
//! keys 0..4, values `<prefix><i>[,FKey<i>]`, global keys `FKey<i>`, the joiner
//! `<stream value>+<global value or null>`.
//!
//! A global store kept by user code (`add_global_store`) is read by a processor
//! through `ProcessorContext::global_store`.
//!
//! Beside the tables, the driver's `global_store` accessor and what a global
//! topic leaves alone (the watermark) are tested through the driver directly.

use stoatflow_streams::{
    Consumed, GlobalStoreWriter, Materialized, ProcessError, Processor, ProcessorContext, Produced,
    Record, Serdes, StreamsBuilder, StreamsConfig, Topology, TopologyError,
};
use stoatflow_testing::{DriverError, TopologyTestDriver};
use stoatflow_time::RecordTimestampExtractor;

use crate::harness::{Cell, OUT, Scenario, Step, expect, nothing, pipe_to};

const STREAM: &str = "streamTopic";
const GLOBAL: &str = "globalTableTopic";
const STORE: &str = "global-store";

fn topology(left: bool) -> Topology {
    let mut b = StreamsBuilder::new();
    let stream = b.stream(STREAM, Consumed::with(Serdes::i32(), Serdes::string()));
    let table = b.global_table(
        GLOBAL,
        Consumed::with(Serdes::string(), Serdes::string()),
        Materialized::as_(STORE),
    );
    // The second comma-separated token is the global key; without one, no key.
    let key_mapper = |_: &i32, v: &String| v.split(',').nth(1).map(str::to_owned);
    let joined = if left {
        stream.left_join_global(&table, key_mapper, |v: &String, g: Option<&String>| {
            format!("{v}+{}", g.map_or("null", String::as_str))
        })
    } else {
        stream.join_global(&table, key_mapper, |v: &String, g: &String| {
            format!("{v}+{g}")
        })
    };
    joined.to(OUT, Produced::with(Serdes::i32(), Serdes::string()));
    b.build().expect("topology")
}

fn scenario(left: bool) -> Scenario {
    Scenario::new(topology(left))
        .config(StreamsConfig::new("it"))
        .input::<i32, String>(STREAM)
        .input::<String, Option<String>>(GLOBAL)
        .output::<i32, String>(OUT)
}

/// Kafka Streams' `pushToStream(n, prefix, includeForeignKey)`, every record at `ts`.
fn stream(n: i32, prefix: &str, foreign_key: bool, ts: i64) -> Vec<Step> {
    (0..n)
        .map(|i| {
            let fk = if foreign_key {
                format!(",FKey{i}")
            } else {
                String::new()
            };
            pipe_to(STREAM, i, format!("{prefix}{i}{fk}").as_str(), ts)
        })
        .collect()
}

/// Kafka Streams' `pushToGlobalTable(n, prefix)`.
fn global(n: i32, prefix: &str) -> Vec<Step> {
    (0..n)
        .map(|i| {
            pipe_to(
                GLOBAL,
                format!("FKey{i}").as_str(),
                format!("{prefix}{i}").as_str(),
                0,
            )
        })
        .collect()
}

/// Kafka Streams' `pushNullValueToGlobalTable(n)`.
fn global_deletes(n: i32) -> Vec<Step> {
    (0..n)
        .map(|i| pipe_to(GLOBAL, format!("FKey{i}").as_str(), Cell::Null, 0))
        .collect()
}

fn out(rows: &[(i32, &str)], ts: i64) -> Step {
    expect(OUT, rows.iter().map(|&(k, v)| (k, v, ts)))
}

fn run(left: bool, phases: Vec<Vec<Step>>) {
    scenario(left).steps(phases.into_iter().flatten()).run();
}

#[test]
fn inner_join_with_an_empty_global_table_emits_nothing() {
    run(false, vec![stream(2, "X", true, 1), vec![nothing(OUT)]]);
}

#[test]
fn left_join_with_an_empty_global_table_joins_null() {
    run(
        true,
        vec![
            stream(2, "X", true, 1),
            vec![out(&[(0, "X0,FKey0+null"), (1, "X1,FKey1+null")], 1)],
        ],
    );
}

#[test]
fn inner_join_global_updates_emit_nothing_and_later_records_see_them() {
    run(
        false,
        vec![
            stream(2, "X", true, 1),
            vec![nothing(OUT)],
            global(2, "Y"),
            vec![nothing(OUT)],
            stream(4, "X", true, 2),
            vec![out(&[(0, "X0,FKey0+Y0"), (1, "X1,FKey1+Y1")], 2)],
            global(4, "YY"),
            vec![nothing(OUT)],
            stream(4, "X", true, 3),
            vec![out(
                &[
                    (0, "X0,FKey0+YY0"),
                    (1, "X1,FKey1+YY1"),
                    (2, "X2,FKey2+YY2"),
                    (3, "X3,FKey3+YY3"),
                ],
                3,
            )],
            global(4, "YYY"),
            vec![nothing(OUT)],
        ],
    );
}

#[test]
fn left_join_global_updates_emit_nothing_and_later_records_see_them() {
    run(
        true,
        vec![
            stream(2, "X", true, 1),
            vec![out(&[(0, "X0,FKey0+null"), (1, "X1,FKey1+null")], 1)],
            global(2, "Y"),
            vec![nothing(OUT)],
            stream(4, "X", true, 2),
            vec![out(
                &[
                    (0, "X0,FKey0+Y0"),
                    (1, "X1,FKey1+Y1"),
                    (2, "X2,FKey2+null"),
                    (3, "X3,FKey3+null"),
                ],
                2,
            )],
            global(4, "YY"),
            vec![nothing(OUT)],
            stream(4, "X", true, 3),
            vec![out(
                &[
                    (0, "X0,FKey0+YY0"),
                    (1, "X1,FKey1+YY1"),
                    (2, "X2,FKey2+YY2"),
                    (3, "X3,FKey3+YY3"),
                ],
                3,
            )],
            global(4, "YYY"),
            vec![nothing(OUT)],
        ],
    );
}

#[test]
fn inner_join_only_where_a_row_matches() {
    run(
        false,
        vec![
            global(2, "Y"),
            vec![nothing(OUT)],
            stream(4, "X", true, 5),
            vec![out(&[(0, "X0,FKey0+Y0"), (1, "X1,FKey1+Y1")], 5)],
        ],
    );
}

#[test]
fn left_join_whether_or_not_a_row_matches() {
    run(
        true,
        vec![
            global(2, "Y"),
            stream(4, "X", true, 5),
            vec![out(
                &[
                    (0, "X0,FKey0+Y0"),
                    (1, "X1,FKey1+Y1"),
                    (2, "X2,FKey2+null"),
                    (3, "X3,FKey3+null"),
                ],
                5,
            )],
        ],
    );
}

#[test]
fn a_null_global_value_deletes_the_row_for_an_inner_join() {
    run(
        false,
        vec![
            global(4, "Y"),
            stream(4, "X", true, 1),
            vec![out(
                &[
                    (0, "X0,FKey0+Y0"),
                    (1, "X1,FKey1+Y1"),
                    (2, "X2,FKey2+Y2"),
                    (3, "X3,FKey3+Y3"),
                ],
                1,
            )],
            global_deletes(2),
            vec![nothing(OUT)],
            stream(4, "XX", true, 2),
            vec![out(&[(2, "XX2,FKey2+Y2"), (3, "XX3,FKey3+Y3")], 2)],
        ],
    );
}

#[test]
fn a_null_global_value_deletes_the_row_for_a_left_join() {
    run(
        true,
        vec![
            global(4, "Y"),
            stream(4, "X", true, 1),
            vec![out(
                &[
                    (0, "X0,FKey0+Y0"),
                    (1, "X1,FKey1+Y1"),
                    (2, "X2,FKey2+Y2"),
                    (3, "X3,FKey3+Y3"),
                ],
                1,
            )],
            global_deletes(2),
            vec![nothing(OUT)],
            stream(4, "XX", true, 2),
            vec![out(
                &[
                    (0, "XX0,FKey0+null"),
                    (1, "XX1,FKey1+null"),
                    (2, "XX2,FKey2+Y2"),
                    (3, "XX3,FKey3+Y3"),
                ],
                2,
            )],
        ],
    );
}

#[test]
fn no_look_up_key_drops_for_an_inner_join_and_joins_null_for_a_left_join() {
    run(
        false,
        vec![
            global(4, "Y"),
            stream(4, "XXX", false, 1),
            vec![nothing(OUT)],
        ],
    );
    run(
        true,
        vec![
            global(4, "Y"),
            stream(4, "XXX", false, 1),
            vec![out(
                &[
                    (0, "XXX0+null"),
                    (1, "XXX1+null"),
                    (2, "XXX2+null"),
                    (3, "XXX3+null"),
                ],
                1,
            )],
        ],
    );
}

#[test]
fn restarts_restore_the_global_store_from_its_topic() {
    let restart = |step: Step| {
        vec![
            global(4, "Y"),
            global_deletes(1),
            vec![step],
            stream(4, "X", true, 1),
            vec![out(
                &[
                    (0, "X0,FKey0+null"),
                    (1, "X1,FKey1+Y1"),
                    (2, "X2,FKey2+Y2"),
                    (3, "X3,FKey3+Y3"),
                ],
                1,
            )],
        ]
    };
    run(true, restart(Step::Restart));
    run(true, restart(Step::Crash));
}

#[test]
fn a_global_topic_moves_no_time_and_its_store_reads_typed() {
    let driver = TopologyTestDriver::new(topology(true), StreamsConfig::new("it")).unwrap();
    let g = driver.create_input_topic(GLOBAL, Serdes::string(), Serdes::nullable(Serdes::string()));
    g.pipe_input_with_timestamp("FKey0".into(), Some("Y0".into()), 1_000)
        .unwrap();
    g.pipe_input_with_timestamp("FKey1".into(), Some("Y1".into()), 2_000)
        .unwrap();
    g.pipe_input_with_timestamp("FKey1".into(), None, 3_000)
        .unwrap();
    assert_eq!(
        driver.watermark().as_millis(),
        i64::MIN,
        "no time from a global topic"
    );
    let store = driver.global_store::<String, String>(STORE).unwrap();
    let rows: Vec<(String, String, i64)> = store
        .all()
        .into_iter()
        .map(|(k, v)| (k, v.value, v.timestamp))
        .collect();
    assert_eq!(rows, vec![("FKey0".to_owned(), "Y0".to_owned(), 1_000)]);
    assert!(matches!(
        driver.global_store::<String, String>("nope"),
        Err(DriverError::NoStore { known, .. }) if known == STORE
    ));
    assert!(matches!(
        driver.global_store::<i32, String>(STORE),
        Err(DriverError::StoreType { .. })
    ));
    let restarted = driver.restart().unwrap();
    let store = restarted.global_store::<String, String>(STORE).unwrap();
    assert_eq!(
        store.get(&"FKey0".to_owned()).map(|v| v.value),
        Some("Y0".to_owned())
    );
    assert_eq!(store.approximate_num_entries(), 1);
    assert!(
        restarted
            .describe()
            .contains("Global store: global-store (topic: globalTableTopic)")
    );
}

#[test]
fn a_global_topic_read_twice_or_with_a_watermark_strategy_is_refused() {
    let mut b = StreamsBuilder::new();
    let _ = b.stream(GLOBAL, Consumed::with(Serdes::string(), Serdes::string()));
    let _ = b.global_table(
        GLOBAL,
        Consumed::with(Serdes::string(), Serdes::string()),
        Materialized::as_(STORE),
    );
    assert!(
        matches!(b.build(), Err(TopologyError::TopicAlreadyRead { topic, .. }) if topic == GLOBAL)
    );

    let mut b = StreamsBuilder::new();
    let _ = b.global_table(
        GLOBAL,
        Consumed::with(Serdes::string(), Serdes::string())
            .with_timestamp_extractor(RecordTimestampExtractor),
        Materialized::as_(STORE),
    );
    let err = b.build().unwrap_err().to_string();
    assert!(err.contains(GLOBAL) && err.contains("event time"), "{err}");
}

/// `add_global_store`'s store: the update keeps each key's value upper-cased,
/// ignores the value `skip` and deletes on a null.
const UPPER: &str = "upper";

/// Looks each stream value up in [`UPPER`] from a processor: `<value>=<row or none>`.
struct LooksUp;

impl Processor<i32, String, i32, String> for LooksUp {
    fn process(
        &mut self,
        ctx: &mut ProcessorContext<'_, i32, String>,
        r: Record<i32, String>,
    ) -> Result<(), ProcessError> {
        let store = ctx
            .global_store::<String, String>(UPPER)
            .expect("the global store, with these types");
        let row = store.get(&r.value).map_or("none".to_owned(), |v| v.value);
        let value = format!("{}={row}", r.value);
        ctx.forward(Record::new(r.key, value, r.timestamp))
    }
}

fn processed_topology() -> Topology {
    let mut b = StreamsBuilder::new();
    b.add_global_store(
        UPPER,
        GLOBAL,
        Consumed::with(Serdes::string(), Serdes::string()),
        |w: &mut GlobalStoreWriter<'_, String, String>, r: Record<String, Option<String>>| {
            match r.value {
                Some(v) if v == "skip" => {}
                Some(v) => w.put(r.key, v.to_uppercase()),
                None => w.delete(&r.key),
            }
            Ok(())
        },
    );
    b.stream(STREAM, Consumed::with(Serdes::i32(), Serdes::string()))
        .process(|| LooksUp, &[])
        .to(OUT, Produced::with(Serdes::i32(), Serdes::string()));
    b.build().expect("topology")
}

#[test]
fn a_global_store_kept_by_user_code_is_read_by_processors_and_restored_on_restart() {
    Scenario::new(processed_topology())
        .config(StreamsConfig::new("it"))
        .input::<i32, String>(STREAM)
        .input::<String, Option<String>>(GLOBAL)
        .output::<i32, String>(OUT)
        .steps([
            pipe_to(STREAM, 0, "a", 1),
            out(&[(0, "a=none")], 1),
            pipe_to(GLOBAL, "a", "apple", 0),
            pipe_to(GLOBAL, "b", "banana", 0),
            pipe_to(GLOBAL, "b", "skip", 0),
            nothing(OUT),
            pipe_to(STREAM, 1, "a", 2),
            pipe_to(STREAM, 2, "b", 2),
            out(&[(1, "a=APPLE"), (2, "b=BANANA")], 2),
            pipe_to(GLOBAL, "a", Cell::Null, 0),
            Step::Crash,
            pipe_to(STREAM, 3, "a", 3),
            pipe_to(STREAM, 4, "b", 3),
            out(&[(3, "a=none"), (4, "b=BANANA")], 3),
        ])
        .run();
}
