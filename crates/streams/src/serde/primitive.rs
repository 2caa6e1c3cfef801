//! The standard serdes: string, bytes, i32, i64, f64, unit, JSON, nullable
//! (and its inverse, present, for the stores of tables whose nulls delete).

use std::fmt;
use std::marker::PhantomData;

use super::{Serde, SerdeError, SerdeRef, SortableForm, malformed};

/// UTF-8 strings.
#[derive(Debug, Clone, Copy, Default)]
pub struct StringSerde;

impl Serde<String> for StringSerde {
    fn name(&self) -> &str {
        "string"
    }
    fn serialize(&self, _: &str, v: &String, out: &mut Vec<u8>) -> Result<(), SerdeError> {
        out.extend_from_slice(v.as_bytes());
        Ok(())
    }
    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<String, SerdeError> {
        String::from_utf8(b.to_vec())
            .map_err(|e| malformed("string", topic, b.len(), e.to_string()))
    }
    /// UTF-8's byte order is the order of code points, `String`'s.
    fn preserves_order(&self) -> bool {
        true
    }
}

/// Raw bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct BytesSerde;

impl Serde<Vec<u8>> for BytesSerde {
    fn name(&self) -> &str {
        "bytes"
    }
    fn serialize(&self, _: &str, v: &Vec<u8>, out: &mut Vec<u8>) -> Result<(), SerdeError> {
        out.extend_from_slice(v);
        Ok(())
    }
    fn deserialize(&self, _: &str, b: &[u8]) -> Result<Vec<u8>, SerdeError> {
        Ok(b.to_vec())
    }
    fn preserves_order(&self) -> bool {
        true
    }
}

macro_rules! fixed_serde {
    ($name:ident, $t:ty, $n:expr, $label:expr, $doc:expr $(, $form:expr)?) => {
        #[doc = $doc]
        #[derive(Debug, Clone, Copy, Default)]
        pub struct $name;

        impl Serde<$t> for $name {
            fn name(&self) -> &str {
                $label
            }
            fn serialize(&self, _: &str, v: &$t, out: &mut Vec<u8>) -> Result<(), SerdeError> {
                out.extend_from_slice(&v.to_be_bytes());
                Ok(())
            }
            /// One allocation of exactly the encoded size (a sink's or repartition's key
            /// and value are encoded this way once per record).
            fn serialize_nullable(&self, _: &str, v: &$t) -> Result<Option<Vec<u8>>, SerdeError> {
                Ok(Some(v.to_be_bytes().to_vec()))
            }
            fn deserialize(&self, topic: &str, b: &[u8]) -> Result<$t, SerdeError> {
                let arr: [u8; $n] = b.try_into().map_err(|_| {
                    malformed(
                        $label,
                        topic,
                        b.len(),
                        concat!("expected exactly ", $n, " bytes"),
                    )
                })?;
                Ok(<$t>::from_be_bytes(arr))
            }
            $(
            /// Two's complement with the sign bit flipped sorts as the numbers.
            fn sortable_form(&self) -> Option<SortableForm> {
                Some($form)
            }
            )?
        }
    };
}

fixed_serde!(
    I32Serde,
    i32,
    4,
    "i32",
    "4-byte big-endian integers (Kafka's `IntegerSerde`).",
    SortableForm::SignBitFlipped
);
fixed_serde!(
    I64Serde,
    i64,
    8,
    "i64",
    "8-byte big-endian integers (Kafka's `LongSerde`).",
    SortableForm::SignBitFlipped
);
fixed_serde!(
    F64Serde,
    f64,
    8,
    "f64",
    "8-byte big-endian IEEE-754 doubles (Kafka's `DoubleSerde`)."
);

/// `()`: zero bytes; reads any bytes or a null.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnitSerde;

impl Serde<()> for UnitSerde {
    fn name(&self) -> &str {
        "unit"
    }
    fn serialize(&self, _: &str, _: &(), _: &mut Vec<u8>) -> Result<(), SerdeError> {
        Ok(())
    }
    fn deserialize(&self, _: &str, _: &[u8]) -> Result<(), SerdeError> {
        Ok(())
    }
    fn serialize_nullable(&self, _: &str, _: &()) -> Result<Option<Vec<u8>>, SerdeError> {
        Ok(None)
    }
    /// One value, one encoding.
    fn preserves_order(&self) -> bool {
        true
    }
    fn deserialize_nullable(&self, _: &str, _: Option<&[u8]>) -> Result<(), SerdeError> {
        Ok(())
    }
}

/// JSON over `serde` types.
pub struct JsonSerde<T>(PhantomData<fn() -> T>);

impl<T> JsonSerde<T> {
    /// A JSON serde for `T`.
    pub fn new() -> Self {
        JsonSerde(PhantomData)
    }
}

impl<T> Default for JsonSerde<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for JsonSerde<T> {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for JsonSerde<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JsonSerde<{}>", std::any::type_name::<T>())
    }
}

impl<T: serde::Serialize + serde::de::DeserializeOwned> Serde<T> for JsonSerde<T> {
    fn name(&self) -> &str {
        "json"
    }
    fn serialize(&self, topic: &str, v: &T, out: &mut Vec<u8>) -> Result<(), SerdeError> {
        serde_json::to_writer(out, v).map_err(|e| SerdeError::Unwritable {
            serde: "json".into(),
            topic: topic.into(),
            reason: e.to_string(),
        })
    }
    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<T, SerdeError> {
        serde_json::from_slice(b).map_err(|e| malformed("json", topic, b.len(), e.to_string()))
    }
}

/// `Option<T>` with `None` as a null.
pub struct NullableSerde<T, S> {
    inner: S,
    name: String,
    _t: PhantomData<fn() -> T>,
}

impl<T, S: Serde<T>> NullableSerde<T, S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        let name = format!("nullable({})", inner.name());
        NullableSerde {
            inner,
            name,
            _t: PhantomData,
        }
    }
}

impl<T, S: fmt::Debug> fmt::Debug for NullableSerde<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("NullableSerde").field(&self.inner).finish()
    }
}

impl<T, S: Serde<T>> Serde<Option<T>> for NullableSerde<T, S> {
    fn name(&self) -> &str {
        &self.name
    }
    fn serialize(&self, topic: &str, v: &Option<T>, out: &mut Vec<u8>) -> Result<(), SerdeError> {
        match v {
            Some(v) => self.inner.serialize(topic, v, out),
            None => Ok(()),
        }
    }
    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<Option<T>, SerdeError> {
        self.inner.deserialize(topic, b).map(Some)
    }
    fn serialize_nullable(
        &self,
        topic: &str,
        v: &Option<T>,
    ) -> Result<Option<Vec<u8>>, SerdeError> {
        match v {
            Some(v) => self.inner.serialize_nullable(topic, v),
            None => Ok(None),
        }
    }
    fn deserialize_nullable(&self, topic: &str, b: Option<&[u8]>) -> Result<Option<T>, SerdeError> {
        match b {
            Some(b) => self.inner.deserialize(topic, b).map(Some),
            None => Ok(None),
        }
    }
}

/// `T` through a serde of `Option<T>` (the inverse of [`NullableSerde`]):
/// writes a value as `Some`, and refuses a read that gives `None`.
pub(crate) struct PresentSerde<T> {
    inner: SerdeRef<Option<T>>,
    name: String,
}

impl<T> PresentSerde<T> {
    pub(crate) fn new(inner: SerdeRef<Option<T>>) -> Self {
        let name = format!("present({})", inner.name());
        PresentSerde { inner, name }
    }
}

impl<T> fmt::Debug for PresentSerde<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PresentSerde").field(&self.inner).finish()
    }
}

impl<T: Clone> Serde<T> for PresentSerde<T> {
    fn name(&self) -> &str {
        &self.name
    }
    fn serialize(&self, topic: &str, v: &T, out: &mut Vec<u8>) -> Result<(), SerdeError> {
        self.inner.serialize(topic, &Some(v.clone()), out)
    }
    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<T, SerdeError> {
        self.inner
            .deserialize(topic, b)?
            .ok_or_else(|| SerdeError::Null {
                serde: self.name.clone(),
                topic: topic.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn round_trip<T: PartialEq + fmt::Debug>(s: &dyn Serde<T>, v: T) -> Vec<u8> {
        let mut out = Vec::new();
        s.serialize("t", &v, &mut out).unwrap();
        assert_eq!(s.deserialize("t", &out).unwrap(), v);
        let whole = s.serialize_nullable("t", &v).unwrap();
        assert_eq!(whole.as_deref(), Some(&out[..]), "serialize_nullable");
        out
    }

    #[test]
    fn numbers_use_kafkas_big_endian_layouts() {
        assert_eq!(round_trip(&I64Serde, 1), [0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(round_trip(&I32Serde, -2), [0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(round_trip(&F64Serde, 1.5), 1.5f64.to_be_bytes());
        round_trip(&StringSerde, "héllo".to_string());
    }

    #[test]
    fn malformed_input_names_the_serde_and_topic() {
        let err = I64Serde.deserialize("orders", &[1, 2, 3]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "serde i64 cannot read 3 bytes from topic orders: expected exactly 8 bytes"
        );
        let err = StringSerde.deserialize("orders", &[0xff]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("serde string cannot read 1 bytes from topic orders")
        );
    }

    #[test]
    fn null_is_refused_unless_nullable() {
        let err = StringSerde
            .deserialize_nullable("orders", None)
            .unwrap_err();
        assert!(err.to_string().contains("Serdes::nullable"));
        let n = NullableSerde::new(StringSerde);
        assert_eq!(n.deserialize_nullable("orders", None).unwrap(), None);
        assert_eq!(n.serialize_nullable("orders", &None).unwrap(), None);
        assert_eq!(
            n.serialize_nullable("orders", &Some("a".into())).unwrap(),
            Some(b"a".to_vec())
        );
    }

    #[test]
    fn present_writes_a_value_as_its_nullable_serde_writes_some_and_refuses_a_none() {
        let nullable: SerdeRef<Option<String>> = Arc::new(NullableSerde::new(StringSerde));
        let present = PresentSerde::new(nullable.clone());
        assert_eq!(round_trip(&present, "x".to_owned()), b"x");
        // An empty payload reads as `Some("")` through a string serde; a
        // serde whose payload can mean `None` is refused with its name.
        #[derive(Debug)]
        struct EmptyIsNone;
        impl Serde<Option<String>> for EmptyIsNone {
            fn name(&self) -> &str {
                "empty-is-none"
            }
            fn serialize(
                &self,
                _: &str,
                v: &Option<String>,
                out: &mut Vec<u8>,
            ) -> Result<(), SerdeError> {
                out.extend_from_slice(v.as_deref().unwrap_or("").as_bytes());
                Ok(())
            }
            fn deserialize(&self, _: &str, b: &[u8]) -> Result<Option<String>, SerdeError> {
                Ok((!b.is_empty()).then(|| String::from_utf8_lossy(b).into_owned()))
            }
        }
        let err = PresentSerde::new(Arc::new(EmptyIsNone)).deserialize("t", b"");
        let err = err.unwrap_err().to_string();
        assert!(
            err.contains("present(empty-is-none)") && err.contains("t"),
            "{err}"
        );
    }

    #[test]
    fn json_round_trips_serde_types() {
        #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
        struct Order {
            id: u32,
            placed_at: i64,
        }
        let out = round_trip(
            &JsonSerde::<Order>::new(),
            Order {
                id: 7,
                placed_at: 9,
            },
        );
        assert_eq!(out, br#"{"id":7,"placed_at":9}"#);
    }
}
