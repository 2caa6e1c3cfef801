//! A persistent store opened directly with its public constructor serves only local
//! files something vouches for: a checkpoint from a clean close (checked against the files
//! first), or [`StoreDirectory::recover`] having just trusted or rebuilt them. Files left
//! without either (a crash, a drop without a checkpoint, a deleted journal) may hold writes
//! that never committed: the constructor refuses them, naming the directory, and the
//! recovering open path rebuilds them from the changelog.

use stoatflow_state::{
    ChangelogPartition, I64Codec, KeyValueStore, LocalCopy, PersistentConfig,
    PersistentKeyValueStore, PersistentWindowStore, RebuildReason, Recovery, SegmentedConfig,
    StateError, StoreConfig, StoreDirectory, StringCodec, WindowStore,
};

fn open_kv(cfg: &PersistentConfig) -> Result<PersistentKeyValueStore<String, i64>, StateError> {
    PersistentKeyValueStore::open(cfg, StoreConfig::new("kv"), StringCodec, I64Codec)
}

/// A key-value store with 400 keys, dropped without a checkpoint.
fn dropped_without_checkpoint(cfg: &PersistentConfig) {
    let mut s = open_kv(cfg).unwrap();
    for i in 0..400i64 {
        s.put(format!("key-{i:03}"), i, 0).unwrap();
    }
}

#[test]
fn files_no_checkpoint_vouches_for_are_refused_naming_the_directory() {
    let tmp = crate::scratch_root();
    let cfg = PersistentConfig::new(tmp.path(), "app");
    dropped_without_checkpoint(&cfg);
    let err = open_kv(&cfg).unwrap_err();
    let dir = tmp.path().join("kv").display().to_string();
    assert!(
        matches!(&err, StateError::UnverifiedLocalCopy { store, dir: d } if store == "kv" && *d == dir),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&dir) && text.contains("StoreDirectory::recover"),
        "{text}"
    );
    // Refused, not deleted: the recovering open decides, and rebuilds.
    let (_, recovery) = StoreDirectory::recover(&cfg, "kv", LocalCopy::default()).unwrap();
    assert_eq!(
        recovery,
        Recovery::Rebuilt {
            reason: RebuildReason::UncleanShutdown
        }
    );
    let s = open_kv(&cfg).unwrap();
    assert_eq!(
        s.all().unwrap(),
        vec![],
        "rebuilt: restored from the changelog next"
    );
}

#[test]
fn a_checkpoint_or_the_recovering_open_vouches_for_the_files_once() {
    let tmp = crate::scratch_root();
    let cfg = PersistentConfig::new(tmp.path(), "app");
    dropped_without_checkpoint(&cfg);
    let dir = StoreDirectory::open(&cfg, "kv").unwrap();
    dir.write_checkpoint(&[]).unwrap();
    // A clean close's checkpoint: checked against the files, then consumed.
    assert_eq!(open_kv(&cfg).unwrap().all().unwrap().len(), 400);
    // Consumed: dropped again without one, the files are refused.
    assert!(matches!(
        open_kv(&cfg),
        Err(StateError::UnverifiedLocalCopy { .. })
    ));
    // The recovering open trusts a clean close's files, for the one open that follows.
    dir.write_checkpoint(&[(ChangelogPartition(0), stoatflow_state::ChangelogOffset(7))])
        .unwrap();
    let (_, recovery) = StoreDirectory::recover(&cfg, "kv", LocalCopy::default()).unwrap();
    assert!(matches!(recovery, Recovery::Resumed { .. }), "{recovery:?}");
    assert_eq!(open_kv(&cfg).unwrap().all().unwrap().len(), 400);
    assert!(matches!(
        open_kv(&cfg),
        Err(StateError::UnverifiedLocalCopy { .. })
    ));
}

#[test]
fn a_window_store_is_refused_alike() {
    let tmp = crate::scratch_root();
    let cfg = PersistentConfig::new(tmp.path(), "app");
    let seg = SegmentedConfig::new(100).with_segment_interval(10);
    let open =
        || PersistentWindowStore::open(&cfg, StoreConfig::new("w"), seg, StringCodec, I64Codec);
    {
        let mut w = open().unwrap();
        w.put("a".to_string(), 0, 1, 0).unwrap();
    }
    assert!(matches!(
        open(),
        Err(StateError::UnverifiedLocalCopy { .. })
    ));
}
