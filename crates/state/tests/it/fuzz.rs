//! Fuzz targets of the store codecs and the changelog layouts, the bytes a
//! store reads back from its changelog (and from its engine): every codec,
//! the windowed key layouts of Kafka Streams, and where a timestamped value's
//! timestamp goes. Seeds are the real encoders' output; the harness
//! (`stoatflow-fuzzing`) mutates them and bounds each target's address
//! space. Each asserts: a value or an error, never a panic, and a decoded
//! value encodes back to the very bytes it came from. The store directory's
//! own files are fuzzed beside their parser (`src/persistent/dir/fuzz.rs`).

use proptest::prelude::*;
use stoatflow_fuzzing::{Tier, fuzz, inputs};
use stoatflow_state::{
    BytesCodec, ChangelogBatch, ChangelogEntry, ChangelogOffset, ChangelogPartition,
    ChangelogValueLayout, Codec, I32Codec, I64Codec, StringCodec, U64Codec, ValueAndTimestamp,
    ValueAndTimestampCodec, WatermarkKey, WatermarkKeyCodec, decode_session_key, decode_window_key,
    encode_session_key, encode_window_key,
};

/// Decodes `bytes` with `codec`; a value must encode to `bytes` again.
fn round_trips<T>(codec: &dyn Codec<T>, bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(v) = codec.decode(bytes) {
        let again = codec.to_bytes(&v);
        prop_assert_eq!(again.as_deref().ok(), Some(bytes), "{:?}", codec);
    }
    Ok(())
}

fn codec_seeds() -> Vec<Vec<u8>> {
    let vt = ValueAndTimestampCodec::new(StringCodec);
    vec![
        I64Codec.to_bytes(&-7).expect("i64"),
        U64Codec.to_bytes(&u64::MAX).expect("u64"),
        I32Codec.to_bytes(&i32::MIN).expect("i32"),
        StringCodec.to_bytes(&"clé".to_string()).expect("string"),
        vt.to_bytes(&ValueAndTimestamp::new("v".to_string(), 1_700_000_000_000))
            .expect("value and timestamp"),
        WatermarkKeyCodec
            .to_bytes(&WatermarkKey::Stamp(42))
            .expect("stamp"),
        WatermarkKeyCodec
            .to_bytes(&WatermarkKey::GracefulFlush)
            .expect("flush"),
    ]
}

/// Every codec over the same bytes: a value or an error, and a value
/// encodes back to the bytes.
#[test]
fn codecs_decode_or_err_and_round_trip() {
    fuzz(
        module_path!(),
        "codecs_decode_or_err_and_round_trip",
        Tier::DECODER,
        inputs(codec_seeds(), &[], 48),
        |b| {
            round_trips(&I64Codec, &b)?;
            round_trips(&U64Codec, &b)?;
            round_trips(&I32Codec, &b)?;
            round_trips(&StringCodec, &b)?;
            round_trips(&BytesCodec, &b)?;
            round_trips(&ValueAndTimestampCodec::new(StringCodec), &b)?;
            round_trips(&ValueAndTimestampCodec::new(I64Codec), &b)?;
            round_trips(&WatermarkKeyCodec, &b)
        },
    );
}

/// A changelog key of a window or session store: split or refused, and a
/// split key joins back to the same bytes.
#[test]
fn windowed_key_layouts_split_or_refuse_and_round_trip() {
    let mut window = Vec::new();
    encode_window_key(b"user-1", 1_700_000_000_000, 0, &mut window);
    let mut dup = Vec::new();
    encode_window_key(b"", -1, i32::MAX, &mut dup);
    let mut session = Vec::new();
    encode_session_key(b"user-1", 10, 20, &mut session);
    fuzz(
        module_path!(),
        "windowed_key_layouts_split_or_refuse_and_round_trip",
        Tier::DECODER,
        inputs(vec![window, dup, session], &[], 48),
        |b| {
            if let Some((key, start, seq)) = decode_window_key(&b) {
                let mut again = Vec::new();
                encode_window_key(key, start, seq, &mut again);
                prop_assert_eq!(&again, &b);
            } else {
                prop_assert!(b.len() < 12);
            }
            if let Some((key, start, end)) = decode_session_key(&b) {
                let mut again = Vec::new();
                encode_session_key(key, start, end, &mut again);
                prop_assert_eq!(&again, &b);
            } else {
                prop_assert!(b.len() < 16);
            }
            Ok(())
        },
    );
}

/// Where a timestamped value's timestamp goes: a changelog value read back
/// into a timestamped store and flushed again is the same record, and a
/// store value of at least a timestamp flushed and read back is the same
/// value; a plain layout changes nothing.
#[test]
fn changelog_value_layouts_round_trip() {
    let stored = ValueAndTimestampCodec::new(StringCodec)
        .to_bytes(&ValueAndTimestamp::new("v".to_string(), 9))
        .expect("value and timestamp");
    fuzz(
        module_path!(),
        "changelog_value_layouts_round_trip",
        Tier::DECODER,
        (inputs(vec![stored, b"v".to_vec()], &[], 48), any::<i64>()),
        |(value, timestamp)| {
            for layout in [
                ChangelogValueLayout::Plain,
                ChangelogValueLayout::TimestampInRecord,
            ] {
                // Changelog to store to changelog.
                let mut entry = ChangelogEntry {
                    partition: ChangelogPartition(0),
                    offset: ChangelogOffset(0),
                    key: b"k".to_vec(),
                    value: Some(value.clone()),
                    timestamp,
                };
                layout.from_changelog(&mut entry);
                let mut batch = ChangelogBatch::new();
                batch.push(&entry.key, entry.value.as_deref(), entry.timestamp);
                layout.to_changelog(&mut batch);
                let r = batch.get(0).expect("one record");
                prop_assert_eq!(r.value, Some(&value[..]));
                prop_assert_eq!(r.timestamp, timestamp);
                // Store to changelog to store.
                let mut batch = ChangelogBatch::new();
                batch.push(b"k", Some(&value), timestamp);
                layout.to_changelog(&mut batch);
                let r = batch.get(0).expect("one record");
                let mut entry = ChangelogEntry {
                    partition: ChangelogPartition(0),
                    offset: ChangelogOffset(0),
                    key: r.key.to_vec(),
                    value: r.value.map(<[u8]>::to_vec),
                    timestamp: r.timestamp,
                };
                layout.from_changelog(&mut entry);
                if layout == ChangelogValueLayout::Plain || value.len() >= 8 {
                    prop_assert_eq!(entry.value.as_deref(), Some(&value[..]));
                }
            }
            Ok(())
        },
    );
}
