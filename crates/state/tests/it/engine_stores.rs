//! The engine's own stores on the persistent engine, rebuilt from their changelogs.

use stoatflow_state::{
    BarrierStamp, EmitFrontier, I64Codec, PersistentConfig, PersistentKeyValueStore, StoreConfig,
    StringCodec, WATERMARK_STORE_NAME, WatermarkKeyCodec, WatermarkStore, emit_frontier_store_name,
};

use crate::engines::{Changelog, restore_from};

#[test]
fn watermark_store_seed_survives_a_rebuild_on_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let open = |dir: &str| {
        WatermarkStore::new(
            PersistentKeyValueStore::open(
                &PersistentConfig::new(tmp.path().join(dir), "app"),
                StoreConfig::new(WATERMARK_STORE_NAME),
                WatermarkKeyCodec,
                I64Codec,
            )
            .unwrap(),
        )
    };
    let mut ws = open("a");
    let mut log = Changelog::default();
    for b in 1..=6u64 {
        ws.record_stamp(
            BarrierStamp {
                barrier: b,
                watermark: b as i64 * 10,
            },
            0,
        )
        .unwrap();
        log.commit(ws.store_mut());
    }
    let mut rebuilt = open("b");
    restore_from(rebuilt.store_mut(), &log.entries);
    let seed = rebuilt.seed().unwrap();
    assert_eq!((seed.floor, seed.frontier, seed.graceful), (60, 50, false));
    assert_eq!(rebuilt.stamps().unwrap().len(), 4);

    ws.mark_graceful_flush(6, 0).unwrap();
    log.commit(ws.store_mut());
    let mut rebuilt = open("c");
    restore_from(rebuilt.store_mut(), &log.entries);
    let seed = rebuilt.seed().unwrap();
    assert_eq!((seed.floor, seed.frontier, seed.graceful), (60, 60, true));
}

#[test]
fn emit_frontier_is_restored_like_any_store() {
    let tmp = tempfile::tempdir().unwrap();
    let open = |dir: &str| {
        EmitFrontier::new(
            "counts",
            PersistentKeyValueStore::open(
                &PersistentConfig::new(tmp.path().join(dir), "app"),
                StoreConfig::new(emit_frontier_store_name("counts")),
                StringCodec,
                I64Codec,
            )
            .unwrap(),
        )
    };
    let mut f = open("a");
    let mut log = Changelog::default();
    f.advance_to(1_000, 1).unwrap();
    f.advance_to(2_000, 2).unwrap();
    log.commit(f.store_mut());
    // An epoch that never commits.
    f.advance_to(3_000, 3).unwrap();
    let mut rebuilt = open("b");
    restore_from(rebuilt.store_mut(), &log.entries);
    assert_eq!(rebuilt.highest_emitted_close().unwrap(), 2_000);
}
