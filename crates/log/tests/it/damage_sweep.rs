//! The damage sweep: a small on-disk log (five partitions over several
//! tiny segments, several commits, compaction and retention between them, a
//! rotated transaction log) damaged in
//! every way a byte-level sweep can: every file cut at every byte, a bit
//! flipped in every byte (every bit of every byte under
//! `STOATFLOW_HEAVY_TESTS`), every file deleted. Each damaged copy is opened
//! and read, and the outcome classified:
//!
//! - **refused**: the open (or a read) fails with an error;
//! - **intact**: everything committed reads back exactly;
//! - **last commit lost**: the state before the last commit reads back,
//!   and the damage lies in the last commit's own bytes (or is the deletion
//!   of a file only the last commit wrote). Counted apart, by file kind:
//!   damage to the transaction log's last frame that reads exactly like the
//!   torn append of a crash before the commit point (a cut inside it, or a
//!   length made longer), and segment damage that removes exactly the last
//!   commit's records, which recovery rolls back (ARCHITECTURE.md, "the
//!   embedded log on disk", says why both are allowed and what they cost);
//! - **silent loss**: anything else that opens: committed data missing or
//!   different, or a reader that stalls without an error.
//!
//! Silent losses and panics must be zero.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use stoatflow_log::{EmbeddedLog, LogError};

use crate::files::{Files, materialize};
use crate::observe::Unreadable;
use crate::small_log::{self, Built, build};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Damage {
    Cut(usize),
    Flip(usize, u8),
    Delete,
}

#[derive(Debug, Default)]
struct Counts {
    cuts: usize,
    flips: usize,
    deletions: usize,
    refused: usize,
    intact: usize,
    last_frame_torn: usize,
    last_commit_rolled_back: usize,
    silent: Vec<String>,
    unclear: Vec<String>,
    panics: Vec<String>,
}

/// A refusal is clear when it is `Corrupt` and names a file of the log.
fn refusal(e: &LogError, dir: &Path) -> Outcome {
    match e {
        LogError::Corrupt { file, .. } if file.starts_with(dir) => Outcome::Refused,
        other => Outcome::Unclear(other.to_string()),
    }
}

enum Outcome {
    Refused,
    /// An error that is not `Corrupt` naming a file of the log.
    Unclear(String),
    Intact,
    LastCommitLost,
    Silent(String),
}

fn heavy() -> bool {
    std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some()
}

/// A log whose transaction log is a rotated generation with commits after
/// its checkpoint, whose last commit did not rotate it, where retention
/// dropped segments and compaction removed records.
fn sweep_log() -> Built {
    for commits in 6..20 {
        let b = build(true, commits);
        let txlog = crate::files::txlog(&b.files);
        let rotated = !txlog.to_string_lossy().contains("txn-00000000000000000000");
        let appended = b.before_last.get(&txlog).is_some_and(|old| {
            old.len() < b.files[&txlog].len() && b.files[&txlog].starts_with(old)
        });
        let retained = crate::files::segments(&b.files, "r", 0)
            .first()
            .is_some_and(|s| !s.ends_with("00000000000000000000.seg"));
        let compacted = {
            let c: Vec<u64> = b.observed[commits as usize - 1]
                .records
                .iter()
                .filter(|r| r.0 == "c")
                .map(|r| r.2)
                .collect();
            c.windows(2).any(|w| w[1] > w[0] + 1)
        };
        let segmented = crate::files::segments(&b.files, "a", 0).len() >= 3;
        if rotated && appended && retained && compacted && segmented {
            return b;
        }
    }
    panic!("no commit count gives the log the sweep needs");
}

fn open_and_read(files: &Files, b: &Built) -> Outcome {
    let dir = materialize(files);
    let observed = match EmbeddedLog::open_with(dir.path(), b.config.clone()) {
        Err(e) => return refusal(&e, dir.path()),
        Ok(log) => small_log::read(&log),
    };
    let observed = match observed {
        Err(Unreadable::Error(e)) => return refusal(&e, dir.path()),
        Err(Unreadable::Stalled(at)) => return Outcome::Silent(format!("reader stalled: {at}")),
        Ok(o) => o,
    };
    // What was recovered stays recovered: a second open reads the same.
    let again = EmbeddedLog::open_with(dir.path(), b.config.clone())
        .map_err(Unreadable::Error)
        .and_then(|log| small_log::read(&log));
    match again {
        Ok(o) if o == observed => {}
        other => return Outcome::Silent(format!("a second open differs: {other:?}")),
    }
    let n = b.observed.len() - 1;
    if observed == b.observed[n] {
        Outcome::Intact
    } else if observed == b.observed[n - 1] {
        Outcome::LastCommitLost
    } else {
        Outcome::Silent(format!(
            "read {} records, committed {}",
            observed.records.len(),
            b.observed[n].records.len()
        ))
    }
}

/// Whether `damage` to `file` touches only what the last commit wrote.
fn in_last_commit(b: &Built, file: &Path, damage: Damage) -> bool {
    let before = b.before_last.get(file).map_or(0, Vec::len);
    match damage {
        Damage::Cut(at) | Damage::Flip(at, _) => at >= before,
        Damage::Delete => !b.before_last.contains_key(file),
    }
}

fn apply(files: &Files, file: &PathBuf, damage: Damage) -> Files {
    let mut out = files.clone();
    match damage {
        Damage::Cut(at) => out.get_mut(file).expect("file").truncate(at),
        Damage::Flip(at, bit) => out.get_mut(file).expect("file")[at] ^= 1 << bit,
        Damage::Delete => {
            out.remove(file);
        }
    }
    out
}

fn run(b: &Built, file: &PathBuf, damage: Damage, counts: &mut Counts) {
    match damage {
        Damage::Cut(_) => counts.cuts += 1,
        Damage::Flip(..) => counts.flips += 1,
        Damage::Delete => counts.deletions += 1,
    }
    let files = apply(&b.files, file, damage);
    let what = format!("{} {damage:?}", file.display());
    let outcome = match catch_unwind(AssertUnwindSafe(|| open_and_read(&files, b))) {
        Ok(o) => o,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            counts.panics.push(format!("{what}: {msg}"));
            return;
        }
    };
    match outcome {
        Outcome::Refused => counts.refused += 1,
        Outcome::Unclear(e) => counts.unclear.push(format!("{what}: {e}")),
        Outcome::Intact => counts.intact += 1,
        Outcome::LastCommitLost if in_last_commit(b, file, damage) => {
            if file.to_string_lossy().starts_with("txn-") {
                counts.last_frame_torn += 1;
            } else {
                counts.last_commit_rolled_back += 1;
            }
        }
        Outcome::LastCommitLost => counts
            .silent
            .push(format!("{what}: lost the last commit, damage outside it")),
        Outcome::Silent(why) => counts.silent.push(format!("{what}: {why}")),
    }
}

#[test]
fn damage_sweep_over_every_byte_bit_and_file_loses_nothing_silently() {
    let b = sweep_log();
    let mut counts = Counts::default();
    let bits: Vec<u8> = if heavy() {
        (0..8).collect()
    } else {
        Vec::new()
    };
    for (file, bytes) in &b.files {
        for at in 0..bytes.len() {
            run(&b, file, Damage::Cut(at), &mut counts);
            if bits.is_empty() {
                run(&b, file, Damage::Flip(at, (at % 8) as u8), &mut counts);
            }
            for &bit in &bits {
                run(&b, file, Damage::Flip(at, bit), &mut counts);
            }
        }
        run(&b, file, Damage::Delete, &mut counts);
    }
    let total_bytes: usize = b.files.values().map(Vec::len).sum();
    println!(
        "damage sweep over {} files, {total_bytes} bytes: {} cuts, {} flips, {} deletions: \
         {} refused with error, {} recovered intact, {} last commit lost (last transaction-log \
         frame read as torn: {}, last commit rolled back: {}), {} silent, {} panics",
        b.files.len(),
        counts.cuts,
        counts.flips,
        counts.deletions,
        counts.refused,
        counts.intact,
        counts.last_frame_torn + counts.last_commit_rolled_back,
        counts.last_frame_torn,
        counts.last_commit_rolled_back,
        counts.silent.len(),
        counts.panics.len(),
    );
    assert!(
        counts.cuts > 1000 && counts.refused > 0,
        "the sweep ran: {counts:?}"
    );
    assert!(counts.panics.is_empty(), "panics: {:#?}", counts.panics);
    assert!(
        counts.unclear.is_empty(),
        "unclear errors: {:#?}",
        counts.unclear
    );
    assert!(
        counts.silent.is_empty(),
        "{} silent losses, first: {:#?}",
        counts.silent.len(),
        &counts.silent[..counts.silent.len().min(20)]
    );
}
