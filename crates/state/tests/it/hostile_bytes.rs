//! Arbitrary bytes against every decoder that reads bytes from outside: the windowed key
//! layouts of Kafka Streams, the codecs, restore into every store kind (including the
//! watermark and emit-frontier stores), and the metadata and checkpoint files of a store
//! directory. Each must return a value or an error, never panic; a decoded value must encode
//! back to the same bytes. Case counts rise with `STOATFLOW_HEAVY_TESTS`.

use std::fs;

use proptest::prelude::*;
use stoatflow_state::{
    BytesCodec, ChangelogEntry, ChangelogOffset, ChangelogPartition, Codec, EmitFrontier, I32Codec,
    I64Codec, InMemoryKeyValueStore, LocalCopy, PersistentConfig, PersistentKeyValueStore,
    STORE_CHECKPOINT_FILE, STORE_METADATA_FILE, StateError, StateStore, StoreConfig,
    StoreDirectory, StringCodec, U64Codec, ValueAndTimestampCodec, WATERMARK_STORE_NAME,
    WatermarkKeyCodec, WatermarkStore, decode_session_key, decode_window_key, encode_session_key,
    encode_window_key, in_memory_emit_frontier, in_memory_watermark_store, restore,
};

use crate::cases;
use crate::engines::{Engine, Factory, kv_state, session_state, window_state};

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

/// Arbitrary bytes, or a short UTF-8 key followed by arbitrary bytes (so that some keys get
/// past the key codec and reach the window and session layouts).
fn record_key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        bytes(40),
        ("[a-z]{0,4}", bytes(20)).prop_map(|(k, rest)| [k.into_bytes(), rest].concat()),
    ]
}

/// Arbitrary bytes, or 8 of them (a well-formed `i64`).
fn record_value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        bytes(24),
        any::<i64>().prop_map(|v| v.to_be_bytes().to_vec())
    ]
}

/// Changelog entries with arbitrary keys and values (tombstones included), offsets in order.
fn entries() -> impl Strategy<Value = Vec<ChangelogEntry>> {
    let entry = (record_key(), prop::option::of(record_value()), any::<i64>());
    prop::collection::vec(entry, 0..24).prop_map(|raw| {
        raw.into_iter()
            .enumerate()
            .map(|(i, (key, value, timestamp))| ChangelogEntry {
                partition: ChangelogPartition(2),
                offset: ChangelogOffset(i as u64),
                key,
                value,
                timestamp,
            })
            .collect()
    })
}

/// A restore either succeeds or stops at a corrupt record named by store, partition and
/// offset; nothing else.
fn restore_checked(store: &mut dyn StateStore, entries: &[ChangelogEntry]) {
    let name = store.name().to_string();
    match restore(store, entries.iter().cloned(), 0, &mut |_| {}) {
        Ok(n) => assert_eq!(n, entries.len() as u64),
        Err(StateError::CorruptChangelogRecord {
            store: s,
            partition,
            offset,
            ..
        }) => {
            assert_eq!(s, name);
            assert_eq!(partition, ChangelogPartition(2));
            assert!((offset.0 as usize) < entries.len());
        }
        Err(other) => panic!("restore of {name}: unexpected error {other}"),
    }
}

/// Decodes arbitrary bytes; a success must encode back to the same bytes.
fn decodes_or_refuses<T>(codec: &dyn Codec<T>, bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(v) = codec.decode(bytes) {
        prop_assert_eq!(codec.to_bytes(&v).unwrap(), bytes.to_vec(), "{:?}", codec);
    }
    Ok(())
}

fn restore_everywhere(engine: Engine, entries: &[ChangelogEntry]) {
    let mut f = Factory::new(engine);
    let mut kv = f.kv("kv");
    restore_checked(&mut *kv, entries);
    kv_state(&kv);
    let mut w = f.window("win");
    restore_checked(&mut *w, entries);
    window_state(&w);
    let mut s = f.session("ses");
    restore_checked(&mut *s, entries);
    session_state(&s);
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn windowed_key_layouts_split_any_bytes_or_refuse(b in bytes(40)) {
        if let Some((key, start, seq)) = decode_window_key(&b) {
            let mut out = Vec::new();
            encode_window_key(key, start, seq, &mut out);
            prop_assert_eq!(&out, &b);
        } else {
            prop_assert!(b.len() < 12);
        }
        if let Some((key, start, end)) = decode_session_key(&b) {
            let mut out = Vec::new();
            encode_session_key(key, start, end, &mut out);
            prop_assert_eq!(&out, &b);
        } else {
            prop_assert!(b.len() < 16);
        }
    }

    #[test]
    fn codecs_decode_any_bytes_or_refuse(b in bytes(40)) {
        decodes_or_refuses(&I64Codec, &b)?;
        decodes_or_refuses(&I32Codec, &b)?;
        decodes_or_refuses(&U64Codec, &b)?;
        decodes_or_refuses(&StringCodec, &b)?;
        decodes_or_refuses(&BytesCodec, &b)?;
        decodes_or_refuses(&WatermarkKeyCodec, &b)?;
        decodes_or_refuses(&ValueAndTimestampCodec::new(I64Codec), &b)?;
        decodes_or_refuses(&ValueAndTimestampCodec::new(StringCodec), &b)?;
    }

    #[test]
    fn in_memory_restore_of_any_records_applies_or_names_the_corrupt_one(e in entries()) {
        restore_everywhere(Engine::InMemory, &e);
    }

    #[test]
    fn engine_stores_restore_any_records_and_still_answer(e in entries()) {
        let mut ws = in_memory_watermark_store(true);
        restore_checked(ws.store_mut(), &e);
        ws.seed().unwrap();
        ws.stamps().unwrap();
        let mut ef = in_memory_emit_frontier("counts", true);
        restore_checked(ef.store_mut(), &e);
        ef.highest_emitted_close().unwrap();
    }
}

proptest! {
    #![proptest_config(cases(6))]

    #[test]
    fn persistent_restore_of_any_records_applies_or_names_the_corrupt_one(e in entries()) {
        restore_everywhere(Engine::Persistent, &e);
        let tmp = tempfile::tempdir().unwrap();
        let mut ws = WatermarkStore::new(
            PersistentKeyValueStore::open(
                &PersistentConfig::new(tmp.path(), "app"),
                StoreConfig::new(WATERMARK_STORE_NAME),
                WatermarkKeyCodec,
                I64Codec,
            )
            .unwrap(),
        );
        restore_checked(ws.store_mut(), &e);
        ws.seed().unwrap();
        let mut ef = EmitFrontier::new(
            "counts",
            InMemoryKeyValueStore::new(StoreConfig::new("counts-emitfrontier"), StringCodec, I64Codec),
        );
        restore_checked(ef.store_mut(), &e);
        ef.highest_emitted_close().unwrap();
    }

    #[test]
    fn any_metadata_or_checkpoint_file_is_refused_or_rebuilt(
        meta in prop::option::of(bytes(120)),
        checkpoint in prop::option::of(bytes(300)),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        drop(PersistentKeyValueStore::open(&cfg, StoreConfig::new("s"), StringCodec, I64Codec).unwrap());
        let dir = tmp.path().join("s");
        if let Some(m) = &meta {
            fs::write(dir.join(STORE_METADATA_FILE), m).unwrap();
        }
        if let Some(c) = &checkpoint {
            fs::write(dir.join(STORE_CHECKPOINT_FILE), c).unwrap();
        }
        match StoreDirectory::recover(&cfg, "s", LocalCopy::default()) {
            Ok((d, recovery)) => {
                // Only a checkpoint whose manifest matched the files could resume.
                prop_assert!(checkpoint.is_none() || matches!(recovery, stoatflow_state::Recovery::Rebuilt { .. }), "{:?}", recovery);
                prop_assert_eq!(d.read_checkpoint().unwrap(), None);
            }
            Err(e) => prop_assert!(e.to_string().starts_with("store s: "), "{}", e),
        }
    }
}
