//! [`ChangeSerde`]: a [`Change`] on a repartition topic, the form a
//! regrouped table's updates take between `KTable::group_by` and the
//! `KGroupedTable` aggregation; and `PairSerde`, the selected pair the
//! regrouping remembers per row in its store.
//!
//! Layout (ours; Kafka Streams' own is internal too): one flag byte (bit 0:
//! a new value follows, bit 1: an old value follows); with both, a 4-byte
//! big-endian length of the new value, the new value, then the old value;
//! with one, just its bytes.

use std::fmt;

use crate::record::Change;
use crate::serde::{Serde, SerdeError, SerdeRef, malformed};

const NEW: u8 = 1;
const OLD: u8 = 2;

/// A [`Change`] over a serde of its values.
pub struct ChangeSerde<V> {
    inner: SerdeRef<V>,
    name: String,
}

impl<V> ChangeSerde<V> {
    /// Changes of values written by `inner`.
    pub fn new(inner: SerdeRef<V>) -> Self {
        let name = format!("change({})", inner.name());
        ChangeSerde { inner, name }
    }
}

impl<V> fmt::Debug for ChangeSerde<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ChangeSerde").field(&self.name).finish()
    }
}

impl<V> Serde<Change<V>> for ChangeSerde<V> {
    fn name(&self) -> &str {
        &self.name
    }

    fn serialize(&self, topic: &str, c: &Change<V>, out: &mut Vec<u8>) -> Result<(), SerdeError> {
        let flags = if c.new.is_some() { NEW } else { 0 } | if c.old.is_some() { OLD } else { 0 };
        out.push(flags);
        match (&c.new, &c.old) {
            (Some(new), Some(old)) => {
                let at = out.len();
                out.extend_from_slice(&[0; 4]);
                self.inner.serialize(topic, new, out)?;
                let len =
                    u32::try_from(out.len() - at - 4).map_err(|_| SerdeError::Unwritable {
                        serde: self.name.clone(),
                        topic: topic.to_owned(),
                        reason: "a new value longer than 4 GiB".into(),
                    })?;
                out[at..at + 4].copy_from_slice(&len.to_be_bytes());
                self.inner.serialize(topic, old, out)
            }
            (Some(v), None) | (None, Some(v)) => self.inner.serialize(topic, v, out),
            (None, None) => Ok(()),
        }
    }

    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<Change<V>, SerdeError> {
        let bad = |reason: &str| malformed(&self.name, topic, b.len(), reason);
        let (&flags, rest) = b.split_first().ok_or_else(|| bad("no flag byte"))?;
        let one = |bytes: &[u8]| self.inner.deserialize(topic, bytes).map(Some);
        match flags {
            0 if rest.is_empty() => Ok(Change::new(None, None)),
            0 => Err(bad("bytes after an empty change")),
            NEW => Ok(Change::new(one(rest)?, None)),
            OLD => Ok(Change::new(None, one(rest)?)),
            f if f == NEW | OLD => {
                let (len, rest) = rest
                    .split_first_chunk::<4>()
                    .ok_or_else(|| bad("no length of the new value"))?;
                let len = u32::from_be_bytes(*len) as usize;
                if len > rest.len() {
                    return Err(bad("the new value's length runs past the end"));
                }
                let (new, old) = rest.split_at(len);
                Ok(Change::new(one(new)?, one(old)?))
            }
            f => Err(bad(&format!("unknown flag byte {f}"))),
        }
    }
}

/// A `(K, V)` pair: a 4-byte big-endian length of the key, the key, the value.
pub(crate) struct PairSerde<K, V> {
    key: SerdeRef<K>,
    value: SerdeRef<V>,
    name: String,
}

impl<K, V> PairSerde<K, V> {
    pub(crate) fn new(key: SerdeRef<K>, value: SerdeRef<V>) -> Self {
        let name = format!("pair({}, {})", key.name(), value.name());
        PairSerde { key, value, name }
    }
}

impl<K, V> fmt::Debug for PairSerde<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PairSerde").field(&self.name).finish()
    }
}

impl<K, V> Serde<(K, V)> for PairSerde<K, V> {
    fn name(&self) -> &str {
        &self.name
    }

    fn serialize(&self, topic: &str, (k, v): &(K, V), out: &mut Vec<u8>) -> Result<(), SerdeError> {
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        self.key.serialize(topic, k, out)?;
        let len = u32::try_from(out.len() - at - 4).map_err(|_| SerdeError::Unwritable {
            serde: self.name.clone(),
            topic: topic.to_owned(),
            reason: "a key longer than 4 GiB".into(),
        })?;
        out[at..at + 4].copy_from_slice(&len.to_be_bytes());
        self.value.serialize(topic, v, out)
    }

    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<(K, V), SerdeError> {
        let bad = |reason: &str| malformed(&self.name, topic, b.len(), reason);
        let (len, rest) = b
            .split_first_chunk::<4>()
            .ok_or_else(|| bad("no length of the key"))?;
        let len = u32::from_be_bytes(*len) as usize;
        if len > rest.len() {
            return Err(bad("the key's length runs past the end"));
        }
        let (k, v) = rest.split_at(len);
        Ok((
            self.key.deserialize(topic, k)?,
            self.value.deserialize(topic, v)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::serde::Serdes;

    fn serde() -> ChangeSerde<String> {
        ChangeSerde::new(Arc::new(Serdes::string()))
    }

    #[test]
    fn every_shape_of_change_reads_back() {
        let s = serde();
        for c in [
            Change::new(Some("new".to_owned()), Some("old".to_owned())),
            Change::new(Some(String::new()), Some(String::new())),
            Change::new(Some("n".to_owned()), None),
            Change::new(None, Some("o".to_owned())),
            Change::new(None, None),
        ] {
            let mut out = Vec::new();
            s.serialize("t", &c, &mut out).unwrap();
            assert_eq!(s.deserialize("t", &out).unwrap(), c);
        }
    }

    #[test]
    fn a_pair_reads_back_and_a_short_one_is_an_error() {
        let s = PairSerde::new(
            Arc::new(Serdes::string()) as SerdeRef<String>,
            Arc::new(Serdes::i64()) as SerdeRef<i64>,
        );
        let mut out = Vec::new();
        s.serialize("t", &("key".to_owned(), 7), &mut out).unwrap();
        assert_eq!(s.deserialize("t", &out).unwrap(), ("key".to_owned(), 7));
        let e = s.deserialize("t", &[0, 0, 0, 9, b'k']).unwrap_err();
        assert!(e.to_string().contains("pair(string, i64)"), "{e}");
    }

    #[test]
    fn malformed_changes_name_the_serde_and_topic() {
        let s = serde();
        for bytes in [&[][..], &[9], &[3, 0, 0], &[3, 0, 0, 0, 9, b'x'], &[0, 1]] {
            let e = s.deserialize("regroup", bytes).unwrap_err().to_string();
            assert!(e.contains("change(string)") && e.contains("regroup"), "{e}");
        }
    }
}
