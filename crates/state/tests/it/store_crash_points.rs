//! Crash points over the persistent store engine's own durable operations, for the store layer
//! (docs/state.md#exactly-once): each store kind (key-value, window, session) runs a life of
//! opens, epochs of writes, changelog commits, clean closes with their checkpoint and reopens.
//! The store directory is captured before and after every operation; the power going before or
//! after an operation leaves one of those, and going part-way leaves a mix: for every file the
//! operation changed, the state before with only that file's change landed, and the state
//! after with only that file's change lost. Every such directory is reopened through the
//! normal open path ([`StoreDirectory::recover`], open, restore from the recovered offset of
//! the changelog committed by then) and must hold exactly the committed contents: a write that
//! never committed never survives, and nothing committed is lost. A checkpoint whose removal
//! at a resumed open never reached the disk is tried beside every later state too. (The
//! metadata file is the one ordering kept: it is synced before the engine writes, so it never
//! lags them.)
//!
//! About 200 points over the three kinds under `STOATFLOW_HEAVY_TESTS`; the short form
//! takes every point of the key-value store and every fourth of the others.
//!
//! The store code is not instrumented: the operations are the store's API calls, and what a
//! call changed on disk is read from the directory.

use std::path::Path;

use stoatflow_state::{
    ChangelogPartition, LocalCopy, PersistentConfig, Recovery, STORE_CHECKPOINT_FILE,
    STORE_METADATA_FILE, StoreDirectory,
};

use crate::damage_sweep::{Contents, Kind, STORES, SweptStore, open};
use crate::engines::{Changelog, restore_from};
use crate::local_damage::Snapshot;

/// One durable operation of a store's life.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// Open through the normal path (recover, open, restore what is missing).
    Open,
    /// An epoch's writes reach the engine.
    Write(i64),
    /// The epoch's changelog records commit (the truth moves).
    Commit,
    /// The store is dropped: the engine closes.
    Close,
    /// The clean close's checkpoint and manifest are written.
    Checkpoint,
}

/// A life with two clean closes, reopens resumed from their checkpoints, and an unclean end
/// (writes that never commit reach the files, and no checkpoint is written).
const LIFE: [Op; 15] = [
    Op::Open,
    Op::Write(0),
    Op::Commit,
    Op::Write(1),
    Op::Commit,
    Op::Close,
    Op::Checkpoint,
    Op::Open,
    Op::Write(2),
    Op::Commit,
    Op::Close,
    Op::Checkpoint,
    Op::Open,
    Op::Write(3),
    Op::Close,
];

/// The normal open path against the changelog committed so far.
fn reopen(
    cfg: &PersistentConfig,
    name: &str,
    kind: Kind,
    log: &Changelog,
) -> (Box<dyn SweptStore>, bool) {
    let (_, recovery) = StoreDirectory::recover(cfg, name, LocalCopy::default())
        .unwrap_or_else(|e| panic!("{name}: recover: {e}"));
    let from = recovery.restore_from(ChangelogPartition(0)).0 as usize;
    let mut s = open(cfg, name, kind).unwrap_or_else(|e| panic!("{name}: open: {e}"));
    restore_from(s.store(), &log.entries[from.min(log.entries.len())..]);
    (s, matches!(recovery, Recovery::Resumed { .. }))
}

/// What a crash point leaves: the directory, and the changelog committed by then.
struct Point {
    what: String,
    files: Snapshot,
    committed: usize,
}

/// Runs `LIFE` on one store, capturing every crash point.
fn life(name: &'static str, kind: Kind) -> (Changelog, Vec<(usize, Contents)>, Vec<Point>) {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = PersistentConfig::new(tmp.path(), "app");
    let dir = cfg.state_dir().join(name);
    let mut log = Changelog::default();
    // The committed contents after each commit, by changelog length.
    let mut truth: Vec<(usize, Contents)> = vec![(0, Vec::new())];
    let mut store: Option<Box<dyn SweptStore>> = None;
    let mut points = Vec::new();
    let capture = |dir: &Path| {
        if dir.exists() {
            Snapshot::take(dir)
        } else {
            Snapshot::take(tempfile::tempdir().unwrap().path())
        }
    };
    let mut before = capture(&dir);
    // The last directory a checkpoint vouched for.
    let mut vouched: Option<Snapshot> = None;
    for (k, op) in LIFE.iter().enumerate() {
        let committed_before = log.entries.len();
        match *op {
            Op::Open => store = Some(reopen(&cfg, name, kind, &log).0),
            Op::Write(epoch) => {
                let s = store.as_mut().expect("open");
                for i in 0..25 + 10 * epoch {
                    s.write(i + 7 * epoch, epoch);
                }
            }
            Op::Commit => {
                let s = store.as_mut().expect("open");
                log.commit(s.store());
                truth.push((log.entries.len(), s.contents().unwrap()));
            }
            Op::Close => store = None,
            Op::Checkpoint => log.checkpoint_clean_close(&cfg, name),
        }
        let after = capture(&dir);
        let committed_after = log.entries.len();
        let changed = before.changed(&after);
        // The metadata file is written atomically and synced before the engine creates a
        // file: when it changed, it landed before anything else the operation wrote.
        let meta = Path::new(STORE_METADATA_FILE);
        let meta_first = changed.iter().any(|f| f == meta);
        for file in changed.iter().filter(|f| *f != meta) {
            let mut only = before.with_file_from(&after, file);
            if meta_first {
                only = only.with_file_from(&after, meta);
            }
            points.push(Point {
                what: format!("op {k} {op:?}: only {} landed", file.display()),
                files: only,
                committed: committed_before,
            });
            points.push(Point {
                what: format!("op {k} {op:?}: all but {} landed", file.display()),
                files: after.with_file_from(&before, file),
                committed: committed_after,
            });
        }
        if meta_first {
            points.push(Point {
                what: format!("op {k} {op:?}: only the metadata landed"),
                files: before.with_file_from(&after, meta),
                committed: committed_before,
            });
        }
        if k == 0 || committed_after != committed_before {
            points.push(Point {
                what: format!("before op {k} {op:?}"),
                files: before,
                committed: committed_before,
            });
        }
        // After op k is before op k+1: one point per boundary.
        points.push(Point {
            what: format!("after op {k} {op:?}"),
            files: after.clone(),
            committed: committed_after,
        });
        // The open that resumed removed the checkpoint; if that removal never reached the
        // disk, the old checkpoint sits beside every later file (its manifest must tell).
        let checkpoint = Path::new(STORE_CHECKPOINT_FILE);
        if after.has(checkpoint) {
            vouched = Some(after.clone());
        } else if let Some(old) = &vouched {
            points.push(Point {
                what: format!("after op {k} {op:?}, the checkpoint's removal lost"),
                files: after.with_file_from(old, checkpoint),
                committed: committed_after,
            });
        }
        before = after;
    }
    (log, truth, points)
}

#[test]
fn a_crash_before_after_or_part_way_through_every_store_operation_restores_the_committed_contents()
{
    let heavy = std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some();
    let mut report = Vec::new();
    for (name, kind) in STORES {
        let (log, truth, points) = life(name, kind);
        // Short form: every point of the key-value store, every fourth of the others
        // (a reopen costs about a quarter of a second unoptimised).
        let step = if heavy || kind == Kind::Kv { 1 } else { 4 };
        let points: Vec<_> = points.into_iter().step_by(step).collect();
        let mut resumed = 0;
        for point in &points {
            let tmp = tempfile::tempdir().unwrap();
            let cfg = PersistentConfig::new(tmp.path(), "app");
            point.files.restore(&cfg.state_dir().join(name));
            let mut committed = Changelog::default();
            committed
                .entries
                .extend_from_slice(&log.entries[..point.committed]);
            let (s, from_checkpoint) = reopen(&cfg, name, kind, &committed);
            resumed += usize::from(from_checkpoint);
            let expected = &truth
                .iter()
                .rev()
                .find(|(len, _)| *len <= point.committed)
                .expect("the empty prefix")
                .1;
            assert_eq!(&s.contents().unwrap(), expected, "{name}: {}", point.what);
        }
        // Both paths were taken: some points resume from a checkpoint.
        assert!(
            resumed > 0,
            "{name}: no crash point resumed from a checkpoint"
        );
        assert!(resumed < points.len(), "{name}: every point resumed");
        report.push(format!("{name} {} ({resumed} resumed)", points.len()));
    }
    eprintln!("store crash points: {}", report.join(", "));
}
