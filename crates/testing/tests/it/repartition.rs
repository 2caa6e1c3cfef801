//! `KStream::repartition` with `Repartitioned` (serdes, name, partition
//! count) through the driver, from Kafka Streams'
//! `KStreamRepartitionIntegrationTest` expectations: the output is the
//! records' as they went in (the count shapes the runtime's tasks, not what
//! they compute), a name gives the topic `<name>-repartition`, and a
//! repartition followed by `group_by_key` makes one repartition topic.

use stoatflow_streams::{
    Consumed, Produced, Repartitioned, Serdes, StreamsBuilder, StreamsConfig, Topology,
    TopologyError,
};

use crate::harness::{Scenario, expect, out, pipe_to};

/// The sink lines of `topology`'s description that write a repartition topic.
fn repartition_sinks(topology: &Topology) -> Vec<String> {
    topology
        .describe()
        .lines()
        .filter(|l| l.trim_start().starts_with("Sink:") && l.contains("-repartition"))
        .map(|l| l.trim().to_owned())
        .collect()
}

/// `shouldCreateRepartitionTopicWithSpecifiedNumberOfPartitions`: `1:A`, `2:B`
/// through `Repartitioned.as("new-partitions").withNumberOfPartitions(2)`,
/// then a count by key: `1 → 1`, `2 → 1`.
#[test]
fn a_repartition_with_a_partition_count_and_a_name_keeps_the_records() {
    let mut b = StreamsBuilder::new();
    b.stream("input", Consumed::with(Serdes::i32(), Serdes::string()))
        .repartition(Repartitioned::as_("new-partitions").with_number_of_partitions(2))
        .group_by_key()
        .count()
        .to_stream()
        .to("output", Produced::with(Serdes::i32(), Serdes::i64()));
    let topology = b.build().unwrap();
    assert_eq!(
        repartition_sinks(&topology),
        ["Sink: new-partitions-repartition-sink (topic: new-partitions-repartition)"]
    );
    assert_eq!(
        topology.repartition_partitions("new-partitions-repartition"),
        Some(2)
    );
    Scenario::new(topology)
        .config(StreamsConfig::new("repartition"))
        .input::<i32, String>("input")
        .output::<i32, i64>("output")
        .steps([
            pipe_to("input", 1, "A", 0),
            pipe_to("input", 2, "B", 0),
            expect("output", [out(1, 1, 0), out(2, 1, 0)]),
        ])
        .run();
}

/// `shouldPerformKeySelectOperationWhenRepartitionOperationIsUsedWithKeySelector`
/// and `shouldCreateOnlyOneRepartitionTopicWhenRepartitionIsFollowedByGroupByKey`:
/// a new key, `Repartitioned` with the new key's serde (and a count of 1),
/// then a count by key: `"1" → 1`, `"2" → 1`, through one repartition topic.
#[test]
fn a_rekeyed_stream_repartitioned_then_grouped_by_key_uses_one_repartition_topic() {
    for partitions in [None, Some(1)] {
        let mut b = StreamsBuilder::new();
        let repartitioned = Repartitioned::as_("new-key").with_key_serde(Serdes::string());
        let repartitioned = match partitions {
            Some(n) => repartitioned.with_number_of_partitions(n),
            None => repartitioned,
        };
        b.stream("input", Consumed::with(Serdes::i32(), Serdes::string()))
            .select_key(|k: &i32, _: &String| k.to_string())
            .repartition(repartitioned.with_value_serde(Serdes::string()))
            .group_by_key()
            .count()
            .to_stream()
            .to("output", Produced::with(Serdes::string(), Serdes::i64()));
        let topology = b.build().unwrap();
        assert_eq!(
            repartition_sinks(&topology),
            ["Sink: new-key-repartition-sink (topic: new-key-repartition)"],
            "{partitions:?}"
        );
        assert_eq!(
            topology.repartition_partitions("new-key-repartition"),
            partitions
        );
        Scenario::new(topology)
            .config(StreamsConfig::new("repartition"))
            .input::<i32, String>("input")
            .output::<String, i64>("output")
            .steps([
                pipe_to("input", 1, "A", 0),
                pipe_to("input", 2, "B", 0),
                expect("output", [out("1", 1, 0), out("2", 1, 0)]),
            ])
            .run();
    }
}

/// `shouldGenerateRepartitionTopicWhenNameIsNotSpecified`: serdes only, a
/// generated name; the records come out as they went in under their new key.
#[test]
fn an_unnamed_repartition_gets_a_generated_topic() {
    let mut b = StreamsBuilder::new();
    b.stream("input", Consumed::with(Serdes::i32(), Serdes::string()))
        .select_key(|k: &i32, _: &String| k.to_string())
        .repartition(Repartitioned::with(Serdes::string(), Serdes::string()))
        .to("output", Produced::with(Serdes::string(), Serdes::string()));
    let topology = b.build().unwrap();
    let sinks = repartition_sinks(&topology);
    assert_eq!(sinks.len(), 1, "{sinks:?}");
    assert!(sinks[0].contains("KSTREAM-REPARTITION-"), "{sinks:?}");
    Scenario::new(topology)
        .config(StreamsConfig::new("repartition"))
        .input::<i32, String>("input")
        .text_outputs(&["output"])
        .steps([
            pipe_to("input", 1, "A", 0),
            pipe_to("input", 2, "B", 0),
            expect("output", [out("1", "A", 0), out("2", "B", 0)]),
        ])
        .run();
}

/// A repartition topic of no partitions, or without serdes, is refused when
/// the topology is built, naming the node.
#[test]
fn a_zero_partition_count_or_missing_serdes_are_refused_at_build() {
    let mut b = StreamsBuilder::new();
    let _ = b
        .stream("input", Consumed::with(Serdes::i32(), Serdes::string()))
        .repartition(Repartitioned::number_of_partitions(0));
    match b.build() {
        Err(TopologyError::InvalidArgument { node, reason }) => {
            assert!(node.starts_with("KSTREAM-SOURCE-"), "{node}");
            assert!(reason.contains("at least one partition"), "{reason}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let mut b = StreamsBuilder::new();
    let _ = b
        .stream("input", Consumed::with(Serdes::i32(), Serdes::string()))
        .select_key(|k: &i32, _: &String| k.to_string())
        .repartition(Repartitioned::as_("no-serdes"));
    match b.build() {
        Err(TopologyError::InvalidArgument { node, reason }) => {
            assert!(node.starts_with("KSTREAM-KEY-SELECT-"), "{node}");
            assert!(reason.contains("serdes"), "{reason}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}
