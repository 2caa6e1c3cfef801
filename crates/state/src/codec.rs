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
/// by `K: Ord`, not by their encodings; the persistent engine, which orders encoded bytes,
/// does so today only for an order-preserving key codec (big-endian unsigned integers and
/// UTF-8 strings are; Kafka's big-endian two's-complement `i64` is not, for negative values).
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
}

fn fixed<const N: usize>(bytes: &[u8], what: &str) -> Result<[u8; N], CodecError> {
    bytes.try_into().map_err(|_| {
        CodecError::new(format!(
            "{what} needs exactly {N} bytes, got {}",
            bytes.len()
        ))
    })
}

/// `i64` as 8 bytes big-endian (Kafka's `LongSerializer`).
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
}

/// `i32` as 4 bytes big-endian (Kafka's `IntegerSerializer`).
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
