//! The wire forms of the foreign-key table join (`KTable::join_on_foreign_key`):
//! a [`Subscription`] (left side to right side, keyed by the foreign key), a
//! [`Response`] (right side back to left side, keyed by the primary key),
//! the subscription store's key [`SubscriptionKey`], their serdes, and
//! [`value_hash`], the hash a response carries to be recognised as stale.
//!
//! Layouts (ours; Kafka Streams' own are internal too):
//! - subscription: instruction byte, hash flag byte (1: an 8-byte big-endian
//!   hash follows), then the primary key's bytes;
//! - response: hash flag byte and hash as above, then a value flag byte (1:
//!   the right value's bytes follow);
//! - subscription key: 4-byte big-endian length of the foreign key, the
//!   foreign key, a rank byte (0 before every primary key, 1 an entry, 2
//!   after every primary key), then, for an entry, the primary key. Every
//!   entry of one foreign key lies between its rank-0 and rank-2 bounds, in
//!   `Ord` and in byte order alike, so both store engines scan a foreign
//!   key's subscribers as one range.
//!
//! Knows nothing of the processors that send or read them.

use std::cmp::Ordering;
use std::fmt;
use std::ops::Bound;

use crate::serde::{Serde, SerdeError, SerdeRef, malformed};

/// What the right side does with a subscription (Kafka Streams'
/// `SubscriptionWrapper.Instruction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Instruction {
    /// Remove the subscription and answer with no right value.
    DeleteAndPropagate = 0,
    /// Remove the subscription, answer nothing.
    DeleteNoPropagate = 1,
    /// Subscribe and answer, with no right value if there is none.
    PropagateNullIfNoValue = 2,
    /// Subscribe and answer only if there is a right value.
    PropagateOnlyIfValue = 3,
}

/// A left row's subscription to a foreign key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Subscription<K> {
    /// The left row's primary key.
    pub(crate) pk: K,
    /// [`value_hash`] of the left value that sent it (`None`: deleted).
    pub(crate) hash: Option<u64>,
    pub(crate) instruction: Instruction,
}

/// The right side's answer to one left row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Response<VO> {
    /// The hash of the subscription answered.
    pub(crate) hash: Option<u64>,
    /// The right value (`None`: none for that foreign key).
    pub(crate) value: Option<VO>,
}

/// FNV-1a over a left value's serialized bytes: stable across processes
/// and releases, which a hash that crosses a topic must be.
pub(crate) fn value_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A key of the subscription store: a foreign key's subscriber, or a bound
/// before or after all of a foreign key's subscribers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SubscriptionKey<FK, K> {
    /// Before every subscriber of the foreign key.
    First(FK),
    /// The left row `K` subscribes to the foreign key.
    Entry(FK, K),
    /// After every subscriber of the foreign key.
    Last(FK),
}

impl<FK, K> SubscriptionKey<FK, K> {
    fn parts(&self) -> (&FK, u8, Option<&K>) {
        match self {
            SubscriptionKey::First(fk) => (fk, 0, None),
            SubscriptionKey::Entry(fk, k) => (fk, 1, Some(k)),
            SubscriptionKey::Last(fk) => (fk, 2, None),
        }
    }
}

impl<FK: Ord, K: Ord> PartialOrd for SubscriptionKey<FK, K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<FK: Ord, K: Ord> Ord for SubscriptionKey<FK, K> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.parts().cmp(&other.parts())
    }
}

fn flagged_hash(hash: Option<u64>, out: &mut Vec<u8>) {
    match hash {
        Some(h) => {
            out.push(1);
            out.extend_from_slice(&h.to_be_bytes());
        }
        None => out.push(0),
    }
}

fn read_hash<'a>(
    b: &'a [u8],
    bad: &dyn Fn(&str) -> SerdeError,
) -> Result<(Option<u64>, &'a [u8]), SerdeError> {
    match b.split_first() {
        Some((0, rest)) => Ok((None, rest)),
        Some((1, rest)) => {
            let (h, rest) = rest
                .split_first_chunk::<8>()
                .ok_or_else(|| bad("a hash shorter than 8 bytes"))?;
            Ok((Some(u64::from_be_bytes(*h)), rest))
        }
        _ => Err(bad("no valid hash flag")),
    }
}

macro_rules! named_serde {
    ($name:ident<$($t:ident),+> { $($field:ident: $fty:ty),+ }, $label:literal) => {
        pub(crate) struct $name<$($t),+> {
            $($field: $fty,)+
            name: String,
        }

        impl<$($t),+> fmt::Debug for $name<$($t),+> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_tuple(stringify!($name)).field(&self.name).finish()
            }
        }

        impl<$($t),+> $name<$($t),+> {
            pub(crate) fn new($($field: $fty),+) -> Self {
                let name = format!(concat!($label, "({})"), [$($field.name()),+].join(", "));
                $name { $($field,)+ name }
            }
        }
    };
}

named_serde!(SubscriptionSerde<K> { pk: SerdeRef<K> }, "subscription");
named_serde!(ResponseSerde<VO> { value: SerdeRef<VO> }, "response");
named_serde!(SubscriptionKeySerde<FK, K> { fk: SerdeRef<FK>, pk: SerdeRef<K> }, "subscription-key");

impl<K> Serde<Subscription<K>> for SubscriptionSerde<K> {
    fn name(&self) -> &str {
        &self.name
    }

    fn serialize(
        &self,
        topic: &str,
        s: &Subscription<K>,
        out: &mut Vec<u8>,
    ) -> Result<(), SerdeError> {
        out.push(s.instruction as u8);
        flagged_hash(s.hash, out);
        self.pk.serialize(topic, &s.pk, out)
    }

    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<Subscription<K>, SerdeError> {
        let bad = |reason: &str| malformed(&self.name, topic, b.len(), reason);
        let (&i, rest) = b.split_first().ok_or_else(|| bad("no instruction byte"))?;
        let instruction = match i {
            0 => Instruction::DeleteAndPropagate,
            1 => Instruction::DeleteNoPropagate,
            2 => Instruction::PropagateNullIfNoValue,
            3 => Instruction::PropagateOnlyIfValue,
            _ => return Err(bad("an unknown instruction")),
        };
        let (hash, rest) = read_hash(rest, &bad)?;
        Ok(Subscription {
            pk: self.pk.deserialize(topic, rest)?,
            hash,
            instruction,
        })
    }
}

impl<VO> Serde<Response<VO>> for ResponseSerde<VO> {
    fn name(&self) -> &str {
        &self.name
    }

    fn serialize(
        &self,
        topic: &str,
        r: &Response<VO>,
        out: &mut Vec<u8>,
    ) -> Result<(), SerdeError> {
        flagged_hash(r.hash, out);
        match &r.value {
            Some(v) => {
                out.push(1);
                self.value.serialize(topic, v, out)
            }
            None => {
                out.push(0);
                Ok(())
            }
        }
    }

    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<Response<VO>, SerdeError> {
        let bad = |reason: &str| malformed(&self.name, topic, b.len(), reason);
        let (hash, rest) = read_hash(b, &bad)?;
        let value = match rest.split_first() {
            Some((1, v)) => Some(self.value.deserialize(topic, v)?),
            Some((0, [])) => None,
            _ => return Err(bad("no valid value flag")),
        };
        Ok(Response { hash, value })
    }
}

impl<FK, K> Serde<SubscriptionKey<FK, K>> for SubscriptionKeySerde<FK, K> {
    fn name(&self) -> &str {
        &self.name
    }

    fn serialize(
        &self,
        topic: &str,
        key: &SubscriptionKey<FK, K>,
        out: &mut Vec<u8>,
    ) -> Result<(), SerdeError> {
        let (fk, rank, pk) = key.parts();
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        self.fk.serialize(topic, fk, out)?;
        let len = u32::try_from(out.len() - at - 4).map_err(|_| SerdeError::Unwritable {
            serde: self.name.clone(),
            topic: topic.to_owned(),
            reason: "a foreign key longer than 4 GiB".into(),
        })?;
        out[at..at + 4].copy_from_slice(&len.to_be_bytes());
        out.push(rank);
        match pk {
            Some(pk) => self.pk.serialize(topic, pk, out),
            None => Ok(()),
        }
    }

    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<SubscriptionKey<FK, K>, SerdeError> {
        let bad = |reason: &str| malformed(&self.name, topic, b.len(), reason);
        let (len, rest) = b
            .split_first_chunk::<4>()
            .ok_or_else(|| bad("no length of the foreign key"))?;
        let len = u32::from_be_bytes(*len) as usize;
        if len >= rest.len() {
            return Err(bad("the foreign key's length runs past the end"));
        }
        let (fk, rest) = rest.split_at(len);
        let fk = self.fk.deserialize(topic, fk)?;
        match rest.split_first() {
            Some((0, [])) => Ok(SubscriptionKey::First(fk)),
            Some((2, [])) => Ok(SubscriptionKey::Last(fk)),
            Some((1, pk)) => Ok(SubscriptionKey::Entry(fk, self.pk.deserialize(topic, pk)?)),
            _ => Err(bad("no valid rank byte")),
        }
    }

    /// Not order-preserving (foreign keys of different lengths), but a range within one
    /// foreign key lies between its rank-0 and rank-2 bounds' bytes; any other range
    /// covers every entry.
    fn covering_range(
        &self,
        topic: &str,
        from: Bound<&SubscriptionKey<FK, K>>,
        to: Bound<&SubscriptionKey<FK, K>>,
    ) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        let every = (Bound::Unbounded, Bound::Unbounded);
        let (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) =
            (from, to)
        else {
            return every;
        };
        // The length and bytes of a key's foreign key.
        let fk_prefix = |k: &SubscriptionKey<FK, K>| {
            let mut out = Vec::new();
            self.serialize(topic, k, &mut out).ok()?;
            let len = u32::from_be_bytes(*out.first_chunk::<4>()?) as usize;
            out.truncate(4 + len);
            Some(out)
        };
        match (fk_prefix(a), fk_prefix(b)) {
            (Some(lo), Some(hi)) if lo == hi => {
                let (mut lo, mut hi) = (lo, hi);
                lo.push(0);
                hi.push(2);
                (Bound::Included(lo), Bound::Included(hi))
            }
            _ => every,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ops::RangeBounds;
    use std::sync::Arc;

    use super::*;
    use crate::serde::StringSerde;

    fn s() -> SerdeRef<String> {
        Arc::new(StringSerde)
    }

    /// Every key within a range of one foreign key encodes within the serde's covering
    /// byte range; a range across foreign keys covers everything.
    #[test]
    fn the_covering_range_of_one_foreign_key_holds_its_keys() {
        let keys = SubscriptionKeySerde::new(s(), s());
        assert!(!keys.preserves_order());
        let mut all = Vec::new();
        for fk in ["", "a", "ab", "b"] {
            all.push(SubscriptionKey::First(fk.to_owned()));
            for pk in ["", "x", "xy"] {
                all.push(SubscriptionKey::Entry(fk.to_owned(), pk.to_owned()));
            }
            all.push(SubscriptionKey::Last(fk.to_owned()));
        }
        let encode = |k: &SubscriptionKey<String, String>| {
            let mut b = Vec::new();
            keys.serialize("t", k, &mut b).unwrap();
            b
        };
        for from in &all {
            for to in &all {
                let (f, t) = (Bound::Included(from), Bound::Included(to));
                let (lo, hi) = keys.covering_range("t", f, t);
                for k in all.iter().filter(|k| (f, t).contains(*k)) {
                    assert!(
                        (lo.as_ref(), hi.as_ref()).contains(&encode(k)),
                        "{k:?} in {from:?}..={to:?}, not in its bytes {lo:?}..{hi:?}"
                    );
                }
                let one_fk = from.parts().0 == to.parts().0;
                assert_eq!(
                    lo == Bound::Unbounded,
                    !one_fk,
                    "{from:?}..={to:?}: narrowed exactly within one foreign key"
                );
            }
        }
    }

    #[test]
    fn subscriptions_responses_and_keys_round_trip() {
        let sub = SubscriptionSerde::new(s());
        for (hash, instruction) in [
            (Some(7), Instruction::PropagateOnlyIfValue),
            (None, Instruction::DeleteAndPropagate),
        ] {
            let v = Subscription {
                pk: "lhs1".to_owned(),
                hash,
                instruction,
            };
            let mut b = Vec::new();
            sub.serialize("t", &v, &mut b).unwrap();
            assert_eq!(sub.deserialize("t", &b).unwrap(), v);
        }
        let resp = ResponseSerde::new(s());
        for v in [
            Response {
                hash: Some(u64::MAX),
                value: Some("r".to_owned()),
            },
            Response {
                hash: None,
                value: None,
            },
        ] {
            let mut b = Vec::new();
            resp.serialize("t", &v, &mut b).unwrap();
            assert_eq!(resp.deserialize("t", &b).unwrap(), v);
        }
        let keys = SubscriptionKeySerde::new(s(), s());
        let encode = |k: &SubscriptionKey<String, String>| {
            let mut b = Vec::new();
            keys.serialize("t", k, &mut b).unwrap();
            assert_eq!(&keys.deserialize("t", &b).unwrap(), k);
            b
        };
        let fk = || "rhs1".to_owned();
        let (first, entry, last) = (
            SubscriptionKey::First(fk()),
            SubscriptionKey::Entry(fk(), "a".to_owned()),
            SubscriptionKey::Last(fk()),
        );
        // The bounds enclose the entries in both orders.
        assert!(first < entry && entry < last);
        assert!(encode(&first) < encode(&entry) && encode(&entry) < encode(&last));
        let err = resp.deserialize("t", &[9]).unwrap_err().to_string();
        assert!(err.contains("response(string)"), "{err}");
    }
}
