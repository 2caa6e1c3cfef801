//! The driver refuses at construction every topology the engine refuses
//! (docs/validation.md#refusals).

use std::time::Duration;

use stoatflow_streams::{
    Consumed, CoordinationMode, DispatchMode, Serdes, StreamsBuilder, StreamsConfig, TimeWindows,
    Topology, TopologyError,
};
use stoatflow_testing::{DriverError, TopologyTestDriver};
use stoatflow_time::WatermarkStrategy;

use crate::harness::{Scenario, expect_key_values, pipe_to};

fn windowed_beside(extra_source_no_watermarks: bool) -> Topology {
    let mut b = StreamsBuilder::new();
    b.stream("orders", Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key()
        .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_secs(1)))
        .count()
        .to_stream()
        .foreach(|_, _| {});
    if extra_source_no_watermarks {
        b.stream(
            "refs",
            Consumed::with(Serdes::string(), Serdes::string())
                .with_watermark_strategy(WatermarkStrategy::no_watermarks()),
        )
        .foreach(|_, _| {});
    }
    b.build().unwrap()
}

fn refused(t: Topology, config: StreamsConfig) -> TopologyError {
    match TopologyTestDriver::new(t, config) {
        Err(DriverError::Topology(e)) => e,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_window_beside_a_no_watermarks_source_is_refused_naming_node_and_source() {
    let e = refused(windowed_beside(true), StreamsConfig::new("v"));
    assert!(matches!(e, TopologyError::NoWatermarksSource { .. }));
    let msg = e.to_string();
    assert!(msg.contains("KSTREAM-AGGREGATE-"), "{msg}");
    assert!(msg.contains("topic refs"), "{msg}");
}

#[test]
fn a_window_under_disabled_coordination_is_refused() {
    let e = refused(
        windowed_beside(false),
        StreamsConfig::new("v").with_coordination(CoordinationMode::Disabled),
    );
    assert!(
        matches!(e, TopologyError::CoordinationDisabled { .. }),
        "{e}"
    );
    assert!(e.to_string().contains("topic orders"));
}

#[test]
fn direct_dispatch_with_event_time_fails_saying_so() {
    let e = refused(
        windowed_beside(false),
        StreamsConfig::new("v").with_dispatch(DispatchMode::Direct),
    );
    assert!(e.to_string().contains("DIRECT"), "{e}");
}

#[test]
fn a_stateless_topology_beside_no_watermarks_is_accepted_and_needs_no_event_time() {
    let mut b = StreamsBuilder::new();
    b.stream("a", Consumed::with(Serdes::string(), Serdes::string()))
        .foreach(|_, _| {});
    let t = b.build().unwrap();
    assert!(!t.needs_event_time());
    assert!(
        TopologyTestDriver::new(
            t,
            StreamsConfig::new("v").with_coordination(CoordinationMode::Disabled)
        )
        .is_ok()
    );
    assert!(windowed_beside(false).needs_event_time());
}

#[test]
fn bad_windows_and_short_retention_are_refused_at_build() {
    let mut b = StreamsBuilder::new();
    b.stream("a", Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key()
        .windowed_by(
            TimeWindows::of_size_with_no_grace(Duration::from_millis(10))
                .advance_by(Duration::from_millis(20)),
        )
        .count()
        .to_stream()
        .foreach(|_, _| {});
    assert!(b.build().unwrap_err().to_string().contains("advance"));
    let mut b = StreamsBuilder::new();
    b.stream("a", Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key()
        .windowed_by(TimeWindows::of_size_and_grace(
            Duration::from_millis(10),
            Duration::from_millis(5),
        ))
        .count_with(
            stoatflow_streams::Materialized::as_("c").with_retention(Duration::from_millis(12)),
        )
        .to_stream()
        .foreach(|_, _| {});
    let e = b.build().unwrap_err().to_string();
    assert!(e.contains("retention") && e.contains("c"), "{e}");
}

#[test]
fn a_topic_read_twice_is_refused() {
    let mut b = StreamsBuilder::new();
    b.stream("a", Consumed::with(Serdes::string(), Serdes::string()))
        .foreach(|_, _| {});
    b.stream("a", Consumed::with(Serdes::string(), Serdes::string()))
        .foreach(|_, _| {});
    assert!(b.build().unwrap_err().to_string().contains("topic a"));
}

#[test]
fn describe_lists_sub_topologies_split_at_repartition() {
    let mut b = StreamsBuilder::new();
    b.stream("orders", Consumed::with(Serdes::string(), Serdes::string()))
        .select_key(|_, v: &String| v.clone())
        .group_by_key_with(stoatflow_streams::Grouped::with(
            Serdes::string(),
            Serdes::string(),
        ))
        .count()
        .to_stream()
        .to(
            "counts",
            stoatflow_streams::Produced::with(Serdes::string(), Serdes::i64()),
        );
    let t = b.build().unwrap();
    assert_eq!(t.subtopology_count(), 2);
    let text = t.describe();
    assert!(
        text.contains("Sub-topology: 0") && text.contains("Sub-topology: 1"),
        "{text}"
    );
    assert!(
        text.contains("Source: KSTREAM-SOURCE-0000000000 (topics: [orders])"),
        "{text}"
    );
    assert!(text.contains("-repartition"), "{text}");
    assert!(text.contains("Sink: KSTREAM-SINK-"), "{text}");
    // And it runs through the repartition topic synchronously.
    Scenario::new(t)
        .config(StreamsConfig::new("v"))
        .input::<String, String>("orders")
        .output::<String, i64>("counts")
        .steps([
            pipe_to("orders", "o1", "shop-a", 1),
            pipe_to("orders", "o2", "shop-a", 2),
            expect_key_values("counts", [("shop-a", 1), ("shop-a", 2)]),
        ])
        .run();
}

#[test]
fn a_key_change_without_serdes_for_the_repartition_topic_is_refused_naming_the_node() {
    let mut b = StreamsBuilder::new();
    b.stream("orders", Consumed::with(Serdes::string(), Serdes::string()))
        .select_key(|_, v: &String| v.clone())
        .group_by_key()
        .count()
        .to_stream()
        .foreach(|_, _| {});
    let e = b.build().unwrap_err().to_string();
    assert!(
        e.contains("KSTREAM-KEY-SELECT-") && e.contains("Grouped::with"),
        "{e}"
    );
}
