//! Reading `/watermarks` with one idle partition
//! (docs/operating.md#watermarks-endpoint): orders:1 is idle and excluded,
//! orders:0 sets the global value.
//!
//! The two partitions in the example show different idleness timeouts and
//! bounds, so each is registered with its own policy.

use std::time::Duration;

use stoatflow_time::{SourcePartition, Watermark, WatermarkStrategy};

use crate::{et, tracker, wall};

const T_09_58_00: i64 = 1_790_071_080_000;
const T_10_06_00: i64 = 1_790_071_560_000;
const T_10_06_10: i64 = 1_790_071_570_000;
const T_10_06_32: i64 = 1_790_071_592_000;

#[test]
fn idle_partition_is_excluded_and_the_other_sets_the_global_value() {
    let mut t = tracker();
    let p0_strategy =
        WatermarkStrategy::<(), ()>::for_bounded_out_of_orderness(Duration::from_secs(10));
    let p1_strategy =
        WatermarkStrategy::<(), ()>::for_bounded_out_of_orderness(Duration::from_secs(22))
            .with_idleness(Duration::from_secs(120));
    let p0 = t
        .register(
            SourcePartition::new("orders", 0),
            p0_strategy.policy(),
            wall(T_09_58_00 - 60_000),
        )
        .unwrap();
    let p1 = t
        .register(
            SourcePartition::new("orders", 1),
            p1_strategy.policy(),
            wall(T_09_58_00 - 60_000),
        )
        .unwrap();

    // orders:1 goes quiet at 09:58; its source asked for two minutes.
    t.on_record(p1, et(T_09_58_00), wall(T_09_58_00)).unwrap();
    t.on_record(p0, et(T_09_58_00), wall(T_09_58_00)).unwrap();
    // orders:0 keeps going; the watermark is recomputed at 10:06:10 ...
    t.on_record(p0, et(T_10_06_10), wall(T_10_06_10)).unwrap();
    assert_eq!(
        t.force_watermark(wall(T_10_06_10)),
        Watermark::from_millis(T_10_06_00)
    );
    // ... and the next record, at 10:06:32, is read before the next recompute.
    t.on_record(p0, et(T_10_06_32), wall(T_10_06_32)).unwrap();

    let snap = t.snapshot();
    assert_eq!(snap.global.as_millis(), 1_790_071_560_000);
    assert_eq!(snap.global.to_iso8601(), "2026-09-22T10:06:00Z");
    assert!(snap.alignment_group_mins.is_empty());
    assert_eq!(snap.alignment_binding, None);

    let o0 = &snap.partitions["orders:0"];
    assert_eq!(o0.watermark.as_millis(), 1_790_071_560_000);
    assert_eq!(o0.watermark.to_iso8601(), "2026-09-22T10:06:00Z");
    assert!(!o0.idle);
    assert_eq!(o0.last_event_time.unwrap().as_millis(), 1_790_071_592_000);
    assert_eq!(
        o0.last_event_time.unwrap().to_iso8601(),
        "2026-09-22T10:06:32Z"
    );
    assert_eq!(
        (
            o0.alignment_group.as_deref(),
            o0.alignment_held,
            o0.drift_from_group_min_ms
        ),
        (None, false, 0)
    );
    assert_eq!(o0.idleness_timeout_ms, 300_000);

    let o1 = &snap.partitions["orders:1"];
    assert_eq!(o1.watermark.as_millis(), 1_790_071_058_000);
    assert_eq!(o1.watermark.to_iso8601(), "2026-09-22T09:57:38Z");
    assert!(o1.idle);
    assert_eq!(o1.last_event_time.unwrap().as_millis(), 1_790_071_080_000);
    assert_eq!(
        o1.last_event_time.unwrap().to_iso8601(),
        "2026-09-22T09:58:00Z"
    );
    assert_eq!(
        (
            o1.alignment_group.as_deref(),
            o1.alignment_held,
            o1.drift_from_group_min_ms
        ),
        (None, false, 0)
    );
    assert_eq!(o1.idleness_timeout_ms, 120_000);

    // The runbook's first step: the partition whose watermark equals globalMs is the minimum.
    let minimum: Vec<&str> = snap
        .partitions
        .iter()
        .filter(|(_, p)| !p.idle && p.watermark == snap.global)
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(minimum, ["orders:0"]);
}
