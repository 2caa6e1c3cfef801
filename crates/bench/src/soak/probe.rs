//! One soak sample: what the process and the run's directory hold at a
//! moment, and what the application did since the previous sample.
//!
//! Owns the [`Sample`] line and the readings behind it: resident memory
//! (`VmRSS`), open descriptors (`/proc/self/fd`), bytes on disk split into
//! the log, its changelog topics and the stores, and, from the
//! application's timeline, the longest pause between barrier commits.

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

use stoatflow_runtime::Timeline;

/// One sample of a soak run.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Seconds since the application started.
    pub t_s: f64,
    /// Input records the application committed per second since the
    /// previous sample.
    pub records_per_s: f64,
    /// The longest time between consecutive barrier commits since the
    /// previous sample, counting the time from the last commit to this
    /// sample (so a stall shows while it lasts), ms.
    pub barrier_gap_max_ms: f64,
    /// The mean time between consecutive barrier cuts since the previous
    /// sample, ms (NaN when fewer than two were cut).
    pub commit_interval_ms: f64,
    /// Resident memory, MiB.
    pub rss_mib: f64,
    /// Bytes on disk of the log but its changelog topics (the input and
    /// output topics, the transaction log, the runtime's other topics), MiB.
    pub log_mib: f64,
    /// Bytes on disk of the changelog topics (`*-changelog`), MiB.
    pub changelog_mib: f64,
    /// Bytes on disk of the stores (`<dir>/state`), MiB.
    pub state_mib: f64,
    /// Open file descriptors.
    pub fds: u64,
    /// Wall clock minus the application's global watermark, ms; `None`
    /// before it has one.
    pub watermark_lag_ms: Option<i64>,
    /// The application's `late.records.total`.
    pub late_records: u64,
}

impl fmt::Display for Sample {
    /// `soak t_s=… records_per_s=… barrier_gap_max_ms=… rss_mib=… log_mib=… changelog_mib=… state_mib=… fds=… watermark_lag_ms=… late_records=… commit_interval_ms=…`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lag = self
            .watermark_lag_ms
            .map_or_else(|| "-".to_owned(), |l| l.to_string());
        write!(
            f,
            "soak t_s={:.0} records_per_s={:.0} barrier_gap_max_ms={:.0} rss_mib={:.1} log_mib={:.1} changelog_mib={:.1} state_mib={:.1} fds={} watermark_lag_ms={lag} late_records={} commit_interval_ms={:.0}",
            self.t_s,
            self.records_per_s,
            self.barrier_gap_max_ms,
            self.rss_mib,
            self.log_mib,
            self.changelog_mib,
            self.state_mib,
            self.fds,
            self.late_records,
            self.commit_interval_ms,
        )
    }
}

/// Bytes on disk under a run's directory: (log but changelogs, changelog
/// topics, stores).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct DiskSplit {
    pub log: u64,
    pub changelog: u64,
    pub state: u64,
}

impl DiskSplit {
    /// Walks `dir`: files under `<dir>/state` are the stores', files under
    /// a directory whose name ends in `-changelog` a changelog's, the rest
    /// the log's. Counts the blocks a file occupies (a sparse or
    /// preallocated file counts what it holds, not its length); what
    /// vanishes during the walk counts nothing.
    pub(crate) fn of(dir: &Path) -> DiskSplit {
        let mut split = DiskSplit::default();
        walk(dir, None, &mut split, true);
        split
    }
}

#[derive(Clone, Copy)]
enum Part {
    Changelog,
    State,
}

fn walk(dir: &Path, part: Option<Part>, split: &mut DiskSplit, top: bool) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if meta.is_dir() {
            let inner = part.or(if top && name == "state" {
                Some(Part::State)
            } else if name.ends_with("-changelog") {
                Some(Part::Changelog)
            } else {
                None
            });
            walk(&entry.path(), inner, split, false);
            continue;
        }
        let bytes = std::os::unix::fs::MetadataExt::blocks(&meta) * 512;
        match part {
            Some(Part::State) => split.state += bytes,
            Some(Part::Changelog) => split.changelog += bytes,
            None => split.log += bytes,
        }
    }
}

/// Open descriptors of this process (entries of `/proc/self/fd`, less the
/// one reading it); 0 where it cannot be read.
pub(crate) fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count().saturating_sub(1) as u64)
}

/// From `timeline`, over barriers committed after `since`: the longest gap
/// between consecutive commits, the gap from the last commit to `now`
/// counted too (from `since` when none committed yet), and the mean
/// interval between consecutive cuts after `since` (NaN with fewer than
/// two).
pub(crate) fn barrier_figures(
    timeline: &Timeline,
    since: Instant,
    now: Instant,
) -> (Duration, f64) {
    let mut gap = Duration::ZERO;
    let mut previous: Option<Instant> = None;
    let mut last_cut: Option<Instant> = None;
    let (mut intervals, mut interval_sum) = (0u32, Duration::ZERO);
    for b in timeline.barriers() {
        if b.committed > since
            && let Some(p) = previous
        {
            gap = gap.max(b.committed.saturating_duration_since(p));
        }
        previous = Some(b.committed);
        if b.cut > since
            && let Some(c) = last_cut
        {
            intervals += 1;
            interval_sum += b.cut.saturating_duration_since(c);
        }
        last_cut = Some(b.cut);
    }
    let open_from = previous.map_or(since, |p| p.max(since));
    gap = gap.max(now.saturating_duration_since(open_from));
    let mean = if intervals == 0 {
        f64::NAN
    } else {
        (interval_sum / intervals).as_secs_f64() * 1e3
    };
    (gap, mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files are split by where they sit: the stores' directory, a
    /// changelog topic's, or the rest of the log.
    #[test]
    fn disk_bytes_are_split_into_log_changelog_and_state() {
        let dir = crate::e2e::RunDir::new().unwrap();
        let write = |rel: &str, len: usize| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, vec![7u8; len]).unwrap();
        };
        write("topics/events/0/a.seg", 40_000);
        write("txn-0.log", 10_000);
        write("topics/app-store-changelog/0/a.seg", 20_000);
        write("state/0_0/store/data", 30_000);
        let split = DiskSplit::of(dir.path());
        // Each file occupies its length rounded up to whole blocks.
        assert!(
            split.log >= 50_000 && split.log < 50_000 + 2 * 65_536,
            "{split:?}"
        );
        assert!(
            split.changelog >= 20_000 && split.changelog < 20_000 + 65_536,
            "{split:?}"
        );
        assert!(
            split.state >= 30_000 && split.state < 30_000 + 65_536,
            "{split:?}"
        );
    }
}
