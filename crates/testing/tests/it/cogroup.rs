//! Cogroup: two grouped streams with their own aggregators folded into one
//! aggregate, non-windowed and over time, sliding and session windows.

use std::time::Duration;

use stoatflow_streams::{
    Consumed, Grouped, KGroupedStream, Materialized, Serdes, SessionWindows, SlidingWindows,
    StreamsBuilder, TimeWindows,
};

use crate::harness::{
    INPUT, Scenario, Step, out, pipe, pipe_to, to_topic, to_topic_windowed, tombstone,
};

fn grouped(b: &mut StreamsBuilder, topic: &str) -> KGroupedStream<String, String> {
    b.stream(topic, Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key_with(Grouped::with(Serdes::string(), Serdes::string()))
}

fn cogrouped(b: &mut StreamsBuilder) -> stoatflow_streams::CogroupedKStream<String, String> {
    let one = grouped(b, "input");
    let two = grouped(b, "input2");
    one.cogroup(|_, v: &String, a: String| format!("{a}+A{v}"))
        .cogroup(&two, |_, v: &String, a: String| format!("{a}+B{v}"))
}

fn inputs() -> Vec<Step> {
    vec![
        pipe("k", "1", 0),
        pipe_to("input2", "k", "2", 1),
        pipe("k", "3", 12),
        pipe_to("input2", "j", "4", 13),
    ]
}

fn m() -> Materialized<String, String> {
    Materialized::as_("store").with_value_serde(Serdes::string())
}

#[test]
fn cogroup_folds_every_input_with_its_own_aggregator() {
    let o = Scenario::build(|b| {
        to_topic(
            cogrouped(b)
                .aggregate(|| "0".into(), m())
                .to_stream_with_tombstones(),
            "out",
        )
    })
    .text_inputs(&[INPUT, "input2"])
    .text_outputs(&["out"])
    .steps(inputs())
    .run();
    assert_eq!(
        o.all("out"),
        vec![
            out("k", "0+A1", 0),
            out("k", "0+A1+B2", 1),
            out("k", "0+A1+B2+A3", 12),
            out("j", "0+B4", 13),
        ]
    );
}

#[test]
fn cogroup_over_time_windows() {
    let o = Scenario::build(|b| {
        to_topic_windowed(
            cogrouped(b)
                .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_millis(
                    10,
                )))
                .aggregate(|| "0".into(), m())
                .to_stream_with_tombstones(),
            "out",
        )
    })
    .text_inputs(&[INPUT, "input2"])
    .text_outputs(&["out"])
    .steps(inputs())
    .run();
    assert_eq!(
        o.all("out"),
        vec![
            out("[k@0/10]", "0+A1", 0),
            out("[k@0/10]", "0+A1+B2", 1),
            out("[k@10/20]", "0+A3", 12),
            out("[j@10/20]", "0+B4", 13),
        ]
    );
}

#[test]
fn cogroup_over_sliding_windows() {
    let o = Scenario::build(|b| {
        to_topic_windowed(
            cogrouped(b)
                .windowed_by(SlidingWindows::of_time_difference_and_grace(
                    Duration::from_millis(5),
                    Duration::from_millis(20),
                ))
                .aggregate(|| "0".into(), m())
                .to_stream_with_tombstones(),
            "out",
        )
    })
    .text_inputs(&[INPUT, "input2"])
    .text_outputs(&["out"])
    .steps(inputs())
    .run();
    assert_eq!(
        o.all("out"),
        vec![
            out("[k@0/5]", "0+A1", 0),
            out("[k@1/6]", "0+B2", 1),
            out("[k@0/5]", "0+A1+B2", 1),
            out("[k@7/12]", "0+A3", 12),
            out("[j@8/13]", "0+B4", 13),
        ]
    );
}

#[test]
fn cogroup_over_session_windows() {
    let o = Scenario::build(|b| {
        to_topic_windowed(
            cogrouped(b)
                .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(
                    Duration::from_millis(5),
                ))
                .aggregate(
                    || "0".into(),
                    |_, a: String, b: String| format!("{a}|{b}"),
                    m(),
                )
                .to_stream_with_tombstones(),
            "out",
        )
    })
    .text_inputs(&[INPUT, "input2"])
    .text_outputs(&["out"])
    .steps(inputs())
    .run();
    assert_eq!(
        o.all("out"),
        vec![
            out("[k@0/0]", "0+A1", 0),
            tombstone("[k@0/0]", 0),
            out("[k@0/1]", "0|0+A1+B2", 1),
            out("[k@12/12]", "0+A3", 12),
            out("[j@13/13]", "0+B4", 13),
        ]
    );
}
