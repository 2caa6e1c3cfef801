//! The `/watermarks` endpoint (docs/operating.md#watermarks-endpoint),
//! including a two-partition reading as exact JSON.

use std::time::Duration;

use serde_json::json;
use stoatflow_server::{info_json, watermarks_response};
use stoatflow_time::{
    EventTime, SourcePartition, TrackerConfig, WallTime, Watermark, WatermarkStrategy,
    WatermarkTracker,
};

fn et(ms: i64) -> EventTime {
    EventTime::new(ms).unwrap()
}

#[test]
fn reproduces_a_two_partition_reading_exactly() {
    let mut t = WatermarkTracker::new(TrackerConfig::default());
    let s0 = WatermarkStrategy::<(), ()>::for_bounded_out_of_orderness(Duration::from_secs(10));
    let s1 = WatermarkStrategy::<(), ()>::for_bounded_out_of_orderness(Duration::from_secs(22))
        .with_idleness(Duration::from_secs(120));
    let start = WallTime::from_millis(1_790_071_020_000);
    let p0 = t
        .register(SourcePartition::new("orders", 0), s0.policy(), start)
        .unwrap();
    let p1 = t
        .register(SourcePartition::new("orders", 1), s1.policy(), start)
        .unwrap();
    t.on_record(
        p1,
        et(1_790_071_080_000),
        WallTime::from_millis(1_790_071_080_000),
    )
    .unwrap();
    t.on_record(
        p0,
        et(1_790_071_080_000),
        WallTime::from_millis(1_790_071_080_000),
    )
    .unwrap();
    t.on_record(
        p0,
        et(1_790_071_570_000),
        WallTime::from_millis(1_790_071_570_000),
    )
    .unwrap();
    t.force_watermark(WallTime::from_millis(1_790_071_570_000));
    t.on_record(
        p0,
        et(1_790_071_592_000),
        WallTime::from_millis(1_790_071_592_000),
    )
    .unwrap();

    let (status, body) = watermarks_response(&t.snapshot(), true);
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({
          "globalMs": 1790071560000i64,
          "globalIso": "2026-09-22T10:06:00Z",
          "alignmentGroupMins": {},
          "alignmentBinding": null,
          "partitions": {
            "orders:0": {
              "watermarkMs": 1790071560000i64, "watermarkIso": "2026-09-22T10:06:00Z",
              "idle": false, "lastEventTimeMs": 1790071592000i64, "lastEventTimeIso": "2026-09-22T10:06:32Z",
              "alignmentGroup": null, "alignmentHeld": false, "driftFromGroupMinMs": 0,
              "idlenessTimeoutMs": 300000
            },
            "orders:1": {
              "watermarkMs": 1790071058000i64, "watermarkIso": "2026-09-22T09:57:38Z",
              "idle": true, "lastEventTimeMs": 1790071080000i64, "lastEventTimeIso": "2026-09-22T09:58:00Z",
              "alignmentGroup": null, "alignmentHeld": false, "driftFromGroupMinMs": 0,
              "idlenessTimeoutMs": 120000
            }
          },
          "holder": {
            "partition": "orders:0", "reason": "lowest",
            "why": "lowest watermark; last record 0 ms ago; counts as idle in 5 m 0 s",
            "idleInMs": 300000
          }
        })
    );
}

#[test]
fn answers_503_until_something_registers_then_200_with_min_and_na() {
    let mut t = WatermarkTracker::new(TrackerConfig::default());
    assert_eq!(watermarks_response(&t.snapshot(), true).0, 503);
    t.register(
        SourcePartition::new("orders", 0),
        WatermarkStrategy::<(), ()>::for_monotonous_timestamps().policy(),
        WallTime::EPOCH,
    )
    .unwrap();
    assert_eq!(
        watermarks_response(&t.snapshot(), false).0,
        503,
        "not initialised"
    );
    let (status, body) = watermarks_response(&t.snapshot(), true);
    assert_eq!(status, 200);
    assert_eq!(body["globalMs"], json!(i64::MIN));
    assert_eq!(body["globalIso"], json!("N/A"));
}

#[test]
fn info_carries_the_global_watermark_unless_switched_off() {
    let w = Watermark::from_millis(1_790_071_560_000);
    assert_eq!(
        info_json(w, true),
        json!({"globalMs": 1790071560000i64, "globalIso": "2026-09-22T10:06:00Z"})
    );
    assert_eq!(info_json(w, false), json!({}));
}
