//! The exactly-once restart discipline on the persistent engine: a clean close leaves a
//! checkpoint and the store resumes from it; a crash leaves none, and the store is wiped and
//! rebuilt from the committed changelog, dropping writes of the epoch that never committed.

use stoatflow_state::{
    ChangelogPartition, I64Codec, LocalCopy, PersistentConfig, PersistentWindowStore, StoreConfig,
    StoreDirectory, StringCodec, WindowStore,
};

use crate::engines::{Changelog, restore_from, segmented};

fn open(cfg: &PersistentConfig) -> Box<dyn WindowStore<String, i64>> {
    Box::new(
        PersistentWindowStore::open(
            cfg,
            StoreConfig::new("counts"),
            segmented(),
            StringCodec,
            I64Codec,
        )
        .unwrap(),
    )
}

/// Opens the store as an exactly-once restart does: resume from a checkpoint if the last
/// close was clean and left the files whole, else wipe and restore everything committed.
fn reopen(cfg: &PersistentConfig, log: &Changelog) -> Box<dyn WindowStore<String, i64>> {
    let (_, recovery) = StoreDirectory::recover(cfg, "counts", LocalCopy::default()).unwrap();
    let from = recovery.restore_from(ChangelogPartition(0)).0 as usize;
    let mut store = open(cfg);
    restore_from(&mut *store, &log.entries[from..]);
    store
}

fn state(s: &dyn WindowStore<String, i64>) -> Vec<(i64, String, i64)> {
    s.fetch_all(i64::MIN, i64::MAX).unwrap()
}

#[test]
fn clean_close_resumes_from_the_checkpoint_and_a_crash_rebuilds_from_the_changelog() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = PersistentConfig::new(tmp.path(), "app");
    let mut log = Changelog::default();

    let mut s = open(&cfg);
    s.put("a".into(), 0, 1, 1).unwrap();
    s.put("b".into(), 0, 1, 2).unwrap();
    log.commit(&mut *s);
    s.put("a".into(), 0, 2, 3).unwrap();
    log.commit(&mut *s);
    let committed = state(&*s);
    drop(s);
    // Clean close: everything before the log's end is in the store's files.
    log.checkpoint_clean_close(&cfg, "counts");

    let mut s = reopen(&cfg, &log);
    assert_eq!(state(&*s), committed);

    // An epoch that reaches the local files but never commits, then a crash.
    s.put("a".into(), 0, 99, 4).unwrap();
    s.delete(&"b".into(), 0, 5).unwrap();
    s.put("c".into(), 20, 7, 6).unwrap();
    drop(s);

    let s = reopen(&cfg, &log);
    assert_eq!(
        state(&*s),
        committed,
        "uncommitted writes must not survive a crash"
    );
    drop(s);

    // The checkpoint was taken at open, so a second crash also rebuilds from scratch.
    let s = reopen(&cfg, &log);
    assert_eq!(state(&*s), committed);
}
