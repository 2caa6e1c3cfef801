//! Session stores on both engines: every query, retention, every flush, the restore.

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use stoatflow_state::{
    AnySessionStore, InMemorySessionStore, PersistentSessionStore, Segmented, SegmentedConfig,
    SessionStore, SessionWindow, StringCodec,
};

use super::{
    TestKey, Time, agree, agree_retention, both, cache_bound, changelogged, flush, key, pair,
    persistent, segmented, store_config, time, timestamp, value,
};
use crate::engines::{Changelog, restore_from};
use crate::{cases, scratch_root};

#[derive(Debug, Clone)]
enum SesOp {
    /// A session between the two times (the earlier is the start).
    Put(usize, Time, Time, String, i64),
    Fetch(usize, Time, Time),
    Remove(usize, Time, Time, i64),
    /// `find_sessions(key, earliest end, latest start)`.
    Find(usize, Time, Time),
    ByEnd(Time, Time),
    Expire(Time),
    Flush,
}

fn ses_ops() -> impl Strategy<Value = Vec<SesOp>> {
    prop::collection::vec(
        prop_oneof![
            6 => (key(), time(), time(), value(), timestamp())
                .prop_map(|(k, a, b, v, t)| SesOp::Put(k, a, b, v, t)),
            2 => (key(), time(), time()).prop_map(|(k, a, b)| SesOp::Fetch(k, a, b)),
            2 => (key(), time(), time(), timestamp()).prop_map(|(k, a, b, t)| SesOp::Remove(k, a, b, t)),
            3 => (key(), time(), time()).prop_map(|(k, a, b)| SesOp::Find(k, a, b)),
            2 => (time(), time()).prop_map(|(a, b)| SesOp::ByEnd(a, b)),
            2 => time().prop_map(SesOp::Expire),
            2 => Just(SesOp::Flush),
        ],
        0..50,
    )
}

type Sessions<K> = AnySessionStore<K, String>;

fn ses_stores<K: TestKey>(
    dir: &Path,
    seg: SegmentedConfig,
    changelogged: bool,
    cache: usize,
) -> [Sessions<K>; 2] {
    let config = store_config("ses", changelogged);
    [
        AnySessionStore::InMemory(InMemorySessionStore::new(
            config.clone(),
            seg,
            K::Codec::default(),
            StringCodec,
        )),
        AnySessionStore::Persistent(
            PersistentSessionStore::open(
                &persistent(dir, cache),
                config,
                seg,
                K::Codec::default(),
                StringCodec,
            )
            .expect("open the persistent session store"),
        ),
    ]
}

/// Every session, by end, key, start on both engines.
fn ses_all<K: TestKey>(
    stores: &mut [Sessions<K>; 2],
) -> Result<[Vec<(SessionWindow, K, String)>; 2], TestCaseError> {
    both(stores, |s| s.all())
}

fn run_sessions<K: TestKey>(
    seg: SegmentedConfig,
    changelogged: bool,
    cache: usize,
    ops: &[SesOp],
) -> Result<(), TestCaseError> {
    let tmp = scratch_root();
    let keys = K::pool();
    let at = |t: &Time| t.at(seg.segment_interval_ms());
    let session = |a: &Time, b: &Time| {
        let (a, b) = (at(a), at(b));
        SessionWindow::new(a.min(b), a.max(b))
    };
    let mut stores = ses_stores::<K>(&tmp.path().join("live"), seg, changelogged, cache);
    let mut log = Changelog::default();
    let mut frontier = None::<i64>;
    for op in ops {
        match op {
            SesOp::Put(k, a, b, v, ts) => {
                agree(
                    op,
                    both(&mut stores, |s| {
                        s.put(keys[*k].clone(), session(a, b), v.clone(), *ts)
                    })?,
                )?;
            }
            SesOp::Fetch(k, a, b) => agree(
                op,
                both(&mut stores, |s| s.fetch(&keys[*k], session(a, b)))?,
            )?,
            SesOp::Remove(k, a, b, ts) => {
                agree(
                    op,
                    both(&mut stores, |s| s.remove(&keys[*k], session(a, b), *ts))?,
                )?;
            }
            SesOp::Find(k, end, start) => {
                agree(
                    op,
                    both(&mut stores, |s| {
                        s.find_sessions(&keys[*k], at(end), at(start))
                    })?,
                )?;
            }
            SesOp::ByEnd(from, to) => {
                let answers = both(&mut stores, |s| s.fetch_all_by_end(at(from), at(to)))?;
                agree(op, answers)?;
            }
            SesOp::Expire(t) => {
                let t = at(t);
                frontier = Some(frontier.map_or(t, |f| f.max(t)));
                agree(op, both(&mut stores, |s| s.expire(t))?)?;
            }
            SesOp::Flush => flush(pair(&mut stores), &mut log, op)?,
        }
        agree(op, ses_all(&mut stores)?)?;
        agree_retention(&stores, op)?;
    }
    flush(pair(&mut stores), &mut log, &"the last flush")?;

    let mut rebuilt = ses_stores::<K>(&tmp.path().join("rebuilt"), seg, changelogged, cache);
    for s in &mut rebuilt {
        restore_from(s, &log.entries);
    }
    agree(&"restore", ses_all(&mut rebuilt)?)?;
    if let Some(f) = frontier {
        both(&mut rebuilt, |s| s.expire(f))?;
    }
    let rebuilt_all = ses_all(&mut rebuilt)?;
    agree(&"restore, expired", rebuilt_all.clone())?;
    agree(
        &"restore, expired",
        rebuilt.each_ref().map(|s| s.segments()),
    )?;
    let [live, _] = ses_all(&mut stores)?;
    let want = if changelogged { live } else { Vec::new() };
    prop_assert_eq!(&rebuilt_all[0], &want, "restored vs live");
    Ok(())
}

proptest! {
    #![proptest_config(cases(32))]

    #[test]
    fn session_engines_agree_on_string_keys(
        seg in segmented(), changelogged in changelogged(), cache in cache_bound(), ops in ses_ops(),
    ) {
        run_sessions::<String>(seg, changelogged, cache, &ops)?;
    }

    #[test]
    fn session_engines_agree_on_i64_keys(
        seg in segmented(), changelogged in changelogged(), cache in cache_bound(), ops in ses_ops(),
    ) {
        run_sessions::<i64>(seg, changelogged, cache, &ops)?;
    }

    #[test]
    fn session_engines_agree_on_keys_of_an_unsorted_codec(
        seg in segmented(), changelogged in changelogged(), cache in cache_bound(), ops in ses_ops(),
    ) {
        run_sessions::<super::Unsorted>(seg, changelogged, cache, &ops)?;
    }
}
