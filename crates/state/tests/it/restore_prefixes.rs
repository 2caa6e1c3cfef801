//! Restore of every changelog prefix: for every prefix of a changelog (as a writer that
//! stopped there would leave it), a read-committed restore sees only the epochs that
//! committed within it; restoring it gives exactly the state at the last of those commits
//! (never an uncommitted one), and restoring again, or resuming from a shorter committed
//! prefix, gives the same. This is not a crash enumeration: nothing crashes inside a
//! barrier here (that comes with the runtime).

use std::fmt::Debug;

use proptest::prelude::*;
use stoatflow_state::{SessionWindow, StateStore};

use crate::engines::{
    Changelog, Engine, Factory, kv_state, restore_from, session_state, window_state,
};
use crate::roundtrip::{KvOp, SesOp, WinOp, key, kv_ops, ses_ops, win_ops};

/// State of the original store at each commit, with the committed frontier then.
struct Run<T> {
    log: Changelog,
    snapshots: Vec<(Vec<T>, i64)>,
}

/// Restores every prefix's committed records into fresh stores and compares. Prefixes that
/// see the same committed epochs get the same input; `every_prefix` false restores once per
/// distinct committed set (for the slower on-disk engine).
fn check_every_prefix<S, T: PartialEq + Debug + Clone>(
    run: &Run<T>,
    every_prefix: bool,
    mut make: impl FnMut() -> S,
    as_store: fn(&mut S) -> &mut dyn StateStore,
    state: impl Fn(&mut S, i64) -> Vec<T>,
) -> Result<(), TestCaseError> {
    let mut resumed = make();
    let mut resumed_epochs = 0;
    let mut checked_epochs = None;
    for prefix in 0..=run.log.entries.len() {
        let (committed, epochs) = run.log.committed_prefix(prefix);
        if !every_prefix && checked_epochs == Some(epochs) {
            continue;
        }
        checked_epochs = Some(epochs);
        let (expected, frontier) = if epochs == 0 {
            (Vec::new(), i64::MIN)
        } else {
            let (s, f) = &run.snapshots[epochs - 1];
            (s.clone(), *f)
        };
        let mut fresh = make();
        restore_from(as_store(&mut fresh), committed);
        prop_assert_eq!(&state(&mut fresh, frontier), &expected, "prefix {}", prefix);
        // Idempotent: the same records again change nothing.
        restore_from(as_store(&mut fresh), committed);
        prop_assert_eq!(&state(&mut fresh, frontier), &expected, "prefix {}", prefix);
        // Resuming: a store restored to an earlier commit, then restored from the start to
        // this one, equals a fresh restore.
        if epochs > resumed_epochs {
            restore_from(as_store(&mut resumed), committed);
            resumed_epochs = epochs;
        }
        prop_assert_eq!(
            &state(&mut resumed, frontier),
            &expected,
            "prefix {}",
            prefix
        );
    }
    Ok(())
}

fn kv_prefixes(engine: Engine, ops: &[KvOp]) -> Result<(), TestCaseError> {
    let mut f = Factory::new(engine);
    let mut s = f.kv("kv");
    let mut run = Run {
        log: Changelog::default(),
        snapshots: Vec::new(),
    };
    for (t, op) in ops.iter().enumerate() {
        match *op {
            KvOp::Put(k, v) => s.put(key(k), v, t as i64).unwrap(),
            KvOp::Delete(k) => {
                s.delete(&key(k), t as i64).unwrap();
            }
            KvOp::Barrier => {
                run.log.commit(&mut *s);
                run.snapshots.push((kv_state(&s), i64::MIN));
            }
        }
    }
    // The last epoch never commits: its writes never reach the changelog.
    let every = matches!(engine, Engine::InMemory);
    check_every_prefix(&run, every, || f.kv("kv"), |s| &mut **s, |s, _| kv_state(s))
}

fn window_prefixes(engine: Engine, ops: &[WinOp]) -> Result<(), TestCaseError> {
    let mut f = Factory::new(engine);
    let mut s = f.window("win");
    let mut run = Run {
        log: Changelog::default(),
        snapshots: Vec::new(),
    };
    let mut frontier = i64::MIN;
    for (t, op) in ops.iter().enumerate() {
        match *op {
            WinOp::Put(k, st, v) => s.put(key(k), st, v, t as i64).unwrap(),
            WinOp::Update(k, st, v) => s
                .update(&key(k), st, t as i64, &mut |old| {
                    old.unwrap_or(0).wrapping_add(v)
                })
                .unwrap(),
            WinOp::Delete(k, st) => s.delete(&key(k), st, t as i64).unwrap(),
            WinOp::Expire(d) => {
                frontier = frontier.max(0) + d;
                s.expire(frontier).unwrap();
            }
            WinOp::Barrier => {
                run.log.commit(&mut *s);
                run.snapshots.push((window_state(&s), frontier));
            }
        }
    }
    let every = matches!(engine, Engine::InMemory);
    check_every_prefix(
        &run,
        every,
        || f.window("win"),
        |s| &mut **s,
        |s, frontier| {
            s.expire(frontier).unwrap();
            window_state(s)
        },
    )
}

fn session_prefixes(engine: Engine, ops: &[SesOp]) -> Result<(), TestCaseError> {
    let mut f = Factory::new(engine);
    let mut s = f.session("ses");
    let mut run = Run {
        log: Changelog::default(),
        snapshots: Vec::new(),
    };
    let mut frontier = i64::MIN;
    for (t, op) in ops.iter().enumerate() {
        match *op {
            SesOp::Put(k, st, e, v) => s
                .put(key(k), SessionWindow::new(st, e), v, t as i64)
                .unwrap(),
            SesOp::Remove(k, st, e) => s
                .remove(&key(k), SessionWindow::new(st, e), t as i64)
                .unwrap(),
            SesOp::Expire(d) => {
                frontier = frontier.max(0) + d;
                s.expire(frontier).unwrap();
            }
            SesOp::Barrier => {
                run.log.commit(&mut *s);
                run.snapshots.push((session_state(&s), frontier));
            }
        }
    }
    let every = matches!(engine, Engine::InMemory);
    check_every_prefix(
        &run,
        every,
        || f.session("ses"),
        |s| &mut **s,
        |s, frontier| {
            s.expire(frontier).unwrap();
            session_state(s)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn in_memory_kv_restore_of_every_committed_prefix_yields_a_committed_state(ops in kv_ops()) {
        kv_prefixes(Engine::InMemory, &ops)?;
    }

    #[test]
    fn in_memory_window_restore_of_every_committed_prefix_yields_a_committed_state(ops in win_ops()) {
        window_prefixes(Engine::InMemory, &ops)?;
    }

    #[test]
    fn in_memory_session_restore_of_every_committed_prefix_yields_a_committed_state(ops in ses_ops()) {
        session_prefixes(Engine::InMemory, &ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4))]

    #[test]
    fn persistent_kv_restore_of_every_committed_prefix_yields_a_committed_state(ops in kv_ops()) {
        kv_prefixes(Engine::Persistent, &ops)?;
    }

    #[test]
    fn persistent_window_restore_of_every_committed_prefix_yields_a_committed_state(ops in win_ops()) {
        window_prefixes(Engine::Persistent, &ops)?;
    }

    #[test]
    fn persistent_session_restore_of_every_committed_prefix_yields_a_committed_state(ops in ses_ops()) {
        session_prefixes(Engine::Persistent, &ops)?;
    }
}
