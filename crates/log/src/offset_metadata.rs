//! Kafka Streams' committed-offset metadata format, so that offsets written
//! by a Kafka Streams application can seed stoatflow and vice versa.
//!
//! Owns: the pure encode/decode of the metadata string. Knows nothing of
//! where the string is stored (both backends carry it opaquely in
//! [`OffsetAndMetadata::metadata`](crate::OffsetAndMetadata)) nor of what the
//! partition time means to the engine.
//!
//! Layout (Kafka Streams `TopicPartitionMetadata`, magic byte 2): the string
//! is the standard, padded base64 of
//!
//! ```text
//! [version: u8 = 2][partition time: i64 big-endian][processor metadata]
//! processor metadata = empty                                  (no entries)
//!                    | [count: i32 BE] ([key len: i32 BE][key: UTF-8][value: i64 BE])*
//! ```
//!
//! Version 1 is `[1][partition time]` only. Kafka Streams writes `-1`
//! (`RecordQueue.UNKNOWN`) when it has no partition time and reads an empty
//! string as unknown; [`PartitionMetadata::partition_time`] is `None` for both.
//!
//! ```
//! use stoatflow_log::offset_metadata::{PartitionMetadata, decode, encode};
//! let m = PartitionMetadata::with_partition_time(1_700_000_000_000);
//! let s = encode(&m);
//! assert_eq!(decode(&s)?, m);
//! # Ok::<(), stoatflow_log::offset_metadata::MetadataError>(())
//! ```

/// Kafka Streams' "unknown" partition time.
const UNKNOWN: i64 = -1;
const VERSION_1: u8 = 1;
const VERSION_2: u8 = 2;

/// What a committed offset's metadata says about its partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionMetadata {
    /// The largest record timestamp processed from the partition, if known.
    pub partition_time: Option<i64>,
    /// Kafka Streams' processor metadata (name to long), in the order given.
    /// Kept so that a round trip through stoatflow does not lose it.
    pub processor: Vec<(String, i64)>,
}

impl PartitionMetadata {
    /// Metadata carrying only a partition time.
    #[must_use]
    pub fn with_partition_time(partition_time: i64) -> Self {
        PartitionMetadata {
            partition_time: Some(partition_time),
            processor: Vec::new(),
        }
    }
}

/// A metadata string that is not in Kafka Streams' format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// Not valid padded base64.
    #[error("offset metadata is not base64 (byte {position})")]
    Base64 {
        /// Position in the string of the offending character.
        position: usize,
    },
    /// A version byte this codec does not know.
    #[error("unsupported offset metadata version {version}")]
    UnsupportedVersion {
        /// The version byte found.
        version: u8,
    },
    /// The bytes end before the layout does, or run past it.
    #[error("offset metadata is malformed: {reason}")]
    Malformed {
        /// What is wrong.
        reason: &'static str,
    },
}

/// Encodes in the version-2 layout.
#[must_use]
pub fn encode(metadata: &PartitionMetadata) -> String {
    let mut bytes = Vec::with_capacity(9 + metadata.processor.len() * 16);
    bytes.push(VERSION_2);
    bytes.extend_from_slice(&metadata.partition_time.unwrap_or(UNKNOWN).to_be_bytes());
    if !metadata.processor.is_empty() {
        bytes.extend_from_slice(&len_i32(metadata.processor.len()).to_be_bytes());
        for (key, value) in &metadata.processor {
            bytes.extend_from_slice(&len_i32(key.len()).to_be_bytes());
            bytes.extend_from_slice(key.as_bytes());
            bytes.extend_from_slice(&value.to_be_bytes());
        }
    }
    base64_encode(&bytes)
}

fn len_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Decodes versions 1 and 2; an empty string is "no metadata" (unknown time).
///
/// # Errors
/// [`MetadataError`] if the string is not in the format. Callers that want
/// Kafka Streams' leniency (warn and treat as unknown) can map the error to
/// [`PartitionMetadata::default`].
pub fn decode(metadata: &str) -> Result<PartitionMetadata, MetadataError> {
    if metadata.is_empty() {
        return Ok(PartitionMetadata::default());
    }
    let bytes = base64_decode(metadata)?;
    let mut r = Reader { bytes: &bytes };
    let version = r.u8()?;
    let time = match version {
        VERSION_1 | VERSION_2 => r.i64()?,
        other => return Err(MetadataError::UnsupportedVersion { version: other }),
    };
    let mut processor = Vec::new();
    if version == VERSION_2 && !r.bytes.is_empty() {
        let count = r.i32()?;
        let count = usize::try_from(count).map_err(|_| MetadataError::Malformed {
            reason: "negative processor metadata count",
        })?;
        for _ in 0..count {
            let key_len = usize::try_from(r.i32()?).map_err(|_| MetadataError::Malformed {
                reason: "negative processor metadata key length",
            })?;
            let key = r.take(key_len)?;
            let key = String::from_utf8(key.to_vec()).map_err(|_| MetadataError::Malformed {
                reason: "processor metadata key is not utf-8",
            })?;
            processor.push((key, r.i64()?));
        }
    }
    if !r.bytes.is_empty() {
        return Err(MetadataError::Malformed {
            reason: "trailing bytes",
        });
    }
    Ok(PartitionMetadata {
        partition_time: (time != UNKNOWN).then_some(time),
        processor,
    })
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], MetadataError> {
        if self.bytes.len() < n {
            return Err(MetadataError::Malformed {
                reason: "truncated",
            });
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, MetadataError> {
        Ok(self.take(1)?[0])
    }
    fn i32(&mut self) -> Result<i32, MetadataError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i64(&mut self) -> Result<i64, MetadataError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(i64::from_be_bytes(a))
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// RFC 4648 base64 with padding (Java's `Base64.getEncoder()`).
pub(crate) fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_decode(s: &str) -> Result<Vec<u8>, MetadataError> {
    let s = s.as_bytes();
    if !s.len().is_multiple_of(4) {
        return Err(MetadataError::Base64 { position: s.len() });
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for (ci, chunk) in s.chunks(4).enumerate() {
        let last = ci == s.len() / 4 - 1;
        let mut n = 0u32;
        let mut pad = 0;
        for (i, &c) in chunk.iter().enumerate() {
            let position = ci * 4 + i;
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'+' => 62,
                b'/' => 63,
                b'=' if last && i >= 2 => {
                    pad += 1;
                    0
                }
                _ => return Err(MetadataError::Base64 { position }),
            };
            if pad > 0 && c != b'=' {
                return Err(MetadataError::Base64 { position });
            }
            n = (n << 6) | u32::from(v);
        }
        let b = n.to_be_bytes();
        out.extend_from_slice(&b[1..4 - pad]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (plain, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64_encode(plain.as_bytes()), enc);
            assert_eq!(base64_decode(enc).unwrap(), plain.as_bytes());
        }
        assert!(base64_decode("Zm9").is_err());
        assert!(base64_decode("Z=9v").is_err());
        assert!(base64_decode("Zg==Zg==").is_err());
    }

    #[test]
    fn encodes_partition_time_as_kafka_streams_does() {
        // Kafka Streams: base64([2][i64 BE 1000]) with no processor metadata.
        let s = encode(&PartitionMetadata::with_partition_time(1000));
        assert_eq!(s, "AgAAAAAAAAPo");
        assert_eq!(
            decode(&s).unwrap(),
            PartitionMetadata::with_partition_time(1000)
        );
    }

    #[test]
    fn unknown_time_is_minus_one_and_empty_string_is_unknown() {
        let s = encode(&PartitionMetadata::default());
        assert_eq!(
            base64_decode(&s).unwrap(),
            [2, 255, 255, 255, 255, 255, 255, 255, 255]
        );
        assert_eq!(decode(&s).unwrap().partition_time, None);
        assert_eq!(decode("").unwrap(), PartitionMetadata::default());
    }

    #[test]
    fn decodes_version_1() {
        let mut bytes = vec![1u8];
        bytes.extend_from_slice(&42i64.to_be_bytes());
        let m = decode(&base64_encode(&bytes)).unwrap();
        assert_eq!(m, PartitionMetadata::with_partition_time(42));
    }

    #[test]
    fn processor_metadata_round_trips_in_kafka_streams_layout() {
        let m = PartitionMetadata {
            partition_time: Some(-5),
            processor: vec![("a".into(), 7), ("bc".into(), i64::MIN)],
        };
        let bytes = base64_decode(&encode(&m)).unwrap();
        let mut expect = vec![2u8];
        expect.extend_from_slice(&(-5i64).to_be_bytes());
        expect.extend_from_slice(&2i32.to_be_bytes());
        expect.extend_from_slice(&1i32.to_be_bytes());
        expect.extend_from_slice(b"a");
        expect.extend_from_slice(&7i64.to_be_bytes());
        expect.extend_from_slice(&2i32.to_be_bytes());
        expect.extend_from_slice(b"bc");
        expect.extend_from_slice(&i64::MIN.to_be_bytes());
        assert_eq!(bytes, expect);
        assert_eq!(decode(&encode(&m)).unwrap(), m);
    }

    #[test]
    fn rejects_what_is_not_the_format() {
        assert_eq!(
            decode(&base64_encode(&[3, 0, 0, 0, 0, 0, 0, 0, 0])),
            Err(MetadataError::UnsupportedVersion { version: 3 })
        );
        assert!(matches!(
            decode(&base64_encode(&[2, 0, 0])),
            Err(MetadataError::Malformed { .. })
        ));
        assert!(matches!(
            decode("not base64!"),
            Err(MetadataError::Base64 { .. })
        ));
        let mut trailing = vec![1u8];
        trailing.extend_from_slice(&0i64.to_be_bytes());
        trailing.push(9);
        assert!(matches!(
            decode(&base64_encode(&trailing)),
            Err(MetadataError::Malformed { .. })
        ));
    }

    #[test]
    fn round_trips_every_time_sample() {
        for t in [0, 1, -2, i64::MAX, i64::MIN, 1_700_000_000_123] {
            let m = PartitionMetadata::with_partition_time(t);
            assert_eq!(decode(&encode(&m)).unwrap(), m);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::fuzz_cases()))]

        /// Arbitrary strings and arbitrary bytes behind valid base64: an
        /// error or a value, never a panic.
        #[test]
        fn arbitrary_metadata_decodes_or_errs(s in ".{0,64}", bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..96)) {
            let _ = decode(&s);
            let mut framed = bytes.clone();
            if let Some(v) = framed.first_mut() {
                *v = 1 + *v % 2;
            }
            for b in [bytes, framed] {
                if let Ok(m) = decode(&base64_encode(&b)) {
                    proptest::prop_assert_eq!(decode(&encode(&m)).ok(), Some(m));
                }
            }
        }
    }
}
