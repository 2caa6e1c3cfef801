//! [`Generator`]: Nexmark events by the reference generator's rules (Apache
//! Beam's `NexmarkUtils`/`GeneratorConfig`, as the Flink Nexmark suite uses
//! them), written from those rules:
//!
//! - event `n` of every 50 is a person (`n % 50 == 0`), an auction
//!   (`1..=3`) or a bid (`4..50`): 1 : 3 : 46;
//! - person and auction ids start at 1000 and follow the event id (the last
//!   person/auction id "so far" is a function of the event id);
//! - each event draws from `java.util.Random` seeded with its event id;
//! - a bid is for a hot auction with probability `1 - 1/hot_auction_ratio`
//!   (the first of the latest batch of 100 auctions), else a random one of
//!   the last `in_flight_auctions` (+ a lead of 10 not yet opened); bidders
//!   and sellers alike, with batches of 100 people among the last
//!   `active_people`;
//! - prices are `round(10^(6·u) · 100)` cents, `u` uniform in `[0, 1)`;
//! - event time is `base_time + n · 1e6 / rate` µs, rounded to ms;
//! - with `out_of_order_group_size = g > 1`, every group of `g` events is
//!   emitted permuted: position `n` carries event
//!   `(n / g) · g + (n · 953) mod g`, id and time included.

use std::sync::Arc;

use super::model::{Auction, Bid, Event, Person};
use super::random::JavaRandom;

const PERSON_PROPORTION: i64 = 1;
const AUCTION_PROPORTION: i64 = 3;
const BID_PROPORTION: i64 = 46;
const PROPORTION_DENOMINATOR: i64 = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION;

/// First person id.
pub const FIRST_PERSON_ID: i64 = 1000;
/// First auction id.
pub const FIRST_AUCTION_ID: i64 = 1000;
const FIRST_CATEGORY_ID: i64 = 10;
const NUM_CATEGORIES: i32 = 5;
const PERSON_ID_LEAD: i64 = 10;
const AUCTION_ID_LEAD: i64 = 10;
/// A hot seller/auction/bidder is the first of each batch of this many.
const HOT_SELLER_RATIO: i64 = 100;
const HOT_AUCTION_RATIO: i64 = 100;
const HOT_BIDDER_RATIO: i64 = 100;
const HOT_CHANNELS_RATIO: i32 = 2;
const CHANNELS_NUMBER: i32 = 10_000;
const MIN_STRING_LENGTH: i32 = 3;

const FIRST_NAMES: [&str; 11] = [
    "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter",
];
const LAST_NAMES: [&str; 9] = [
    "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris",
];
const US_STATES: [&str; 6] = ["AZ", "CA", "ID", "OR", "WA", "WY"];
const US_CITIES: [&str; 10] = [
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
];
const HOT_CHANNELS: [&str; 4] = ["Google", "Facebook", "Baidu", "Apple"];

/// The generator's settings, with the reference defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratorConfig {
    /// Events per second of event time (`firstEventRate`; default 10,000).
    pub rate: u64,
    /// Event time of event 0, ms.
    pub base_time: i64,
    /// People that may bid or sell (`numActivePeople`, 1,000).
    pub active_people: i64,
    /// Auctions open at once (`numInFlightAuctions`, 100).
    pub in_flight_auctions: i64,
    /// `hotAuctionRatio` (2): 1 − 1/2 of bids go to a hot auction.
    pub hot_auction_ratio: i32,
    /// `hotSellersRatio` (4).
    pub hot_sellers_ratio: i32,
    /// `hotBiddersRatio` (4).
    pub hot_bidders_ratio: i32,
    /// Average person size, bytes (200).
    pub avg_person_byte_size: i32,
    /// Average auction size, bytes (500).
    pub avg_auction_byte_size: i32,
    /// Average bid size, bytes (100).
    pub avg_bid_byte_size: i32,
    /// Events per out-of-order group (1 = in order).
    pub out_of_order_group_size: i64,
    /// Id of the first event (several generators split one id space).
    pub first_event_id: i64,
}

impl Default for GeneratorConfig {
    fn default() -> Self {
        GeneratorConfig {
            rate: 10_000,
            base_time: 1_704_067_200_000,
            active_people: 1000,
            in_flight_auctions: 100,
            hot_auction_ratio: 2,
            hot_sellers_ratio: 4,
            hot_bidders_ratio: 4,
            avg_person_byte_size: 200,
            avg_auction_byte_size: 500,
            avg_bid_byte_size: 100,
            out_of_order_group_size: 1,
            first_event_id: 0,
        }
    }
}

impl GeneratorConfig {
    /// Event time of event number `n`, ms.
    pub fn timestamp_of(&self, n: i64) -> i64 {
        // Inter-event delay in µs is 1e6 / rate; work in µs·rate to stay exact.
        let us = (n as i128 * 1_000_000) / self.rate.max(1) as i128;
        self.base_time + ((us + 500) / 1000) as i64
    }

    /// The event number emitted at position `n` (the out-of-order permutation).
    pub fn adjusted_event_number(&self, n: i64) -> i64 {
        let g = self.out_of_order_group_size.max(1);
        (n / g) * g + (n * 953) % g
    }
}

/// The last person id (base 0) at event `event_id`: the current one when the
/// event is a person.
pub fn last_base0_person_id(event_id: i64) -> i64 {
    let epoch = event_id / PROPORTION_DENOMINATOR;
    let offset = (event_id % PROPORTION_DENOMINATOR).min(PERSON_PROPORTION - 1);
    epoch * PERSON_PROPORTION + offset
}

/// The last auction id (base 0) at event `event_id`.
pub fn last_base0_auction_id(event_id: i64) -> i64 {
    let mut epoch = event_id / PROPORTION_DENOMINATOR;
    let mut offset = event_id % PROPORTION_DENOMINATOR;
    if offset < PERSON_PROPORTION {
        epoch -= 1;
        offset = AUCTION_PROPORTION - 1;
    } else if offset >= PERSON_PROPORTION + AUCTION_PROPORTION {
        offset = AUCTION_PROPORTION - 1;
    } else {
        offset -= PERSON_PROPORTION;
    }
    epoch * AUCTION_PROPORTION + offset
}

/// Generates events `0, 1, 2, …` as an iterator.
#[derive(Debug, Clone)]
pub struct Generator {
    config: GeneratorConfig,
    emitted: i64,
    hot_urls: Vec<Arc<str>>,
    hot_channels: Vec<Arc<str>>,
    channels: Vec<(Arc<str>, Arc<str>)>,
    names: Vec<Arc<str>>,
    cities: Vec<Arc<str>>,
    states: Vec<Arc<str>>,
    empty: Arc<str>,
}

fn base_url(rng: &mut JavaRandom) -> String {
    format!(
        "https://www.nexmark.com/{}/{}/{}/item.htm?query=1",
        next_string_with(rng, 5, '_'),
        next_string_with(rng, 5, '_'),
        next_string_with(rng, 5, '_')
    )
}

fn next_string_with(rng: &mut JavaRandom, max_len: i32, special: char) -> String {
    let len = MIN_STRING_LENGTH + rng.next_int(max_len - MIN_STRING_LENGTH);
    let mut s = String::with_capacity(len as usize);
    for _ in 0..len {
        if rng.next_int(13) == 0 {
            s.push(special);
        } else {
            s.push((b'a' + rng.next_int(26) as u8) as char);
        }
    }
    s.trim().to_owned()
}

fn next_exact_string(rng: &mut JavaRandom, len: i32) -> String {
    (0..len.max(0))
        .map(|_| (b'a' + rng.next_int(26) as u8) as char)
        .collect()
}

fn next_extra(rng: &mut JavaRandom, current: i32, desired_average: i32) -> String {
    if current > desired_average {
        return String::new();
    }
    let desired = desired_average - current;
    let delta = (desired as f64 * 0.2).round() as i32;
    let min = desired - delta;
    let size = min
        + if delta == 0 {
            0
        } else {
            rng.next_int(2 * delta)
        };
    next_exact_string(rng, size)
}

/// A price in cents: `round(10^(6u) · 100)`.
pub fn next_price(rng: &mut JavaRandom) -> i64 {
    (10f64.powf(rng.next_double() * 6.0) * 100.0).round() as i64
}

fn next_base0_person_id(event_id: i64, rng: &mut JavaRandom, c: &GeneratorConfig) -> i64 {
    let people = last_base0_person_id(event_id) + 1;
    let active = people.min(c.active_people);
    let n = rng.next_below(active + PERSON_ID_LEAD);
    people - active + n
}

fn next_base0_auction_id(event_id: i64, rng: &mut JavaRandom, c: &GeneratorConfig) -> i64 {
    let max = last_base0_auction_id(event_id);
    let min = (max - c.in_flight_auctions).max(0);
    min + rng.next_below(max - min + 1 + AUCTION_ID_LEAD)
}

impl Generator {
    /// A generator with `config`.
    pub fn new(config: GeneratorConfig) -> Self {
        let hot_urls = (0..HOT_CHANNELS.len())
            .map(|i| Arc::from(base_url(&mut JavaRandom::new(i as i64))))
            .collect();
        let channels = (0..CHANNELS_NUMBER)
            .map(|i| {
                let mut rng = JavaRandom::new(i as i64);
                let mut url = base_url(&mut rng);
                if rng.next_int(10) > 0 {
                    url.push_str(&format!("&channel_id={}", (i.reverse_bits() as i64).abs()));
                }
                (Arc::from(format!("channel-{i}")), Arc::from(url))
            })
            .collect();
        let names = FIRST_NAMES
            .iter()
            .flat_map(|f| {
                LAST_NAMES
                    .iter()
                    .map(move |l| Arc::from(format!("{f} {l}")))
            })
            .collect();
        Generator {
            config,
            emitted: 0,
            hot_urls,
            hot_channels: HOT_CHANNELS.iter().map(|s| Arc::from(*s)).collect(),
            channels,
            names,
            cities: US_CITIES.iter().map(|s| Arc::from(*s)).collect(),
            states: US_STATES.iter().map(|s| Arc::from(*s)).collect(),
            empty: Arc::from(""),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &GeneratorConfig {
        &self.config
    }

    /// Event number `n` (not permuted): what the reference generates for
    /// event id `first_event_id + n` at time `timestamp_of(n)`.
    pub fn event(&self, n: i64) -> Event {
        let c = &self.config;
        let id = c.first_event_id + n;
        let ts = c.timestamp_of(n);
        let mut rng = JavaRandom::new(id);
        let rem = id % PROPORTION_DENOMINATOR;
        if rem < PERSON_PROPORTION {
            Event::Person(self.person(id, ts, &mut rng))
        } else if rem < PERSON_PROPORTION + AUCTION_PROPORTION {
            Event::Auction(self.auction(n, id, ts, &mut rng))
        } else {
            Event::Bid(self.bid(id, ts, &mut rng))
        }
    }

    fn string(&self, s: String) -> Arc<str> {
        if s.is_empty() {
            self.empty.clone()
        } else {
            Arc::from(s)
        }
    }

    fn person(&self, id: i64, ts: i64, rng: &mut JavaRandom) -> Person {
        let c = &self.config;
        let first = rng.next_int(FIRST_NAMES.len() as i32) as usize;
        let last = rng.next_int(LAST_NAMES.len() as i32) as usize;
        let name = self.names[first * LAST_NAMES.len() + last].clone();
        let email = format!(
            "{}@{}.com",
            next_string_with(rng, 7, ' '),
            next_string_with(rng, 5, ' ')
        );
        let card = format!(
            "{:04} {:04} {:04} {:04}",
            rng.next_int(10000),
            rng.next_int(10000),
            rng.next_int(10000),
            rng.next_int(10000)
        );
        let city = self.cities[rng.next_int(US_CITIES.len() as i32) as usize].clone();
        let state = self.states[rng.next_int(US_STATES.len() as i32) as usize].clone();
        let size = 8 + name.len() + email.len() + card.len() + city.len() + state.len();
        let extra = next_extra(rng, size as i32, c.avg_person_byte_size);
        Person {
            id: last_base0_person_id(id) + FIRST_PERSON_ID,
            name,
            email_address: self.string(email),
            credit_card: self.string(card),
            city,
            state,
            date_time: ts,
            extra: self.string(extra),
        }
    }

    fn auction(&self, n: i64, id: i64, ts: i64, rng: &mut JavaRandom) -> Auction {
        let c = &self.config;
        let seller = if rng.next_int(c.hot_sellers_ratio) > 0 {
            (last_base0_person_id(id) / HOT_SELLER_RATIO) * HOT_SELLER_RATIO
        } else {
            next_base0_person_id(id, rng, c)
        } + FIRST_PERSON_ID;
        let category = FIRST_CATEGORY_ID + rng.next_int(NUM_CATEGORIES) as i64;
        let initial_bid = next_price(rng);
        let events_for_auctions =
            (c.in_flight_auctions * PROPORTION_DENOMINATOR) / AUCTION_PROPORTION;
        let horizon = c.timestamp_of(n + events_for_auctions) - ts;
        let expires = ts + 1 + rng.next_below((horizon * 2).max(1));
        let item_name = next_string_with(rng, 20, ' ');
        let description = next_string_with(rng, 100, ' ');
        let reserve = initial_bid + next_price(rng);
        let size = 8 + item_name.len() + description.len() + 8 + 8 + 8 + 8 + 8;
        let extra = next_extra(rng, size as i32, c.avg_auction_byte_size);
        Auction {
            id: last_base0_auction_id(id) + FIRST_AUCTION_ID,
            item_name: self.string(item_name),
            description: self.string(description),
            initial_bid,
            reserve,
            date_time: ts,
            expires,
            seller,
            category,
            extra: self.string(extra),
        }
    }

    fn bid(&self, id: i64, ts: i64, rng: &mut JavaRandom) -> Bid {
        let c = &self.config;
        let auction = if rng.next_int(c.hot_auction_ratio) > 0 {
            (last_base0_auction_id(id) / HOT_AUCTION_RATIO) * HOT_AUCTION_RATIO
        } else {
            next_base0_auction_id(id, rng, c)
        } + FIRST_AUCTION_ID;
        let bidder = if rng.next_int(c.hot_bidders_ratio) > 0 {
            (last_base0_person_id(id) / HOT_BIDDER_RATIO) * HOT_BIDDER_RATIO + 1
        } else {
            next_base0_person_id(id, rng, c)
        } + FIRST_PERSON_ID;
        let price = next_price(rng);
        let (channel, url) = if rng.next_int(HOT_CHANNELS_RATIO) > 0 {
            let i = rng.next_int(HOT_CHANNELS.len() as i32) as usize;
            (self.hot_channels[i].clone(), self.hot_urls[i].clone())
        } else {
            self.channels[rng.next_int(CHANNELS_NUMBER) as usize].clone()
        };
        let extra = next_extra(rng, 8 + 8 + 8 + 8, c.avg_bid_byte_size);
        Bid {
            auction,
            bidder,
            price,
            channel,
            url,
            date_time: ts,
            extra: self.string(extra),
        }
    }
}

impl Iterator for Generator {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        let n = self.config.adjusted_event_number(self.emitted);
        self.emitted += 1;
        Some(self.event(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_mix_is_1_3_46_per_50() {
        let events: Vec<Event> = Generator::new(GeneratorConfig::default())
            .take(5000)
            .collect();
        let persons = events.iter().filter(|e| e.is_person()).count();
        let auctions = events.iter().filter(|e| e.is_auction()).count();
        let bids = events.iter().filter(|e| e.is_bid()).count();
        assert_eq!((persons, auctions, bids), (100, 300, 4600));
    }

    #[test]
    fn ids_start_at_1000_and_follow_the_event_id() {
        let events: Vec<Event> = Generator::new(GeneratorConfig::default())
            .take(100)
            .collect();
        let Event::Person(p) = &events[0] else {
            panic!("event 0 is a person")
        };
        assert_eq!(p.id, 1000);
        let Event::Auction(a) = &events[3] else {
            panic!("event 3 is an auction")
        };
        assert_eq!(a.id, 1002);
        let Event::Person(p) = &events[50] else {
            panic!("event 50 is a person")
        };
        assert_eq!(p.id, 1001);
    }

    #[test]
    fn event_time_follows_the_rate() {
        let c = GeneratorConfig {
            rate: 1000,
            ..GeneratorConfig::default()
        };
        assert_eq!(c.timestamp_of(0), c.base_time);
        assert_eq!(c.timestamp_of(1500), c.base_time + 1500);
        let c = GeneratorConfig::default(); // 10,000 events/s: 0.1 ms apart
        assert_eq!(c.timestamp_of(10_000), c.base_time + 1000);
    }

    #[test]
    fn out_of_order_groups_permute_within_the_group() {
        let c = GeneratorConfig {
            out_of_order_group_size: 10,
            ..GeneratorConfig::default()
        };
        let mut firsts: Vec<i64> = (0..10).map(|n| c.adjusted_event_number(n)).collect();
        assert_ne!(firsts, (0..10).collect::<Vec<_>>());
        firsts.sort();
        assert_eq!(firsts, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn half_the_bids_go_to_hot_auctions() {
        let bids: Vec<Bid> = Generator::new(GeneratorConfig::default())
            .take(100_000)
            .filter_map(Event::into_bid)
            .collect();
        let hot = bids
            .iter()
            .filter(|b| (b.auction - FIRST_AUCTION_ID) % HOT_AUCTION_RATIO == 0)
            .count();
        let share = hot as f64 / bids.len() as f64;
        assert!((0.5..0.6).contains(&share), "hot share {share}");
        assert!(bids.iter().all(|b| (100..=100_000_000).contains(&b.price)));
    }
}
