//! Sliding count: per key, every distinct window of [`SLIDING_DIFFERENCE`]
//! that holds records, counted and emitted once when it closes.

use std::time::Duration;

use stoatflow_streams::{
    Consumed, EmitStrategy, KStream, Materialized, Serdes, SlidingWindows, StreamsBuilder, Windowed,
};
use stoatflow_time::WatermarkStrategy;

use super::WINDOWED_TOPIC;

/// The sliding window's time difference, D.
pub const SLIDING_DIFFERENCE: Duration = Duration::from_secs(10);

/// Counts [`WINDOWED_TOPIC`] per key in sliding windows of D = 10 s, no
/// grace, emitted on close.
pub fn sliding(builder: &mut StreamsBuilder) -> KStream<Windowed<i64>, i64> {
    builder
        .stream(
            WINDOWED_TOPIC,
            Consumed::with(Serdes::i64(), Serdes::i64())
                .with_watermark_strategy(WatermarkStrategy::for_monotonous_timestamps()),
        )
        .group_by_key()
        .windowed_by(SlidingWindows::of_time_difference_with_no_grace(
            SLIDING_DIFFERENCE,
        ))
        .emit_strategy(EmitStrategy::on_window_close())
        .count_with(Materialized::as_("sliding-counts"))
        .to_stream()
        .skip_tombstones()
}
