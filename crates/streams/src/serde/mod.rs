//! Serdes: how keys and values become bytes at sources, sinks, repartition
//! topics and changelogs — and nowhere else (records between processors stay
//! typed).
//!
//! [`Serde`] is the trait; [`Serdes`] builds the standard ones (string, bytes,
//! i32, i64, f64 in Kafka's big-endian layouts, JSON over serde types,
//! nullable wrappers) and the windowed-key serdes whose layout matches Kafka
//! Streams' time-windowed (`[key][start: i64 BE]`) and session-windowed
//! (`[key][end: i64 BE][start: i64 BE]`) serdes, and [`ChangeSerde`] for a
//! regrouped table's updates.

mod change;
mod codec;
mod primitive;
pub(crate) mod subscription;
mod windowed;

use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

pub use change::ChangeSerde;
pub(crate) use change::PairSerde;
pub(crate) use primitive::PresentSerde;
pub use primitive::{
    BytesSerde, F64Serde, I32Serde, I64Serde, JsonSerde, NullableSerde, StringSerde, UnitSerde,
};
pub use windowed::{SessionWindowedSerde, TimeWindowedSerde};

/// A rewrite of a key serde's bytes that sorts as its keys ([`Serde::sortable_form`]).
pub use stoatflow_state::SortableForm;

pub(crate) use codec::{BoxedCodec, MissingCodec, codec};

/// Why bytes could not become a value, or a value bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SerdeError {
    /// Bytes that are not a valid encoding.
    #[error("serde {serde} cannot read {len} bytes from topic {topic}: {reason}")]
    Malformed {
        /// The serde's name.
        serde: String,
        /// The topic.
        topic: String,
        /// Length of the input.
        len: usize,
        /// What is wrong.
        reason: String,
    },
    /// A null key or value given to a serde that cannot represent null.
    #[error(
        "serde {serde} got a null on topic {topic}; wrap it in Serdes::nullable to accept nulls"
    )]
    Null {
        /// The serde's name.
        serde: String,
        /// The topic.
        topic: String,
    },
    /// A value the serde could not encode.
    #[error("serde {serde} cannot write a value to topic {topic}: {reason}")]
    Unwritable {
        /// The serde's name.
        serde: String,
        /// The topic.
        topic: String,
        /// What went wrong.
        reason: String,
    },
}

/// Serializes and deserializes one type, as Kafka's `Serde<T>`.
pub trait Serde<T>: Send + Sync + fmt::Debug {
    /// A short name for error messages, e.g. `string`.
    fn name(&self) -> &str;

    /// Appends the encoding of `value` to `out`.
    fn serialize(&self, topic: &str, value: &T, out: &mut Vec<u8>) -> Result<(), SerdeError>;

    /// Decodes a whole buffer.
    fn deserialize(&self, topic: &str, bytes: &[u8]) -> Result<T, SerdeError>;

    /// Encodes to optional bytes; `None` is a null (only nullable serdes produce it).
    fn serialize_nullable(&self, topic: &str, value: &T) -> Result<Option<Vec<u8>>, SerdeError> {
        // Room for a primitive or a primitive's windowed key without
        // growing (from empty, a windowed `i64` key is allocated twice).
        let mut out = Vec::with_capacity(16);
        self.serialize(topic, value, &mut out)?;
        Ok(Some(out))
    }

    /// Decodes optional bytes; a null is an error unless the serde is nullable.
    fn deserialize_nullable(&self, topic: &str, bytes: Option<&[u8]>) -> Result<T, SerdeError> {
        match bytes {
            Some(b) => self.deserialize(topic, b),
            None => Err(SerdeError::Null {
                serde: self.name().to_owned(),
                topic: topic.to_owned(),
            }),
        }
    }

    /// Whether the encodings of any two values compare as bytes exactly as the values
    /// compare by `Ord`. Asked only of a store's key serde: stores answer in key order
    /// (`Ord`) on either engine whatever this says, and a persistent store whose key serde
    /// says `true` answers a range or a whole-store read straight from its byte order,
    /// otherwise by decoding and sorting the keys it reads (docs/state.md#key-order). The
    /// default, `false`, is always correct; the string, bytes and unit serdes say `true`;
    /// a serde that says `true` wrongly makes persistent stores answer out of key order.
    fn preserves_order(&self) -> bool {
        false
    }

    /// For a store key serde that does not preserve order: byte bounds holding the
    /// encodings of every value within `from..to` (by `Ord`), so that a persistent store
    /// reads only the entries between them before bounding and sorting by decoded key (they
    /// may hold more, never fewer). By default every entry.
    fn covering_range(
        &self,
        topic: &str,
        from: Bound<&T>,
        to: Bound<&T>,
    ) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        let _ = (topic, from, to);
        (Bound::Unbounded, Bound::Unbounded)
    }

    /// For a store key serde that does not preserve order: a rewrite of its bytes that
    /// sorts exactly as the values do, which a persistent store keeps in place of the bytes
    /// (the changelog still carries the serde's bytes), so that it orders keys by bytes with
    /// no decoding. `None` by default, always correct; the `i64` and `i32` serdes (two's
    /// complement, big-endian) name [`SortableForm::SignBitFlipped`]; a wrong answer makes
    /// persistent stores answer out of key order.
    fn sortable_form(&self) -> Option<SortableForm> {
        None
    }
}

/// A shared, type-erased serde.
pub type SerdeRef<T> = Arc<dyn Serde<T>>;

/// A shared serde is a serde (so wrappers such as [`NullableSerde`] take one).
impl<T> Serde<T> for SerdeRef<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn serialize(&self, topic: &str, value: &T, out: &mut Vec<u8>) -> Result<(), SerdeError> {
        (**self).serialize(topic, value, out)
    }
    fn deserialize(&self, topic: &str, bytes: &[u8]) -> Result<T, SerdeError> {
        (**self).deserialize(topic, bytes)
    }
    fn serialize_nullable(&self, topic: &str, value: &T) -> Result<Option<Vec<u8>>, SerdeError> {
        (**self).serialize_nullable(topic, value)
    }
    fn deserialize_nullable(&self, topic: &str, bytes: Option<&[u8]>) -> Result<T, SerdeError> {
        (**self).deserialize_nullable(topic, bytes)
    }
    fn preserves_order(&self) -> bool {
        (**self).preserves_order()
    }
    fn covering_range(
        &self,
        topic: &str,
        from: Bound<&T>,
        to: Bound<&T>,
    ) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (**self).covering_range(topic, from, to)
    }
    fn sortable_form(&self) -> Option<SortableForm> {
        (**self).sortable_form()
    }
}

/// The standard serde of `T` when `T` is one of the types [`Serdes`] has a
/// serde for without arguments (`String`, `Vec<u8>`, `i32`, `i64`, `f64`,
/// `()`), so an aggregation can infer its store's value serde as `count`
/// does; `None` for any other type.
pub(crate) fn default_serde<T: 'static>() -> Option<SerdeRef<T>> {
    use std::any::{Any, TypeId};
    fn boxed<X: 'static>(s: impl Serde<X> + 'static) -> Box<dyn Any> {
        Box::new(Arc::new(s) as SerdeRef<X>)
    }
    let t = TypeId::of::<T>();
    let serde = if t == TypeId::of::<String>() {
        boxed(StringSerde)
    } else if t == TypeId::of::<Vec<u8>>() {
        boxed(BytesSerde)
    } else if t == TypeId::of::<i32>() {
        boxed(I32Serde)
    } else if t == TypeId::of::<i64>() {
        boxed(I64Serde)
    } else if t == TypeId::of::<f64>() {
        boxed(F64Serde)
    } else if t == TypeId::of::<()>() {
        boxed(UnitSerde)
    } else {
        return None;
    };
    serde.downcast::<SerdeRef<T>>().ok().map(|s| *s)
}

/// `Option<T>` over a shared serde, `None` a null.
pub(crate) fn nullable_ref<T: 'static>(serde: SerdeRef<T>) -> SerdeRef<Option<T>> {
    Arc::new(NullableSerde::new(serde))
}

/// `T` through a serde of `Option<T>`, for a store of the rows of a table
/// whose stream's `None`s delete (no `None` is ever stored).
pub(crate) fn present_ref<T: Clone + 'static>(serde: SerdeRef<Option<T>>) -> SerdeRef<T> {
    Arc::new(PresentSerde::new(serde))
}

/// Constructors of the standard serdes, named as in Kafka's `Serdes`.
#[derive(Debug, Clone, Copy)]
pub struct Serdes;

impl Serdes {
    /// UTF-8 strings.
    pub fn string() -> StringSerde {
        StringSerde
    }
    /// Raw bytes.
    pub fn bytes() -> BytesSerde {
        BytesSerde
    }
    /// 4-byte big-endian integers.
    pub fn i32() -> I32Serde {
        I32Serde
    }
    /// 8-byte big-endian integers (Kafka's `Serdes.Long()`).
    pub fn i64() -> I64Serde {
        I64Serde
    }
    /// 8-byte big-endian IEEE-754 doubles.
    pub fn f64() -> F64Serde {
        F64Serde
    }
    /// `()`: written as zero bytes, reads anything including null (Kafka's `Void`-like key).
    pub fn unit() -> UnitSerde {
        UnitSerde
    }
    /// JSON through `serde`.
    pub fn json<T>() -> JsonSerde<T> {
        JsonSerde::new()
    }
    /// `Option<T>` where `None` is a null key or value.
    pub fn nullable<T, S: Serde<T>>(inner: S) -> NullableSerde<T, S> {
        NullableSerde::new(inner)
    }
    /// Kafka Streams' time-windowed key layout, `[key][start i64 BE]`; the
    /// window size restores the end on read.
    pub fn time_windowed<K, S: Serde<K> + 'static>(
        inner: S,
        window_size_ms: i64,
    ) -> TimeWindowedSerde<K> {
        TimeWindowedSerde::new(Arc::new(inner), window_size_ms)
    }
    /// Kafka Streams' session-windowed key layout, `[key][end i64 BE][start i64 BE]`.
    pub fn session_windowed<K, S: Serde<K> + 'static>(inner: S) -> SessionWindowedSerde<K> {
        SessionWindowedSerde::new(Arc::new(inner))
    }
}

/// Adapts a serde to the state crate's codec, for changelogs.
pub(crate) struct SerdeCodec<T> {
    serde: SerdeRef<T>,
    topic: String,
}

impl<T> SerdeCodec<T> {
    pub(crate) fn new(serde: SerdeRef<T>, topic: impl Into<String>) -> Self {
        SerdeCodec {
            serde,
            topic: topic.into(),
        }
    }
}

impl<T: 'static> stoatflow_state::Codec<T> for SerdeCodec<T> {
    /// A serde that refuses a value is an error the store reports with its name and the key
    /// (at the barrier flush for the in-memory engine).
    fn encode(&self, value: &T, out: &mut Vec<u8>) -> Result<(), stoatflow_state::CodecError> {
        self.serde
            .serialize(&self.topic, value, out)
            .map_err(|e| stoatflow_state::CodecError::new(e.to_string()))
    }

    fn decode(&self, bytes: &[u8]) -> Result<T, stoatflow_state::CodecError> {
        self.serde
            .deserialize(&self.topic, bytes)
            .map_err(|e| stoatflow_state::CodecError::new(e.to_string()))
    }

    /// The serde's word ([`Serde::preserves_order`]): a user serde gives no order guarantee
    /// unless it says so.
    fn preserves_order(&self) -> bool {
        self.serde.preserves_order()
    }

    fn covering_range(&self, from: Bound<&T>, to: Bound<&T>) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        self.serde.covering_range(&self.topic, from, to)
    }

    fn sortable_form(&self) -> Option<SortableForm> {
        self.serde.sortable_form()
    }
}

pub(crate) fn malformed(
    serde: &str,
    topic: &str,
    len: usize,
    reason: impl Into<String>,
) -> SerdeError {
    SerdeError::Malformed {
        serde: serde.into(),
        topic: topic.into(),
        len,
        reason: reason.into(),
    }
}

impl<T> std::fmt::Debug for SerdeCodec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SerdeCodec")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_types_have_a_default_serde_and_others_none() {
        assert_eq!(default_serde::<i64>().unwrap().name(), "i64");
        assert_eq!(default_serde::<String>().unwrap().name(), "string");
        assert!(default_serde::<()>().is_some());
        assert!(default_serde::<Vec<u8>>().is_some());
        assert!(default_serde::<(i64, i64)>().is_none());
        assert!(default_serde::<Option<i64>>().is_none());
    }
}
