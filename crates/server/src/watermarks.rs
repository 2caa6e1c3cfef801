//! JSON of `/watermarks` and `/info`, field for field as in
//! docs/operating.md#watermarks-endpoint. The holder's "why" is the time
//! crate's text, rendered as it is (docs/time.md#holder).

use serde_json::{Map, Value, json};
use stoatflow_time::{
    PartitionSnapshot, Watermark, WatermarkHolder, WatermarksSnapshot, duration_ms,
};

fn ms(w: Watermark) -> Value {
    json!(w.as_millis())
}

fn partition_json(p: &PartitionSnapshot) -> Value {
    let mut row = Map::new();
    row.insert("watermarkMs".into(), ms(p.watermark));
    row.insert("watermarkIso".into(), json!(p.watermark.to_iso8601()));
    row.insert("idle".into(), json!(p.idle));
    let (last_ms, last_iso) = match p.last_event_time {
        Some(t) => (json!(t.as_millis()), json!(t.to_iso8601())),
        None => (json!(i64::MIN), json!("N/A")),
    };
    row.insert("lastEventTimeMs".into(), last_ms);
    row.insert("lastEventTimeIso".into(), last_iso);
    row.insert("alignmentGroup".into(), json!(p.alignment_group));
    row.insert("alignmentHeld".into(), json!(p.alignment_held));
    row.insert(
        "driftFromGroupMinMs".into(),
        json!(p.drift_from_group_min_ms),
    );
    row.insert("idlenessTimeoutMs".into(), json!(p.idleness_timeout_ms));
    if let Some(preview) = p.preview_watermark {
        row.insert("previewWatermarkMs".into(), ms(preview));
    }
    if let Some(since) = p.head_held_since {
        row.insert("headHeldSinceMs".into(), json!(since.as_millis()));
    }
    Value::Object(row)
}

/// `holder`: the partition the global watermark waits on, a code for its
/// reason, the reason in words, and the idleness countdown where one runs.
fn holder_json(h: &WatermarkHolder) -> Value {
    json!({
        "partition": h.partition.to_string(),
        "reason": h.reason.code(),
        "why": h.reason.to_string(),
        "idleInMs": h.reason.idle_in().map(duration_ms),
    })
}

/// The body of `GET /watermarks`.
pub fn watermarks_json(s: &WatermarksSnapshot) -> Value {
    let mins: Map<String, Value> = s
        .alignment_group_mins
        .iter()
        .map(|(g, w)| (g.clone(), ms(*w)))
        .collect();
    let partitions: Map<String, Value> = s
        .partitions
        .iter()
        .map(|(k, p)| (k.clone(), partition_json(p)))
        .collect();
    json!({
        "globalMs": s.global.as_millis(),
        "globalIso": s.global.to_iso8601(),
        "alignmentGroupMins": mins,
        "alignmentBinding": s.alignment_binding,
        "partitions": partitions,
        "holder": s.holder.as_ref().map(holder_json),
    })
}

/// Status and body of `GET /watermarks`: 503 while the engine is not
/// initialised, or when nothing registered and no watermark was emitted;
/// otherwise 200, with `globalMs` at `i64::MIN` and `globalIso` "N/A" before
/// the first watermark.
pub fn watermarks_response(s: &WatermarksSnapshot, initialised: bool) -> (u16, Value) {
    if !initialised || (!s.registered && s.global.is_none_yet()) {
        return (
            503,
            json!({ "error": "watermark tracking is not initialised" }),
        );
    }
    (200, watermarks_json(s))
}

/// The watermark part of `GET /info`, unless
/// `runtime.endpoints.info.show-watermarks` is off.
pub fn info_json(global: Watermark, show_watermarks: bool) -> Value {
    if show_watermarks {
        json!({ "globalMs": global.as_millis(), "globalIso": global.to_iso8601() })
    } else {
        json!({})
    }
}
