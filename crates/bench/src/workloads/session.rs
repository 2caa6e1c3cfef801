//! Session count: per key, runs of records at most [`SESSION_GAP`] apart,
//! counted and emitted once when the session closes.

use std::time::Duration;

use stoatflow_streams::{
    Consumed, EmitStrategy, KStream, Materialized, Serdes, SessionWindows, StreamsBuilder, Windowed,
};
use stoatflow_time::WatermarkStrategy;

use super::WINDOWED_TOPIC;

/// The session's inactivity gap.
pub const SESSION_GAP: Duration = Duration::from_secs(5);

/// Counts [`WINDOWED_TOPIC`] per key in sessions of gap 5 s, no grace,
/// emitted on close.
pub fn session(builder: &mut StreamsBuilder) -> KStream<Windowed<i64>, i64> {
    builder
        .stream(
            WINDOWED_TOPIC,
            Consumed::with(Serdes::i64(), Serdes::i64())
                .with_watermark_strategy(WatermarkStrategy::for_monotonous_timestamps()),
        )
        .group_by_key()
        .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(SESSION_GAP))
        .emit_strategy(EmitStrategy::on_window_close())
        .count_with(Materialized::as_("session-counts"))
        .to_stream()
        .skip_tombstones()
}
