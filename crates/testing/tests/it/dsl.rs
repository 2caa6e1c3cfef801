//! The stateless KStream operators, KTable basics, non-windowed aggregation,
//! and source time (assigners and extractors) through the driver.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use stoatflow_streams::{
    Consumed, Grouped, Materialized, Produced, Serde, Serdes, StreamsBuilder, StreamsConfig,
    Topology,
};
use stoatflow_time::{TimestampExtractor, WatermarkStrategy};

use crate::harness::{Cell, Data, Out, Scenario, out, pipe_to};

/// Pipes `input` into `in` and returns what each of `outputs` received.
fn run(t: Topology, input: &[(&str, &str, i64)], outputs: &[&'static str]) -> Vec<Vec<Out>> {
    let o = Scenario::new(t)
        .config(StreamsConfig::new("dsl"))
        .input::<String, String>("in")
        .text_outputs(outputs)
        .steps(input.iter().map(|&(k, v, ts)| pipe_to("in", k, v, ts)))
        .run();
    outputs.iter().map(|topic| o.all(topic)).collect()
}

fn s(k: &str, v: &str, t: i64) -> Out {
    out(k, v, t)
}

fn strings() -> Produced<String, String> {
    Produced::with(Serdes::string(), Serdes::string())
}

fn source(b: &mut StreamsBuilder) -> stoatflow_streams::KStream<String, String> {
    b.stream("in", Consumed::with(Serdes::string(), Serdes::string()))
}

#[test]
fn filter_and_filter_not_split_the_stream() {
    let mut b = StreamsBuilder::new();
    let src = source(&mut b);
    src.filter(|_, v| v.starts_with('a')).to("yes", strings());
    src.filter_not(|_, v| v.starts_with('a'))
        .to("no", strings());
    let out = run(
        b.build().unwrap(),
        &[("k", "apple", 1), ("k", "pear", 2)],
        &["yes", "no"],
    );
    assert_eq!(out, [vec![s("k", "apple", 1)], vec![s("k", "pear", 2)]]);
}

#[test]
fn map_map_values_select_key_keep_timestamps() {
    let mut b = StreamsBuilder::new();
    let src = source(&mut b);
    src.map(|k, v| (v, k)).to("swapped", strings());
    src.map_values(|k, v| format!("{k}:{v}"))
        .to("joined", strings());
    src.select_key(|_, v| v.to_uppercase())
        .to("rekeyed", strings());
    let out = run(
        b.build().unwrap(),
        &[("k", "v", 7)],
        &["swapped", "joined", "rekeyed"],
    );
    assert_eq!(
        out,
        [
            vec![s("v", "k", 7)],
            vec![s("k", "k:v", 7)],
            vec![s("V", "v", 7)]
        ]
    );
}

#[test]
fn flat_map_and_flat_map_values_fan_out() {
    let mut b = StreamsBuilder::new();
    let src = source(&mut b);
    src.flat_map(|k, v| {
        v.split(',')
            .map(|p| (format!("{k}-{p}"), p.to_owned()))
            .collect()
    })
    .to("fm", strings());
    src.flat_map_values(|_, v| v.split(',').map(str::to_owned).collect())
        .to("fmv", strings());
    let out = run(
        b.build().unwrap(),
        &[("k", "a,b", 3), ("e", "", 4)],
        &["fm", "fmv"],
    );
    assert_eq!(out[0], [s("k-a", "a", 3), s("k-b", "b", 3), s("e-", "", 4)]);
    assert_eq!(out[1], [s("k", "a", 3), s("k", "b", 3), s("e", "", 4)]);
}

#[test]
fn peek_and_foreach_see_every_record() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (p, f) = (seen.clone(), seen.clone());
    let mut b = StreamsBuilder::new();
    let src = source(&mut b);
    src.peek(move |k, _| p.lock().unwrap().push(format!("peek {k}")))
        .to("out", strings());
    src.foreach(move |k, _| f.lock().unwrap().push(format!("foreach {k}")));
    let out = run(
        b.build().unwrap(),
        &[("a", "1", 1), ("b", "2", 2)],
        &["out"],
    );
    assert_eq!(out[0].len(), 2);
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    // Once per record in each run: the scenario runs on both store engines.
    let once = ["foreach a", "foreach b", "peek a", "peek b"];
    assert_eq!(seen, once.iter().flat_map(|s| [*s, *s]).collect::<Vec<_>>());
}

#[test]
fn split_routes_to_the_first_matching_branch_and_merge_joins_streams() {
    let mut b = StreamsBuilder::new();
    let branches = source(&mut b)
        .split()
        .named("b-")
        .branch(|_, v| v.len() == 1, Some("short"))
        .branch(|_, v| v.len() <= 3, Some("mid"))
        .default_branch();
    assert_eq!(
        branches.keys().cloned().collect::<Vec<_>>(),
        ["b-0", "b-mid", "b-short"]
    );
    branches["b-short"].to("short", strings());
    branches["b-mid"].to("mid", strings());
    branches["b-0"].to("long", strings());
    branches["b-short"]
        .merge(&branches["b-0"])
        .to("merged", strings());
    let out = run(
        b.build().unwrap(),
        &[("k", "a", 1), ("k", "abc", 2), ("k", "abcdef", 3)],
        &["short", "mid", "long", "merged"],
    );
    assert_eq!(out[0], [s("k", "a", 1)]);
    assert_eq!(out[1], [s("k", "abc", 2)]);
    assert_eq!(out[2], [s("k", "abcdef", 3)]);
    assert_eq!(out[3], [s("k", "a", 1), s("k", "abcdef", 3)]);
}

#[test]
fn repartition_passes_records_through_an_internal_topic() {
    let mut b = StreamsBuilder::new();
    source(&mut b)
        .select_key(|_, v| v.clone())
        .repartition(Grouped::with(Serdes::string(), Serdes::string()))
        .to("out", strings());
    let t = b.build().unwrap();
    assert_eq!(t.subtopology_count(), 2);
    assert_eq!(run(t, &[("k", "v", 5)], &["out"])[0], [s("v", "v", 5)]);
}

#[test]
fn grouped_count_reduce_aggregate_and_table_operators() {
    let mut b = StreamsBuilder::new();
    let grouped = source(&mut b).group_by_key();
    grouped
        .count()
        .to_stream()
        .map_values(|_, c| c.map(|c| c.to_string()))
        .to("count", strings());
    grouped
        .reduce(|a, v| format!("{a}|{v}"), Materialized::as_("reduced"))
        .to_stream()
        .to("reduce", strings());
    grouped
        .aggregate(
            || 0i64,
            |_, v: &String, a| a + v.len() as i64,
            Materialized::as_("lens").with_value_serde(Serdes::i64()),
        )
        .filter(|_, n| *n > 2)
        .map_values(|_, n| n.to_string())
        .to_stream()
        .map_values(|_, v| v.unwrap_or_else(|| "<tombstone>".into()))
        .to("agg", strings());
    let out = run(
        b.build().unwrap(),
        &[("a", "xy", 1), ("a", "z", 3), ("b", "q", 2)],
        &["count", "reduce", "agg"],
    );
    assert_eq!(out[0], [s("a", "1", 1), s("a", "2", 3), s("b", "1", 2)]);
    assert_eq!(out[1], [s("a", "xy", 1), s("a", "xy|z", 3), s("b", "q", 2)]);
    assert_eq!(
        out[2],
        [
            s("a", "<tombstone>", 1),
            s("a", "3", 3),
            s("b", "<tombstone>", 2)
        ]
    );
}

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
struct Order {
    placed_at: i64,
}

/// An order in a table is the number it was placed at.
impl Data for Order {
    fn serde() -> impl Serde<Self> + 'static {
        Serdes::json::<Order>()
    }
    fn from_cell(cell: &Cell) -> Self {
        Order {
            placed_at: i64::from_cell(cell),
        }
    }
    fn render(&self) -> Option<String> {
        self.placed_at.render()
    }
}

#[test]
fn a_watermark_strategys_assigner_sets_event_time_in_the_driver() {
    let o = Scenario::build(|b| {
        b.stream(
            "in",
            Consumed::with(Serdes::string(), Serdes::json::<Order>()).with_watermark_strategy(
                WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(30))
                    .with_timestamp_assigner(|_k: &String, o: &Order, _ts| o.placed_at),
            ),
        )
        .map_values(|_, o| o.placed_at.to_string())
        .to("out", strings());
    })
    .config(StreamsConfig::new("dsl"))
    .input::<String, Order>("in")
    .output::<String, String>("out")
    .step(pipe_to("in", "k", 1_234, 99))
    .run();
    assert_eq!(
        o.all("out")[0].ts,
        1_234,
        "the assigner's time, not the log's"
    );
    assert_eq!(
        o.metrics.watermark.as_millis(),
        1_234,
        "the generator never runs in the driver: no 30 s lag"
    );
}

struct ValueOrPartitionTime;
impl TimestampExtractor<String, String> for ValueOrPartitionTime {
    fn extract(&self, _: &String, v: &String, _record_ts: i64, partition_time: i64) -> i64 {
        v.parse().unwrap_or(partition_time)
    }
}

#[test]
fn a_kafka_streams_timestamp_extractor_sees_partition_time() {
    let mut b = StreamsBuilder::new();
    b.stream(
        "in",
        Consumed::with(Serdes::string(), Serdes::string())
            .with_timestamp_extractor(ValueOrPartitionTime),
    )
    .to("out", strings());
    let out = run(
        b.build().unwrap(),
        &[("k", "50", 1), ("k", "x", 2), ("k", "40", 3)],
        &["out"],
    );
    assert_eq!(
        out[0],
        [s("k", "50", 50), s("k", "x", 50), s("k", "40", 40)]
    );
}

#[test]
fn aggregate_infers_a_standard_value_serde_as_count_does_and_restores_with_it() {
    // Without the inference the changelogged stores have no value serde and
    // the driver refuses the topology (`TopologyError::MissingSerde`).
    let mut b = StreamsBuilder::new();
    let grouped = source(&mut b).group_by_key();
    grouped
        .aggregate(
            || 0i64,
            |_, v: &String, a| a + v.len() as i64,
            Materialized::as_("lens"),
        )
        .to_stream()
        .map_values(|_, n| n.map(|n| n.to_string()))
        .to("lens", strings());
    grouped
        .windowed_by(stoatflow_streams::TimeWindows::of_size_with_no_grace(
            Duration::from_millis(100),
        ))
        .aggregate(String::new, |_, v, a| a + v, Materialized::as_("joined"))
        .to_stream()
        .map(|k, v| (k.key, v))
        .to("joined", strings());
    Scenario::new(b.build().expect("aggregate infers i64 and String serdes"))
        .input::<String, String>("in")
        .text_outputs(&["lens", "joined"])
        .steps([
            pipe_to("in", "a", "xy", 1),
            crate::harness::Step::Crash,
            pipe_to("in", "a", "z", 2),
        ])
        .expect("lens", [s("a", "2", 1), s("a", "3", 2)])
        .expect("joined", [s("a", "xy", 1), s("a", "xyz", 2)])
        .run();
}
