//! [`WatermarkHistory`]: the last minutes of watermarks, sampled by the
//! listener, so the live page opened during a stall shows how it came about
//! (`GET /watermarks/history`).
//!
//! Owns the bounded ring of samples and its JSON. Knows nothing of HTTP or
//! of how a watermark is computed: it copies what the snapshot says.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use serde_json::{Value, json};
use stoatflow_time::{WallTime, WatermarksSnapshot};

/// One sample: the wall time it was taken and the watermarks then.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sample {
    wall: WallTime,
    /// `None` before the first global watermark.
    global: Option<i64>,
    partitions: BTreeMap<String, Option<i64>>,
}

/// A bounded ring of watermark samples, one every `every`, kept for `span`.
#[derive(Debug, Clone)]
pub struct WatermarkHistory {
    every: Duration,
    capacity: usize,
    samples: VecDeque<Sample>,
}

impl WatermarkHistory {
    /// A ring sampling every `every` (at least 1 ms) and keeping `span`.
    pub fn new(every: Duration, span: Duration) -> Self {
        let every = every.max(Duration::from_millis(1));
        let capacity = (span.as_millis() / every.as_millis()).clamp(1, 100_000) as usize;
        WatermarkHistory {
            every,
            capacity,
            samples: VecDeque::with_capacity(capacity.min(1024)),
        }
    }

    /// The sampling interval.
    pub fn every(&self) -> Duration {
        self.every
    }

    /// Whether a sample is due at `now`.
    pub fn is_due(&self, now: WallTime) -> bool {
        self.samples
            .back()
            .is_none_or(|last| now.since(last.wall) >= self.every)
    }

    /// Records `snapshot` as seen at `now`, dropping the oldest sample when full.
    pub fn record(&mut self, now: WallTime, snapshot: &WatermarksSnapshot) {
        let known = |w: stoatflow_time::Watermark| (!w.is_none_yet()).then(|| w.as_millis());
        if self.samples.len() == self.capacity {
            self.samples.pop_front();
        }
        self.samples.push_back(Sample {
            wall: now,
            global: known(snapshot.global),
            partitions: snapshot
                .partitions
                .iter()
                .map(|(k, p)| (k.clone(), known(p.watermark)))
                .collect(),
        });
    }

    /// The body of `GET /watermarks/history`: oldest sample first, only
    /// those taken after `since` (wall ms) if given; a watermark not yet
    /// known is `null`.
    pub fn to_json(&self, since: Option<i64>) -> Value {
        let samples: Vec<Value> = self
            .samples
            .iter()
            .filter(|s| since.is_none_or(|t| s.wall.as_millis() > t))
            .map(|s| {
                json!({
                    "wallMs": s.wall.as_millis(),
                    "globalMs": s.global,
                    "partitions": s.partitions,
                })
            })
            .collect();
        json!({
            "sampleEveryMs": self.every.as_millis() as u64,
            "samples": samples,
        })
    }
}

#[cfg(test)]
mod tests {
    use stoatflow_time::Watermark;

    use super::*;

    fn snapshot(global: Watermark) -> WatermarksSnapshot {
        WatermarksSnapshot {
            global,
            alignment_group_mins: BTreeMap::new(),
            alignment_binding: None,
            partitions: BTreeMap::new(),
            holder: None,
            registered: true,
        }
    }

    #[test]
    fn keeps_the_newest_samples_up_to_its_span_and_samples_on_its_cadence() {
        let mut h = WatermarkHistory::new(Duration::from_secs(1), Duration::from_secs(3));
        assert!(h.is_due(WallTime::from_millis(0)));
        for (i, w) in [
            Watermark::MIN,
            Watermark::from_millis(10),
            Watermark::from_millis(20),
            Watermark::from_millis(30),
        ]
        .into_iter()
        .enumerate()
        {
            h.record(WallTime::from_millis(i as i64 * 1_000), &snapshot(w));
        }
        assert!(!h.is_due(WallTime::from_millis(3_500)));
        assert!(h.is_due(WallTime::from_millis(4_000)));
        let j = h.to_json(None);
        assert_eq!(j["sampleEveryMs"], 1_000);
        let globals: Vec<_> = j["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["globalMs"].clone())
            .collect();
        assert_eq!(
            globals,
            [json!(10), json!(20), json!(30)],
            "the oldest (MIN, null) fell out"
        );
        let newer = h.to_json(Some(2_000));
        assert_eq!(
            newer["samples"].as_array().unwrap().len(),
            1,
            "only after 2 000 ms"
        );
        assert_eq!(newer["samples"][0]["wallMs"], 3_000);
    }
}
