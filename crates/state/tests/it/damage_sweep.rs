//! Damage sweep of the persistent store layer: every file deleted, cut at and bit-flipped at
//! every byte — a stride of 211 bytes in the short form, 23 with `STOATFLOW_HEAVY_TESTS`
//! (what CI runs), every byte with `STOATFLOW_SWEEP_EVERY_BYTE=1` (about 68 000 copies, over
//! half an hour on 2 cores: a long form run by hand) — each damaged copy reopened through
//! the normal open path with its committed changelog.
//!
//! Three small stores (key-value, window, session; a few hundred keys) are closed cleanly
//! with their checkpoints. Each damaged copy is classified:
//! (a) refused with a clear error naming the store, (b) detected and rebuilt from the
//! changelog, ending equal to the original, (c) opened as if whole and equal, (d) silent
//! loss or wrong value, (e) panic. (d) and (e) must be zero. An abort cannot be caught: the
//! checks before the engine opens must prevent it, or this binary dies.
//!
//! The engine's journal is a 64 MiB file whose tail past its data is preallocated zeros:
//! the sweep covers every byte of the data and samples the zero tail (every 256 KiB in the
//! heavy form, a few offsets in the short form); the manifest checksums every byte alike.

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use stoatflow_state::{
    ChangelogPartition, I64Codec, KeyValueStore, LocalCopy, PersistentConfig,
    PersistentKeyValueStore, PersistentSessionStore, PersistentWindowStore, RebuildReason,
    Recovery, STORE_CHECKPOINT_FILE, SessionStore, SessionWindow, StateStore, StoreConfig,
    StoreDirectory, StringCodec, WindowStore,
};

use crate::engines::{Changelog, restore_from, segmented};
use crate::local_damage::Snapshot;
use crate::scratch_root;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Kv,
    Window,
    Session,
}

pub(crate) const STORES: [(&str, Kind); 3] = [
    ("sweep-kv", Kind::Kv),
    ("sweep-win", Kind::Window),
    ("sweep-ses", Kind::Session),
];

/// A store's whole contents, comparable across kinds.
pub(crate) type Contents = Vec<(String, i64, i64, i64)>;

pub(crate) fn open(
    cfg: &PersistentConfig,
    name: &str,
    kind: Kind,
) -> Result<Box<dyn SweptStore>, stoatflow_state::StateError> {
    let config = StoreConfig::new(name);
    Ok(match kind {
        Kind::Kv => Box::new(PersistentKeyValueStore::open(
            cfg,
            config,
            StringCodec,
            I64Codec,
        )?),
        Kind::Window => Box::new(PersistentWindowStore::open(
            cfg,
            config,
            segmented(),
            StringCodec,
            I64Codec,
        )?),
        Kind::Session => Box::new(PersistentSessionStore::open(
            cfg,
            config,
            segmented(),
            StringCodec,
            I64Codec,
        )?),
    })
}

/// The three store types behind one object-safe face for the sweep.
pub(crate) trait SweptStore {
    fn store(&mut self) -> &mut dyn StateStore;
    fn contents(&self) -> Result<Contents, stoatflow_state::StateError>;
    fn write(&mut self, i: i64, epoch: i64);
}

impl SweptStore for PersistentKeyValueStore<String, i64> {
    fn store(&mut self) -> &mut dyn StateStore {
        self
    }
    fn contents(&self) -> Result<Contents, stoatflow_state::StateError> {
        Ok(self.all()?.into_iter().map(|(k, v)| (k, 0, 0, v)).collect())
    }
    fn write(&mut self, i: i64, epoch: i64) {
        // The empty key too: it used to make every restore panic.
        let key = if i == 0 {
            String::new()
        } else {
            format!("k{i}")
        };
        if epoch == 1 && i % 10 == 3 {
            self.delete(&key, epoch).unwrap();
        } else {
            self.put(key, i * 100 + epoch, epoch).unwrap();
        }
    }
}

impl SweptStore for PersistentWindowStore<String, i64> {
    fn store(&mut self) -> &mut dyn StateStore {
        self
    }
    fn contents(&self) -> Result<Contents, stoatflow_state::StateError> {
        Ok(self
            .fetch_all(i64::MIN, i64::MAX)?
            .into_iter()
            .map(|(start, k, v)| (k, start, 0, v))
            .collect())
    }
    fn write(&mut self, i: i64, epoch: i64) {
        let key = format!("k{}", i % 40);
        self.put(key, (i % 7) * 5, i * 100 + epoch, epoch).unwrap();
    }
}

impl SweptStore for PersistentSessionStore<String, i64> {
    fn store(&mut self) -> &mut dyn StateStore {
        self
    }
    fn contents(&self) -> Result<Contents, stoatflow_state::StateError> {
        Ok(self
            .fetch_all_by_end(i64::MIN, i64::MAX)?
            .into_iter()
            .map(|(w, k, v)| (k, w.start, w.end, v))
            .collect())
    }
    fn write(&mut self, i: i64, epoch: i64) {
        let key = format!("k{}", i % 50);
        let start = (i % 6) * 3;
        self.put(
            key,
            SessionWindow::new(start, start + 2),
            i * 100 + epoch,
            epoch,
        )
        .unwrap();
    }
}

/// One store closed cleanly: its changelog, contents and files.
struct Closed {
    name: &'static str,
    kind: Kind,
    log: Changelog,
    expected: Contents,
    pristine: Snapshot,
}

fn close_stores(cfg: &PersistentConfig) -> Vec<Closed> {
    STORES
        .iter()
        .map(|&(name, kind)| {
            let mut log = Changelog::default();
            let mut s = open(cfg, name, kind).unwrap();
            for epoch in 0..2 {
                for i in 0..if epoch == 0 { 70 } else { 20 } {
                    s.write(i, epoch);
                }
                log.commit(s.store());
            }
            let expected = s.contents().unwrap();
            assert!(expected.len() >= 30, "{name}: {}", expected.len());
            drop(s);
            log.checkpoint_clean_close(cfg, name);
            let pristine = Snapshot::take(&cfg.state_dir().join(name));
            Closed {
                name,
                kind,
                log,
                expected,
                pristine,
            }
        })
        .collect()
}

#[derive(Debug)]
enum Outcome {
    /// Rebuilt, with the file the damage report named.
    Rebuilt(Contents, Option<String>),
    Resumed(Contents),
}

/// The normal open path: recover, open, restore what the checkpoint does not cover.
fn reopen(cfg: &PersistentConfig, c: &Closed) -> Result<Outcome, stoatflow_state::StateError> {
    let (_, recovery) = StoreDirectory::recover(cfg, c.name, LocalCopy::default())?;
    let from = recovery.restore_from(ChangelogPartition(0)).0 as usize;
    let mut s = open(cfg, c.name, c.kind)?;
    restore_from(s.store(), &c.log.entries[from.min(c.log.entries.len())..]);
    let contents = s.contents()?;
    Ok(match recovery {
        Recovery::Resumed { .. } => Outcome::Resumed(contents),
        Recovery::Rebuilt {
            reason: RebuildReason::Damaged { file, .. },
        } => Outcome::Rebuilt(contents, Some(file)),
        Recovery::Rebuilt { .. } => Outcome::Rebuilt(contents, None),
        other => panic!("unknown recovery {other:?}"),
    })
}

#[derive(Debug, Default)]
struct Counts {
    refused: usize,
    rebuilt: usize,
    intact: usize,
    silent_loss: Vec<String>,
    panicked: Vec<String>,
}

#[derive(Debug, Clone, Copy)]
enum Damage {
    Delete,
    Cut(u64),
    Flip(u64),
}

fn apply(path: &Path, damage: Damage) {
    match damage {
        Damage::Delete => fs::remove_file(path).unwrap(),
        Damage::Cut(at) => fs::OpenOptions::new()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(at)
            .unwrap(),
        Damage::Flip(at) => {
            use std::io::{Read, Seek, SeekFrom, Write};
            let mut f = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .unwrap();
            let mut b = [0u8];
            f.seek(SeekFrom::Start(at)).unwrap();
            f.read_exact(&mut b).unwrap();
            b[0] ^= 1 << (at % 8);
            f.seek(SeekFrom::Start(at)).unwrap();
            f.write_all(&b).unwrap();
        }
    }
}

/// A zero tail longer than this is the journal's preallocation, sampled rather than swept.
const ZERO_TAIL: u64 = 64 * 1024;

/// Short-form stride (a prime, so offsets drift across record boundaries).
const STRIDE: usize = 211;
/// The stride under `STOATFLOW_HEAVY_TESTS`, bounded for CI's time.
const HEAVY_STRIDE: usize = 23;

fn every_byte() -> bool {
    std::env::var_os("STOATFLOW_SWEEP_EVERY_BYTE").is_some_and(|v| v == "1")
}

/// Offsets to damage in a file of `len` bytes whose first `used` are not a zero tail.
fn offsets(used: u64, len: u64, heavy: bool) -> Vec<u64> {
    let stride = match (heavy, every_byte()) {
        (_, true) => 1,
        (true, false) => HEAVY_STRIDE,
        (false, false) => STRIDE,
    };
    let swept = if len - used > ZERO_TAIL { used } else { len };
    let mut out: Vec<u64> = (0..swept).step_by(stride).collect();
    if swept > 0 {
        out.push(swept - 1);
    }
    if len > swept {
        let tail_step = if heavy {
            256 * 1024
        } else {
            (len - swept).div_ceil(4)
        };
        out.extend((swept..len).step_by(tail_step as usize));
        out.push(len - 1);
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Damages every file of one store in every way, reopening after each; returns the number
/// of damaged copies and how they ended.
fn sweep_store(cfg: &PersistentConfig, c: &Closed, heavy: bool) -> (usize, Counts) {
    let mut counts = Counts::default();
    let mut trials = 0usize;
    let root = cfg.state_dir().join(c.name);
    let files: Vec<(PathBuf, u64)> = c
        .pristine
        .files()
        .map(|(p, len)| (p.to_path_buf(), len))
        .collect();
    assert!(files.len() >= 5, "{}: {files:?}", c.name);
    for (file, len) in files {
        let used = c.pristine.used(&file);
        let mut damages = vec![Damage::Delete];
        for at in offsets(used, len, heavy) {
            damages.push(Damage::Cut(at));
            damages.push(Damage::Flip(at));
        }
        for damage in damages {
            trials += 1;
            c.pristine.restore(&root);
            apply(&root.join(&file), damage);
            let what = format!("{} {} {damage:?}", c.name, file.display());
            match catch_unwind(AssertUnwindSafe(|| reopen(cfg, c))) {
                Err(_) => counts.panicked.push(what),
                Ok(Err(e)) => {
                    let msg = e.to_string();
                    assert!(
                        msg.starts_with(&format!("store {}: ", c.name)),
                        "{what}: an error that does not name the store: {msg}"
                    );
                    counts.refused += 1;
                }
                Ok(Ok(Outcome::Rebuilt(got, named))) if got == c.expected => {
                    // Detected: the report names the damaged file (a deleted checkpoint is
                    // an unclean shutdown, no damage report).
                    let is_checkpoint = file.as_os_str() == STORE_CHECKPOINT_FILE;
                    let expected = (!(is_checkpoint && matches!(damage, Damage::Delete)))
                        .then(|| file.to_string_lossy().into_owned());
                    assert_eq!(named, expected, "{what}: damage report names another file");
                    counts.rebuilt += 1;
                }
                Ok(Ok(Outcome::Resumed(got))) if got == c.expected => counts.intact += 1,
                Ok(Ok(other)) => counts.silent_loss.push(format!("{what}: {other:?}")),
            }
        }
    }
    (trials, counts)
}

#[test]
fn every_damaged_store_file_is_refused_or_rebuilt_never_silently_wrong() {
    let heavy = std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some();
    let tmp = scratch_root();
    let cfg = PersistentConfig::new(tmp.path(), "sweep-app");
    let closed = close_stores(&cfg);
    let started = std::time::Instant::now();
    // One thread per store: they share nothing but the state directory's parent.
    let per_store: Vec<(usize, Counts)> = std::thread::scope(|scope| {
        let handles: Vec<_> = closed
            .iter()
            .map(|c| scope.spawn(|| sweep_store(&cfg, c, heavy)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut counts = Counts::default();
    let mut trials = 0;
    for (n, c) in per_store {
        trials += n;
        counts.refused += c.refused;
        counts.rebuilt += c.rebuilt;
        counts.intact += c.intact;
        counts.silent_loss.extend(c.silent_loss);
        counts.panicked.extend(c.panicked);
    }
    println!(
        "store damage sweep ({}): {trials} damaged copies in {:.1} s: (a) refused {}, (b) rebuilt {}, (c) intact {}, (d) silent loss {}, (e) panic {}",
        match (heavy, every_byte()) {
            (_, true) => "every byte",
            (true, false) => "stride 23",
            (false, false) => "stride 211",
        },
        started.elapsed().as_secs_f64(),
        counts.refused,
        counts.rebuilt,
        counts.intact,
        counts.silent_loss.len(),
        counts.panicked.len(),
    );
    assert!(
        counts.silent_loss.is_empty(),
        "silent loss: {:#?}",
        counts.silent_loss
    );
    assert!(counts.panicked.is_empty(), "panics: {:#?}", counts.panicked);
    assert!(counts.rebuilt > 0 && counts.refused > 0, "{counts:?}");
}
