//! Byte codecs for keys and values.
//!
//! Owns the [`Codec`] trait, the one place where typed keys and values meet bytes, and a
//! few built-in codecs with Kafka's wire formats (`i64`/`i32` big-endian, UTF-8 strings, raw
//! bytes, value-and-timestamp). Serialization happens only at the changelog (dirty keys, once
//! per epoch) and in the persistent engine; in-memory stores hold typed values.
//!
//! This module never knows about serde frameworks or Kafka serializers: the streams crate
//! adapts its serdes to [`Codec`].

use std::fmt;
use std::marker::PhantomData;
use std::ops::Bound;

/// A value that could not be encoded or decoded. The message says why; the caller adds the
/// store, key, partition and offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CodecError {
    message: String,
}

impl CodecError {
    /// An error with this message (lowercase, naming the offending length or byte).
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Turns a `T` into bytes and back.
///
/// Implementations must round-trip: `decode(encode(v)) == v`. Stores order and bound keys
/// by `K: Ord`, never by their encodings, on both engines (docs/state.md#key-order). The
/// persistent engine, which keeps encoded keys, answers a key range or a multi-key query
/// straight from its byte order for a key codec that says, with
/// [`Codec::preserves_order`], that its byte order is the key order, or names with
/// [`Codec::sortable_form`] a rewrite of its bytes that sorts as the keys (the engine then
/// keeps that); for any other it reads every candidate entry, decodes its key, and bounds
/// and sorts by `K: Ord` (correct, slower).
pub trait Codec<T>: Send + Sync + fmt::Debug {
    /// Appends the encoding of `value` to `out`.
    ///
    /// # Errors
    /// When `value` cannot be encoded (a user serializer refusing it). The store reports it
    /// as [`StateError::EncodeKey`](crate::StateError::EncodeKey) or
    /// [`StateError::EncodeValue`](crate::StateError::EncodeValue), naming itself and the key;
    /// `out` may then hold a partial encoding, which the caller discards.
    fn encode(&self, value: &T, out: &mut Vec<u8>) -> Result<(), CodecError>;

    /// Decodes a whole buffer.
    ///
    /// # Errors
    /// When `bytes` is not a valid encoding (wrong length, invalid UTF-8, ...).
    fn decode(&self, bytes: &[u8]) -> Result<T, CodecError>;

    /// The encoding of `value` in a fresh buffer.
    ///
    /// # Errors
    /// As [`Codec::encode`].
    fn to_bytes(&self, value: &T) -> Result<Vec<u8>, CodecError> {
        let mut out = Vec::new();
        self.encode(value, &mut out)?;
        Ok(out)
    }

    /// Where a store of these values puts their timestamp in its changelog
    /// (Kafka Streams' layout): only a timestamped codec moves it.
    fn changelog_value_layout(&self) -> crate::ChangelogValueLayout {
        crate::ChangelogValueLayout::Plain
    }

    /// Whether the encodings of any two values compare as bytes (lexicographically, a
    /// proper prefix first) exactly as the values compare by their `Ord`. Only a key codec's
    /// answer matters: the persistent engine then bounds and orders keys by their bytes;
    /// otherwise by decoded keys. `false` unless the codec says so, which is always correct;
    /// a wrong `true` makes the persistent engine answer out of key order.
    fn preserves_order(&self) -> bool {
        false
    }

    /// For a key codec that does not preserve order: byte bounds between which lie the
    /// encodings of every value within `from..to` (by `Ord`). The persistent engine reads the
    /// entries between them, then bounds and sorts by decoded key, so they may hold more
    /// values, never fewer. By default every entry (both unbounded); a composite key whose
    /// leading part bounds its bytes (a time, a length-prefixed key) narrows a range query
    /// to that part's entries with it.
    fn covering_range(&self, from: Bound<&T>, to: Bound<&T>) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        let _ = (from, to);
        (Bound::Unbounded, Bound::Unbounded)
    }

    /// For a key codec that does not preserve order: a rewrite of its encodings whose bytes
    /// sort exactly as the values do, if it has one. The persistent engine then keeps the
    /// rewritten bytes and bounds and orders keys by them, with no decoding, while the
    /// changelog still carries the encodings themselves. `None` unless the codec says so
    /// (always correct); a wrong answer makes the persistent engine answer out of key
    /// order. Not asked of a codec that preserves order.
    fn sortable_form(&self) -> Option<SortableForm> {
        None
    }
}

/// A rewrite of a key codec's encodings into bytes that sort as the values do, which the
/// persistent engine keeps in place of the encodings (docs/state.md#key-order). Each
/// rewrite is its own inverse and keeps the length, so the engine turns a changelog key
/// into its stored form and back in place. The set is closed: the engine's files depend on
/// it, and a store's format names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SortableForm {
    /// The top bit of the first byte flipped: big-endian two's complement integers of one
    /// width (Kafka's `i64`, `i32` and `i16` layouts) then sort as the numbers.
    SignBitFlipped,
}

impl SortableForm {
    /// Rewrites `bytes` in place: an encoding into its sortable form, or a sortable form
    /// back into the encoding.
    #[inline]
    pub fn apply(self, bytes: &mut [u8]) {
        match self {
            SortableForm::SignBitFlipped => {
                if let Some(first) = bytes.first_mut() {
                    *first ^= 0x80;
                }
            }
        }
    }
}

/// A shared codec is the codec it shares.
impl<T, C: Codec<T> + ?Sized> Codec<T> for std::sync::Arc<C> {
    fn encode(&self, value: &T, out: &mut Vec<u8>) -> Result<(), CodecError> {
        (**self).encode(value, out)
    }
    fn decode(&self, bytes: &[u8]) -> Result<T, CodecError> {
        (**self).decode(bytes)
    }
    fn changelog_value_layout(&self) -> crate::ChangelogValueLayout {
        (**self).changelog_value_layout()
    }
    fn preserves_order(&self) -> bool {
        (**self).preserves_order()
    }
    fn covering_range(&self, from: Bound<&T>, to: Bound<&T>) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (**self).covering_range(from, to)
    }
    fn sortable_form(&self) -> Option<SortableForm> {
        (**self).sortable_form()
    }
}

fn fixed<const N: usize>(bytes: &[u8], what: &str) -> Result<[u8; N], CodecError> {
    bytes.try_into().map_err(|_| {
        CodecError::new(format!(
            "{what} needs exactly {N} bytes, got {}",
            bytes.len()
        ))
    })
}

/// `i64` as 8 bytes big-endian (Kafka's `LongSerializer`). Not order-preserving (negative
/// values' bytes sort after the others'), but sortable with the sign bit flipped.
#[derive(Debug, Clone, Copy, Default)]
pub struct I64Codec;

impl Codec<i64> for I64Codec {
    fn encode(&self, value: &i64, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.extend_from_slice(&value.to_be_bytes());
        Ok(())
    }
    fn decode(&self, bytes: &[u8]) -> Result<i64, CodecError> {
        Ok(i64::from_be_bytes(fixed(bytes, "i64")?))
    }
    /// Two's complement with the sign bit flipped sorts as the numbers.
    fn sortable_form(&self) -> Option<SortableForm> {
        Some(SortableForm::SignBitFlipped)
    }
}

/// `u64` as 8 bytes big-endian (order-preserving).
#[derive(Debug, Clone, Copy, Default)]
pub struct U64Codec;

impl Codec<u64> for U64Codec {
    fn encode(&self, value: &u64, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.extend_from_slice(&value.to_be_bytes());
        Ok(())
    }
    fn decode(&self, bytes: &[u8]) -> Result<u64, CodecError> {
        Ok(u64::from_be_bytes(fixed(bytes, "u64")?))
    }
    fn preserves_order(&self) -> bool {
        true
    }
}

/// `i32` as 4 bytes big-endian (Kafka's `IntegerSerializer`). Not order-preserving, but
/// sortable, as [`I64Codec`].
#[derive(Debug, Clone, Copy, Default)]
pub struct I32Codec;

impl Codec<i32> for I32Codec {
    fn encode(&self, value: &i32, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.extend_from_slice(&value.to_be_bytes());
        Ok(())
    }
    fn decode(&self, bytes: &[u8]) -> Result<i32, CodecError> {
        Ok(i32::from_be_bytes(fixed(bytes, "i32")?))
    }
    /// As [`I64Codec`]'s.
    fn sortable_form(&self) -> Option<SortableForm> {
        Some(SortableForm::SignBitFlipped)
    }
}

/// `String` as UTF-8 (Kafka's `StringSerializer`; order-preserving).
#[derive(Debug, Clone, Copy, Default)]
pub struct StringCodec;

impl Codec<String> for StringCodec {
    fn encode(&self, value: &String, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.extend_from_slice(value.as_bytes());
        Ok(())
    }
    fn decode(&self, bytes: &[u8]) -> Result<String, CodecError> {
        String::from_utf8(bytes.to_vec()).map_err(|e| {
            CodecError::new(format!(
                "invalid utf-8 at byte {}",
                e.utf8_error().valid_up_to()
            ))
        })
    }
    /// UTF-8's byte order is the order of code points, `String`'s.
    fn preserves_order(&self) -> bool {
        true
    }
}

/// Raw bytes, unchanged (order-preserving).
#[derive(Debug, Clone, Copy, Default)]
pub struct BytesCodec;

impl Codec<Vec<u8>> for BytesCodec {
    fn encode(&self, value: &Vec<u8>, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.extend_from_slice(value);
        Ok(())
    }
    fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
        Ok(bytes.to_vec())
    }
    fn preserves_order(&self) -> bool {
        true
    }
}

/// A value with the timestamp of the record that last wrote it, as a timestamped store
/// holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ValueAndTimestamp<V> {
    /// The value.
    pub value: V,
    /// Event time of the write, in epoch milliseconds.
    pub timestamp: i64,
}

impl<V> ValueAndTimestamp<V> {
    /// Pairs a value with its timestamp.
    pub fn new(value: V, timestamp: i64) -> Self {
        Self { value, timestamp }
    }
}

/// Kafka Streams' timestamped value layout: `[timestamp i64 big-endian][value bytes]`.
pub struct ValueAndTimestampCodec<V, C> {
    inner: C,
    _v: PhantomData<fn() -> V>,
}

impl<V, C: fmt::Debug> fmt::Debug for ValueAndTimestampCodec<V, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ValueAndTimestampCodec")
            .field("inner", &self.inner)
            .finish()
    }
}

impl<V, C> ValueAndTimestampCodec<V, C> {
    /// Wraps the codec of the plain value.
    pub fn new(inner: C) -> Self {
        Self {
            inner,
            _v: PhantomData,
        }
    }
}

impl<V, C: Codec<V>> Codec<ValueAndTimestamp<V>> for ValueAndTimestampCodec<V, C> {
    fn encode(&self, value: &ValueAndTimestamp<V>, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.extend_from_slice(&value.timestamp.to_be_bytes());
        self.inner.encode(&value.value, out)
    }
    fn decode(&self, bytes: &[u8]) -> Result<ValueAndTimestamp<V>, CodecError> {
        if bytes.len() < 8 {
            return Err(CodecError::new(format!(
                "timestamped value needs at least 8 bytes, got {}",
                bytes.len()
            )));
        }
        let (ts, rest) = bytes.split_at(8);
        let timestamp = i64::from_be_bytes(fixed(ts, "timestamp")?);
        Ok(ValueAndTimestamp {
            value: self.inner.decode(rest)?,
            timestamp,
        })
    }
    fn changelog_value_layout(&self) -> crate::ChangelogValueLayout {
        crate::ChangelogValueLayout::TimestampInRecord
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_big_endian_and_length_checked() {
        assert_eq!(I64Codec.to_bytes(&1).unwrap(), vec![0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(I64Codec.decode(&(-5i64).to_be_bytes()), Ok(-5));
        assert_eq!(
            I64Codec.decode(&[1, 2, 3]).unwrap_err().message(),
            "i64 needs exactly 8 bytes, got 3"
        );
        assert_eq!(I32Codec.decode(&7i32.to_be_bytes()), Ok(7));
        assert_eq!(U64Codec.decode(&u64::MAX.to_be_bytes()), Ok(u64::MAX));
    }

    /// Each codec's `preserves_order` says truly whether its byte order is the value order,
    /// over values at the edges of the order.
    #[test]
    fn preserves_order_is_true_exactly_when_bytes_sort_as_values() {
        fn bytes_sort_as_values<T: Ord + Clone>(codec: &dyn Codec<T>, values: &[T]) -> bool {
            values.iter().all(|a| {
                values.iter().all(|b| {
                    let (x, y) = (codec.to_bytes(a).unwrap(), codec.to_bytes(b).unwrap());
                    x.cmp(&y) == a.cmp(b)
                })
            })
        }
        fn agrees<T: Ord + Clone>(codec: &dyn Codec<T>, values: &[T]) {
            assert_eq!(
                codec.preserves_order(),
                bytes_sort_as_values(codec, values),
                "{codec:?}"
            );
        }
        agrees(&I64Codec, &[i64::MIN, -256, -1, 0, 1, 255, i64::MAX]);
        agrees(&I32Codec, &[i32::MIN, -1, 0, 1, i32::MAX]);
        agrees(&U64Codec, &[0, 1, 255, 256, u64::MAX - 1, u64::MAX]);
        let strings = ["", "\0", "a", "a\0", "ab", "b", "\u{7f}", "é", "\u{10ffff}"];
        agrees(&StringCodec, &strings.map(String::from));
        agrees(
            &BytesCodec,
            &[vec![], vec![0], vec![0, 0], vec![1], vec![0xff]],
        );
    }

    /// A codec's sortable form, where it names one, sorts as the values over values at the
    /// edges of the order, and rewriting twice gives the encoding back.
    #[test]
    fn a_sortable_form_sorts_as_the_values_and_is_its_own_inverse() {
        fn sorts<T: Ord + fmt::Debug>(codec: &dyn Codec<T>, values: &[T]) {
            let form = codec.sortable_form().expect("a sortable form");
            let stored = |v: &T| {
                let mut b = codec.to_bytes(v).unwrap();
                form.apply(&mut b);
                b
            };
            for a in values {
                for b in values {
                    assert_eq!(stored(a).cmp(&stored(b)), a.cmp(b), "{a:?} vs {b:?}");
                }
                let mut back = stored(a);
                form.apply(&mut back);
                assert_eq!(back, codec.to_bytes(a).unwrap());
            }
        }
        sorts(
            &I64Codec,
            &[i64::MIN, i64::MIN + 1, -256, -1, 0, 1, 255, i64::MAX],
        );
        sorts(&I32Codec, &[i32::MIN, -65_536, -1, 0, 1, 65_536, i32::MAX]);
        let mut empty = Vec::new();
        SortableForm::SignBitFlipped.apply(&mut empty);
        assert!(empty.is_empty());
        assert_eq!(StringCodec.sortable_form(), None);
    }

    #[test]
    fn strings_reject_invalid_utf8() {
        assert_eq!(StringCodec.decode(b"abc"), Ok("abc".to_string()));
        assert!(StringCodec.decode(&[0x61, 0xff]).is_err());
    }

    #[test]
    fn timestamped_layout_is_timestamp_then_value() {
        let c = ValueAndTimestampCodec::new(I64Codec);
        let bytes = c.to_bytes(&ValueAndTimestamp::new(9, 1000)).unwrap();
        assert_eq!(&bytes[..8], &1000i64.to_be_bytes());
        assert_eq!(&bytes[8..], &9i64.to_be_bytes());
        assert_eq!(c.decode(&bytes), Ok(ValueAndTimestamp::new(9, 1000)));
        assert!(c.decode(&bytes[..5]).is_err());
    }
}
