use std::time::Duration;

use stoatflow_time::{
    SourcePartition, TrackerWarning, Watermark, WatermarkStrategy, WatermarkTracker,
};

use crate::{et, tracker, wall};

fn aligned(
    t: &mut WatermarkTracker,
    topic: &str,
    group: &str,
    drift_ms: u64,
    interval_ms: u64,
) -> stoatflow_time::PartitionIndex {
    let s = WatermarkStrategy::<(), ()>::for_monotonous_timestamps().with_watermark_alignment(
        group,
        Duration::from_millis(drift_ms),
        Duration::from_millis(interval_ms),
    );
    t.register(SourcePartition::new(topic, 0), s.policy(), wall(0))
        .unwrap()
}

#[test]
fn a_source_more_than_max_drift_ahead_of_its_group_minimum_is_held() {
    let mut t = tracker();
    let a = aligned(&mut t, "a", "g", 100, 10);
    let b = aligned(&mut t, "b", "g", 100, 10);
    t.on_record(a, et(1_000), wall(0)).unwrap();
    t.on_record(b, et(1_100), wall(0)).unwrap();
    t.force_watermark(wall(0));
    assert!(!t.is_held(b), "exactly max_drift ahead is allowed");
    t.on_record(b, et(1_101), wall(0)).unwrap();
    t.force_watermark(wall(0));
    assert!(t.is_held(b));
    assert_eq!(t.held_partitions().collect::<Vec<_>>(), [b]);
    let snap = t.snapshot();
    assert_eq!(
        snap.alignment_group_mins["g"],
        Watermark::from_millis(1_000)
    );
    assert_eq!(snap.partitions["b:0"].drift_from_group_min_ms, 101);
    assert!(snap.partitions["b:0"].alignment_held);
    assert_eq!(snap.partitions["b:0"].alignment_group.as_deref(), Some("g"));
    assert_eq!(
        snap.alignment_binding.as_deref(),
        Some("a:0"),
        "the lagging member has nothing buffered"
    );
}

#[test]
fn groups_are_independent_and_unaligned_sources_are_never_held() {
    let mut t = tracker();
    let a = aligned(&mut t, "a", "g1", 10, 10);
    let b = aligned(&mut t, "b", "g2", 10, 10);
    let free = t
        .register(
            SourcePartition::new("free", 0),
            WatermarkStrategy::<(), ()>::for_monotonous_timestamps().policy(),
            wall(0),
        )
        .unwrap();
    t.on_record(a, et(0), wall(0)).unwrap();
    t.on_record(b, et(5_000), wall(0)).unwrap();
    t.on_record(free, et(9_000), wall(0)).unwrap();
    t.force_watermark(wall(0));
    assert!(t.held_partitions().next().is_none());
}

#[test]
fn holds_are_re_evaluated_only_every_update_interval_unless_forced() {
    let mut t = tracker();
    let a = aligned(&mut t, "a", "g", 10, 1_000);
    let b = aligned(&mut t, "b", "g", 10, 1_000);
    t.on_record(a, et(0), wall(0)).unwrap();
    t.on_record(b, et(0), wall(0)).unwrap();
    t.poll_watermark(wall(0));
    t.on_record(b, et(500), wall(300)).unwrap();
    t.poll_watermark(wall(300));
    assert!(!t.is_held(b), "not re-evaluated within the update interval");
    t.poll_watermark(wall(1_000));
    assert!(t.is_held(b));
}

#[test]
fn idle_members_do_not_count_toward_the_group_minimum() {
    let mut t = tracker();
    let quick_idle = WatermarkStrategy::<(), ()>::for_monotonous_timestamps()
        .with_idleness(Duration::from_secs(1))
        .with_watermark_alignment("g", Duration::from_millis(10), Duration::from_millis(1));
    let a = t
        .register(SourcePartition::new("a", 0), quick_idle.policy(), wall(0))
        .unwrap();
    let b = aligned(&mut t, "b", "g", 10, 1);
    t.on_record(a, et(0), wall(0)).unwrap();
    t.on_record(b, et(500), wall(0)).unwrap();
    t.force_watermark(wall(0));
    assert!(t.is_held(b));
    t.force_watermark(wall(5_000));
    assert!(!t.is_held(b), "a went idle; b is the group minimum now");
}

#[test]
fn hold_time_accumulates_per_source_and_a_long_hold_is_warned_once_with_the_sizing_rule() {
    let mut t = tracker();
    let a = aligned(&mut t, "a", "g", 10, 1);
    let b = aligned(&mut t, "b", "g", 10, 1);
    t.on_record(a, et(0), wall(0)).unwrap();
    t.on_record(b, et(500), wall(0)).unwrap();
    t.force_watermark(wall(1_000));
    t.force_watermark(wall(31_000));
    assert_eq!(
        t.alignment_held_time("b", wall(31_000)),
        Duration::from_secs(30)
    );
    assert!(t.take_warnings().is_empty());
    t.force_watermark(wall(61_001));
    t.force_watermark(wall(90_000));
    let w = t.take_warnings();
    assert_eq!(
        w,
        [TrackerWarning::AlignmentHeldTooLong {
            source: "b".into(),
            group: "g".into(),
            held_ms: 60_001,
            max_drift_ms: 10
        }]
    );
    // Released: the episode is added to the total.
    t.on_record(a, et(505), wall(100_000)).unwrap();
    t.force_watermark(wall(100_000));
    assert!(!t.is_held(b));
    assert_eq!(
        t.alignment_held_time("b", wall(200_000)),
        Duration::from_secs(99)
    );
    assert_eq!(
        t.metrics(wall(200_000)).alignment_held_time_total_ms,
        99_000
    );
    assert_eq!(t.alignment_held_time("a", wall(200_000)), Duration::ZERO);
}

#[test]
fn a_held_partition_does_not_idle_out_while_held() {
    let mut t = tracker();
    let s = WatermarkStrategy::<(), ()>::for_monotonous_timestamps()
        .with_idleness(Duration::from_secs(1))
        .with_watermark_alignment("g", Duration::from_millis(10), Duration::from_millis(1));
    let a = t
        .register(SourcePartition::new("a", 0), s.policy(), wall(0))
        .unwrap();
    let b = t
        .register(SourcePartition::new("b", 0), s.policy(), wall(0))
        .unwrap();
    t.on_record(a, et(0), wall(0)).unwrap();
    t.on_record(b, et(500), wall(0)).unwrap();
    t.force_watermark(wall(0));
    assert!(t.is_held(b));
    t.on_record(a, et(1), wall(900)).unwrap();
    t.force_watermark(wall(1_500));
    assert!(!t.snapshot().partitions["b:0"].idle, "held, not idle");
}
