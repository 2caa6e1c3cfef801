//! The Nexmark queries, written with the public DSL as a user would write
//! them. Each builds onto a [`StreamsBuilder`] reading [`EVENTS_TOPIC`] (the
//! unkeyed stream of all events, as the reference's single generator feeds
//! its `person`, `auction` and `bid` views) and returns its result stream;
//! the caller attaches the sink.
//!
//! | query | what | DSL shape |
//! |---|---|---|
//! | q0 | pass-through of bids | filter, map_values |
//! | q1 | bid prices in euros (×0.908) | map_values |
//! | q2 | bids on auctions whose id is a multiple of 123 | filter |
//! | q5 | hot items: bids per auction in 10 s windows every 2 s, the auctions with the most per window | map, hopping count (on close), re-key by window, aggregate |
//! | q7 | the highest bids of each 10 s window | tumbling reduce (on close), stream-stream join back to the bids |
//! | q8 | people who opened an auction in the 10 s window they registered in | tumbling reduce of both sides (on close), windowed-key join |

mod q0;
mod q1;
mod q2;
mod q5;
mod q7;
mod q8;

use std::time::Duration;

use stoatflow_streams::{Consumed, KStream, Serdes, StreamsBuilder};
use stoatflow_time::WatermarkStrategy;

use crate::nexmark::{Auction, Bid, Event, Person};
use crate::serdes::EventSerde;

pub use q0::q0;
pub use q1::{DOLLAR_TO_EURO, q1};
pub use q2::{Q2_AUCTION_MODULUS, q2};
pub use q5::{HotItems, q5};
pub use q7::{q7, q7_keyed};
pub use q8::q8;

/// The topic every query reads: all Nexmark events, unkeyed.
pub const EVENTS_TOPIC: &str = "nexmark-events";

/// The window of q5, q7 and q8.
pub const WINDOW: Duration = Duration::from_secs(10);

/// The event stream, timed by each event's `date_time`, with watermarks
/// `out_of_orderness` behind the largest time seen.
pub fn events(builder: &mut StreamsBuilder, out_of_orderness: Duration) -> KStream<(), Event> {
    builder.stream(
        EVENTS_TOPIC,
        Consumed::with(Serdes::unit(), EventSerde).with_watermark_strategy(
            WatermarkStrategy::for_bounded_out_of_orderness(out_of_orderness)
                .with_timestamp_assigner(|_: &(), e: &Event, _: i64| e.date_time()),
        ),
    )
}

/// The `bid` view.
pub fn bids(events: &KStream<(), Event>) -> KStream<(), Bid> {
    events
        .filter(|_, e| e.is_bid())
        .map_values(|_, e| e.into_bid().expect("filtered to bids"))
}

/// The `person` view.
pub fn persons(events: &KStream<(), Event>) -> KStream<(), Person> {
    events
        .filter(|_, e| e.is_person())
        .map_values(|_, e| e.into_person().expect("filtered to persons"))
}

/// The `auction` view.
pub fn auctions(events: &KStream<(), Event>) -> KStream<(), Auction> {
    events
        .filter(|_, e| e.is_auction())
        .map_values(|_, e| e.into_auction().expect("filtered to auctions"))
}
