//! Crash at every point: for every prefix of a changelog, a read-committed restore sees only
//! the epochs that committed within it; restoring it gives exactly the state at the last of
//! those commits (never an uncommitted one), and restoring again, or resuming from a shorter
//! committed prefix, gives the same.

use std::fmt::Debug;

use proptest::prelude::*;
use stoatflow_state::{SessionWindow, StateStore};

use crate::engines::{
    Changelog, ENGINES, Factory, kv_state, restore_from, session_state, window_state,
};
use crate::roundtrip::{KvOp, SesOp, WinOp, key, kv_ops, ses_ops, win_ops};

/// State of the original store at each commit, with the committed frontier then.
struct Run<T> {
    log: Changelog,
    snapshots: Vec<(Vec<T>, i64)>,
}

fn check_every_prefix<S, T: PartialEq + Debug + Clone>(
    run: &Run<T>,
    mut make: impl FnMut() -> S,
    as_store: fn(&mut S) -> &mut dyn StateStore,
    state: impl Fn(&mut S, i64) -> Vec<T>,
) -> Result<(), TestCaseError> {
    let mut resumed = make();
    let mut resumed_epochs = 0;
    for prefix in 0..=run.log.entries.len() {
        let (committed, epochs) = run.log.committed_prefix(prefix);
        let (expected, frontier) = if epochs == 0 {
            (Vec::new(), i64::MIN)
        } else {
            let (s, f) = &run.snapshots[epochs - 1];
            (s.clone(), *f)
        };
        let mut fresh = make();
        restore_from(as_store(&mut fresh), committed);
        let got = state(&mut fresh, frontier);
        prop_assert_eq!(&got, &expected, "prefix {}", prefix);
        // Idempotent: the same records again change nothing.
        restore_from(as_store(&mut fresh), committed);
        prop_assert_eq!(&state(&mut fresh, frontier), &expected);
        // Resuming: a store restored to an earlier commit, then restored from the start to
        // this one, equals a fresh restore.
        if epochs > resumed_epochs {
            restore_from(as_store(&mut resumed), committed);
            resumed_epochs = epochs;
        }
        prop_assert_eq!(&state(&mut resumed, frontier), &expected);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn kv_restore_at_every_crash_point_yields_a_committed_state(ops in kv_ops()) {
        for engine in ENGINES {
            let mut f = Factory::new(engine);
            let mut s = f.kv("kv");
            let mut run = Run { log: Changelog::default(), snapshots: Vec::new() };
            for (t, op) in ops.iter().enumerate() {
                match *op {
                    KvOp::Put(k, v) => s.put(key(k), v, t as i64).unwrap(),
                    KvOp::Delete(k) => { s.delete(&key(k), t as i64).unwrap(); }
                    KvOp::Barrier => {
                        run.log.commit(&mut *s);
                        run.snapshots.push((kv_state(&s), i64::MIN));
                    }
                }
            }
            // The last epoch never commits: the crash.
            check_every_prefix(&run, || f.kv("kv"), |s| &mut **s, |s, _| kv_state(s))?;
        }
    }

    #[test]
    fn window_restore_at_every_crash_point_yields_a_committed_state(ops in win_ops()) {
        for engine in ENGINES {
            let mut f = Factory::new(engine);
            let mut s = f.window("win");
            let mut run = Run { log: Changelog::default(), snapshots: Vec::new() };
            let mut frontier = i64::MIN;
            for (t, op) in ops.iter().enumerate() {
                match *op {
                    WinOp::Put(k, st, v) => s.put(key(k), st, v, t as i64).unwrap(),
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
            check_every_prefix(&run, || f.window("win"), |s| &mut **s, |s, frontier| {
                s.expire(frontier).unwrap();
                window_state(s)
            })?;
        }
    }

    #[test]
    fn session_restore_at_every_crash_point_yields_a_committed_state(ops in ses_ops()) {
        for engine in ENGINES {
            let mut f = Factory::new(engine);
            let mut s = f.session("ses");
            let mut run = Run { log: Changelog::default(), snapshots: Vec::new() };
            let mut frontier = i64::MIN;
            for (t, op) in ops.iter().enumerate() {
                match *op {
                    SesOp::Put(k, st, e, v) => {
                        s.put(key(k), SessionWindow::new(st, e), v, t as i64).unwrap()
                    }
                    SesOp::Remove(k, st, e) => {
                        s.remove(&key(k), SessionWindow::new(st, e), t as i64).unwrap()
                    }
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
            check_every_prefix(&run, || f.session("ses"), |s| &mut **s, |s, frontier| {
                s.expire(frontier).unwrap();
                session_state(s)
            })?;
        }
    }
}
