//! A closed window never changes again, and `on_window_close` emits each
//! window exactly once — as a property over random inputs.

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;
use stoatflow_streams::{
    Consumed, EmitStrategy, Produced, Serdes, StreamsBuilder, StreamsConfig, TimeWindows,
    WindowStoreOf, Windowed,
};
use stoatflow_testing::TopologyTestDriver;

fn counting_driver(windows: TimeWindows, emit: EmitStrategy) -> TopologyTestDriver {
    let mut b = StreamsBuilder::new();
    b.stream("in", Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key()
        .windowed_by(windows)
        .emit_strategy(emit)
        .count_with(stoatflow_streams::Materialized::as_("counts"))
        .to_stream()
        .map(|k: Windowed<String>, v| (format!("{}@{}", k.key, k.window.start), v))
        .to("out", Produced::with(Serdes::string(), Serdes::i64()));
    TopologyTestDriver::new(b.build().unwrap(), StreamsConfig::new("closed")).unwrap()
}

#[test]
fn a_closed_window_never_changes_again() {
    let windows =
        TimeWindows::of_size_and_grace(Duration::from_millis(10), Duration::from_millis(2));
    let d = counting_driver(windows, EmitStrategy::on_window_update());
    let input = d.create_input_topic("in", Serdes::string(), Serdes::string());
    let out = d.create_output_topic("out", Serdes::string(), Serdes::i64());
    input
        .pipe_input_with_timestamp("k".into(), "a".into(), 5)
        .unwrap();
    input
        .pipe_input_with_timestamp("k".into(), "b".into(), 12)
        .unwrap(); // close of [0,10) is 12: closed
    out.read_records_to_list().unwrap();
    for late in [0, 5, 9] {
        input
            .pipe_input_with_timestamp("k".into(), "late".into(), late)
            .unwrap();
    }
    assert!(out.is_empty(), "no update for a closed window");
    let store = d.store::<WindowStoreOf<String, i64>>("counts").unwrap();
    use stoatflow_state::WindowStore;
    assert_eq!(
        store
            .borrow()
            .fetch(&"k".to_string(), 0)
            .unwrap()
            .unwrap()
            .value,
        1
    );
    assert_eq!(
        d.metrics()
            .dropped(stoatflow_streams::DropReason::LateWindow),
        3
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
        let d = counting_driver(windows, EmitStrategy::on_window_close());
        let input = d.create_input_topic("in", Serdes::string(), Serdes::string());
        let out = d.create_output_topic("out", Serdes::string(), Serdes::i64());
        let mut watermark = i64::MIN;
        let mut model: BTreeMap<String, i64> = BTreeMap::new();
        for (key, ts, advance) in events {
            if advance {
                d.advance_watermark(ts).unwrap();
                watermark = watermark.max(ts);
            } else {
                let start = ts / size * size;
                if start + size + grace > watermark {
                    *model.entry(format!("k{key}@{start}")).or_default() += 1;
                }
                input.pipe_input_with_timestamp(format!("k{key}"), "v".into(), ts).unwrap();
                watermark = watermark.max(ts);
            }
        }
        d.advance_watermark(i64::MAX / 2).unwrap();
        let emitted = out.read_key_values_to_list().unwrap();
        let mut seen = BTreeMap::new();
        for (k, v) in &emitted {
            prop_assert!(seen.insert(k.clone(), *v).is_none(), "window {} emitted twice", k);
        }
        prop_assert_eq!(seen, model);
    }
}
