//! Which bytes a persistent store keeps for a key, so that their byte order is the key order
//! wherever the key codec allows it (docs/state.md#key-order).
//!
//! Owns [`StoredKeys`]: a store's key codec seen from the engine. An order-preserving
//! codec's encodings are kept as they are. A codec that names a
//! [`SortableForm`](crate::SortableForm) has its encodings kept rewritten into it, which
//! sort as the keys, and turned back into the encodings for the changelog, whose bytes
//! never change. Both are ordered by their bytes. Any other codec's encodings are kept as
//! they are and ordered by their decoded keys. `StoredKeys` is itself the codec of the
//! stored keys, so the stores encode, decode, bound and order stored keys through it alone,
//! and convert a key only where it crosses the changelog.
//!
//! This module never knows the on-disk layouts nor the queries.

use std::fmt;
use std::sync::Arc;

use crate::codec::{Codec, CodecError, SortableForm};

/// A store's keys as the engine keeps them (see the module docs); as a [`Codec`], the codec
/// of the stored keys.
pub(crate) struct StoredKeys<K> {
    /// The store's key codec: the changelog's keys are its encodings.
    changelog: Arc<dyn Codec<K>>,
    /// The rewrite between an encoding and the stored key; `None`: they are the same bytes.
    form: Option<SortableForm>,
    /// Whether the stored keys' byte order is the key order.
    by_bytes: bool,
}

impl<K> StoredKeys<K> {
    /// The stored keys of a store whose key codec is `codec`.
    pub(crate) fn new(codec: impl Codec<K> + 'static) -> Self {
        let by_bytes = codec.preserves_order();
        let form = if by_bytes {
            None
        } else {
            codec.sortable_form()
        };
        Self {
            changelog: Arc::new(codec),
            form,
            by_bytes: by_bytes || form.is_some(),
        }
    }

    /// Whether the stored keys' byte order is the key order; otherwise a store orders them
    /// by their decoded keys.
    pub(crate) fn by_bytes(&self) -> bool {
        self.by_bytes
    }

    /// The store's key codec, which a changelog key's bytes are checked with.
    pub(crate) fn changelog_codec(&self) -> &dyn Codec<K> {
        &*self.changelog
    }

    /// Appends the stored key of the key encoded as `encoded` (a changelog key's bytes).
    #[inline]
    pub(crate) fn push_stored(&self, encoded: &[u8], out: &mut Vec<u8>) {
        let at = out.len();
        out.extend_from_slice(encoded);
        if let Some(form) = self.form {
            form.apply(&mut out[at..]);
        }
    }

    /// `stored` as an error names it: by its encoding, the bytes the key's serializer
    /// wrote (and the changelog carries), not the sortable form the engine keeps.
    pub(crate) fn shown<'a>(&self, stored: &'a [u8]) -> ShownKey<'a> {
        ShownKey {
            stored,
            form: self.form,
        }
    }

    /// Appends the encoding (the changelog's bytes) of the stored key `stored`.
    #[inline]
    pub(crate) fn push_encoded(&self, stored: &[u8], out: &mut Vec<u8>) {
        // Each rewrite is its own inverse.
        self.push_stored(stored, out);
    }
}

/// A stored key as an error names it ([`StoredKeys::shown`]); converted only when an error
/// is made.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ShownKey<'a> {
    stored: &'a [u8],
    form: Option<SortableForm>,
}

impl ShownKey<'_> {
    /// The key's encoding.
    pub(crate) fn encoding(&self) -> Vec<u8> {
        let mut out = self.stored.to_vec();
        if let Some(form) = self.form {
            form.apply(&mut out);
        }
        out
    }
}

impl<K> Codec<K> for StoredKeys<K> {
    fn encode(&self, value: &K, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let at = out.len();
        self.changelog.encode(value, out)?;
        if let Some(form) = self.form {
            form.apply(&mut out[at..]);
        }
        Ok(())
    }

    fn decode(&self, bytes: &[u8]) -> Result<K, CodecError> {
        let Some(form) = self.form else {
            return self.changelog.decode(bytes);
        };
        // The encoding back, on the stack for the short keys the forms are for.
        let mut short = [0u8; 16];
        let mut long;
        let encoded: &mut [u8] = match short.get_mut(..bytes.len()) {
            Some(b) => {
                b.copy_from_slice(bytes);
                b
            }
            None => {
                long = bytes.to_vec();
                &mut long
            }
        };
        form.apply(encoded);
        self.changelog.decode(encoded)
    }

    fn preserves_order(&self) -> bool {
        self.by_bytes
    }
}

impl<K> fmt::Debug for StoredKeys<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredKeys")
            .field("codec", &self.changelog)
            .field("form", &self.form)
            .field("by_bytes", &self.by_bytes)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{I64Codec, StringCodec};

    /// `i64` as Kafka's bytes, saying nothing of its order.
    #[derive(Debug)]
    struct Unsorted;

    impl Codec<i64> for Unsorted {
        fn encode(&self, v: &i64, out: &mut Vec<u8>) -> Result<(), CodecError> {
            I64Codec.encode(v, out)
        }
        fn decode(&self, b: &[u8]) -> Result<i64, CodecError> {
            I64Codec.decode(b)
        }
    }

    /// `i64` sign-extended to 24 bytes big-endian: longer than the stack buffer of a
    /// decode, and sortable with the sign bit flipped.
    #[derive(Debug)]
    struct Wide;

    impl Codec<i64> for Wide {
        fn encode(&self, v: &i64, out: &mut Vec<u8>) -> Result<(), CodecError> {
            out.extend_from_slice(&[if *v < 0 { 0xff } else { 0 }; 16]);
            out.extend_from_slice(&v.to_be_bytes());
            Ok(())
        }
        fn decode(&self, b: &[u8]) -> Result<i64, CodecError> {
            let low: [u8; 8] = b
                .get(16..)
                .and_then(|l| l.try_into().ok())
                .ok_or_else(|| CodecError::new(format!("{} bytes", b.len())))?;
            Ok(i64::from_be_bytes(low))
        }
        fn sortable_form(&self) -> Option<SortableForm> {
            Some(SortableForm::SignBitFlipped)
        }
    }

    fn stored<K>(keys: &StoredKeys<K>, k: &K) -> Vec<u8> {
        keys.to_bytes(k).unwrap()
    }

    #[test]
    fn a_sortable_codec_is_kept_rewritten_and_its_encodings_come_back() {
        let keys = StoredKeys::new(I64Codec);
        assert!(keys.by_bytes() && keys.preserves_order());
        let values = [i64::MIN, -300, -1, 0, 1, 300, i64::MAX];
        for v in values {
            let s = stored(&keys, &v);
            assert_eq!(s, ((v as u64) ^ (1 << 63)).to_be_bytes());
            assert_eq!(keys.decode(&s), Ok(v));
            let mut encoded = Vec::new();
            keys.push_encoded(&s, &mut encoded);
            assert_eq!(encoded, v.to_be_bytes(), "the changelog's bytes");
            let mut back = Vec::new();
            keys.push_stored(&encoded, &mut back);
            assert_eq!(back, s);
        }
        let wide = StoredKeys::new(Wide);
        for a in values {
            assert_eq!(wide.decode(&stored(&wide, &a)), Ok(a), "24 bytes");
            for b in values {
                assert_eq!(stored(&wide, &a).cmp(&stored(&wide, &b)), a.cmp(&b));
            }
        }
        assert!(wide.decode(&[0x80; 3]).is_err());
    }

    #[test]
    fn other_codecs_are_kept_as_encoded_and_only_order_preserving_ones_by_bytes() {
        let unsorted = StoredKeys::new(Unsorted);
        assert!(!unsorted.by_bytes() && !unsorted.preserves_order());
        assert_eq!(stored(&unsorted, &-1), (-1i64).to_be_bytes());
        let strings = StoredKeys::new(StringCodec);
        assert!(strings.by_bytes());
        assert_eq!(stored(&strings, &"ab".to_string()), b"ab");
        let mut out = Vec::new();
        strings.push_stored(b"ab", &mut out);
        assert_eq!(out, b"ab");
    }
}
