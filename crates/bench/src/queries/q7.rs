//! q7, highest bid: the bids whose price is the highest of their 10 s
//! tumbling window.
//!
//! ```sql
//! SELECT B.* FROM bid B JOIN (
//!   SELECT MAX(price) AS maxprice, TUMBLE_ROWTIME(date_time, 10 s) AS date_time
//!   FROM bid GROUP BY TUMBLE(date_time, 10 s)) M
//! ON B.price = M.maxprice AND B.date_time BETWEEN M.date_time - 10 s AND M.date_time
//! ```
//!
//! As a Kafka Streams user writes it: reduce the (unkeyed) bids to the
//! window's highest bid, emitted once the window closes; join it back to the
//! bids that came up to 10 s before it (a windowed stream-stream join on the
//! shared unit key) and keep the bids of that window at that price.

use std::time::Duration;

use stoatflow_streams::{
    EmitStrategy, Grouped, JoinWindows, KStream, Materialized, Serde, Serdes, StreamJoined,
    StreamsBuilder, TimeWindows, Windowed,
};

use crate::nexmark::Bid;
use crate::serdes::{BidSerde, I64PairSerde};

/// The bids at their window's highest price.
pub fn q7(builder: &mut StreamsBuilder, out_of_orderness: Duration) -> KStream<(), Bid> {
    let bids = super::bids(&super::events(builder, out_of_orderness));
    highest_bids(&bids, Serdes::unit())
}

/// q7 as it runs on several input partitions (end to end): the bids keyed
/// by one constant key (0), so the highest bid is the whole window's, not
/// a partition's (a unit key is a null key, which the runtime spreads over
/// partitions). Both the maximum and the join then read the bids through a
/// repartition topic; the unit-keyed form's join would read the maxima
/// from the sub-topology that writes them, so its watermark, the least of
/// its inputs', would wait on itself.
pub fn q7_keyed(builder: &mut StreamsBuilder, out_of_orderness: Duration) -> KStream<i64, Bid> {
    let bids = super::bids(&super::events(builder, out_of_orderness)).map(|_, b| (0i64, b));
    highest_bids(&bids, Serdes::i64())
}

/// Each window's highest bid, joined back to the bids of that window at
/// that price.
fn highest_bids<K, S>(bids: &KStream<K, Bid>, keys: S) -> KStream<K, Bid>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    S: Serde<K> + Clone + 'static,
{
    let size = super::WINDOW.as_millis() as i64;
    let maxima = bids
        .group_by_key_with(Grouped::with(keys.clone(), BidSerde))
        .windowed_by(TimeWindows::of_size_with_no_grace(super::WINDOW))
        .emit_strategy(EmitStrategy::on_window_close())
        .reduce(
            |a: Bid, b: Bid| if b.price > a.price { b } else { a },
            Materialized::as_("q7-highest-bid")
                .with_value_serde(BidSerde)
                .with_logging_disabled(),
        )
        .to_stream()
        .skip_tombstones()
        .map(|w: Windowed<K>, b| (w.key, (w.window.start, b.price)));
    // A bid at t meets the maxima emitted for times in [t, t + 10 s]: its own
    // window's (the window's latest bid is at or after it) and, near a
    // window's end, the next one's, which the filter drops. The maximum
    // arrives after its window closed, so the grace keeps the window's bids
    // in the join store (retention before + after + grace) until it does.
    bids.join(
        &maxima,
        |bid: &Bid, &(start, max): &(i64, i64)| (bid.clone(), start, max),
        JoinWindows::of_time_difference_and_grace(super::WINDOW, super::WINDOW)
            .before(Duration::ZERO),
        StreamJoined::with(keys, BidSerde, I64PairSerde)
            .with_store_name("q7-join")
            .with_logging_disabled(),
    )
    .filter(move |_, (bid, start, max)| {
        bid.price == *max && bid.date_time >= *start && bid.date_time < start + size
    })
    .map_values(|_, (bid, _, _)| bid)
}
