//! Fuzz target of the committed-offset metadata string (Kafka Streams'
//! format, read from whatever a group's committed offsets hold): the string
//! mutated as text, and the binary behind the base64 mutated (so that counts
//! and lengths of `i32::MAX` reach the decoder). The embedded log's own
//! decoders are fuzzed in `embedded/recovery/fuzz.rs`.

use proptest::prelude::*;
use stoatflow_fuzzing::{Tier, fuzz, inputs};

use crate::offset_metadata::{PartitionMetadata, base64_encode, decode, encode};

fn samples() -> Vec<PartitionMetadata> {
    vec![
        PartitionMetadata::with_partition_time(1_700_000_000_000),
        PartitionMetadata::default(),
        PartitionMetadata {
            partition_time: Some(-5),
            processor: vec![("a".into(), 1), ("pröcessor".into(), i64::MIN)],
        },
    ]
}

/// Base64 pieces for the text mutations.
const TOKENS: &[&[u8]] = &[b"=", b"==", b"A", b"AAAA", b"/", b"+", b"////", b"\n", b"-"];

/// The metadata string: a value or an error, and a value encodes back to a
/// string that decodes to it.
#[test]
fn offset_metadata_decodes_or_errs_and_round_trips() {
    let text = samples().iter().map(|m| encode(m).into_bytes()).collect();
    let binary = samples()
        .iter()
        .map(|m| {
            let mut b = vec![2u8];
            b.extend_from_slice(&m.partition_time.unwrap_or(-1).to_be_bytes());
            b.extend_from_slice(&(m.processor.len() as i32).to_be_bytes());
            for (k, v) in &m.processor {
                b.extend_from_slice(&(k.len() as i32).to_be_bytes());
                b.extend_from_slice(k.as_bytes());
                b.extend_from_slice(&v.to_be_bytes());
            }
            b
        })
        .collect();
    fuzz(
        module_path!(),
        "offset_metadata_decodes_or_errs_and_round_trips",
        Tier::DECODER,
        prop_oneof![
            inputs(text, TOKENS, 96).prop_map(|t| String::from_utf8_lossy(&t).into_owned()),
            inputs(binary, &[], 96).prop_map(|b| base64_encode(&b)),
        ],
        |s| {
            if let Ok(m) = decode(&s) {
                prop_assert_eq!(decode(&encode(&m)).ok(), Some(m));
            }
            Ok(())
        },
    );
}
