//! `stoatflow watermarks --url URL`: the watermark runbook
//! (docs/operating.md#runbook) in a terminal. Reads
//! `GET /watermarks` twice (to see whether the holding partition is still
//! receiving records), prints every partition as a table, marks the one
//! holding the global watermark with the server's why (its `holder`, named
//! even while there is no watermark: docs/time.md#holder), and says which of
//! the runbook's five numbered branches applies and what to do.
//!
//! Owns the reading of the JSON and the branch rules; which partition holds
//! the watermark and why is the server's answer, printed as it is. The HTTP
//! is `http_get`'s.

use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use stoatflow::{Clock, SystemClock, WallTime};

use crate::http_get;
use crate::out::outln;

/// The lag alert's threshold (docs/operating.md#alerts): event time five
/// minutes behind wall clock.
const LAG_ALERT_MS: i64 = 300_000;

/// The partition `/watermarks` names as holding the global watermark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// `topic:partition`.
    pub partition: String,
    /// The reason's code (`never_received`, `lowest`, `idle`, ...).
    pub reason: String,
    /// The reason in words, as the server wrote it.
    pub why: String,
    /// Time left until it counts as idle, where a countdown runs.
    pub idle_in_ms: Option<i64>,
}

impl Holder {
    fn read(body: &Value) -> Option<Holder> {
        let h = body.get("holder")?;
        let text = |f: &str| h.get(f).and_then(Value::as_str).map(str::to_owned);
        Some(Holder {
            partition: text("partition")?,
            reason: text("reason")?,
            why: text("why")?,
            idle_in_ms: num(h, "idleInMs"),
        })
    }
}

/// Which branch of the runbook applies; the numbers are those of
/// docs/operating.md#runbook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Branch {
    /// No stall: the watermark trails wall clock by less than the alert.
    Healthy { lag_ms: i64 },
    /// Branch 1: the holder receives nothing (or never did) and does not
    /// count as idle yet, or never will; `holder.why` says which.
    Quiet { holder: Holder },
    /// Branch 1, its last case: every partition is idle, so the watermark
    /// stays where it is until a record arrives.
    AllIdle { holder: Holder },
    /// Branch 2: live but delivering old timestamps.
    LiveOldTimestamps { partition: String, lag_ms: i64 },
    /// Branch 3: an alignment hold binds every source.
    AlignmentHold { binding: String },
    /// Branch 4: the next record is stamped in the future and waits.
    FutureHead { partition: String, preview: bool },
    /// Branch 5: no event-time tracking, or nothing registered: never a
    /// watermark.
    NoWatermark,
}

/// The runbook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    /// The partition holding the global watermark and why, if one does.
    pub holder: Option<Holder>,
    /// The branch.
    pub branch: Branch,
}

fn num(v: &Value, field: &str) -> Option<i64> {
    v.get(field).and_then(Value::as_i64)
}

/// Applies the runbook's rules to two readings of `/watermarks` taken a moment
/// apart (`None` for a 503) at wall-clock `now_ms`.
pub fn diagnose(first: Option<&Value>, second: Option<&Value>, now_ms: i64) -> Diagnosis {
    let no_watermark = Diagnosis {
        holder: None,
        branch: Branch::NoWatermark,
    };
    let Some(now) = second else {
        return no_watermark;
    };
    let Some(holder) = Holder::read(now) else {
        return no_watermark;
    };
    let global = num(now, "globalMs").unwrap_or(i64::MIN);
    let binding = now
        .get("alignmentBinding")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let lag_ms = now_ms.saturating_sub(global);
    let p = now
        .get("partitions")
        .and_then(|ps| ps.get(holder.partition.as_str()))
        .cloned()
        .unwrap_or(Value::Null);
    let branch = if let Some(binding) = binding {
        Branch::AlignmentHold { binding }
    } else if holder.reason == "future_head" {
        Branch::FutureHead {
            partition: holder.partition.clone(),
            preview: p.get("previewWatermarkMs").is_some(),
        }
    } else if holder.reason == "idle" {
        Branch::AllIdle {
            holder: holder.clone(),
        }
    } else if global != i64::MIN && lag_ms < LAG_ALERT_MS {
        Branch::Healthy { lag_ms }
    } else {
        let before = first
            .and_then(|f| f.get("partitions"))
            .and_then(|ps| ps.get(holder.partition.as_str()))
            .and_then(|p| num(p, "lastEventTimeMs"));
        let moved = before.is_some_and(|b| Some(b) != num(&p, "lastEventTimeMs"));
        if moved && global != i64::MIN {
            Branch::LiveOldTimestamps {
                partition: holder.partition.clone(),
                lag_ms,
            }
        } else {
            Branch::Quiet {
                holder: holder.clone(),
            }
        }
    };
    Diagnosis {
        holder: Some(holder),
        branch,
    }
}

/// What to do, per branch, ending with the branch's section of
/// docs/operating.md.
pub fn advice(branch: &Branch) -> String {
    match branch {
        Branch::Healthy { lag_ms } => format!(
            "no stall: event time trails wall clock by {lag_ms} ms (the lag alert fires above {LAG_ALERT_MS} ms)"
        ),
        Branch::Quiet { holder } => {
            let todo = match (holder.reason.as_str(), holder.idle_in_ms) {
                ("no_watermark_yet", _) => {
                    "give its source a watermark strategy that makes watermarks (docs/time.md#generation)"
                }
                (_, Some(_)) => "wait for its idleness timeout, or lower that source's with_idleness",
                (_, None) => {
                    "give its source with_idleness or set stoatflow.watermark.idleness-timeout-ms"
                }
            };
            format!(
                "branch 1 (quiet, not yet idle): {}: {}; {todo} (docs/operating.md#branch-1)",
                holder.partition, holder.why
            )
        }
        Branch::AllIdle { holder } => format!(
            "branch 1 (every partition idle): {}: {}; nothing to fix unless records were expected (docs/operating.md#branch-1)",
            holder.partition, holder.why
        ),
        Branch::LiveOldTimestamps { partition, lag_ms } => format!(
            "branch 2 (live, old timestamps): {partition} keeps receiving records stamped {lag_ms} ms behind wall clock; no watermark setting fixes it: find the producer (its clock or a replay), or accept the stall for the catch-up (docs/operating.md#branch-2)"
        ),
        Branch::AlignmentHold { binding } => format!(
            "branch 3 (alignment hold): {binding} binds its alignment group while it has nothing buffered; size the group's max_drift to at least that source's normal gap plus the difference in bounds, or give it a shorter with_idleness (docs/operating.md#branch-3)"
        ),
        Branch::FutureHead { partition, preview: true } => format!(
            "branch 4 (future head): {partition}'s next record is stamped ahead and waits; with a built-in strategy its preview watermark lets the other partitions set event time: not a stall; fix the producer's clock or the timestamp unit (docs/operating.md#branch-4)"
        ),
        Branch::FutureHead { partition, preview: false } => format!(
            "branch 4 (future head, no preview): {partition}'s next record is stamped ahead and its custom generator gives no preview; the watermark stands until that record is dispatched or the partition idles out; fix the producer's clock or the timestamp unit (docs/operating.md#branch-4)"
        ),
        Branch::NoWatermark => "branch 5 (no event time): nothing is registered or tracking is off (stoatflow_topology_event_time_tracking = 0): there was never a watermark to stall; if you expected windows to close, force timestamp-coordination-mode: ENABLED and compare (docs/operating.md#branch-5)".into(),
    }
}

fn iso(ms: Option<i64>) -> String {
    match ms {
        Some(i64::MIN) | None => "N/A".into(),
        Some(ms) => WallTime::from_millis(ms).to_iso8601(),
    }
}

/// The partitions as a table, the holder marked.
pub fn table(body: &Value, holder: Option<&str>) -> String {
    let header = [
        "",
        "PARTITION",
        "WATERMARK",
        "IDLE",
        "LAST EVENT",
        "IDLENESS MS",
        "HELD",
        "PREVIEW",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| (*s).to_owned()).collect()];
    if let Some(ps) = body.get("partitions").and_then(Value::as_object) {
        for (name, p) in ps {
            rows.push(vec![
                if Some(name.as_str()) == holder {
                    "*"
                } else {
                    ""
                }
                .into(),
                name.clone(),
                iso(num(p, "watermarkMs")),
                p.get("idle")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
                    .to_string(),
                iso(num(p, "lastEventTimeMs")),
                num(p, "idlenessTimeoutMs").map_or("-".into(), |t| t.to_string()),
                p.get("alignmentHeld")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
                    .to_string(),
                num(p, "previewWatermarkMs").map_or("-".into(), |t| iso(Some(t))),
            ]);
        }
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn read(url: &str) -> anyhow::Result<Option<Value>> {
    let (status, body) = http_get::get(url, Duration::from_secs(5))?;
    match status {
        200 => Ok(Some(
            serde_json::from_str(&body).with_context(|| format!("{url}: the body is not JSON"))?,
        )),
        503 => Ok(None),
        other => anyhow::bail!("{url} answered {other}: {}", body.trim()),
    }
}

/// `stoatflow watermarks`.
pub fn run(url: &str, interval: Duration) -> anyhow::Result<()> {
    let base = url.trim_end_matches('/');
    let url = if base.ends_with("/watermarks") {
        base.to_owned()
    } else {
        format!("{base}/watermarks")
    };
    let first = read(&url)?;
    std::thread::sleep(interval);
    let second = read(&url)?;
    let now = SystemClock.now().as_millis();
    let d = diagnose(first.as_ref(), second.as_ref(), now);
    match &second {
        Some(body) => {
            let global = num(body, "globalMs");
            outln!(
                "global watermark: {} ({})",
                iso(global),
                global.unwrap_or(i64::MIN)
            )?;
            let holder = d.holder.as_ref().map(|h| h.partition.as_str());
            crate::out::write(format_args!("{}", table(body, holder)))?;
            match &d.holder {
                Some(h) => outln!("* holds the global watermark: {} ({})", h.partition, h.why)?,
                None => outln!("no partition holds the global watermark")?,
            }
        }
        None => {
            outln!("{url} answered 503: the engine is not initialised, or nothing has registered")?
        }
    }
    outln!("{}", advice(&d.branch))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_790_071_600_000;

    fn body(binding: Value, p0: Value, p1: Value, holder: Value) -> Value {
        json!({
            "globalMs": 1_790_071_560_000i64, "globalIso": "",
            "alignmentGroupMins": {}, "alignmentBinding": binding,
            "partitions": { "orders:0": p0, "orders:1": p1 },
            "holder": holder
        })
    }

    fn part(wm: i64, idle: bool, last: i64) -> Value {
        json!({ "watermarkMs": wm, "idle": idle, "lastEventTimeMs": last,
                "alignmentGroup": null, "alignmentHeld": false,
                "driftFromGroupMinMs": 0, "idlenessTimeoutMs": 120000 })
    }

    fn holder(partition: &str, reason: &str, idle_in: Value) -> Value {
        json!({ "partition": partition, "reason": reason, "why": format!("{reason} (why)"),
                "idleInMs": idle_in })
    }

    #[test]
    fn the_part_4_example_is_healthy_and_names_the_holder() {
        let b = body(
            Value::Null,
            part(1_790_071_560_000, false, 1_790_071_592_000),
            part(1_790_071_058_000, true, 1_790_071_080_000),
            holder("orders:0", "lowest", json!(1_000)),
        );
        let d = diagnose(Some(&b), Some(&b), NOW);
        assert_eq!(d.holder.map(|h| h.partition).as_deref(), Some("orders:0"));
        assert_eq!(d.branch, Branch::Healthy { lag_ms: 40_000 });
        let t = table(&b, Some("orders:0"));
        assert!(t.lines().nth(1).unwrap().starts_with("*  orders:0"), "{t}");
    }

    #[test]
    fn a_never_written_partition_without_a_watermark_is_quiet_with_the_servers_why() {
        let mut b = body(
            Value::Null,
            part(1_790_071_560_000, false, 1),
            part(i64::MIN, false, i64::MIN),
            holder("orders:1", "never_received", json!(252_000)),
        );
        b["globalMs"] = json!(i64::MIN);
        let d = diagnose(Some(&b), Some(&b), NOW);
        let Branch::Quiet { holder } = &d.branch else {
            panic!("{:?}", d.branch)
        };
        assert_eq!(holder.partition, "orders:1");
        let text = advice(&d.branch);
        assert!(
            text.starts_with(
                "branch 1 (quiet, not yet idle): orders:1: never_received (why); wait"
            ),
            "{text}"
        );
        assert!(!text.contains("disabled"), "{text}");
        // Idleness off: the advice is to turn it on, not to wait.
        b["holder"]["idleInMs"] = Value::Null;
        let off = advice(&diagnose(None, Some(&b), NOW).branch);
        assert!(off.contains("give its source with_idleness"), "{off}");
    }

    #[test]
    fn every_partition_idle_says_so_and_not_that_idleness_is_disabled() {
        let b = body(
            Value::Null,
            part(1_790_071_560_000, true, 1),
            part(1_790_071_900_000, true, 2),
            holder("orders:0", "idle", Value::Null),
        );
        let d = diagnose(Some(&b), Some(&b), NOW + 3_600_000);
        assert!(matches!(d.branch, Branch::AllIdle { .. }), "{:?}", d.branch);
        let text = advice(&d.branch);
        assert!(
            text.starts_with("branch 1 (every partition idle): orders:0"),
            "{text}"
        );
        assert!(!text.contains("disabled"), "{text}");
    }

    #[test]
    fn each_branch() {
        let late = NOW + 3_600_000;
        let lowest = || holder("orders:0", "lowest", json!(10_000));
        let quiet = body(
            Value::Null,
            part(1_790_071_560_000, false, 1),
            part(1_790_071_900_000, false, 2),
            lowest(),
        );
        assert!(matches!(
            diagnose(Some(&quiet), Some(&quiet), late).branch,
            Branch::Quiet { holder } if holder.partition == "orders:0"
        ));
        let moved = body(
            Value::Null,
            part(1_790_071_560_000, false, 5),
            part(1_790_071_900_000, false, 2),
            lowest(),
        );
        assert_eq!(
            diagnose(Some(&quiet), Some(&moved), late).branch,
            Branch::LiveOldTimestamps {
                partition: "orders:0".into(),
                lag_ms: late - 1_790_071_560_000
            }
        );
        let held = body(
            json!("orders:1"),
            part(1_790_071_560_000, false, 5),
            part(1, false, 2),
            holder("orders:1", "alignment_hold", Value::Null),
        );
        assert_eq!(
            diagnose(None, Some(&held), late).branch,
            Branch::AlignmentHold {
                binding: "orders:1".into()
            }
        );
        let mut ahead = part(0, false, 5);
        ahead["previewWatermarkMs"] = json!(1_790_071_560_000i64);
        ahead["headHeldSinceMs"] = json!(NOW);
        let future = body(
            Value::Null,
            ahead,
            part(1_790_071_900_000, false, 2),
            holder("orders:0", "future_head", Value::Null),
        );
        assert_eq!(
            diagnose(None, Some(&future), late).branch,
            Branch::FutureHead {
                partition: "orders:0".into(),
                preview: true
            }
        );
        assert_eq!(diagnose(None, None, NOW).branch, Branch::NoWatermark);
        assert!(!advice(&Branch::Healthy { lag_ms: 1 }).is_empty());
        assert!(!advice(&Branch::NoWatermark).is_empty());
    }
}
