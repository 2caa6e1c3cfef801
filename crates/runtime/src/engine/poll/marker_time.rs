//! The event time of a repartition partition
//! (docs/barriers.md#repartition-hops): its watermark is the last marker read
//! from it, never a record's time, and it is never idle while its writer
//! runs. Knows nothing of how markers are read.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use stoatflow_time::{
    EventTime, SourceTimePolicy, Watermark, WatermarkGenerator, WatermarkOutput, WatermarkStrategy,
};

/// The generator of a repartition partition: its watermark is the last
/// marker read from it, never a record's time.
#[derive(Debug)]
struct MarkerGenerator {
    last_marker: Arc<AtomicI64>,
}

impl WatermarkGenerator for MarkerGenerator {
    fn on_event(&mut self, _: EventTime, _: &mut WatermarkOutput) {}

    fn on_periodic_emit(&mut self, output: &mut WatermarkOutput) {
        let w = self.last_marker.load(Ordering::Acquire);
        if w != i64::MIN {
            output.emit_watermark(Watermark::from_millis(w));
        }
    }
}

/// The time policy of a repartition partition: marker-driven, never idle
/// (its writer sends a marker with every commit).
pub(in crate::engine) fn marker_policy(last_marker: Arc<AtomicI64>) -> SourceTimePolicy {
    WatermarkStrategy::<(), ()>::for_generator(move || MarkerGenerator {
        last_marker: last_marker.clone(),
    })
    .with_idleness(Duration::ZERO)
    .policy()
    .clone()
}
