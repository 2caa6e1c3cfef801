//! Binary serdes for the Nexmark types, used where a record leaves typed
//! flow: the source's declared serde and the repartition topics the queries
//! go through. Layout: big-endian `i64`s, strings as a `u32` length and UTF-8
//! bytes, an event as a one-byte tag and its fields.

use std::sync::Arc;

use stoatflow_streams::{Serde, SerdeError};

use crate::nexmark::{Auction, Bid, Event, Person};

fn malformed(serde: &str, topic: &str, len: usize, reason: &str) -> SerdeError {
    SerdeError::Malformed {
        serde: serde.into(),
        topic: topic.into(),
        len,
        reason: reason.into(),
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }
    fn str(&mut self) -> Option<Arc<str>> {
        let n = u32::from_be_bytes(self.take(4)?.try_into().ok()?) as usize;
        std::str::from_utf8(self.take(n)?).ok().map(Arc::from)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_i64s(out: &mut Vec<u8>, vs: &[i64]) {
    for v in vs {
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// A pair of `i64`s, 16 bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct I64PairSerde;

impl Serde<(i64, i64)> for I64PairSerde {
    fn name(&self) -> &str {
        "i64-pair"
    }
    fn serialize(&self, _: &str, v: &(i64, i64), out: &mut Vec<u8>) -> Result<(), SerdeError> {
        put_i64s(out, &[v.0, v.1]);
        Ok(())
    }
    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<(i64, i64), SerdeError> {
        let mut r = Reader { b, at: 0 };
        match (r.i64(), r.i64()) {
            (Some(a), Some(c)) if r.at == b.len() => Ok((a, c)),
            _ => Err(malformed("i64-pair", topic, b.len(), "expected 16 bytes")),
        }
    }
}

/// An `i64` and an optional `i64` (a left join's pair): 8 bytes, or 16
/// when the second is there.
#[derive(Debug, Clone, Copy, Default)]
pub struct I64OptionPairSerde;

impl Serde<(i64, Option<i64>)> for I64OptionPairSerde {
    fn name(&self) -> &str {
        "i64-option-pair"
    }
    fn serialize(
        &self,
        _: &str,
        v: &(i64, Option<i64>),
        out: &mut Vec<u8>,
    ) -> Result<(), SerdeError> {
        put_i64s(out, &[v.0]);
        put_i64s(out, v.1.as_slice());
        Ok(())
    }
    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<(i64, Option<i64>), SerdeError> {
        let mut r = Reader { b, at: 0 };
        let first = r.i64();
        let second = if b.len() == 16 { r.i64() } else { None };
        match first {
            Some(a) if r.at == b.len() => Ok((a, second)),
            _ => Err(malformed(
                "i64-option-pair",
                topic,
                b.len(),
                "expected 8 or 16 bytes",
            )),
        }
    }
}

fn write_bid(b: &Bid, out: &mut Vec<u8>) {
    put_i64s(out, &[b.auction, b.bidder, b.price, b.date_time]);
    put_str(out, &b.channel);
    put_str(out, &b.url);
    put_str(out, &b.extra);
}

fn read_bid(r: &mut Reader<'_>) -> Option<Bid> {
    Some(Bid {
        auction: r.i64()?,
        bidder: r.i64()?,
        price: r.i64()?,
        date_time: r.i64()?,
        channel: r.str()?,
        url: r.str()?,
        extra: r.str()?,
    })
}

/// A [`Bid`].
#[derive(Debug, Clone, Copy, Default)]
pub struct BidSerde;

impl Serde<Bid> for BidSerde {
    fn name(&self) -> &str {
        "nexmark-bid"
    }
    fn serialize(&self, _: &str, v: &Bid, out: &mut Vec<u8>) -> Result<(), SerdeError> {
        write_bid(v, out);
        Ok(())
    }
    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<Bid, SerdeError> {
        let mut r = Reader { b, at: 0 };
        read_bid(&mut r)
            .filter(|_| r.at == b.len())
            .ok_or_else(|| malformed("nexmark-bid", topic, b.len(), "not a bid"))
    }
}

/// An [`Event`]: tag 0 person, 1 auction, 2 bid.
#[derive(Debug, Clone, Copy, Default)]
pub struct EventSerde;

impl Serde<Event> for EventSerde {
    fn name(&self) -> &str {
        "nexmark-event"
    }
    fn serialize(&self, _: &str, v: &Event, out: &mut Vec<u8>) -> Result<(), SerdeError> {
        match v {
            Event::Person(p) => {
                out.push(0);
                put_i64s(out, &[p.id, p.date_time]);
                for s in [
                    &p.name,
                    &p.email_address,
                    &p.credit_card,
                    &p.city,
                    &p.state,
                    &p.extra,
                ] {
                    put_str(out, s);
                }
            }
            Event::Auction(a) => {
                out.push(1);
                put_i64s(
                    out,
                    &[
                        a.id,
                        a.initial_bid,
                        a.reserve,
                        a.date_time,
                        a.expires,
                        a.seller,
                        a.category,
                    ],
                );
                for s in [&a.item_name, &a.description, &a.extra] {
                    put_str(out, s);
                }
            }
            Event::Bid(b) => {
                out.push(2);
                write_bid(b, out);
            }
        }
        Ok(())
    }
    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<Event, SerdeError> {
        let mut r = Reader { b, at: 0 };
        let event = match r.u8() {
            Some(0) => (|| {
                Some(Event::Person(Person {
                    id: r.i64()?,
                    date_time: r.i64()?,
                    name: r.str()?,
                    email_address: r.str()?,
                    credit_card: r.str()?,
                    city: r.str()?,
                    state: r.str()?,
                    extra: r.str()?,
                }))
            })(),
            Some(1) => (|| {
                Some(Event::Auction(Auction {
                    id: r.i64()?,
                    initial_bid: r.i64()?,
                    reserve: r.i64()?,
                    date_time: r.i64()?,
                    expires: r.i64()?,
                    seller: r.i64()?,
                    category: r.i64()?,
                    item_name: r.str()?,
                    description: r.str()?,
                    extra: r.str()?,
                }))
            })(),
            Some(2) => read_bid(&mut r).map(Event::Bid),
            _ => None,
        };
        event
            .filter(|_| r.at == b.len())
            .ok_or_else(|| malformed("nexmark-event", topic, b.len(), "not an event"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nexmark::{Generator, GeneratorConfig};

    #[test]
    fn events_round_trip() {
        for e in Generator::new(GeneratorConfig::default()).take(200) {
            let mut buf = Vec::new();
            EventSerde.serialize("t", &e, &mut buf).unwrap();
            assert_eq!(EventSerde.deserialize("t", &buf).unwrap(), e);
        }
        assert!(EventSerde.deserialize("t", &[7]).is_err());
    }

    #[test]
    fn option_pairs_round_trip() {
        for v in [(3, Some(-4)), (i64::MIN, None)] {
            let mut buf = Vec::new();
            I64OptionPairSerde.serialize("t", &v, &mut buf).unwrap();
            assert_eq!(I64OptionPairSerde.deserialize("t", &buf).unwrap(), v);
        }
        assert!(I64OptionPairSerde.deserialize("t", &[0; 12]).is_err());
    }
}
