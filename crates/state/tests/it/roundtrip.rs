//! Property: a store rebuilt from its changelog equals the original, for every engine and
//! store kind, and rebuilding twice changes nothing.

use proptest::prelude::*;
use stoatflow_state::SessionWindow;

use crate::engines::{
    Changelog, Engine, Factory, kv_state, restore_from, session_state, window_state,
};

#[derive(Debug, Clone)]
pub enum KvOp {
    Put(u8, i64),
    Delete(u8),
    Barrier,
}

pub fn kv_ops() -> impl Strategy<Value = Vec<KvOp>> {
    prop::collection::vec(
        prop_oneof![
            5 => (0u8..12, any::<i64>()).prop_map(|(k, v)| KvOp::Put(k, v)),
            2 => (0u8..12).prop_map(KvOp::Delete),
            1 => Just(KvOp::Barrier),
        ],
        0..80,
    )
}

pub fn key(k: u8) -> String {
    format!("k{k:02}")
}

#[derive(Debug, Clone)]
pub enum WinOp {
    Put(u8, i64, i64),
    /// Add to the window's value (0 if none) in place.
    Update(u8, i64, i64),
    Delete(u8, i64),
    /// Advance the committed frontier by this much.
    Expire(i64),
    Barrier,
}

pub fn win_ops() -> impl Strategy<Value = Vec<WinOp>> {
    prop::collection::vec(
        prop_oneof![
            5 => (0u8..6, 0i64..20, any::<i64>()).prop_map(|(k, s, v)| WinOp::Put(k, s * 10, v)),
            3 => (0u8..6, 0i64..20, any::<i64>()).prop_map(|(k, s, v)| WinOp::Update(k, s * 10, v)),
            2 => (0u8..6, 0i64..20).prop_map(|(k, s)| WinOp::Delete(k, s * 10)),
            1 => (0i64..40).prop_map(WinOp::Expire),
            1 => Just(WinOp::Barrier),
        ],
        0..80,
    )
}

#[derive(Debug, Clone)]
pub enum SesOp {
    Put(u8, i64, i64, i64),
    Remove(u8, i64, i64),
    Expire(i64),
    Barrier,
}

pub fn ses_ops() -> impl Strategy<Value = Vec<SesOp>> {
    prop::collection::vec(
        prop_oneof![
            5 => (0u8..6, 0i64..200, 0i64..3, any::<i64>())
                .prop_map(|(k, s, l, v)| SesOp::Put(k, s, s + l * 7, v)),
            2 => (0u8..6, 0i64..200, 0i64..3).prop_map(|(k, s, l)| SesOp::Remove(k, s, s + l * 7)),
            1 => (0i64..40).prop_map(SesOp::Expire),
            1 => Just(SesOp::Barrier),
        ],
        0..80,
    )
}

fn kv_roundtrip(engine: Engine, ops: &[KvOp]) -> Result<(), TestCaseError> {
    let mut f = Factory::new(engine);
    let mut original = f.kv("kv");
    let mut log = Changelog::default();
    for (t, op) in ops.iter().enumerate() {
        match *op {
            KvOp::Put(k, v) => original.put(key(k), v, t as i64).unwrap(),
            KvOp::Delete(k) => {
                original.delete(&key(k), t as i64).unwrap();
            }
            KvOp::Barrier => log.commit(&mut *original),
        }
    }
    log.commit(&mut *original);
    let mut rebuilt = f.kv("kv");
    restore_from(&mut *rebuilt, &log.entries);
    prop_assert_eq!(kv_state(&rebuilt), kv_state(&original));
    restore_from(&mut *rebuilt, &log.entries);
    prop_assert_eq!(kv_state(&rebuilt), kv_state(&original));
    if matches!(engine, Engine::InMemory) {
        // Exact only in memory; the LSM's count is an estimate.
        prop_assert_eq!(
            rebuilt.approximate_num_entries(),
            original.approximate_num_entries()
        );
    }
    prop_assert_eq!(rebuilt.dirty_keys(), 0);
    Ok(())
}

fn window_roundtrip(engine: Engine, ops: &[WinOp]) -> Result<(), TestCaseError> {
    let mut f = Factory::new(engine);
    let mut original = f.window("win");
    let mut log = Changelog::default();
    let mut frontier = i64::MIN;
    for (t, op) in ops.iter().enumerate() {
        match *op {
            WinOp::Put(k, s, v) => original.put(key(k), s, v, t as i64).unwrap(),
            WinOp::Update(k, s, v) => original
                .update(&key(k), s, t as i64, &mut |old| {
                    old.unwrap_or(0).wrapping_add(v)
                })
                .unwrap(),
            WinOp::Delete(k, s) => original.delete(&key(k), s, t as i64).unwrap(),
            WinOp::Expire(d) => {
                frontier = frontier.max(0) + d;
                original.expire(frontier).unwrap();
            }
            WinOp::Barrier => log.commit(&mut *original),
        }
    }
    log.commit(&mut *original);
    let mut rebuilt = f.window("win");
    restore_from(&mut *rebuilt, &log.entries);
    rebuilt.expire(frontier).unwrap();
    prop_assert_eq!(window_state(&rebuilt), window_state(&original));
    prop_assert_eq!(rebuilt.segments(), original.segments());
    restore_from(&mut *rebuilt, &log.entries);
    prop_assert_eq!(window_state(&rebuilt), window_state(&original));
    Ok(())
}

fn session_roundtrip(engine: Engine, ops: &[SesOp]) -> Result<(), TestCaseError> {
    let mut f = Factory::new(engine);
    let mut original = f.session("ses");
    let mut log = Changelog::default();
    let mut frontier = i64::MIN;
    for (t, op) in ops.iter().enumerate() {
        match *op {
            SesOp::Put(k, s, e, v) => original
                .put(key(k), SessionWindow::new(s, e), v, t as i64)
                .unwrap(),
            SesOp::Remove(k, s, e) => original
                .remove(&key(k), SessionWindow::new(s, e), t as i64)
                .unwrap(),
            SesOp::Expire(d) => {
                frontier = frontier.max(0) + d;
                original.expire(frontier).unwrap();
            }
            SesOp::Barrier => log.commit(&mut *original),
        }
    }
    log.commit(&mut *original);
    let mut rebuilt = f.session("ses");
    restore_from(&mut *rebuilt, &log.entries);
    rebuilt.expire(frontier).unwrap();
    prop_assert_eq!(session_state(&rebuilt), session_state(&original));
    prop_assert_eq!(rebuilt.segments(), original.segments());
    restore_from(&mut *rebuilt, &log.entries);
    prop_assert_eq!(session_state(&rebuilt), session_state(&original));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn in_memory_kv_store_rebuilt_from_changelog_equals_original(ops in kv_ops()) {
        kv_roundtrip(Engine::InMemory, &ops)?;
    }

    #[test]
    fn in_memory_window_store_rebuilt_from_changelog_equals_original(ops in win_ops()) {
        window_roundtrip(Engine::InMemory, &ops)?;
    }

    #[test]
    fn in_memory_session_store_rebuilt_from_changelog_equals_original(ops in ses_ops()) {
        session_roundtrip(Engine::InMemory, &ops)?;
    }
}

// Opening an on-disk store costs tens of milliseconds here (directory and journal syncs),
// so the persistent engine runs fewer cases.
proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn persistent_kv_store_rebuilt_from_changelog_equals_original(ops in kv_ops()) {
        kv_roundtrip(Engine::Persistent, &ops)?;
    }

    #[test]
    fn persistent_window_store_rebuilt_from_changelog_equals_original(ops in win_ops()) {
        window_roundtrip(Engine::Persistent, &ops)?;
    }

    #[test]
    fn persistent_session_store_rebuilt_from_changelog_equals_original(ops in ses_ops()) {
        session_roundtrip(Engine::Persistent, &ops)?;
    }
}
