//! Key-value stores on both engines: every answer, every flush, the restore.

use std::ops::Bound;
use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use stoatflow_state::{
    AnyKeyValueStore, InMemoryKeyValueStore, KeyValueStore, PersistentKeyValueStore, StringCodec,
};

use super::{
    KEYS, TestKey, agree, agree_dirty, both, cache_bound, changelogged, flush, key, pair,
    persistent, store_config, timestamp, value,
};
use crate::engines::{Changelog, restore_from};
use crate::{cases, scratch_root};

#[derive(Debug, Clone)]
enum B {
    Unbounded,
    Included(usize),
    Excluded(usize),
}

fn bound(b: &B) -> Bound<usize> {
    match b {
        B::Unbounded => Bound::Unbounded,
        B::Included(k) => Bound::Included(*k),
        B::Excluded(k) => Bound::Excluded(*k),
    }
}

fn resolve<K>(b: Bound<usize>, keys: &[K]) -> Bound<&K> {
    b.map(|i| &keys[i])
}

fn any_bound() -> impl Strategy<Value = B> {
    prop_oneof![
        1 => Just(B::Unbounded),
        3 => key().prop_map(B::Included),
        3 => key().prop_map(B::Excluded),
    ]
}

#[derive(Debug, Clone)]
enum KvOp {
    Put(usize, String, i64),
    Delete(usize, i64),
    Get(usize),
    Range(B, B),
    /// Every range whose bounds are unbounded or at a pool key, each kind.
    EveryRange,
    Flush,
}

fn kv_ops() -> impl Strategy<Value = Vec<KvOp>> {
    prop::collection::vec(
        prop_oneof![
            6 => (key(), value(), timestamp()).prop_map(|(k, v, t)| KvOp::Put(k, v, t)),
            3 => (key(), timestamp()).prop_map(|(k, t)| KvOp::Delete(k, t)),
            2 => key().prop_map(KvOp::Get),
            3 => (any_bound(), any_bound()).prop_map(|(a, b)| KvOp::Range(a, b)),
            1 => Just(KvOp::EveryRange),
            2 => Just(KvOp::Flush),
        ],
        0..60,
    )
}

fn kv_stores<K: TestKey>(
    dir: &Path,
    changelogged: bool,
    cache: usize,
) -> [AnyKeyValueStore<K, String>; 2] {
    let config = store_config("kv", changelogged);
    [
        AnyKeyValueStore::InMemory(InMemoryKeyValueStore::new(
            config.clone(),
            K::Codec::default(),
            StringCodec,
        )),
        AnyKeyValueStore::Persistent(
            PersistentKeyValueStore::open(
                &persistent(dir, cache),
                config,
                K::Codec::default(),
                StringCodec,
            )
            .expect("open the persistent key-value store"),
        ),
    ]
}

/// Both engines' `range(from, to)`, compared.
fn kv_range<K: TestKey>(
    stores: &mut [AnyKeyValueStore<K, String>; 2],
    keys: &[K],
    from: Bound<usize>,
    to: Bound<usize>,
) -> Result<(), TestCaseError> {
    let (f, t) = (resolve(from, keys), resolve(to, keys));
    agree(&("range", f, t), both(stores, |s| s.range(f, t))?)
}

/// Every entry, in key order on both engines.
fn kv_all<K: TestKey>(
    stores: &mut [AnyKeyValueStore<K, String>; 2],
) -> Result<[Vec<(K, String)>; 2], TestCaseError> {
    both(stores, |s| s.all())
}

fn run_kv<K: TestKey>(changelogged: bool, cache: usize, ops: &[KvOp]) -> Result<(), TestCaseError> {
    let tmp = scratch_root();
    let keys = K::pool();
    assert_eq!(keys.len(), KEYS);
    let mut stores = kv_stores::<K>(&tmp.path().join("live"), changelogged, cache);
    let mut log = Changelog::default();
    let every_bound: Vec<Bound<usize>> = std::iter::once(Bound::Unbounded)
        .chain((0..KEYS).flat_map(|k| [Bound::Included(k), Bound::Excluded(k)]))
        .collect();
    let every_range = |stores: &mut [AnyKeyValueStore<K, String>; 2]| {
        for &from in &every_bound {
            for &to in &every_bound {
                kv_range(stores, &keys, from, to)?;
            }
        }
        Ok::<_, TestCaseError>(())
    };
    for op in ops {
        match op {
            KvOp::Put(k, v, ts) => {
                agree(
                    op,
                    both(&mut stores, |s| s.put(keys[*k].clone(), v.clone(), *ts))?,
                )?;
            }
            KvOp::Delete(k, ts) => agree(op, both(&mut stores, |s| s.delete(&keys[*k], *ts))?)?,
            KvOp::Get(k) => agree(op, both(&mut stores, |s| s.get(&keys[*k]))?)?,
            KvOp::Range(from, to) => {
                kv_range(&mut stores, &keys, bound(from), bound(to))?;
            }
            KvOp::EveryRange => every_range(&mut stores)?,
            KvOp::Flush => flush(pair(&mut stores), &mut log, op)?,
        }
        agree(op, kv_all(&mut stores)?)?;
        agree_dirty(&stores, op)?;
    }
    every_range(&mut stores)?;
    flush(pair(&mut stores), &mut log, &"the last flush")?;

    // Every flushed record, restored into fresh stores of both engines, rebuilds the
    // stores (changelogged) or nothing (not).
    let mut rebuilt = kv_stores::<K>(&tmp.path().join("rebuilt"), changelogged, cache);
    for s in &mut rebuilt {
        restore_from(s, &log.entries);
    }
    let rebuilt_all = kv_all(&mut rebuilt)?;
    agree(&"restore", rebuilt_all.clone())?;
    let [live, _] = kv_all(&mut stores)?;
    let want = if changelogged { live } else { Vec::new() };
    prop_assert_eq!(&rebuilt_all[0], &want, "restored vs live");
    agree_dirty(&rebuilt, &"restore")?;
    Ok(())
}

proptest! {
    #![proptest_config(cases(48))]

    /// String keys: every answer, every flush and the restore agree exactly.
    #[test]
    fn key_value_engines_agree_on_string_keys(
        changelogged in changelogged(), cache in cache_bound(), ops in kv_ops(),
    ) {
        run_kv::<String>(changelogged, cache, &ops)?;
    }

    /// `i64` keys under Kafka's codec, whose byte order is not the key order: as with
    /// strings, every answer and flush in key order.
    #[test]
    fn key_value_engines_agree_on_i64_keys(
        changelogged in changelogged(), cache in cache_bound(), ops in kv_ops(),
    ) {
        run_kv::<i64>(changelogged, cache, &ops)?;
    }

    /// The same keys under a codec that says nothing of its order: decoded and sorted.
    #[test]
    fn key_value_engines_agree_on_keys_of_an_unsorted_codec(
        changelogged in changelogged(), cache in cache_bound(), ops in kv_ops(),
    ) {
        run_kv::<super::Unsorted>(changelogged, cache, &ops)?;
    }
}
