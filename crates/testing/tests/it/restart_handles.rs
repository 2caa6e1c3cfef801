//! What a driver restart leaves a test to reason about (docs/test-driver.md#restarts): the old
//! driver's handles fail with a clear error, committed output stays
//! readable, metrics carry over, `last_barrier_watermark` is the newest
//! committed stamp, and the committed offsets say what a crash loses.
//! Tests the driver's restart API itself, so it calls the driver directly.

use std::time::Duration;

use stoatflow_streams::{
    Consumed, DropReason, EmitStrategy, Produced, Serdes, StreamsBuilder, StreamsConfig,
    TimeWindows, Windowed,
};
use stoatflow_testing::{DriverConfig, DriverError, TopologyTestDriver};

fn driver(commit_per_pipe: bool) -> TopologyTestDriver {
    let mut b = StreamsBuilder::new();
    b.stream("in", Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key()
        .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_millis(
            10,
        )))
        .emit_strategy(EmitStrategy::on_window_close())
        .count()
        .to_stream()
        .map(|k: Windowed<String>, v| (k.key, v))
        .to("out", Produced::with(Serdes::string(), Serdes::i64()));
    TopologyTestDriver::with_driver_config(
        b.build().unwrap(),
        StreamsConfig::new("restarts"),
        DriverConfig {
            commit_per_pipe,
            ..DriverConfig::default()
        },
    )
    .unwrap()
}

#[test]
fn old_handles_fail_and_committed_output_metrics_and_stamp_carry_over() {
    for graceful in [true, false] {
        let d = driver(true);
        let input = d.create_input_topic("in", Serdes::string(), Serdes::string());
        let out = d.create_output_topic("out", Serdes::string(), Serdes::i64());
        input
            .pipe_input_with_timestamp("a".into(), "x".into(), 1)
            .unwrap();
        input
            .pipe_input_with_timestamp("a".into(), "x".into(), 12)
            .unwrap();
        input
            .pipe_input_with_timestamp("a".into(), "x".into(), 2)
            .unwrap(); // late
        assert_eq!(d.metrics().dropped(DropReason::LateWindow), 1);
        assert_eq!(d.last_barrier_watermark().as_millis(), 12);
        let fresh = if graceful {
            d.clone().restart().unwrap()
        } else {
            d.clone().crash_restart().unwrap()
        };
        // The old driver and everything taken from it are retired.
        for e in [
            input
                .pipe_input_with_timestamp("a".into(), "x".into(), 13)
                .unwrap_err(),
            out.read_key_value().unwrap_err(),
            d.advance_watermark(20).unwrap_err(),
            d.commit_barrier().unwrap_err(),
            d.store::<()>("anything").unwrap_err(),
            d.clone().restart().unwrap_err(),
        ] {
            assert!(
                matches!(e, DriverError::Retired),
                "graceful={graceful}: {e:?}"
            );
            assert!(e.to_string().contains("was restarted"), "{e}");
        }
        // Committed output not read yet is still readable; the newest
        // stamp is what the last barrier committed; counters carry over.
        let out = fresh.create_output_topic("out", Serdes::string(), Serdes::i64());
        assert_eq!(out.read_key_value().unwrap(), ("a".to_owned(), 1));
        assert_eq!(fresh.last_barrier_watermark().as_millis(), 12);
        assert_eq!(fresh.metrics().dropped(DropReason::LateWindow), 1);
        let input = fresh.create_input_topic("in", Serdes::string(), Serdes::string());
        input
            .pipe_input_with_timestamp("a".into(), "x".into(), 3)
            .unwrap(); // late again
        assert_eq!(fresh.metrics().dropped(DropReason::LateWindow), 2);
        assert_eq!(fresh.metrics().tasks.records_in, 4);
    }
}

#[test]
fn committed_offsets_say_what_a_crash_loses() {
    let d = driver(false);
    let input = d.create_input_topic("in", Serdes::string(), Serdes::string());
    input
        .pipe_input_with_timestamp("a".into(), "x".into(), 1)
        .unwrap();
    input
        .pipe_input_with_timestamp("a".into(), "x".into(), 2)
        .unwrap();
    d.commit_barrier().unwrap();
    input
        .pipe_input_with_timestamp("a".into(), "x".into(), 3)
        .unwrap();
    assert_eq!(d.committed_offsets().get("in"), Some(&2));
    let fresh = d.crash_restart().unwrap();
    // Offset 2 was not committed: the restart resumes there.
    assert_eq!(fresh.committed_offsets().get("in"), Some(&2));
    let input = fresh.create_input_topic("in", Serdes::string(), Serdes::string());
    input
        .pipe_input_with_timestamp("a".into(), "x".into(), 3)
        .unwrap();
    fresh.commit_barrier().unwrap();
    assert_eq!(fresh.committed_offsets().get("in"), Some(&3));
    fresh.advance_watermark(10).unwrap();
    fresh.commit_barrier().unwrap();
    let out = fresh.create_output_topic("out", Serdes::string(), Serdes::i64());
    assert_eq!(out.read_key_value().unwrap(), ("a".to_owned(), 3));
}

#[test]
fn dropped_records_are_data_with_their_source_key_and_window() {
    let d = driver(true);
    let input = d.create_input_topic("in", Serdes::string(), Serdes::string());
    input
        .pipe_input_with_timestamp("a".into(), "x".into(), 12)
        .unwrap();
    input
        .pipe_input_with_timestamp("b".into(), "x".into(), 2)
        .unwrap(); // late
    let fresh = d.crash_restart().unwrap();
    let input = fresh.create_input_topic("in", Serdes::string(), Serdes::string());
    input
        .pipe_input_with_timestamp("c".into(), "x".into(), 3)
        .unwrap(); // late
    let drops = fresh.dropped_records();
    let seen: Vec<_> = drops
        .iter()
        .map(|e| {
            let (window, close) = e.window.expect("a window drop names its window");
            (
                e.source.offset,
                e.key.as_deref().unwrap_or("?"),
                e.timestamp,
                e.reason,
                (window.start, window.end, close),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (Some(1), "\"b\"", 2, DropReason::LateWindow, (0, 10, 10)),
            (Some(2), "\"c\"", 3, DropReason::LateWindow, (0, 10, 10)),
        ]
    );
    assert!(drops.iter().all(|e| &*e.source.topic == "in"));
    assert_eq!(
        fresh.metrics().dropped(DropReason::LateWindow),
        drops.iter().filter(|e| e.counted).count() as u64
    );
}
