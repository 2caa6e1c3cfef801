//! Cogroup: two grouped streams with their own aggregators folded into one
//! aggregate, non-windowed and over time, sliding and session windows.

use std::time::Duration;

use stoatflow_streams::{
    CogroupedKStream, Materialized, Serdes, SessionWindows, SlidingWindows, StreamsBuilder,
    TimeWindows,
};

use crate::harness::{
    INPUT, Scenario, grouped_text, out, pipe, pipe_to, to_topic, to_topic_windowed, tombstone,
};

/// `input` folded with `+A<v>`, `input2` with `+B<v>`.
fn cogrouped(b: &mut StreamsBuilder) -> CogroupedKStream<String, String> {
    let one = grouped_text(b, INPUT);
    let two = grouped_text(b, "input2");
    one.cogroup(|_, v: &String, a: String| format!("{a}+A{v}"))
        .cogroup(&two, |_, v: &String, a: String| format!("{a}+B{v}"))
}

/// The cogroup `build` writes to `out`, fed the same four records.
fn cogroup(build: impl FnOnce(&mut StreamsBuilder)) -> Scenario {
    Scenario::build(build)
        .text_inputs(&[INPUT, "input2"])
        .text_outputs(&["out"])
        .steps([
            pipe("k", "1", 0),
            pipe_to("input2", "k", "2", 1),
            pipe("k", "3", 12),
            pipe_to("input2", "j", "4", 13),
        ])
}

fn m() -> Materialized<String, String> {
    Materialized::as_("store").with_value_serde(Serdes::string())
}

#[test]
fn cogroup_folds_every_input_with_its_own_aggregator() {
    cogroup(|b| {
        let t = cogrouped(b).aggregate(|| "0".into(), m());
        to_topic(t.to_stream(), "out")
    })
    .expect(
        "out",
        [
            ("k", "0+A1", 0),
            ("k", "0+A1+B2", 1),
            ("k", "0+A1+B2+A3", 12),
            ("j", "0+B4", 13),
        ],
    )
    .run();
}

#[test]
fn cogroup_over_time_windows() {
    cogroup(|b| {
        let t = cogrouped(b)
            .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_millis(
                10,
            )))
            .aggregate(|| "0".into(), m());
        to_topic_windowed(t.to_stream(), "out")
    })
    .expect(
        "out",
        [
            ("[k@0/10]", "0+A1", 0),
            ("[k@0/10]", "0+A1+B2", 1),
            ("[k@10/20]", "0+A3", 12),
            ("[j@10/20]", "0+B4", 13),
        ],
    )
    .run();
}

#[test]
fn cogroup_over_sliding_windows() {
    cogroup(|b| {
        let t = cogrouped(b)
            .windowed_by(SlidingWindows::of_time_difference_and_grace(
                Duration::from_millis(5),
                Duration::from_millis(20),
            ))
            .aggregate(|| "0".into(), m());
        to_topic_windowed(t.to_stream(), "out")
    })
    .expect(
        "out",
        [
            ("[k@0/5]", "0+A1", 0),
            ("[k@1/6]", "0+B2", 1),
            ("[k@0/5]", "0+A1+B2", 1),
            ("[k@7/12]", "0+A3", 12),
            ("[j@8/13]", "0+B4", 13),
        ],
    )
    .run();
}

#[test]
fn cogroup_over_session_windows() {
    cogroup(|b| {
        let t = cogrouped(b)
            .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(
                Duration::from_millis(5),
            ))
            .aggregate(
                || "0".into(),
                |_, a: String, b: String| format!("{a}|{b}"),
                m(),
            );
        to_topic_windowed(t.to_stream(), "out")
    })
    .expect(
        "out",
        [
            out("[k@0/0]", "0+A1", 0),
            tombstone("[k@0/0]", 0),
            out("[k@0/1]", "0|0+A1+B2", 1),
            out("[k@12/12]", "0+A3", 12),
            out("[j@13/13]", "0+B4", 13),
        ],
    )
    .run();
}
