use std::time::Duration;

use stoatflow_time::{
    EventTime, GeneratorSpec, SourcePartition, TrackerConfig, TrackerError, TrackerWarning,
    Watermark, WatermarkGenerator, WatermarkOutput, WatermarkStrategy, WatermarkTracker,
};

use crate::{bounded, et, register, tracker, wall};

#[test]
fn global_watermark_is_the_minimum_over_partitions() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 3, &bounded(10));
    t.on_record(p[0], et(100), wall(0)).unwrap();
    t.on_record(p[1], et(300), wall(0)).unwrap();
    t.on_record(p[2], et(200), wall(0)).unwrap();
    assert_eq!(t.force_watermark(wall(0)), Watermark::from_millis(90));
}

#[test]
fn a_partition_without_records_holds_the_watermark_at_none_yet() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 2, &bounded(0));
    t.on_record(p[0], et(100), wall(0)).unwrap();
    assert!(t.force_watermark(wall(0)).is_none_yet());
}

#[test]
fn published_watermark_only_increases() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 1, &bounded(0));
    t.on_record(p[0], et(100), wall(0)).unwrap();
    assert_eq!(t.force_watermark(wall(0)), Watermark::from_millis(100));
    // A new partition with an older watermark joins: the minimum drops, the published value does not.
    let late = t
        .register(SourcePartition::new("orders", 9), &bounded(0), wall(0))
        .unwrap();
    t.on_record(late, et(40), wall(0)).unwrap();
    assert_eq!(t.force_watermark(wall(0)), Watermark::from_millis(100));
    assert_eq!(t.poll_watermark(wall(1_000)), None);
}

#[test]
fn partition_goes_idle_after_its_timeout_and_is_excluded() {
    let mut t = tracker(); // default idleness 300 s
    let p = register(&mut t, "orders", 2, &bounded(0));
    t.on_record(p[0], et(1_000), wall(0)).unwrap();
    t.on_record(p[1], et(500), wall(0)).unwrap();
    assert_eq!(
        t.force_watermark(wall(299_999)),
        Watermark::from_millis(500)
    );
    t.on_record(p[0], et(2_000), wall(299_999)).unwrap();
    assert_eq!(
        t.force_watermark(wall(300_000)),
        Watermark::from_millis(2_000),
        "p1 idled out at exactly its timeout"
    );
    let snap = t.snapshot();
    assert!(snap.partitions["orders:1"].idle);
    assert!(!snap.partitions["orders:0"].idle);
}

#[test]
fn idle_partition_becomes_active_on_its_next_record() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 2, &bounded(0));
    t.on_record(p[0], et(1_000), wall(0)).unwrap();
    t.on_record(p[1], et(500), wall(0)).unwrap();
    t.on_record(p[0], et(5_000), wall(400_000)).unwrap();
    assert_eq!(
        t.force_watermark(wall(400_000)),
        Watermark::from_millis(5_000)
    );
    // p1 comes back with an old record: it is active again, and late.
    assert!(t.on_record(p[1], et(600), wall(400_001)).unwrap());
    assert!(!t.snapshot().partitions["orders:1"].idle);
    t.on_record(p[0], et(9_000), wall(400_002)).unwrap();
    assert_eq!(
        t.force_watermark(wall(400_002)),
        Watermark::from_millis(5_000),
        "held by the returning partition, never lowered"
    );
}

#[test]
fn sources_own_idleness_overrides_the_global_default_and_zero_disables() {
    let mut t = tracker();
    let quick = WatermarkStrategy::<(), ()>::for_monotonous_timestamps()
        .with_idleness(Duration::from_secs(2));
    let never =
        WatermarkStrategy::<(), ()>::for_monotonous_timestamps().with_idleness(Duration::ZERO);
    let a = t
        .register(SourcePartition::new("quick", 0), quick.policy(), wall(0))
        .unwrap();
    let b = t
        .register(SourcePartition::new("never", 0), never.policy(), wall(0))
        .unwrap();
    t.on_record(a, et(10), wall(0)).unwrap();
    t.on_record(b, et(5), wall(0)).unwrap();
    t.force_watermark(wall(10_000_000));
    let snap = t.snapshot();
    assert!(snap.partitions["quick:0"].idle);
    assert_eq!(snap.partitions["quick:0"].idleness_timeout_ms, 2_000);
    assert!(!snap.partitions["never:0"].idle, "idleness 0 never idles");
    assert_eq!(snap.partitions["never:0"].idleness_timeout_ms, 0);
    assert_eq!(snap.global, Watermark::from_millis(5));
}

#[test]
fn global_default_idleness_zero_disables_it_for_sources_without_their_own() {
    let mut t = WatermarkTracker::new(TrackerConfig {
        default_idleness: Duration::ZERO,
        ..TrackerConfig::default()
    });
    let p = register(&mut t, "orders", 1, &bounded(0));
    t.force_watermark(wall(i64::MAX / 2));
    assert!(!t.snapshot().partitions["orders:0"].idle);
    let w = t
        .report_startup()
        .expect("idleness-disabled sources are reported");
    assert_eq!(
        w,
        TrackerWarning::IdlenessDisabled {
            sources: vec!["orders".into()]
        }
    );
    assert_eq!(t.report_startup(), None, "reported once");
    let _ = p;
}

#[test]
fn startup_reports_nothing_when_every_source_can_idle() {
    let mut t = tracker();
    register(&mut t, "orders", 2, &bounded(0));
    assert_eq!(t.report_startup(), None);
}

#[test]
fn every_partition_idle_holds_the_value() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 2, &bounded(0));
    t.on_record(p[0], et(100), wall(0)).unwrap();
    t.on_record(p[1], et(200), wall(0)).unwrap();
    assert_eq!(t.force_watermark(wall(0)), Watermark::from_millis(100));
    assert_eq!(
        t.force_watermark(wall(1_000_000)),
        Watermark::from_millis(100)
    );
    assert!(t.snapshot().partitions.values().all(|p| p.idle));
}

#[test]
fn publication_is_throttled_to_auto_interval_but_force_ignores_it() {
    let mut t = tracker(); // auto-interval 200 ms
    let p = register(&mut t, "orders", 1, &bounded(0));
    t.on_record(p[0], et(10), wall(0)).unwrap();
    assert_eq!(t.poll_watermark(wall(0)), Some(Watermark::from_millis(10)));
    t.on_record(p[0], et(20), wall(100)).unwrap();
    assert_eq!(t.poll_watermark(wall(199)), None, "within the interval");
    assert_eq!(t.current(), Watermark::from_millis(10));
    assert_eq!(
        t.poll_watermark(wall(200)),
        Some(Watermark::from_millis(20))
    );
    t.on_record(p[0], et(30), wall(201)).unwrap();
    assert_eq!(
        t.force_watermark(wall(201)),
        Watermark::from_millis(30),
        "a barrier forces it"
    );
}

#[test]
fn late_arrivals_are_counted_against_the_published_watermark() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 1, &bounded(0));
    assert!(
        !t.on_record(p[0], et(100), wall(0)).unwrap(),
        "nothing is late before a watermark"
    );
    t.force_watermark(wall(0));
    assert!(
        !t.on_record(p[0], et(100), wall(0)).unwrap(),
        "at the watermark is on time"
    );
    assert!(t.on_record(p[0], et(99), wall(0)).unwrap());
    assert!(t.on_record(p[0], et(1), wall(0)).unwrap());
    assert_eq!(t.metrics(wall(0)).late_records_total, 2);
}

#[test]
fn out_of_orderness_max_tracks_the_largest_step_back() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 2, &bounded(0));
    for (i, ts) in [(0, 100), (0, 90), (1, 160), (0, 110), (1, 150)] {
        t.on_record(p[i], et(ts), wall(0)).unwrap();
    }
    assert_eq!(t.metrics(wall(0)).out_of_orderness_max_ms, 50);
}

#[test]
fn lag_is_wall_clock_minus_watermark() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 1, &bounded(0));
    assert_eq!(t.metrics(wall(5_000)).lag_ms, None);
    t.on_record(p[0], et(1_000), wall(0)).unwrap();
    t.force_watermark(wall(0));
    assert_eq!(t.metrics(wall(5_000)).lag_ms, Some(4_000));
}

#[test]
fn unknown_and_duplicate_partitions_are_clear_errors() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 1, &bounded(0));
    let err = t
        .index_of(&SourcePartition::new("payments", 3))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown source partition payments:3: it was never registered with the watermark tracker"
    );
    let err = t
        .register(SourcePartition::new("orders", 0), &bounded(0), wall(0))
        .unwrap_err();
    assert!(
        matches!(err, TrackerError::DuplicatePartition { ref partition } if partition == "orders:0")
    );
    let mut other = tracker();
    let err = other.on_record(p[0], et(1), wall(0)).unwrap_err();
    assert!(matches!(err, TrackerError::UnknownPartition { .. }));
}

#[test]
fn misconfigured_strategy_is_refused_at_registration_naming_the_group() {
    let mut t = tracker();
    let s = WatermarkStrategy::<(), ()>::for_monotonous_timestamps().with_watermark_alignment(
        "g",
        Duration::ZERO,
        Duration::from_secs(1),
    );
    let err = t
        .register(SourcePartition::new("orders", 0), s.policy(), wall(0))
        .unwrap_err();
    assert!(err.to_string().contains("'g'"), "{err}");
    assert!(t.is_empty(), "nothing half-registered");
}

#[test]
fn config_from_millis_names_the_bad_key() {
    let err = TrackerConfig::from_millis(-1, 0, 200).unwrap_err();
    assert!(err.to_string().contains("max-out-of-orderness-ms"), "{err}");
    let err = TrackerConfig::from_millis(0, -5, 200).unwrap_err();
    assert!(err.to_string().contains("idleness-timeout-ms"), "{err}");
    let err = TrackerConfig::from_millis(0, 0, 0).unwrap_err();
    assert!(err.to_string().contains("auto-interval-ms"), "{err}");
    let ok = TrackerConfig::from_millis(0, 0, 50).unwrap();
    assert_eq!(ok.auto_interval, Duration::from_millis(50));
}

#[test]
fn sources_without_a_strategy_get_the_configured_default_bound() {
    let mut t = WatermarkTracker::new(TrackerConfig::from_millis(7, 300_000, 200).unwrap());
    let p = t
        .register_default(SourcePartition::new("orders", 0), wall(0))
        .unwrap();
    t.on_record(p, et(100), wall(0)).unwrap();
    assert_eq!(t.force_watermark(wall(0)), Watermark::from_millis(93));
}

#[test]
fn partition_time_seeds_the_watermark_at_registration() {
    let mut t = tracker();
    let p = register(&mut t, "orders", 1, &bounded(10));
    t.seed_partition_time(p[0], et(5_000)).unwrap();
    assert_eq!(t.force_watermark(wall(0)), Watermark::from_millis(4_990));
    t.on_record(p[0], et(4_000), wall(0)).unwrap();
    assert_eq!(
        t.force_watermark(wall(0)),
        Watermark::from_millis(4_990),
        "an older record does not lower the seed"
    );
}

#[test]
fn no_watermarks_source_holds_the_global_watermark_until_it_idles() {
    let mut t = tracker();
    let live = register(&mut t, "orders", 1, &bounded(0));
    let none = WatermarkStrategy::<(), ()>::no_watermarks().with_idleness(Duration::from_secs(1));
    let n = t
        .register(SourcePartition::new("refs", 0), none.policy(), wall(0))
        .unwrap();
    t.on_record(live[0], et(100), wall(500)).unwrap();
    t.on_record(n, et(100), wall(500)).unwrap();
    assert!(t.force_watermark(wall(500)).is_none_yet());
    t.on_record(live[0], et(200), wall(1_600)).unwrap();
    assert_eq!(t.force_watermark(wall(1_600)), Watermark::from_millis(200));
}

/// Emits the last event time rounded down to a whole second, and declares
/// itself idle on an event at time zero.
#[derive(Debug, Default)]
struct SecondsGenerator {
    max: Option<i64>,
    idle: bool,
}

impl WatermarkGenerator for SecondsGenerator {
    fn on_event(&mut self, t: EventTime, out: &mut WatermarkOutput) {
        self.idle = t.as_millis() == 0;
        if self.idle {
            out.mark_idle();
        } else {
            self.max = Some(self.max.unwrap_or(0).max(t.as_millis()));
        }
    }
    fn on_periodic_emit(&mut self, out: &mut WatermarkOutput) {
        match self.max {
            _ if self.idle => out.mark_idle(),
            Some(m) => out.emit_watermark(Watermark::from_millis(m / 1000 * 1000)),
            None => {}
        }
    }
}

#[test]
fn custom_generator_runs_per_partition_through_the_trait() {
    let mut t = tracker();
    let s = WatermarkStrategy::<(), ()>::for_generator(SecondsGenerator::default);
    assert!(matches!(s.policy().generator(), GeneratorSpec::Custom(_)));
    let a = t
        .register(SourcePartition::new("c", 0), s.policy(), wall(0))
        .unwrap();
    let b = t
        .register(SourcePartition::new("c", 1), s.policy(), wall(0))
        .unwrap();
    t.on_record(a, et(2_500), wall(0)).unwrap();
    t.on_record(b, et(3_700), wall(0)).unwrap();
    assert_eq!(t.force_watermark(wall(0)), Watermark::from_millis(2_000));
    // The generator itself may declare its partition idle.
    t.on_record(a, et(0), wall(0)).unwrap();
    t.on_record(b, et(4_100), wall(0)).unwrap();
    assert_eq!(t.force_watermark(wall(0)), Watermark::from_millis(4_000));
    assert!(t.snapshot().partitions["c:0"].idle);
}
