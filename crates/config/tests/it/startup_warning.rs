//! `idleness-timeout-ms: 0` reaches the tracker, which then names, once, the
//! sources it leaves without idleness (the startup warning of
//! docs/time.md#idleness).

use std::time::Duration;

use stoatflow_config::ConfigLoader;
use stoatflow_time::{
    SourcePartition, TrackerWarning, WallTime, WatermarkStrategy, WatermarkTracker,
};

#[test]
fn idleness_zero_from_yaml_makes_the_tracker_warn_once_at_start() {
    let config = ConfigLoader::new()
        .yaml_str(
            "app.yaml",
            "application.id: a\nstoatflow.watermark.idleness-timeout-ms: 0\n",
        )
        .unwrap()
        .build()
        .unwrap();
    let mut tracker = WatermarkTracker::new(config.runtime.tracker.clone());
    let now = WallTime::from_millis(0);
    tracker
        .register_default(SourcePartition::new("orders", 0), now)
        .unwrap();
    let own = WatermarkStrategy::<(), ()>::for_monotonous_timestamps()
        .with_idleness(Duration::from_secs(60));
    tracker
        .register(SourcePartition::new("payments", 0), own.policy(), now)
        .unwrap();
    assert_eq!(
        tracker.report_startup(),
        Some(TrackerWarning::IdlenessDisabled {
            sources: vec!["orders".into()]
        })
    );
    assert_eq!(tracker.report_startup(), None, "logged once");

    let defaults = ConfigLoader::new()
        .map([("application.id", "a")])
        .build()
        .unwrap();
    let mut tracker = WatermarkTracker::new(defaults.runtime.tracker);
    tracker
        .register_default(SourcePartition::new("orders", 0), now)
        .unwrap();
    assert_eq!(tracker.report_startup(), None);
}
