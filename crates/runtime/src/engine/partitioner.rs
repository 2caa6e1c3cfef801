//! Which partition a sink record goes to: Kafka's default partitioner for
//! keyed records (murmur2 of the key bytes, made positive, modulo the
//! partition count), so that a topic written by us is partitioned as a Kafka
//! Streams application or a plain Kafka producer would partition it.
//!
//! Owns the hash and nothing else; knows nothing of topics or records.

/// Kafka's `murmur2` of `data` (seed `0x9747b28c`), as its producer computes it.
pub fn murmur2(data: &[u8]) -> i32 {
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    const SEED: u32 = 0x9747_b28c;
    let len = data.len();
    let mut h: u32 = SEED ^ (len as u32);
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if !tail.is_empty() {
        h ^= u32::from(tail[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition of `partitions` Kafka's default partitioner picks for `key`.
pub fn partition_for_key(key: &[u8], partitions: u32) -> u32 {
    debug_assert!(partitions > 0);
    ((murmur2(key) & 0x7fff_ffff) as u32) % partitions
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values Kafka's own `Utils.murmur2` test pins (its `UtilsTest`).
    #[test]
    fn murmur2_matches_kafka() {
        let cases: [(&[u8], i32); 4] = [
            (b"21", -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
        ];
        for (input, expected) in cases {
            assert_eq!(
                murmur2(input),
                expected,
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn partitions_are_in_range_and_stable() {
        for key in [&b""[..], b"k", b"lisbon", b"porto"] {
            let p = partition_for_key(key, 3);
            assert!(p < 3);
            assert_eq!(p, partition_for_key(key, 3));
        }
    }
}
