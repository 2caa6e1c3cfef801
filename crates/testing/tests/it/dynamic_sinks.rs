//! Dynamic sinks (`KStream::to_dynamic`, Kafka Streams' `to(TopicNameExtractor,
//! Produced)`) through the driver: each record goes to the topic its
//! extractor picks from key, value and record context; the driver, as Kafka
//! Streams' test driver, takes any topic; the application's internal topics
//! are refused whatever the handler.

use std::sync::{Arc, Mutex};

use stoatflow_streams::{
    Consumed, Grouped, Materialized, Produced, RecordContext, Serdes, StreamsBuilder,
    StreamsConfig, Topology,
};

use crate::harness::{Scenario, expect, nothing, out, pipe_to, tombstone};

fn strings() -> Produced<String, String> {
    Produced::with(Serdes::string(), Serdes::string())
}

/// Kafka Streams' `KStreamImplTest.shouldSendDataToDynamicTopics`: the topic
/// is the source topic, the key and the value's first character joined by
/// dashes; `topic-a-v` gets both records of key `a`, `topic-b-v` the one of `b`.
#[test]
fn records_go_to_the_topic_the_extractor_picks_from_key_value_and_context() {
    let mut b = StreamsBuilder::new();
    b.stream("topic", Consumed::with(Serdes::string(), Serdes::string()))
        .to_dynamic(
            |k: &String, v: &String, cx: &RecordContext<'_>| {
                format!("{}-{k}-{}", cx.topic, &v[..1])
            },
            strings(),
        );
    let topology = b.build().unwrap();
    assert!(
        topology
            .describe()
            .contains("Sink: KSTREAM-SINK-0000000001 (topic: chosen per record)"),
        "{}",
        topology.describe()
    );
    Scenario::new(topology)
        .config(StreamsConfig::new("dynamic"))
        .input::<String, String>("topic")
        .text_outputs(&["topic-a-v", "topic-b-v"])
        .steps([
            pipe_to("topic", "a", "v1", 0),
            pipe_to("topic", "a", "v2", 0),
            pipe_to("topic", "b", "v1", 0),
            expect("topic-a-v", [out("a", "v1", 0), out("a", "v2", 0)]),
            expect("topic-b-v", [out("b", "v1", 0)]),
        ])
        .run();
}

/// The extractor sees the record's source position, timestamp and headers.
#[test]
fn the_extractor_sees_the_records_position_timestamp_and_headers() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    let mut b = StreamsBuilder::new();
    b.stream("in", Consumed::with(Serdes::string(), Serdes::string()))
        .to_dynamic(
            move |_: &String, _: &String, cx: &RecordContext<'_>| {
                log.lock().unwrap().push(format!(
                    "{}/{:?}/{:?}/{}/{}",
                    cx.topic,
                    cx.partition,
                    cx.offset.is_some(),
                    cx.timestamp,
                    cx.headers.is_empty()
                ));
                "out".to_owned()
            },
            strings(),
        );
    Scenario::new(b.build().unwrap())
        .config(StreamsConfig::new("dynamic"))
        .input::<String, String>("in")
        .text_outputs(&["out"])
        .steps([
            pipe_to("in", "k", "v", 42),
            expect("out", [out("k", "v", 42)]),
        ])
        .run();
    let seen = seen.lock().unwrap().clone();
    // Once per engine the scenario runs on, the same each time.
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[0], "in/Some(0)/true/42/true");
}

/// A table's updates routed per record: a delete's tombstone goes to the
/// topic its key picks, as Kafka Streams writes a null value.
#[test]
fn a_tables_tombstones_follow_their_key_to_its_topic() {
    let mut b = StreamsBuilder::new();
    b.stream("in", Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key_with(Grouped::with(Serdes::string(), Serdes::string()))
        .reduce(
            |_, v| v,
            Materialized::with(Serdes::string(), Serdes::string()),
        )
        .filter(|_, v: &String| v != "drop")
        .to_stream()
        .to_dynamic(
            |k: &String, _: &Option<String>, _: &RecordContext<'_>| format!("by-{k}"),
            strings(),
        );
    Scenario::new(b.build().unwrap())
        .config(StreamsConfig::new("dynamic"))
        .input::<String, String>("in")
        .text_outputs(&["by-a", "by-b"])
        .steps([
            pipe_to("in", "a", "x", 1),
            pipe_to("in", "b", "y", 2),
            pipe_to("in", "a", "drop", 3),
            expect("by-a", [out("a", "x", 1), tombstone("a", 3)]),
            expect("by-b", [out("b", "y", 2)]),
        ])
        .run();
}

/// A topology with a named repartition (`by-value`) and a store
/// (`counts`), whose dynamic sink writes where the record's value says.
fn writes_where_the_value_says() -> Topology {
    let mut b = StreamsBuilder::new();
    let src = b.stream("in", Consumed::with(Serdes::string(), Serdes::string()));
    let _counts = src
        .group_by(
            |_, v: &String| v.clone(),
            Grouped::with(Serdes::string(), Serdes::string()).with_name("by-value"),
        )
        .count_with(Materialized::as_("counts"));
    src.to_dynamic(
        |_: &String, v: &String, _: &RecordContext<'_>| v.clone(),
        strings(),
    );
    b.build().unwrap()
}

/// The application's own topics (`dyn` is its id) are never written through
/// a dynamic sink: the repartition topic by its topology name and its log
/// name, a changelog, and any `dyn-…-repartition`. The error names the sink,
/// the topic and the record; an ordinary topic is written.
#[test]
fn an_internal_topic_picked_by_a_dynamic_sink_stops_the_task_naming_it() {
    for topic in [
        "by-value-repartition",
        "dyn-by-value-repartition",
        "dyn-counts-changelog",
        "dyn-elsewhere-repartition",
    ] {
        let o = Scenario::new(writes_where_the_value_says())
            .config(StreamsConfig::new("dyn"))
            .input::<String, String>("in")
            .text_outputs(&["plain"])
            .steps([
                pipe_to("in", "k", "plain", 1),
                expect("plain", [out("k", "plain", 1)]),
                pipe_to("in", "k", topic, 2),
            ])
            .run_until_error();
        let (step, error) = o.error.expect("an internal topic is refused");
        assert_eq!(step, 2, "{topic}: {error}");
        for part in [
            &format!("topic {topic}"),
            "key \"k\"",
            "from topic in",
            "internal topic",
            "KSTREAM-SINK-",
        ] {
            assert!(error.contains(part), "{topic}: {part:?} not in {error}");
        }
    }
}

/// Without a catalog (the driver's case) the production handler is never
/// asked: a topic no test reads is still written, nothing dropped.
#[test]
fn the_driver_takes_any_topic_as_kafka_streams_test_driver_does() {
    let mut b = StreamsBuilder::new();
    b.stream("in", Consumed::with(Serdes::string(), Serdes::string()))
        .to_dynamic(
            |k: &String, _: &String, _: &RecordContext<'_>| format!("made-up-{k}"),
            strings(),
        );
    Scenario::new(b.build().unwrap())
        .config(StreamsConfig::new("dynamic"))
        .input::<String, String>("in")
        .text_outputs(&["made-up-x", "made-up-y"])
        .steps([
            pipe_to("in", "x", "1", 1),
            expect("made-up-x", [out("x", "1", 1)]),
            nothing("made-up-y"),
        ])
        .dropped(stoatflow_streams::DropReason::MissingTopic, 0)
        .run();
}
