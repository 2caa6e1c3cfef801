//! q1, currency conversion:
//! `SELECT auction, bidder, 0.908 * price AS price, date_time, extra FROM bid`.

use std::time::Duration;

use stoatflow_streams::{KStream, StreamsBuilder};

use crate::nexmark::Bid;

/// Dollars to euros, as the Flink Nexmark suite converts.
pub const DOLLAR_TO_EURO: f64 = 0.908;

/// Every bid with its price in euro cents (rounded down, as the reference's
/// integer cast).
pub fn q1(builder: &mut StreamsBuilder, out_of_orderness: Duration) -> KStream<(), Bid> {
    super::bids(&super::events(builder, out_of_orderness)).map_values(|_, mut b| {
        b.price = (b.price as f64 * DOLLAR_TO_EURO) as i64;
        b
    })
}
