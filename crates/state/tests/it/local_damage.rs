//! Damage to a persistent store's local files, and keys the engine must still accept.
//!
//! A store closed cleanly leaves its files and a checkpoint; reopening it through the
//! normal open path with its committed changelog must give exactly the committed contents,
//! whatever happened to the local files: damage is detected and the store rebuilt from the
//! changelog, never read as if whole.

use std::fs;
use std::path::{Path, PathBuf};

use stoatflow_state::{
    ChangelogOffset, ChangelogPartition, I64Codec, KeyValueStore, LocalCopy, PersistentConfig,
    PersistentKeyValueStore, RebuildReason, Recovery, STORE_FORMAT, STORE_METADATA_FILE,
    StateError, StoreConfig, StoreDirectory, StringCodec,
};

use crate::engines::{Changelog, restore_from};

const STORE: &str = "counts";

/// A key-value store closed cleanly with its checkpoint, and its committed changelog.
struct Closed {
    _tmp: tempfile::TempDir,
    cfg: PersistentConfig,
    log: Changelog,
    expected: Vec<(String, i64)>,
    pristine: Snapshot,
}

impl Closed {
    /// Puts the store's files back as the clean close left them.
    fn reset(&self) {
        self.pristine.restore(&self.cfg.state_dir().join(STORE));
    }
}

/// Every file of a directory, kept in memory to put it back exactly. The engine's journal
/// is a 64 MiB file that is mostly a preallocated zero tail: only the bytes up to the last
/// non-zero one are kept, and the length is restored with `set_len`.
#[derive(Clone)]
pub struct Snapshot {
    dirs: Vec<PathBuf>,
    files: Vec<(PathBuf, Vec<u8>, u64)>,
}

impl Snapshot {
    pub fn take(root: &Path) -> Self {
        let mut snap = Snapshot {
            dirs: Vec::new(),
            files: Vec::new(),
        };
        fn walk(root: &Path, dir: &Path, snap: &mut Snapshot) {
            for e in fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                let rel = p.strip_prefix(root).unwrap().to_path_buf();
                if p.is_dir() {
                    snap.dirs.push(rel);
                    walk(root, &p, snap);
                } else {
                    let mut bytes = fs::read(&p).unwrap();
                    let len = bytes.len() as u64;
                    // Skip the zero tail a block at a time (a slice comparison, fast
                    // even unoptimised), then find its last non-zero byte.
                    const ZEROS: [u8; 4096] = [0; 4096];
                    let mut end = bytes.len();
                    while end > 0 {
                        let start = end.saturating_sub(ZEROS.len());
                        if bytes[start..end] != ZEROS[..end - start] {
                            break;
                        }
                        end = start;
                    }
                    let used = bytes[..end]
                        .iter()
                        .rposition(|&b| b != 0)
                        .map_or(0, |i| i + 1);
                    bytes.truncate(used);
                    snap.files.push((rel, bytes, len));
                }
            }
        }
        walk(root, root, &mut snap);
        snap.dirs.sort();
        snap.files.sort();
        snap
    }

    /// Replaces `root` with the snapshot.
    pub fn restore(&self, root: &Path) {
        let _ = fs::remove_dir_all(root);
        fs::create_dir_all(root).unwrap();
        for d in &self.dirs {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        for (rel, bytes, len) in &self.files {
            let f = fs::File::create(root.join(rel)).unwrap();
            std::io::Write::write_all(&mut &f, bytes).unwrap();
            f.set_len(*len).unwrap();
        }
    }

    /// The files, relative to the root, that differ between `self` and `after`
    /// (changed, added or removed).
    pub fn changed(&self, after: &Snapshot) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self
            .files
            .iter()
            .chain(&after.files)
            .map(|(p, _, _)| p.clone())
            .filter(|p| self.file(p) != after.file(p))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Whether the snapshot holds `rel`.
    pub fn has(&self, rel: &Path) -> bool {
        self.file(rel).is_some()
    }

    fn file(&self, rel: &Path) -> Option<&(PathBuf, Vec<u8>, u64)> {
        self.files.iter().find(|(p, _, _)| p == rel)
    }

    /// This snapshot with `rel` as it is in `other` (absent if absent there): one file's
    /// writes landed, or did not, when the power went part-way through an operation.
    pub fn with_file_from(&self, other: &Snapshot, rel: &Path) -> Snapshot {
        let mut dirs = self.dirs.clone();
        dirs.extend(other.dirs.iter().cloned());
        dirs.sort();
        dirs.dedup();
        let mut files: Vec<_> = self
            .files
            .iter()
            .filter(|(p, _, _)| p != rel)
            .cloned()
            .collect();
        files.extend(other.file(rel).cloned());
        files.sort();
        Snapshot { dirs, files }
    }

    /// The files, relative to the root, with their full lengths.
    pub fn files(&self) -> impl Iterator<Item = (&Path, u64)> {
        self.files.iter().map(|(p, _, len)| (p.as_path(), *len))
    }

    /// How many leading bytes of `file` are not the zero tail.
    pub fn used(&self, file: &Path) -> u64 {
        self.files
            .iter()
            .find(|(p, _, _)| p == file)
            .map_or(0, |(_, b, _)| b.len() as u64)
    }
}

fn open_kv(cfg: &PersistentConfig) -> Result<PersistentKeyValueStore<String, i64>, StateError> {
    PersistentKeyValueStore::open(cfg, StoreConfig::new(STORE), StringCodec, I64Codec)
}

fn closed_store() -> Closed {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = PersistentConfig::new(tmp.path(), "app");
    let mut log = Changelog::default();
    let mut s = open_kv(&cfg).unwrap();
    for epoch in 0..3i64 {
        for i in 0..100i64 {
            s.put(format!("key-{i:03}"), epoch * 1000 + i, epoch)
                .unwrap();
        }
        log.commit(&mut s);
    }
    let expected = s.all().unwrap();
    drop(s);
    log.checkpoint_clean_close(&cfg, STORE);
    let pristine = Snapshot::take(&cfg.state_dir().join(STORE));
    Closed {
        _tmp: tmp,
        cfg,
        log,
        expected,
        pristine,
    }
}

/// The normal open path: decide about the local copy, open, restore what is missing.
fn reopen_with(c: &Closed, mode: LocalCopy) -> Result<(Vec<(String, i64)>, Recovery), StateError> {
    let (_, recovery) = StoreDirectory::recover(&c.cfg, STORE, mode)?;
    let from = recovery.restore_from(ChangelogPartition(0)).0 as usize;
    let mut s = open_kv(&c.cfg)?;
    restore_from(&mut s, &c.log.entries[from..]);
    Ok((s.all()?, recovery))
}

fn data_files(c: &Closed) -> Vec<PathBuf> {
    fn walk(p: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(p).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&c.cfg.state_dir().join(STORE).join("data"), &mut out);
    out.sort();
    out
}

fn flip_bit(path: &Path, at: usize, bit: u8) {
    let mut bytes = fs::read(path).unwrap();
    bytes[at] ^= 1 << bit;
    fs::write(path, bytes).unwrap();
}

fn damaged(recovery: &Recovery) -> (&str, &str) {
    match recovery {
        Recovery::Rebuilt {
            reason: RebuildReason::Damaged { file, detail },
        } => (file, detail),
        other => panic!("expected a rebuild for damage, got {other:?}"),
    }
}

#[test]
fn reopening_after_a_clean_close_resumes_with_every_key() {
    let c = closed_store();
    let (state, recovery) = reopen_with(&c, LocalCopy::default()).unwrap();
    assert_eq!(state, c.expected);
    assert_eq!(
        recovery,
        Recovery::Resumed {
            offsets: vec![(ChangelogPartition(0), ChangelogOffset(300))]
        }
    );
    // The checkpoint was consumed: the next open (after a crash, say) rebuilds.
    let (state, recovery) = reopen_with(&c, LocalCopy::default()).unwrap();
    assert_eq!(state, c.expected);
    assert_eq!(
        recovery,
        Recovery::Rebuilt {
            reason: RebuildReason::UncleanShutdown
        }
    );
}

#[test]
fn a_flipped_bit_in_the_journal_after_a_clean_close_is_detected_and_rebuilt() {
    let c = closed_store();
    let journal = data_files(&c)
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "jnl"))
        .expect("a journal");
    // Past the first few records: an undetected flip drops every key after it.
    flip_bit(&journal, 2000, 3);
    let (state, recovery) = reopen_with(&c, LocalCopy::default()).unwrap();
    assert_eq!(state, c.expected);
    let (file, detail) = damaged(&recovery);
    assert_eq!(file, "data/0.jnl");
    assert!(detail.starts_with("content differs"), "{detail}");
}

#[test]
fn a_flipped_bit_in_a_keyspace_table_is_detected_before_the_engine_reads_it() {
    let c = closed_store();
    let table = data_files(&c)
        .into_iter()
        .find(|p| p.parent().is_some_and(|d| d.ends_with("tables")))
        .expect("a table file");
    let len = fs::metadata(&table).unwrap().len() as usize;
    // A flip in a length field made the engine allocate what it read (and abort); the
    // damage sweep covers every byte, this a sample across the file.
    for at in (0..len).step_by(97) {
        flip_bit(&table, at, 6);
        let (state, recovery) = reopen_with(&c, LocalCopy::default()).unwrap();
        assert_eq!(state, c.expected);
        assert!(damaged(&recovery).0.starts_with("data/keyspaces/"));
        c.reset();
    }
}

#[test]
fn a_deleted_current_file_is_detected_and_rebuilt() {
    let c = closed_store();
    for p in data_files(&c) {
        if p.file_name().is_some_and(|n| n == "current") {
            fs::remove_file(p).unwrap();
        }
    }
    let (state, recovery) = reopen_with(&c, LocalCopy::default()).unwrap();
    assert_eq!(state, c.expected);
    let (file, detail) = damaged(&recovery);
    assert!(file.ends_with("/current"), "{file}");
    assert_eq!(detail, "is missing");
}

#[test]
fn refuse_mode_names_the_damaged_file_and_leaves_it_and_rebuild_mode_recovers() {
    let c = closed_store();
    let journal = data_files(&c)
        .into_iter()
        .find(|p| p.ends_with("0.jnl"))
        .unwrap();
    flip_bit(&journal, 100, 0);
    let err = reopen_with(&c, LocalCopy::VerifyOrRefuse).unwrap_err();
    assert!(matches!(err, StateError::DamagedStore { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.starts_with("store counts: local copy in "), "{msg}");
    assert!(
        msg.contains("is damaged: data/0.jnl content differs"),
        "{msg}"
    );
    assert!(journal.exists());
    // Refused again, still damaged: nothing was consumed.
    assert!(reopen_with(&c, LocalCopy::VerifyOrRefuse).is_err());
    let (state, recovery) = reopen_with(&c, LocalCopy::Rebuild).unwrap();
    assert_eq!(state, c.expected);
    assert_eq!(
        recovery,
        Recovery::Rebuilt {
            reason: RebuildReason::Requested
        }
    );
}

#[test]
fn a_damaged_copy_opened_without_recover_is_an_error_not_a_misread() {
    let c = closed_store();
    let journal = data_files(&c)
        .into_iter()
        .find(|p| p.ends_with("0.jnl"))
        .unwrap();
    flip_bit(&journal, 2000, 3);
    let err = open_kv(&c.cfg).unwrap_err();
    assert!(matches!(err, StateError::DamagedStore { .. }), "{err}");
    assert!(
        err.to_string().contains("data/0.jnl content differs"),
        "{err}"
    );
}

#[test]
fn a_store_directory_in_an_older_format_is_rebuilt_unless_refusing() {
    let c = closed_store();
    let meta = c.cfg.state_dir().join(STORE).join(STORE_METADATA_FILE);
    fs::write(
        &meta,
        "stoatflow-store-format=1\napplication.id=app\nstore=counts\n",
    )
    .unwrap();
    let err = reopen_with(&c, LocalCopy::VerifyOrRefuse).unwrap_err();
    assert!(
        matches!(err, StateError::UnsupportedStoreFormat { found: 1, .. }),
        "{err}"
    );
    let (state, recovery) = reopen_with(&c, LocalCopy::default()).unwrap();
    assert_eq!(state, c.expected);
    assert_eq!(
        recovery,
        Recovery::Rebuilt {
            reason: RebuildReason::OlderFormat { found: 1 }
        }
    );
}

#[test]
fn a_store_directory_in_a_newer_format_is_refused_naming_the_store() {
    let c = closed_store();
    let meta = c.cfg.state_dir().join(STORE).join(STORE_METADATA_FILE);
    let text = fs::read_to_string(&meta).unwrap();
    let body = text
        .rsplit_once("crc32=")
        .unwrap()
        .0
        .replace(&format!("format={STORE_FORMAT}"), "format=9");
    fs::write(
        &meta,
        format!("{body}crc32={:08x}\n", crc32fast::hash(body.as_bytes())),
    )
    .unwrap();
    for mode in [LocalCopy::VerifyOrRebuild, LocalCopy::VerifyOrRefuse] {
        let err = reopen_with(&c, mode).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(
                err,
                StateError::UnsupportedStoreFormat {
                    found: 9,
                    supported: STORE_FORMAT,
                    ..
                }
            ),
            "{msg}"
        );
        assert!(msg.starts_with("store counts: directory "), "{msg}");
        assert!(msg.contains("written by a newer version"), "{msg}");
    }
}

#[test]
fn an_empty_key_works_on_the_persistent_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = PersistentConfig::new(tmp.path(), "app");
    let mut s = open_kv(&cfg).unwrap();
    s.put(String::new(), 7, 1).unwrap();
    s.put("a".into(), 8, 1).unwrap();
    assert_eq!(s.get(&String::new()).unwrap(), Some(7));
    assert_eq!(s.all().unwrap(), vec![(String::new(), 7), ("a".into(), 8)]);
    let mut log = Changelog::default();
    log.commit(&mut s);
    assert_eq!(log.entries[0].key, Vec::<u8>::new());
    // One such record in the changelog must not make every restore fail.
    let other = PersistentConfig::new(tmp.path().join("rebuilt"), "app");
    let mut r = open_kv(&other).unwrap();
    restore_from(&mut r, &log.entries);
    assert_eq!(r.all().unwrap(), vec![(String::new(), 7), ("a".into(), 8)]);
    assert_eq!(r.delete(&String::new(), 2).unwrap(), Some(7));
    assert_eq!(r.get(&String::new()).unwrap(), None);
}

#[test]
fn an_empty_key_works_in_window_and_session_stores_on_both_engines() {
    use stoatflow_state::SessionWindow;

    use crate::engines::{ENGINES, Factory, session_state, window_state};
    for engine in ENGINES {
        let mut f = Factory::new(engine);
        let mut w = f.window("w");
        w.put(String::new(), 10, 1, 1).unwrap();
        let mut s = f.session("s");
        s.put(String::new(), SessionWindow::new(0, 5), 2, 1)
            .unwrap();
        let (mut wl, mut sl) = (Changelog::default(), Changelog::default());
        wl.commit(&mut *w);
        sl.commit(&mut *s);
        let mut w2 = f.window("w");
        restore_from(&mut *w2, &wl.entries);
        assert_eq!(
            window_state(&w2),
            vec![(10, String::new(), 1)],
            "{engine:?}"
        );
        let mut s2 = f.session("s");
        restore_from(&mut *s2, &sl.entries);
        assert_eq!(
            session_state(&s2),
            vec![(0, 5, String::new(), 2)],
            "{engine:?}"
        );
    }
}
