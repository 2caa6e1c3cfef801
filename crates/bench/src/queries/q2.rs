//! q2, selection: `SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0`.

use std::time::Duration;

use stoatflow_streams::{KStream, StreamsBuilder};

/// The modulus of q2's filter.
pub const Q2_AUCTION_MODULUS: i64 = 123;

/// `(auction, price)` of bids on auctions whose id is a multiple of 123.
pub fn q2(builder: &mut StreamsBuilder, out_of_orderness: Duration) -> KStream<(), (i64, i64)> {
    super::bids(&super::events(builder, out_of_orderness))
        .filter(|_, b| b.auction % Q2_AUCTION_MODULUS == 0)
        .map_values(|_, b| (b.auction, b.price))
}
