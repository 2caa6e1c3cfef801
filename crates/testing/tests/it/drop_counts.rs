//! The dropped-record metric counts records, not windows (docs/late.md#counting): a
//! record that misses several windows counts once in
//! `dropped.records.total{reason}`, and each window it missed stays a
//! `DropEvent` (the per-window detail), exactly one of which is marked
//! `counted`. Tests the driver's `dropped_records` and `metrics` directly.

use std::time::Duration;

use stoatflow_streams::{
    Consumed, DropEvent, DropReason, Serdes, SessionWindows, SlidingWindows, StreamsBuilder,
    StreamsConfig, TimeWindows, Topology,
};
use stoatflow_testing::TopologyTestDriver;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Pipes `(key, timestamp)` records into `in` of `topology` and returns the
/// driver.
fn run(topology: Topology, records: &[(&str, i64)]) -> TopologyTestDriver {
    let d = TopologyTestDriver::new(topology, StreamsConfig::new("drop-counts")).unwrap();
    let input = d.create_input_topic("in", Serdes::string(), Serdes::string());
    for &(key, ts) in records {
        input
            .pipe_input_with_timestamp(key.into(), "x".into(), ts)
            .unwrap();
    }
    d
}

/// (offset, window start, window end, counted) of each drop event.
fn windows_missed(events: &[DropEvent]) -> Vec<(i64, i64, i64, bool)> {
    events
        .iter()
        .map(|e| {
            let (w, _) = e.window.expect("a window drop names its window");
            (e.source.offset.unwrap(), w.start, w.end, e.counted)
        })
        .collect()
}

#[test]
fn a_hopping_record_missing_two_windows_counts_once_with_one_event_per_window() {
    let mut b = StreamsBuilder::new();
    let _counts = b
        .stream("in", Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key()
        .windowed_by(TimeWindows::of_size_with_no_grace(ms(10)).advance_by(ms(5)))
        .count();
    // The floor is 20 after the first record. At 7: [0, 10) and [5, 15) have
    // closed. At 6: the same two, a second record. At 17: [10, 20) has
    // closed (its close 20 is at the floor), [15, 25) is open.
    let d = run(
        b.build().unwrap(),
        &[("a", 20), ("a", 7), ("a", 6), ("a", 17)],
    );
    let events = d.dropped_records();
    assert_eq!(
        windows_missed(&events),
        [
            (1, 0, 10, true),
            (1, 5, 15, false),
            (2, 0, 10, true),
            (2, 5, 15, false),
            (3, 10, 20, true),
        ]
    );
    assert_eq!(d.metrics().dropped(DropReason::LateWindow), 3);
    assert_eq!(
        events.iter().filter(|e| e.counted).count() as u64,
        d.metrics().dropped(DropReason::LateWindow),
        "the metric counts exactly the counted events"
    );
}

#[test]
fn an_admitted_sliding_record_missing_several_windows_counts_once() {
    let mut b = StreamsBuilder::new();
    let _counts = b
        .stream("in", Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key()
        .windowed_by(SlidingWindows::of_time_difference_with_no_grace(ms(10)))
        .count();
    // D = 10, no grace: the window starting at s closes at s + 11. After 85,
    // 88 and 100 the floor is 100. The record at 90 is admitted (its own
    // window [90, 100] closes at 101) but misses its left window [80, 90]
    // (close 91) and the stored right windows [86, 96] of 85 and [89, 99]
    // of 88 (closes 97 and 100).
    let d = run(
        b.build().unwrap(),
        &[("a", 85), ("a", 88), ("a", 100), ("a", 90), ("a", 91)],
    );
    // 91 misses the same two stored windows and its own left window [81, 91].
    assert_eq!(
        windows_missed(&d.dropped_records()),
        [
            (3, 86, 96, true),
            (3, 89, 99, false),
            (3, 80, 90, false),
            (4, 86, 96, true),
            (4, 89, 99, false),
            (4, 81, 91, false),
        ]
    );
    assert_eq!(d.metrics().dropped(DropReason::LateWindow), 2);
}

#[test]
fn every_late_session_record_counts() {
    let mut b = StreamsBuilder::new();
    let _counts = b
        .stream("in", Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key()
        .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(ms(5)))
        .count();
    // Floor 100: a session ending at t closes at t + 6; 10 and 20 are late.
    let d = run(b.build().unwrap(), &[("a", 100), ("a", 10), ("b", 20)]);
    assert_eq!(d.metrics().dropped(DropReason::LateSession), 2);
    let counted: Vec<_> = d.dropped_records().iter().map(|e| e.counted).collect();
    assert_eq!(counted, [true, true]);
}
