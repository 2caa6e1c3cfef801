//! The three Nexmark event kinds and their union, [`Event`].
//!
//! Ids, prices and times are `i64` (Kafka's `Serdes.Long()` keys); string
//! fields are `Arc<str>`, so passing a record between processors copies
//! pointers, not text.

use std::sync::Arc;

/// A new person registering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// Person id, from 1000.
    pub id: i64,
    /// "first last".
    pub name: Arc<str>,
    /// A random address.
    pub email_address: Arc<str>,
    /// Four groups of four digits.
    pub credit_card: Arc<str>,
    /// One of ten US cities.
    pub city: Arc<str>,
    /// One of six US states.
    pub state: Arc<str>,
    /// Event time, ms.
    pub date_time: i64,
    /// Padding up to the configured average size.
    pub extra: Arc<str>,
}

/// A new auction opening.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auction {
    /// Auction id, from 1000.
    pub id: i64,
    /// A random item name.
    pub item_name: Arc<str>,
    /// A random description.
    pub description: Arc<str>,
    /// Initial bid, cents.
    pub initial_bid: i64,
    /// Reserve price, cents.
    pub reserve: i64,
    /// Event time, ms.
    pub date_time: i64,
    /// When the auction closes, ms.
    pub expires: i64,
    /// The seller's person id.
    pub seller: i64,
    /// Category id, from 10.
    pub category: i64,
    /// Padding up to the configured average size.
    pub extra: Arc<str>,
}

/// A bid on an auction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bid {
    /// The auction's id.
    pub auction: i64,
    /// The bidder's person id.
    pub bidder: i64,
    /// Price, cents (dollars in the queries' wording).
    pub price: i64,
    /// The channel the bid came through.
    pub channel: Arc<str>,
    /// The bid's url.
    pub url: Arc<str>,
    /// Event time, ms.
    pub date_time: i64,
    /// Padding up to the configured average size.
    pub extra: Arc<str>,
}

/// One Nexmark event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A new person.
    Person(Person),
    /// A new auction.
    Auction(Auction),
    /// A bid.
    Bid(Bid),
}

impl Event {
    /// The event's time, ms.
    pub fn date_time(&self) -> i64 {
        match self {
            Event::Person(p) => p.date_time,
            Event::Auction(a) => a.date_time,
            Event::Bid(b) => b.date_time,
        }
    }

    /// Whether this is a bid.
    pub fn is_bid(&self) -> bool {
        matches!(self, Event::Bid(_))
    }

    /// Whether this is a new person.
    pub fn is_person(&self) -> bool {
        matches!(self, Event::Person(_))
    }

    /// Whether this is a new auction.
    pub fn is_auction(&self) -> bool {
        matches!(self, Event::Auction(_))
    }

    /// The bid, if this is one.
    pub fn into_bid(self) -> Option<Bid> {
        match self {
            Event::Bid(b) => Some(b),
            _ => None,
        }
    }

    /// The person, if this is one.
    pub fn into_person(self) -> Option<Person> {
        match self {
            Event::Person(p) => Some(p),
            _ => None,
        }
    }

    /// The auction, if this is one.
    pub fn into_auction(self) -> Option<Auction> {
        match self {
            Event::Auction(a) => Some(a),
            _ => None,
        }
    }
}
