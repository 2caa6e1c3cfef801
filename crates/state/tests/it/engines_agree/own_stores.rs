//! The engine's own stores (emit frontier, watermark store), each over either engine.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use stoatflow_state::{
    AnyKeyValueStore, BarrierStamp, EmitFrontier, I64Codec, InMemoryKeyValueStore, KeyValueStore,
    PersistentKeyValueStore, StateStore, StoreConfig, StringCodec, WATERMARK_STORE_NAME,
    WatermarkKey, WatermarkKeyCodec, WatermarkStore, emit_frontier_store_name,
};

use super::{Time, agree, both, cache_bound, flush, persistent, time, timestamp};
use crate::engines::{Changelog, restore_from};
use crate::{cases, scratch_root};

/// The key-value stores under a pair of emit frontiers.
fn inner<S: KeyValueStore<String, i64>>(
    stores: &mut [EmitFrontier<S>; 2],
) -> [&mut dyn StateStore; 2] {
    let [mem, per] = stores;
    [mem.store_mut(), per.store_mut()]
}

#[derive(Debug, Clone)]
enum FrontierOp {
    Advance(Time, i64),
    Flush,
}

fn run_emit_frontier(cache: usize, ops: &[FrontierOp]) -> Result<(), TestCaseError> {
    let tmp = scratch_root();
    let open = |dir: &str| {
        let config = StoreConfig::new(emit_frontier_store_name("agg"));
        [
            EmitFrontier::new(
                "agg",
                AnyKeyValueStore::InMemory(InMemoryKeyValueStore::new(
                    config.clone(),
                    StringCodec,
                    I64Codec,
                )),
            ),
            EmitFrontier::new(
                "agg",
                AnyKeyValueStore::Persistent(
                    PersistentKeyValueStore::open(
                        &persistent(&tmp.path().join(dir), cache),
                        config,
                        StringCodec,
                        I64Codec,
                    )
                    .expect("open the persistent emit frontier"),
                ),
            ),
        ]
    };
    let mut stores = open("live");
    let mut log = Changelog::default();
    for op in ops {
        match op {
            FrontierOp::Advance(close, ts) => {
                agree(op, both(&mut stores, |f| f.advance_to(close.at(1), *ts))?)?;
            }
            FrontierOp::Flush => {
                flush(inner(&mut stores), &mut log, op)?;
            }
        }
        agree(op, both(&mut stores, |f| f.highest_emitted_close())?)?;
    }
    flush(inner(&mut stores), &mut log, &"the last flush")?;
    let mut rebuilt = open("rebuilt");
    for f in &mut rebuilt {
        restore_from(f.store_mut(), &log.entries);
    }
    let answers = both(&mut rebuilt, |f| f.highest_emitted_close())?;
    agree(&"restore", answers)?;
    prop_assert_eq!(
        answers[0],
        stores[0].highest_emitted_close().expect("read"),
        "restored vs live"
    );
    Ok(())
}

#[derive(Debug, Clone)]
enum WatermarkOp {
    Stamp(u64, Time, i64),
    /// Marks this barrier, or the newest stamp's (`None`), as a graceful flush.
    Graceful(Option<u64>, i64),
    Flush,
}

fn barrier() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 0u64..8, 1 => Just(u64::MAX)]
}

fn run_watermark(cache: usize, ops: &[WatermarkOp]) -> Result<(), TestCaseError> {
    let tmp = scratch_root();
    let open = |dir: &str| {
        let config = StoreConfig::new(WATERMARK_STORE_NAME);
        [
            WatermarkStore::new(AnyKeyValueStore::InMemory(InMemoryKeyValueStore::new(
                config.clone(),
                WatermarkKeyCodec,
                I64Codec,
            ))),
            WatermarkStore::new(AnyKeyValueStore::Persistent(
                PersistentKeyValueStore::open(
                    &persistent(&tmp.path().join(dir), cache),
                    config,
                    WatermarkKeyCodec,
                    I64Codec,
                )
                .expect("open the persistent watermark store"),
            )),
        ]
    };
    let read = |stores: &mut [WatermarkStore<AnyKeyValueStore<WatermarkKey, i64>>; 2]| {
        both(stores, |w| Ok((w.seed()?, w.stamps()?)))
    };
    let mut stores = open("live");
    let mut log = Changelog::default();
    for op in ops {
        match op {
            WatermarkOp::Stamp(barrier, watermark, ts) => {
                let stamp = BarrierStamp {
                    barrier: *barrier,
                    watermark: watermark.at(1),
                };
                agree(op, both(&mut stores, |w| w.record_stamp(stamp, *ts))?)?;
            }
            WatermarkOp::Graceful(barrier, ts) => {
                let answers = both(&mut stores, |w| {
                    let newest = w.stamps()?.last().map_or(0, |s| s.barrier);
                    let marked = w.mark_graceful_flush(barrier.unwrap_or(newest), *ts);
                    Ok(marked.map_err(|e| e.to_string()))
                })?;
                agree(op, answers)?;
            }
            WatermarkOp::Flush => {
                let [a, b] = &mut stores;
                flush([a.store_mut(), b.store_mut()], &mut log, op)?;
            }
        }
        agree(op, read(&mut stores)?)?;
    }
    let [a, b] = &mut stores;
    flush([a.store_mut(), b.store_mut()], &mut log, &"the last flush")?;
    let mut rebuilt = open("rebuilt");
    for w in &mut rebuilt {
        restore_from(w.store_mut(), &log.entries);
    }
    let answers = read(&mut rebuilt)?;
    agree(&"restore", answers.clone())?;
    let [live, _] = read(&mut stores)?;
    prop_assert_eq!(&answers[0], &live, "restored vs live");
    Ok(())
}

proptest! {
    #![proptest_config(cases(24))]

    #[test]
    fn emit_frontier_engines_agree(
        cache in cache_bound(),
        ops in prop::collection::vec(
            prop_oneof![
                4 => (time(), timestamp()).prop_map(|(c, t)| FrontierOp::Advance(c, t)),
                1 => Just(FrontierOp::Flush),
            ],
            0..30,
        ),
    ) {
        run_emit_frontier(cache, &ops)?;
    }

    #[test]
    fn watermark_store_engines_agree(
        cache in cache_bound(),
        ops in prop::collection::vec(
            prop_oneof![
                4 => (barrier(), time(), timestamp()).prop_map(|(b, w, t)| WatermarkOp::Stamp(b, w, t)),
                2 => (prop::option::of(barrier()), timestamp()).prop_map(|(b, t)| WatermarkOp::Graceful(b, t)),
                2 => Just(WatermarkOp::Flush),
            ],
            0..30,
        ),
    ) {
        run_watermark(cache, &ops)?;
    }
}
