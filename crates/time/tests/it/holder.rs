//! Which partition holds the global watermark, and why
//! (docs/time.md#holder): named even while there is no watermark.

use std::time::Duration;

use stoatflow_time::{
    HoldReason, Offset, OrderedDispatch, SourcePartition, TrackerConfig, Watermark,
    WatermarkStrategy, WatermarkTracker,
};

use crate::{bounded, et, register, tracker, wall};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn a_never_written_partition_is_named_with_its_idleness_countdown_while_there_is_no_watermark() {
    let mut t = tracker();
    let p = register(&mut t, "readings", 3, &bounded(10_000));
    t.on_record(p[0], et(1_000_000), wall(0)).unwrap();
    t.on_record(p[1], et(1_001_000), wall(0)).unwrap();
    assert!(t.force_watermark(wall(48_000)).is_none_yet());
    let snap = t.snapshot_at(wall(48_000));
    let holder = snap.holder.expect("a holder is named without a watermark");
    assert_eq!(holder.partition, SourcePartition::new("readings", 2));
    assert_eq!(
        holder.reason,
        HoldReason::NeverReceived {
            idle_in: Some(secs(252))
        }
    );
    assert_eq!(
        holder.reason.to_string(),
        "never received a record; counts as idle in 4 m 12 s"
    );
    // Once it idles out, the lowest of the others holds the watermark.
    t.on_record(p[0], et(1_002_000), wall(290_000)).unwrap();
    t.on_record(p[1], et(1_003_000), wall(290_000)).unwrap();
    assert_eq!(
        t.force_watermark(wall(300_000)),
        Watermark::from_millis(992_000)
    );
    let holder = t.snapshot_at(wall(301_000)).holder.unwrap();
    assert_eq!(holder.partition, SourcePartition::new("readings", 0));
    assert_eq!(
        holder.reason,
        HoldReason::Lowest {
            quiet_for: secs(11),
            idle_in: Some(secs(289))
        }
    );
    assert_eq!(
        holder.reason.to_string(),
        "lowest watermark; last record 11 s ago; counts as idle in 4 m 49 s"
    );
}

#[test]
fn with_idleness_off_the_never_written_partition_says_it_never_counts_as_idle() {
    let config = TrackerConfig::from_millis(10_000, 0, 200).unwrap();
    let mut t = WatermarkTracker::new(config);
    let p = register(&mut t, "readings", 2, &bounded(10_000));
    t.on_record(p[0], et(1_000_000), wall(0)).unwrap();
    t.force_watermark(wall(1_000));
    let holder = t.snapshot_at(wall(1_000)).holder.unwrap();
    assert_eq!(holder.partition, SourcePartition::new("readings", 1));
    assert_eq!(holder.reason, HoldReason::NeverReceived { idle_in: None });
    assert!(
        holder.reason.to_string().contains("never counts as idle"),
        "{}",
        holder.reason
    );
}

#[test]
fn with_every_partition_idle_the_lowest_is_named_idle() {
    let mut t = tracker();
    let p = register(&mut t, "readings", 2, &bounded(0));
    t.on_record(p[0], et(5_000), wall(0)).unwrap();
    t.on_record(p[1], et(7_000), wall(0)).unwrap();
    t.force_watermark(wall(0));
    t.force_watermark(wall(300_000));
    let snap = t.snapshot_at(wall(300_000));
    assert!(snap.partitions.values().all(|p| p.idle));
    let holder = snap.holder.unwrap();
    assert_eq!(holder.partition, SourcePartition::new("readings", 0));
    assert_eq!(holder.reason, HoldReason::Idle);
    assert!(holder.reason.to_string().starts_with("idle"));
}

#[test]
fn the_partition_an_alignment_hold_waits_on_is_named_with_its_group() {
    let mut t = tracker();
    let s = |group| {
        WatermarkStrategy::<(), ()>::for_monotonous_timestamps().with_watermark_alignment(
            group,
            Duration::from_millis(100),
            Duration::from_millis(10),
        )
    };
    let a = t
        .register(SourcePartition::new("a", 0), s("g").policy(), wall(0))
        .unwrap();
    let b = t
        .register(SourcePartition::new("b", 0), s("g").policy(), wall(0))
        .unwrap();
    t.on_record(a, et(1_000), wall(0)).unwrap();
    t.on_record(b, et(1_101), wall(0)).unwrap();
    t.force_watermark(wall(0));
    let holder = t.snapshot_at(wall(0)).holder.unwrap();
    assert_eq!(holder.partition, SourcePartition::new("a", 0));
    assert_eq!(
        holder.reason,
        HoldReason::AlignmentHold { group: "g".into() }
    );
    assert!(holder.reason.to_string().starts_with("alignment hold"));
}

#[test]
fn a_head_stamped_ahead_without_a_preview_is_named_as_such() {
    #[derive(Debug)]
    struct Max(i64);
    impl stoatflow_time::WatermarkGenerator for Max {
        fn on_event(
            &mut self,
            t: stoatflow_time::EventTime,
            _: &mut stoatflow_time::WatermarkOutput,
        ) {
            self.0 = self.0.max(t.as_millis());
        }
        fn on_periodic_emit(&mut self, out: &mut stoatflow_time::WatermarkOutput) {
            if self.0 >= 0 {
                out.emit_watermark(Watermark::from_millis(self.0));
            }
        }
    }
    let mut t = tracker();
    let s = WatermarkStrategy::<(), ()>::for_generator(|| Max(-1));
    let a = t
        .register(SourcePartition::new("c", 0), s.policy(), wall(0))
        .unwrap();
    let b = t
        .register(SourcePartition::new("c", 1), s.policy(), wall(0))
        .unwrap();
    let mut d = OrderedDispatch::new();
    d.push(&mut t, b, Offset(0), et(1_000_000), (), wall(0))
        .unwrap();
    d.push(&mut t, a, Offset(0), et(100), (), wall(0)).unwrap();
    d.next(&mut t, wall(0)).unwrap();
    t.force_watermark(wall(5_000));
    let holder = t.snapshot_at(wall(5_000)).holder.unwrap();
    assert_eq!(holder.partition, SourcePartition::new("c", 1));
    assert_eq!(holder.reason, HoldReason::FutureHead { preview: false });
}

#[test]
fn a_source_without_watermarks_is_named_as_making_none() {
    let mut t = tracker();
    let none = WatermarkStrategy::<(), ()>::no_watermarks();
    let p = t
        .register(SourcePartition::new("raw", 0), none.policy(), wall(0))
        .unwrap();
    t.on_record(p, et(1_000), wall(0)).unwrap();
    t.force_watermark(wall(10));
    let holder = t.snapshot_at(wall(10)).holder.unwrap();
    assert_eq!(holder.reason, HoldReason::NoWatermarkYet);
    assert_eq!(holder.reason.code(), "no_watermark_yet");
}

#[test]
fn nothing_registered_names_no_holder() {
    assert_eq!(tracker().snapshot_at(wall(0)).holder, None);
}
