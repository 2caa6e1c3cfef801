//! Opening a log directory: the transaction log replayed, topic
//! directories checked, segments scanned, and only then repaired (see the
//! module documentation of `embedded` for the recovery rules).
//!
//! Owns: [`recover`] and the replay of one transaction-log generation,
//! including the log's bounds on what a replayed transaction log may name
//! (a topic beyond them is refused by name before anything is allocated
//! for it).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::file_pool::FilePool;
use super::format::{self, FrameAt};
use super::partition::{self, PartitionLog};
use super::storage::{self, Store};
use super::topics::{self, Limits};
use super::txlog::{Entry, Meta};
use super::{EmbeddedConfig, State, TxLog, txlog_name};
use crate::error::LogError;
use crate::types::TopicPartition;

#[cfg(test)]
mod fuzz;

/// The transaction log as read back: the state after every intact entry,
/// the entries with their positions, and where the intact frames end.
#[derive(Debug)]
struct Replayed {
    meta: Meta,
    entries: Vec<(u64, Entry)>,
    /// Bytes of intact frames; anything after is a torn tail.
    end: u64,
}

/// Replays a transaction-log generation, reading only. A rotated
/// generation (`generation > 0`) starts with a checkpoint that was synced
/// before the file got its name, so damage there is never a torn tail.
/// A topic beyond `limits` is refused by name before its frame is applied
/// (which would allocate for each of its partitions).
fn replay(
    path: &Path,
    generation: u64,
    data: &[u8],
    limits: &Limits,
) -> Result<Replayed, LogError> {
    let corrupt = |position: usize, reason: String| LogError::Corrupt {
        file: path.to_path_buf(),
        position: position as u64,
        reason,
    };
    let mut meta = Meta::default();
    let mut entries = Vec::new();
    let mut pos = 0usize;
    loop {
        match format::frame_at(data, pos) {
            FrameAt::End => break,
            FrameAt::Valid { body, next } => {
                let e = Entry::decode(body).map_err(|m| corrupt(pos, m.0.to_owned()))?;
                let want_checkpoint = pos == 0 && generation > 0;
                if want_checkpoint != matches!(e, Entry::Checkpoint(_)) {
                    return Err(corrupt(
                        pos,
                        if want_checkpoint {
                            "a rotated transaction log must start with a checkpoint".into()
                        } else {
                            "a checkpoint where only the first frame of a rotated log may hold one"
                                .into()
                        },
                    ));
                }
                match &e {
                    Entry::TopicCreated(spec) => limits.admit(&meta, spec, Some(path))?,
                    Entry::Checkpoint(m) => limits.admit_all(m, path)?,
                    _ => {}
                }
                meta.check(&e).map_err(|r| corrupt(pos, r))?;
                meta.apply(&e);
                entries.push((pos as u64, e));
                pos = next;
            }
            bad if pos == 0 && generation > 0 => {
                return Err(corrupt(
                    pos,
                    format!(
                        "the checkpoint of a rotated transaction log is damaged: {}",
                        bad.reason()
                    ),
                ));
            }
            bad if format::is_torn_append(data, pos) => {
                tracing::warn!(file = %path.display(), position = pos, bytes = data.len() - pos, reason = %bad.reason(), "dropping the torn tail of the transaction log");
                break;
            }
            bad => return Err(corrupt(pos, bad.reason())),
        }
    }
    if generation > 0 && entries.is_empty() {
        return Err(corrupt(
            0,
            "a rotated transaction log must start with a checkpoint".into(),
        ));
    }
    Ok(Replayed {
        meta,
        entries,
        end: pos as u64,
    })
}

/// Every topic directory must be a topic the transaction log holds, or
/// what an unfinished creation left (returned, to be removed once the open
/// is known to succeed): a topic's frame is written only after its files,
/// so any other stranger means the transaction log lost durable frames.
fn check_topic_dirs(root: &Path, meta: &Meta) -> Result<Vec<PathBuf>, LogError> {
    let topics = root.join("topics");
    let mut leftovers = Vec::new();
    if !topics.is_dir() {
        return Ok(leftovers);
    }
    for (name, path) in storage::list_dir(&topics)? {
        let Some(n) = meta.topics.get(&name).map(|s| s.shape.partitions) else {
            leftovers.push(topics::leftover(&path)?);
            continue;
        };
        if !path.is_dir() {
            continue;
        }
        let stray = storage::list_dir(&path)?
            .into_iter()
            .find(|(p, _)| p.parse::<u32>().map_or(true, |p| p >= n));
        if let Some((p, _)) = stray {
            return Err(LogError::Corrupt {
                file: path,
                position: 0,
                reason: format!("topic {name:?} has {n} partitions but a directory {p:?}"),
            });
        }
    }
    Ok(leftovers)
}

/// Opens the transaction log and segments in `root`, recovering as the
/// module documentation describes. Everything is read and checked before
/// the first byte is changed: a failed open leaves every file as it was.
pub(crate) fn recover(root: &Path, config: &EmbeddedConfig) -> Result<State, LogError> {
    // 1. The newest transaction-log generation, replayed.
    let files = TxlogFiles::list(root)?;
    let (generation, path) = files.newest(root);
    let data = match std::fs::read(&path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(LogError::io("reading", &path, e)),
    };
    let replayed = replay(&path, generation, &data, &Limits::of(config))?;
    let mut meta = replayed.meta;
    let leftovers = check_topic_dirs(root, &meta)?;

    // 2. Partitions, scanned.
    let pool = FilePool::new(config.max_open_segments);
    let (mut partitions, scans) = open_partitions(root, &meta, &pool)?;

    // 3. Committed records missing: roll the last commit back if exactly
    // its records are missing, otherwise refuse.
    let mut keep = replayed.end;
    if let Some(at) = rollback_point(&replayed.entries, &scans, &meta)? {
        tracing::warn!(file = %path.display(), position = at, "rolling back the last commit: its records are missing");
        keep = at;
        let n = replayed.entries.len();
        meta = Meta::default();
        for (_, e) in &replayed.entries[..n - 1] {
            meta.apply(e);
        }
    }

    // 4. Repair: the transaction log's tail, old files, then segments.
    let store = repair_txlog(root, &path, keep, &files)?;
    for dir in &leftovers {
        tracing::warn!(dir = %dir.display(), "removing the files of a topic creation that never reached the transaction log");
        topics::remove_leftover(dir)?;
    }
    for (tp, scan) in &scans {
        let part = partitions.get_mut(tp).expect("scanned partition");
        part.repair(scan, meta.ends.get(tp).copied().unwrap_or(0))?;
    }
    Ok(State {
        meta,
        partitions,
        txlog: TxLog::new(path, store, keep, generation),
        root: Some(root.to_path_buf()),
        pool: Some(pool),
    })
}

/// The transaction-log files in a log directory.
struct TxlogFiles {
    /// Each generation's number and file.
    generations: Vec<(u64, PathBuf)>,
    /// Unfinished rotations' files.
    temps: Vec<PathBuf>,
}

impl TxlogFiles {
    /// Lists the transaction-log files in `root`, generations in ascending order.
    fn list(root: &Path) -> Result<Self, LogError> {
        let mut generations = Vec::new();
        let mut temps = Vec::new();
        for (name, path) in storage::list_dir(root)? {
            if name.starts_with("txn-") && name.ends_with(".log.tmp") {
                temps.push(path);
            } else if let Some(g) = name
                .strip_prefix("txn-")
                .and_then(|n| n.strip_suffix(".log"))
                .and_then(|n| n.parse::<u64>().ok())
            {
                generations.push((g, path));
            }
        }
        generations.sort();
        Ok(TxlogFiles { generations, temps })
    }

    /// The newest generation, or generation 0's file when there is none.
    fn newest(&self, root: &Path) -> (u64, PathBuf) {
        self.generations
            .last()
            .cloned()
            .unwrap_or_else(|| (0, root.join(txlog_name(0))))
    }

    /// The files a successful open removes: unfinished rotations and every generation but
    /// the newest.
    fn old(&self) -> impl Iterator<Item = &PathBuf> {
        self.temps
            .iter()
            .chain(self.generations.iter().rev().skip(1).map(|(_, p)| p))
    }
}

/// The opened partitions, and their scans sorted by partition.
type Opened = (
    HashMap<TopicPartition, PartitionLog>,
    Vec<(TopicPartition, partition::Scan)>,
);

/// Opens and scans every partition the replayed transaction log names, reading only.
fn open_partitions(root: &Path, meta: &Meta, pool: &Arc<FilePool>) -> Result<Opened, LogError> {
    let mut partitions = HashMap::new();
    let mut scans = Vec::new();
    for spec in meta.topics.values() {
        for p in 0..spec.shape.partitions {
            let tp = TopicPartition::new(spec.name.clone(), p);
            let dir = root.join("topics").join(&spec.name).join(p.to_string());
            let end = meta.ends.get(&tp).copied().unwrap_or(0);
            let start = meta.starts.get(&tp).copied().unwrap_or(0);
            let (part, scan) =
                PartitionLog::open(tp.clone(), dir, end, start, meta.next_txn, pool)?;
            scans.push((tp.clone(), scan));
            partitions.insert(tp, part);
        }
    }
    scans.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((partitions, scans))
}

/// When committed records are missing: the position of the last commit's entry, if exactly
/// its records are missing (it is rolled back), else an error naming the first partition that
/// stops short. `None` when no records are missing.
fn rollback_point(
    entries: &[(u64, Entry)],
    scans: &[(TopicPartition, partition::Scan)],
    meta: &Meta,
) -> Result<Option<u64>, LogError> {
    let short: Vec<&(TopicPartition, partition::Scan)> =
        scans.iter().filter(|(_, s)| s.short_at.is_some()).collect();
    if short.is_empty() {
        return Ok(None);
    }
    let rollback = match entries.last() {
        Some((at, Entry::Commit { parts, .. })) => short
            .iter()
            .all(|(tp, scan)| {
                parts
                    .iter()
                    .any(|part| &part.tp == tp && scan.data_end == part.base)
            })
            .then_some(*at),
        _ => None,
    };
    let Some(at) = rollback else {
        let (tp, scan) = short[0];
        let (file, position, why) = scan.short_at.clone().expect("short");
        return Err(LogError::Corrupt {
            file,
            position,
            reason: format!(
                "partition {tp} holds records up to offset {} but offset {} is committed ({why})",
                scan.data_end, meta.ends[tp]
            ),
        });
    };
    Ok(Some(at))
}

/// Cuts the transaction log at `keep` (its torn tail, or a rolled-back commit), removes the
/// old transaction-log files, and syncs the directory. Returns the transaction log's store.
fn repair_txlog(
    root: &Path,
    path: &Path,
    keep: u64,
    files: &TxlogFiles,
) -> Result<Store, LogError> {
    let mut store = Store::create_disk(path)?;
    if store.len(path)? > keep {
        store.truncate(keep, path)?;
    }
    for old in files.old() {
        storage::remove_file(old)?;
    }
    storage::sync_dir(root)?;
    Ok(store)
}
