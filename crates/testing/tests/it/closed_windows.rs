//! A closed window never changes again, and `on_window_close` emits each
//! window exactly once — as a property over random inputs; and a
//! watermark-only source closes windows.

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;
use stoatflow_state::WindowStore;
use stoatflow_streams::DropReason::LateWindow;
use stoatflow_streams::{
    Consumed, EmitStrategy, Materialized, Produced, Serdes, StreamsBuilder, StreamsConfig,
    TimeWindows, WindowStoreOf, Windowed,
};

use crate::harness::{Scenario, Step, dropped, expect, nothing, pipe_to};

/// A windowed count of `in`, written to `out` as `(key@start, count)`.
pub fn counting(windows: TimeWindows, emit: EmitStrategy) -> Scenario {
    Scenario::build(|b| {
        b.stream("in", Consumed::with(Serdes::string(), Serdes::string()))
            .group_by_key()
            .windowed_by(windows)
            .emit_strategy(emit)
            .count_with(Materialized::as_("counts"))
            .to_stream()
            .map(|k: Windowed<String>, v| (format!("{}@{}", k.key, k.window.start), v))
            .to("out", Produced::with(Serdes::string(), Serdes::i64()));
    })
    .config(StreamsConfig::new("closed"))
    .input::<String, String>("in")
    .output::<String, i64>("out")
}

#[test]
fn a_closed_window_never_changes_again() {
    let windows =
        TimeWindows::of_size_and_grace(Duration::from_millis(10), Duration::from_millis(2));
    let o = counting(windows, EmitStrategy::on_window_update())
        .steps([
            pipe_to("in", "k", "a", 5),
            pipe_to("in", "k", "b", 12), // close of [0,10) is 12: closed
            pipe_to("in", "k", "late", 0),
            pipe_to("in", "k", "late", 5),
            pipe_to("in", "k", "late", 9),
            dropped(LateWindow, 3),
        ])
        .run();
    assert!(
        o.since(2, "out").is_empty(),
        "no update for a closed window"
    );
    let store = o.store::<WindowStoreOf<String, i64>>("counts");
    assert_eq!(
        store
            .borrow()
            .fetch(&"k".to_string(), 0)
            .unwrap()
            .unwrap()
            .value,
        1
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some() { 512 } else { 64 }))]

    /// For random arrivals and advances, `on_window_close` emits each window
    /// once, with exactly the records that arrived while the watermark was
    /// below its close — a model computed here.
    #[test]
    fn on_window_close_emits_each_window_once_with_what_arrived_before_its_close(
        events in prop::collection::vec((0u8..3, 0i64..60, any::<bool>()), 1..80),
        size in 5i64..15,
        grace in 0i64..6,
    ) {
        let windows = TimeWindows::of_size_and_grace(Duration::from_millis(size as u64), Duration::from_millis(grace as u64));
        let mut steps = Vec::new();
        let mut watermark = i64::MIN;
        let mut model: BTreeMap<String, i64> = BTreeMap::new();
        for (key, ts, advance) in events {
            if advance {
                steps.push(Step::Advance(ts));
                watermark = watermark.max(ts);
            } else {
                let start = ts / size * size;
                if start + size + grace > watermark {
                    *model.entry(format!("k{key}@{start}")).or_default() += 1;
                }
                steps.push(pipe_to("in", format!("k{key}"), "v", ts));
                watermark = watermark.max(ts);
            }
        }
        steps.push(Step::Advance(i64::MAX / 2));
        let o = counting(windows, EmitStrategy::on_window_close()).steps(steps).run();
        let emitted: Vec<(String, i64)> = o
            .all("out")
            .into_iter()
            .map(|r| (r.key, r.value.expect("a count").parse().expect("a number")))
            .collect();
        let mut seen = BTreeMap::new();
        for (k, v) in &emitted {
            prop_assert!(seen.insert(k.clone(), *v).is_none(), "window {} emitted twice", k);
        }
        prop_assert_eq!(seen, model);
    }
}

#[test]
fn a_watermark_source_closes_windows_without_a_dummy_sink() {
    // A topic that only moves event time: piping into it closes the window
    // of a record on another topic.
    let mut b = StreamsBuilder::new();
    b.watermark_source("ticks");
    b.stream("in", Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key()
        .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_millis(
            10,
        )))
        .emit_strategy(EmitStrategy::on_window_close())
        .count()
        .to_stream()
        .map(|k: Windowed<String>, v| (format!("{}@{}", k.key, k.window.start), v))
        .to("out", Produced::with(Serdes::string(), Serdes::i64()));
    Scenario::new(b.build().unwrap())
        .input::<String, String>("in")
        .input::<i64, i64>("ticks")
        .output::<String, i64>("out")
        .steps([
            pipe_to("in", "a", "x", 3),
            nothing("out"),
            pipe_to("ticks", 0, 0, 10),
            expect("out", [("a@0", 1, 3)]),
        ])
        .run();
}

/// A window whose close saturates at the end of time (a grace of
/// `Duration::MAX`) is emitted by the final flush, a frontier at `i64::MAX`.
#[test]
fn a_window_whose_close_saturates_is_emitted_at_the_end_of_time() {
    let windows = TimeWindows::of_size_and_grace(Duration::from_millis(10), Duration::MAX);
    counting(windows, EmitStrategy::on_window_close())
        .named("saturated close")
        .steps([
            pipe_to("in", "k", "a", 15),
            Step::Advance(i64::MAX - 1),
            nothing("out"),
            Step::Advance(i64::MAX),
            expect("out", [("k@10", 1, 15)]),
        ])
        .run();
}
