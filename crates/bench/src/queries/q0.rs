//! q0, pass-through: `SELECT * FROM bid`. Measures the cost of moving a
//! record through a source and two stateless processors.

use std::time::Duration;

use stoatflow_streams::{KStream, StreamsBuilder};

use crate::nexmark::Bid;

/// Every bid, unchanged.
pub fn q0(builder: &mut StreamsBuilder, out_of_orderness: Duration) -> KStream<(), Bid> {
    super::bids(&super::events(builder, out_of_orderness))
}
