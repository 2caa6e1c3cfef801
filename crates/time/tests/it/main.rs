//! Integration tests of stoatflow-time: every tracker and dispatch rule, the
//! `/watermarks` reading with an idle partition, and property tests of the invariants.

mod alignment;
mod dispatch;
mod holder;
mod properties;
mod tracker;
mod watermarks_example;

use std::time::Duration;

use stoatflow_time::{
    EventTime, PartitionIndex, SourcePartition, SourceTimePolicy, TrackerConfig, WallTime,
    WatermarkStrategy, WatermarkTracker,
};

pub fn et(ms: i64) -> EventTime {
    EventTime::new(ms).expect("test event times are valid")
}

pub fn wall(ms: i64) -> WallTime {
    WallTime::from_millis(ms)
}

pub fn bounded(ms: u64) -> SourceTimePolicy {
    WatermarkStrategy::<(), ()>::for_bounded_out_of_orderness(Duration::from_millis(ms))
        .policy()
        .clone()
}

pub fn tracker() -> WatermarkTracker {
    WatermarkTracker::new(TrackerConfig::default())
}

/// Registers `topic:0..n` with one policy at wall time 0.
pub fn register(
    t: &mut WatermarkTracker,
    topic: &str,
    n: i32,
    policy: &SourceTimePolicy,
) -> Vec<PartitionIndex> {
    (0..n)
        .map(|p| {
            t.register(SourcePartition::new(topic, p), policy, wall(0))
                .unwrap()
        })
        .collect()
}
