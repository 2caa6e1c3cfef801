//! Windowed stream-stream joins: each left record with every right record of
//! the same key at most [`JOIN_WINDOW`] apart; the left join also emits each
//! left record that matched nothing, once its window closes.

use std::time::Duration;

use stoatflow_streams::{Consumed, JoinWindows, KStream, Serdes, StreamJoined, StreamsBuilder};
use stoatflow_time::WatermarkStrategy;

use super::{LEFT_TOPIC, RIGHT_TOPIC};

/// The join window: the largest time difference of a joined pair.
pub const JOIN_WINDOW: Duration = Duration::from_secs(1);

fn inputs(builder: &mut StreamsBuilder) -> (KStream<i64, i64>, KStream<i64, i64>) {
    let consumed = || {
        Consumed::with(Serdes::i64(), Serdes::i64())
            .with_watermark_strategy(WatermarkStrategy::for_monotonous_timestamps())
    };
    (
        builder.stream(LEFT_TOPIC, consumed()),
        builder.stream(RIGHT_TOPIC, consumed()),
    )
}

fn joined() -> StreamJoined<i64, i64, i64> {
    StreamJoined::with(Serdes::i64(), Serdes::i64(), Serdes::i64()).with_logging_disabled()
}

/// The 1 s inner join of [`LEFT_TOPIC`] and [`RIGHT_TOPIC`]: `(left value,
/// right value)` per matched pair.
pub fn join_inner(builder: &mut StreamsBuilder) -> KStream<i64, (i64, i64)> {
    let (left, right) = inputs(builder);
    left.join(
        &right,
        |l: &i64, r: &i64| (*l, *r),
        JoinWindows::of_time_difference_with_no_grace(JOIN_WINDOW),
        joined(),
    )
}

/// The 1 s left join of [`LEFT_TOPIC`] and [`RIGHT_TOPIC`]: `(left value,
/// right value)` per matched pair, `(left value, None)` per left record that
/// matched nothing.
pub fn join_left(builder: &mut StreamsBuilder) -> KStream<i64, (i64, Option<i64>)> {
    let (left, right) = inputs(builder);
    left.left_join(
        &right,
        |l: &i64, r: Option<&i64>| (*l, r.copied()),
        JoinWindows::of_time_difference_with_no_grace(JOIN_WINDOW),
        joined(),
    )
}
