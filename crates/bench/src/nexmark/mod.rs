//! The Nexmark workload: the event model ([`Person`], [`Auction`], [`Bid`],
//! [`Event`]) and a [`Generator`] faithful to the reference generator's rules.
//!
//! We wrote our own rather than use the `nexmark` crate: its last release
//! (0.2.0) and commit date from January 2023, it allocates every string
//! field of every event as an owned `String` and draws from `rand`'s
//! `SmallRng`, so its ids and prices differ from the reference's for the same
//! event id. This one reproduces `java.util.Random` seeded with the event id,
//! as the reference does, and shares string fields as `Arc<str>`.

mod generator;
mod model;
mod random;

pub use generator::{
    FIRST_AUCTION_ID, FIRST_PERSON_ID, Generator, GeneratorConfig, last_base0_auction_id,
    last_base0_person_id, next_price,
};
pub use model::{Auction, Bid, Event, Person};
pub use random::JavaRandom;

/// The watermark's lag behind the largest event time: enough to cover one
/// out-of-order group.
pub fn out_of_orderness(c: &GeneratorConfig) -> std::time::Duration {
    if c.out_of_order_group_size <= 1 {
        return std::time::Duration::ZERO;
    }
    let ms = (c.out_of_order_group_size as u128 * 1000).div_ceil(c.rate.max(1) as u128) + 1;
    std::time::Duration::from_millis(ms as u64)
}
