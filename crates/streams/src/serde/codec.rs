//! Serdes as the state crate's [`Codec`]: how a store's changelog encodes
//! with the serde its DSL call was given, and what stands in when none was.

use stoatflow_state::{Codec, CodecError};

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

/// Adapts a boxed codec back into `impl Codec`.
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
}

impl<T> std::fmt::Debug for BoxedCodec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BoxedCodec")
    }
}
