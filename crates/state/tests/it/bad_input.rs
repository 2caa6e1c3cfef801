//! Bad input: corrupt and truncated changelog records, foreign and damaged store
//! directories.

use stoatflow_state::{
    ChangelogEntry, ChangelogOffset, ChangelogPartition, StateError, encode_window_key, restore,
};

use crate::engines::{ENGINES, Factory};

fn entry(offset: u64, key: Vec<u8>, value: Option<Vec<u8>>) -> ChangelogEntry {
    ChangelogEntry {
        partition: ChangelogPartition(4),
        offset: ChangelogOffset(offset),
        key,
        value,
        timestamp: 0,
    }
}

fn assert_corrupt(err: StateError, store: &str, offset: u64, reason_part: &str) {
    let msg = err.to_string();
    match err {
        StateError::CorruptChangelogRecord {
            store: s,
            partition,
            offset: o,
            reason,
        } => {
            assert_eq!(s, store);
            assert_eq!(partition, ChangelogPartition(4));
            assert_eq!(o, ChangelogOffset(offset));
            assert!(reason.contains(reason_part), "{reason}");
            assert!(
                msg.starts_with(&format!(
                    "store {store}: corrupt changelog record at partition 4 offset {offset}:"
                )),
                "{msg}"
            );
        }
        other => panic!("expected a corrupt-record error, got {other}"),
    }
}

#[test]
fn truncated_value_in_kv_changelog_names_store_partition_and_offset() {
    for engine in ENGINES {
        let mut f = Factory::new(engine);
        let mut s = f.kv("counts");
        let good = entry(0, b"a".to_vec(), Some(1i64.to_be_bytes().to_vec()));
        let bad = entry(1, b"b".to_vec(), Some(vec![0, 0, 1]));
        let err = restore(&mut *s, vec![good, bad], 2, &mut |_| {}).unwrap_err();
        assert_corrupt(err, "counts", 1, "value does not decode");
        // Everything before the bad record was applied.
        assert_eq!(s.get(&"a".to_string()).unwrap(), Some(1));
    }
}

#[test]
fn invalid_key_bytes_are_corrupt() {
    for engine in ENGINES {
        let mut f = Factory::new(engine);
        let mut s = f.kv("counts");
        let bad = entry(9, vec![0xff, 0xfe], Some(1i64.to_be_bytes().to_vec()));
        let err = restore(&mut *s, vec![bad], 1, &mut |_| {}).unwrap_err();
        assert_corrupt(err, "counts", 9, "key does not decode");
    }
}

#[test]
fn truncated_windowed_key_is_corrupt() {
    for engine in ENGINES {
        let mut f = Factory::new(engine);
        let mut w = f.window("windows");
        let mut key = Vec::new();
        encode_window_key(b"k", 10, 0, &mut key);
        key.truncate(key.len() - 2);
        let bad = entry(3, key, Some(1i64.to_be_bytes().to_vec()));
        let err = restore(&mut *w, vec![bad], 1, &mut |_| {}).unwrap_err();
        // 11 bytes: one key byte and a cut suffix decode as a 0-byte key?  No: 11 < 12.
        assert_corrupt(err, "windows", 3, "truncated windowed key");
    }
}

#[test]
fn truncated_session_key_is_corrupt() {
    for engine in ENGINES {
        let mut f = Factory::new(engine);
        let mut s = f.session("sessions");
        let bad = entry(5, vec![1, 2, 3], None);
        let err = restore(&mut *s, vec![bad], 1, &mut |_| {}).unwrap_err();
        assert_corrupt(err, "sessions", 5, "truncated session key");
    }
}

#[test]
fn corrupt_window_value_is_reported() {
    for engine in ENGINES {
        let mut f = Factory::new(engine);
        let mut w = f.window("windows");
        let mut key = Vec::new();
        encode_window_key(b"k", 10, 0, &mut key);
        let bad = entry(7, key, Some(vec![1]));
        let err = restore(&mut *w, vec![bad], 1, &mut |_| {}).unwrap_err();
        assert_corrupt(err, "windows", 7, "value does not decode");
    }
}

#[test]
fn a_store_directory_of_another_application_id_is_refused() {
    use stoatflow_state::{
        I64Codec, KeyValueStore, PersistentConfig, PersistentKeyValueStore, PersistentWindowStore,
        SegmentedConfig, StoreConfig, StoreDirectory, StringCodec,
    };
    let tmp = tempfile::tempdir().unwrap();
    {
        let mut s = PersistentKeyValueStore::open(
            &PersistentConfig::new(tmp.path(), "orders-app"),
            StoreConfig::new("counts"),
            StringCodec,
            I64Codec,
        )
        .unwrap();
        s.put("a".into(), 1, 0).unwrap();
    }
    // Closed cleanly: its checkpoint vouches for the files.
    let owner = PersistentConfig::new(tmp.path(), "orders-app");
    StoreDirectory::open(&owner, "counts")
        .unwrap()
        .write_checkpoint(&[])
        .unwrap();
    let other = PersistentConfig::new(tmp.path(), "billing-app");
    let err = PersistentKeyValueStore::<String, i64>::open(
        &other,
        StoreConfig::new("counts"),
        StringCodec,
        I64Codec,
    )
    .unwrap_err();
    match &err {
        StateError::ForeignApplication {
            store,
            found,
            expected,
            ..
        } => {
            assert_eq!(store, "counts");
            assert_eq!(found, "orders-app");
            assert_eq!(expected, "billing-app");
        }
        other => panic!("expected a foreign-application error, got {other}"),
    }
    assert!(
        err.to_string()
            .contains("belongs to application id \"orders-app\", not \"billing-app\"")
    );
    // The same refusal for a windowed store, and the data is untouched for its owner.
    assert!(
        PersistentWindowStore::<String, i64>::open(
            &other,
            StoreConfig::new("counts"),
            SegmentedConfig::new(10),
            StringCodec,
            I64Codec,
        )
        .is_err()
    );
    let mine = PersistentKeyValueStore::<String, i64>::open(
        &PersistentConfig::new(tmp.path(), "orders-app"),
        StoreConfig::new("counts"),
        StringCodec,
        I64Codec,
    )
    .unwrap();
    assert_eq!(mine.get(&"a".into()).unwrap(), Some(1));
}

#[test]
fn a_watermark_store_of_another_application_id_is_refused_even_when_asked_to_rebuild() {
    use stoatflow_state::{
        BarrierStamp, I64Codec, LocalCopy, PersistentConfig, PersistentKeyValueStore, StoreConfig,
        StoreDirectory, WATERMARK_STORE_NAME, WatermarkKeyCodec, WatermarkStore,
    };
    let tmp = tempfile::tempdir().unwrap();
    let owner = PersistentConfig::new(tmp.path(), "orders-app");
    let open = |cfg: &PersistentConfig| {
        PersistentKeyValueStore::open(
            cfg,
            StoreConfig::new(WATERMARK_STORE_NAME),
            WatermarkKeyCodec,
            I64Codec,
        )
        .map(WatermarkStore::new)
    };
    let mut ws = open(&owner).unwrap();
    let stamp = BarrierStamp {
        barrier: 1,
        watermark: 10,
    };
    ws.record_stamp(stamp, 0).unwrap();
    drop(ws);
    // Closed cleanly: its checkpoint vouches for the files.
    StoreDirectory::open(&owner, WATERMARK_STORE_NAME)
        .unwrap()
        .write_checkpoint(&[])
        .unwrap();
    let other = PersistentConfig::new(tmp.path(), "billing-app");
    for mode in [
        LocalCopy::VerifyOrRebuild,
        LocalCopy::VerifyOrRefuse,
        LocalCopy::Rebuild,
    ] {
        let err = StoreDirectory::recover(&other, WATERMARK_STORE_NAME, mode).unwrap_err();
        assert!(
            matches!(&err, StateError::ForeignApplication { store, .. } if store == WATERMARK_STORE_NAME),
            "{err}"
        );
        assert!(
            err.to_string()
                .starts_with("store stoatflow-watermark: directory "),
            "{err}"
        );
    }
    assert!(open(&other).is_err());
    // Untouched for its owner.
    assert_eq!(open(&owner).unwrap().stamps().unwrap(), vec![stamp]);
}

#[test]
fn a_missing_local_file_is_named_when_refusing_damage() {
    use stoatflow_state::{
        I64Codec, KeyValueStore, LocalCopy, PersistentConfig, PersistentKeyValueStore, StoreConfig,
        StoreDirectory, StringCodec,
    };
    let tmp = tempfile::tempdir().unwrap();
    let cfg = PersistentConfig::new(tmp.path(), "app");
    let mut s =
        PersistentKeyValueStore::open(&cfg, StoreConfig::new("counts"), StringCodec, I64Codec)
            .unwrap();
    s.put("a".into(), 1, 0).unwrap();
    drop(s);
    crate::engines::Changelog::default().checkpoint_clean_close(&cfg, "counts");
    std::fs::remove_file(tmp.path().join("counts/data/version")).unwrap();
    let err = StoreDirectory::recover(&cfg, "counts", LocalCopy::VerifyOrRefuse).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StateError::DamagedStore { .. }), "{msg}");
    assert!(msg.starts_with("store counts: local copy in "), "{msg}");
    assert!(
        msg.contains("is damaged: data/version is missing; rebuild it"),
        "{msg}"
    );
}
