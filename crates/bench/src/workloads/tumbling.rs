//! Tumbling count (the workload `bench/compare` runs on every system): per
//! key, records counted in [`TUMBLING_WINDOW_MS`] tumbling windows, emitted
//! once when each closes.

use std::time::Duration;

use stoatflow_streams::{
    Consumed, EmitStrategy, KStream, Materialized, Serdes, StreamsBuilder, TimeWindows, Windowed,
};
use stoatflow_time::WatermarkStrategy;

use super::{TUMBLING_TOPIC, TUMBLING_WINDOW_MS};

/// Counts [`TUMBLING_TOPIC`] per key in 10 s tumbling windows, no grace,
/// emitted on close.
pub fn tumbling(builder: &mut StreamsBuilder) -> KStream<Windowed<i64>, i64> {
    builder
        .stream(
            TUMBLING_TOPIC,
            Consumed::with(Serdes::i64(), Serdes::i64())
                .with_watermark_strategy(WatermarkStrategy::for_monotonous_timestamps()),
        )
        .group_by_key()
        .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_millis(
            TUMBLING_WINDOW_MS,
        )))
        .emit_strategy(EmitStrategy::on_window_close())
        .count_with(Materialized::as_("counts"))
        .to_stream()
        .skip_tombstones()
}
