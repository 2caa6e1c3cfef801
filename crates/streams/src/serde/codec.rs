//! Serdes as the state crate's [`Codec`]: how a store's changelog encodes
//! with the serde its DSL call was given, and what stands in when none was.

use std::ops::Bound;

use stoatflow_state::{Codec, CodecError, SortableForm};

use super::{SerdeCodec, SerdeRef};

/// A codec for a store whose serde was not given: validation refuses it when the store
/// keeps a changelog, so it is reached only by a store without one that is persistent
/// (which encodes every entry), and the error says how to give one.
#[derive(Debug)]
pub(crate) struct MissingCodec(pub(crate) String);

impl<T> Codec<T> for MissingCodec {
    fn encode(&self, _: &T, _: &mut Vec<u8>) -> Result<(), CodecError> {
        Err(CodecError::new(format!(
            "store {} has no serde: a persistent store encodes every entry (give one with \
             Materialized::with_key_serde / with_value_serde, or choose an in-memory store)",
            self.0
        )))
    }
    fn decode(&self, _: &[u8]) -> Result<T, CodecError> {
        Err(CodecError::new(format!(
            "store {} has no serde: a persistent store decodes every entry (give one with \
             Materialized::with_key_serde / with_value_serde, or choose an in-memory store)",
            self.0
        )))
    }
}

pub(crate) fn codec<T: 'static>(serde: &Option<SerdeRef<T>>, store: &str) -> Box<dyn Codec<T>> {
    match serde {
        Some(s) => Box::new(SerdeCodec::new(s.clone(), format!("{store}-changelog"))),
        None => Box::new(MissingCodec(store.to_owned())),
    }
}

/// Adapts a boxed codec back into `impl Codec`, with every word it says about itself.
pub(crate) struct BoxedCodec<T>(pub(crate) Box<dyn Codec<T>>);

impl<T> Codec<T> for BoxedCodec<T> {
    fn encode(&self, v: &T, out: &mut Vec<u8>) -> Result<(), CodecError> {
        self.0.encode(v, out)
    }
    fn decode(&self, b: &[u8]) -> Result<T, CodecError> {
        self.0.decode(b)
    }
    fn changelog_value_layout(&self) -> stoatflow_state::ChangelogValueLayout {
        self.0.changelog_value_layout()
    }
    fn preserves_order(&self) -> bool {
        self.0.preserves_order()
    }
    fn covering_range(&self, from: Bound<&T>, to: Bound<&T>) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        self.0.covering_range(from, to)
    }
    fn sortable_form(&self) -> Option<SortableForm> {
        self.0.sortable_form()
    }
}

impl<T> std::fmt::Debug for BoxedCodec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BoxedCodec")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::serde::{F64Serde, I32Serde, I64Serde, JsonSerde, Serde, SerdeError, StringSerde};

    fn adapted<T: 'static>(serde: impl Serde<T> + 'static) -> BoxedCodec<T> {
        BoxedCodec(codec(&Some(Arc::new(serde) as SerdeRef<T>), "s"))
    }

    /// A store's key codec says what its serde says about order, through every adapter: a
    /// user serde (JSON here) gives no order guarantee unless it says so.
    #[test]
    fn the_adapted_codec_preserves_order_exactly_when_its_serde_says_so() {
        assert!(adapted(StringSerde).preserves_order());
        assert!(!adapted(I64Serde).preserves_order());
        assert!(!adapted(JsonSerde::<i64>::new()).preserves_order());
        // Kafka's integers name their sortable form through every adapter; JSON none.
        let sign = Some(SortableForm::SignBitFlipped);
        assert_eq!(adapted(I64Serde).sortable_form(), sign);
        assert_eq!(adapted(I32Serde).sortable_form(), sign);
        assert_eq!(adapted(F64Serde).sortable_form(), None);
        assert_eq!(adapted(JsonSerde::<i64>::new()).sortable_form(), None);
        let shared: SerdeRef<i64> = Arc::new(I64Serde);
        assert_eq!(adapted(shared).sortable_form(), sign);

        #[derive(Debug)]
        struct Ordered;
        impl Serde<u8> for Ordered {
            fn name(&self) -> &str {
                "ordered"
            }
            fn serialize(&self, _: &str, v: &u8, out: &mut Vec<u8>) -> Result<(), SerdeError> {
                out.push(*v);
                Ok(())
            }
            fn deserialize(&self, _: &str, b: &[u8]) -> Result<u8, SerdeError> {
                Ok(b[0])
            }
            fn preserves_order(&self) -> bool {
                true
            }
            fn covering_range(
                &self,
                _: &str,
                _: Bound<&u8>,
                _: Bound<&u8>,
            ) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
                (Bound::Included(vec![1]), Bound::Excluded(vec![2]))
            }
        }
        let c = adapted(Ordered);
        assert!(c.preserves_order());
        assert_eq!(
            c.covering_range(Bound::Unbounded, Bound::Unbounded),
            (Bound::Included(vec![1]), Bound::Excluded(vec![2])),
            "the serde's covering range, through the adapter"
        );
    }
}
