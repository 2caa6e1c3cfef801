use std::time::Duration;

use stoatflow_time::{
    DispatchError, Offset, OrderedDispatch, SourcePartition, TrackerWarning, Watermark,
    WatermarkStrategy,
};

use crate::{bounded, et, register, tracker, wall};

#[test]
fn serves_the_oldest_head_and_each_partition_in_offset_order() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 3, &bounded(0));
    let mut d = OrderedDispatch::new();
    // partition 0 is out of order internally; it must still leave in offset order.
    for (i, off, ts) in [(0, 0, 50), (0, 1, 10), (1, 0, 20), (1, 1, 30), (2, 0, 25)] {
        d.push(&mut t, p[i], Offset(off), et(ts), (i, off), wall(0))
            .unwrap();
    }
    let order: Vec<(usize, i64)> = d
        .drain_ready(&mut t, wall(0))
        .into_iter()
        .map(|x| x.record)
        .collect();
    assert_eq!(order, [(1, 0), (2, 0), (1, 1), (0, 0), (0, 1)]);
    assert!(d.is_empty());
}

#[test]
fn equal_heads_go_to_the_partition_registered_first() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 2, &bounded(0));
    let mut d = OrderedDispatch::new();
    d.push(&mut t, p[1], Offset(0), et(7), "p1", wall(0))
        .unwrap();
    d.push(&mut t, p[0], Offset(0), et(7), "p0", wall(0))
        .unwrap();
    assert_eq!(d.next(&mut t, wall(0)).unwrap().record, "p0");
}

#[test]
fn dispatched_records_advance_the_tracker_and_carry_the_late_flag() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 1, &bounded(0));
    let mut d = OrderedDispatch::new();
    d.push(&mut t, p[0], Offset(0), et(100), (), wall(0))
        .unwrap();
    assert!(!d.next(&mut t, wall(0)).unwrap().late);
    assert_eq!(t.force_watermark(wall(0)), Watermark::from_millis(100));
    d.push(&mut t, p[0], Offset(1), et(40), (), wall(0))
        .unwrap();
    let x = d.next(&mut t, wall(0)).unwrap();
    assert!(x.late);
    assert_eq!(x.offset, Offset(1));
    assert_eq!(t.metrics(wall(0)).late_records_total, 1);
}

#[test]
fn offsets_that_go_backwards_are_refused_naming_the_partition() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 1, &bounded(0));
    let mut d = OrderedDispatch::new();
    d.push(&mut t, p[0], Offset(5), et(1), (), wall(0)).unwrap();
    let err = d
        .push(&mut t, p[0], Offset(5), et(2), (), wall(0))
        .unwrap_err();
    assert_eq!(
        err,
        DispatchError::OffsetOrder {
            partition: "orders:0".into(),
            offset: 5,
            previous: 5
        }
    );
    assert_eq!(d.len(), 1, "the accepted record is kept");
}

#[test]
fn pushing_for_an_unregistered_partition_is_an_error() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 1, &bounded(0));
    let mut other = tracker();
    let mut d = OrderedDispatch::new();
    let err = d
        .push(&mut other, p[0], Offset(0), et(1), (), wall(0))
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown source partition"),
        "{err}"
    );
}

#[test]
fn a_waiting_future_head_contributes_a_preview_after_a_second() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 2, &bounded(10));
    let mut d = OrderedDispatch::new();
    // p1 has never dispatched anything; its only record is stamped far ahead.
    d.push(&mut t, p[1], Offset(0), et(1_000_000), "future", wall(0))
        .unwrap();
    d.push(&mut t, p[0], Offset(0), et(100), "a", wall(0))
        .unwrap();
    d.push(&mut t, p[0], Offset(1), et(200), "b", wall(0))
        .unwrap();
    d.push(&mut t, p[0], Offset(2), et(300), "c", wall(0))
        .unwrap();
    assert_eq!(d.next(&mut t, wall(0)).unwrap().record, "a");
    assert!(
        t.force_watermark(wall(500)).is_none_yet(),
        "no preview before the head waited a second"
    );
    assert_eq!(d.next(&mut t, wall(900)).unwrap().record, "b");
    // After a second the waiting head previews 1_000_000 - 10: event time is set by p0.
    assert_eq!(t.force_watermark(wall(1_000)), Watermark::from_millis(190));
    let snap = t.snapshot();
    let row = &snap.partitions["orders:1"];
    assert_eq!(row.preview_watermark, Some(Watermark::from_millis(999_990)));
    assert_eq!(row.head_held_since, Some(wall(0)));
    assert!(row.watermark.is_none_yet());
}

#[test]
fn a_custom_generator_gives_no_preview() {
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
    assert!(
        t.force_watermark(wall(5_000)).is_none_yet(),
        "the watermark stands still"
    );
    assert_eq!(t.snapshot().partitions["c:1"].preview_watermark, None);
}

#[test]
fn a_head_more_than_a_minute_ahead_of_wall_clock_is_warned_once() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 1, &bounded(0));
    let mut d = OrderedDispatch::new();
    let now = 1_790_000_000_000;
    d.push(&mut t, p[0], Offset(0), et(now + 60_000), (), wall(now))
        .unwrap();
    assert!(
        t.take_warnings().is_empty(),
        "exactly a minute ahead is fine"
    );
    d.next(&mut t, wall(now)).unwrap();
    d.push(&mut t, p[0], Offset(1), et(now + 3_600_000), (), wall(now))
        .unwrap();
    d.push(&mut t, p[0], Offset(2), et(now + 3_600_001), (), wall(now))
        .unwrap();
    d.next(&mut t, wall(now)).unwrap();
    let warnings = t.take_warnings();
    assert_eq!(
        warnings,
        [TrackerWarning::FutureHead {
            partition: SourcePartition::new("orders", 0),
            ahead_ms: 3_600_000
        }]
    );
}

#[test]
fn held_partitions_are_skipped_and_served_once_released() {
    let mut t = tracker();
    let s = WatermarkStrategy::<(), ()>::for_monotonous_timestamps().with_watermark_alignment(
        "g",
        Duration::from_millis(100),
        Duration::from_millis(1),
    );
    let fast = t
        .register(SourcePartition::new("fast", 0), s.policy(), wall(0))
        .unwrap();
    let slow = t
        .register(SourcePartition::new("slow", 0), s.policy(), wall(0))
        .unwrap();
    let mut d = OrderedDispatch::new();
    d.push(&mut t, slow, Offset(0), et(0), "s0", wall(0))
        .unwrap();
    d.push(&mut t, fast, Offset(0), et(500), "f0", wall(0))
        .unwrap();
    d.push(&mut t, fast, Offset(1), et(501), "f1", wall(0))
        .unwrap();
    assert_eq!(d.next(&mut t, wall(0)).unwrap().record, "s0");
    assert_eq!(d.next(&mut t, wall(0)).unwrap().record, "f0");
    t.force_watermark(wall(1));
    assert!(
        t.is_held(fast),
        "500 is more than 100 ahead of the group minimum 0"
    );
    assert!(
        d.next(&mut t, wall(1)).is_none(),
        "the held partition is not served"
    );
    assert_eq!(d.buffered_in(fast), 1);
    d.push(&mut t, slow, Offset(1), et(450), "s1", wall(2))
        .unwrap();
    assert_eq!(d.next(&mut t, wall(2)).unwrap().record, "s1");
    t.force_watermark(wall(3));
    assert!(!t.is_held(fast));
    assert_eq!(d.next(&mut t, wall(3)).unwrap().record, "f1");
}
