//! Tests of the cleaner that need its inside: the hook that stops a pass at
//! a [`Step`] (commits, fetches, purges and crashes at that point), and the
//! segment boundaries behind the exact result of several passes.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use super::Step;
use crate::broker::{Consumer, Log, TransactionalProducer};
use crate::contract::read_to_end;
use crate::embedded::{EmbeddedConfig, EmbeddedLog, MaintenanceReport};
use crate::types::{Offset, Record, SeekTo, Timestamp, TopicPartition, TopicSpec};

thread_local! {
    static HOOK: RefCell<Option<Box<dyn FnMut(Step)>>> = const { RefCell::new(None) };
}

/// Called by a pass at each step, on the thread running it.
pub(super) fn hook(step: Step) {
    // Taken out while it runs, so that it may use the log itself.
    let Some(mut f) = HOOK.with(|h| h.borrow_mut().take()) else {
        return;
    };
    f(step);
    HOOK.with(|h| {
        let mut h = h.borrow_mut();
        if h.is_none() {
            *h = Some(f);
        }
    });
}

/// Runs `f` at every step of the passes this thread runs from now on.
fn set_hook(f: impl FnMut(Step) + 'static) {
    HOOK.with(|h| *h.borrow_mut() = Some(Box::new(f)));
}

/// How long a test waits for another thread before calling it stuck.
const STUCK: Duration = Duration::from_secs(60);

type Row = (u64, Option<Vec<u8>>, Option<Vec<u8>>);

fn tp() -> TopicPartition {
    TopicPartition::new("cl", 0)
}

fn config(segment_bytes: u64) -> EmbeddedConfig {
    EmbeddedConfig {
        segment_bytes,
        min_cleanable_dirty_ratio: 0.0,
        ..EmbeddedConfig::default()
    }
}

/// Commits `records` (key, value) in transactions of `per_commit`; returns
/// every record by offset.
fn fill(log: &EmbeddedLog, records: &[(Vec<u8>, Vec<u8>)], per_commit: usize) -> Vec<Row> {
    let mut p = log.transactional_producer("fill").expect("producer");
    let mut rows = Vec::new();
    let start = log.lock().end(&tp()).expect("end");
    for chunk in records.chunks(per_commit) {
        p.begin().expect("begin");
        for (k, v) in chunk {
            p.send(&tp(), &Record::new(Some(k), Some(v), Timestamp(1)))
                .expect("send");
            rows.push((start + rows.len() as u64, Some(k.clone()), Some(v.clone())));
        }
        p.commit().expect("commit");
    }
    rows
}

fn rows(records: &[crate::types::FetchedRecord]) -> Vec<Row> {
    records
        .iter()
        .map(|r| (r.offset.0, r.record.key.clone(), r.record.value.clone()))
        .collect()
}

fn read_all(log: &EmbeddedLog) -> Vec<Row> {
    let mut c = log.consumer("check").expect("consumer");
    rows(&read_to_end(&mut c, &[tp()]))
}

/// `got` is records of `all` (each at its offset, in order), and holds the
/// latest record of every key.
fn check_read(got: &[Row], all: &[Row]) {
    let by_offset: HashMap<u64, &Row> = all.iter().map(|r| (r.0, r)).collect();
    for w in got.windows(2) {
        assert!(
            w[0].0 < w[1].0,
            "offsets go forward: {} then {}",
            w[0].0,
            w[1].0
        );
    }
    for r in got {
        assert_eq!(Some(&r), by_offset.get(&r.0), "record at offset {}", r.0);
    }
    let mut latest: HashMap<&Option<Vec<u8>>, u64> = HashMap::new();
    for r in all {
        latest.insert(&r.1, r.0);
    }
    for (key, offset) in latest {
        assert!(
            got.iter().any(|r| r.0 == offset),
            "the latest record of {key:?} (offset {offset}) is kept"
        );
    }
}

/// Keys `0..keys` written `rounds` times, `value_bytes` each.
fn rounds(keys: u32, rounds: u32, value_bytes: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..rounds)
        .flat_map(|r| {
            (0..keys).map(move |k| {
                let mut v = vec![r as u8; value_bytes];
                v[..4].copy_from_slice(&k.to_be_bytes());
                (format!("key-{k}").into_bytes(), v)
            })
        })
        .collect()
}

/// Runs `maintain` on a thread of its own with `hook` installed there.
fn maintain_with_hook(
    log: &EmbeddedLog,
    hook: impl FnMut(Step) + Send + 'static,
) -> std::thread::JoinHandle<MaintenanceReport> {
    let log = log.clone();
    std::thread::spawn(move || {
        set_hook(hook);
        log.maintain(Timestamp(0)).expect("maintain")
    })
}

/// A hook that stops the pass at the first step `at` accepts, tells
/// `paused`, and waits for `resume`.
fn pause_at(
    at: impl Fn(Step) -> bool + Send + 'static,
) -> (
    impl FnMut(Step) + Send + 'static,
    mpsc::Receiver<Step>,
    mpsc::Sender<()>,
) {
    let (paused_tx, paused) = mpsc::channel();
    let (resume, resume_rx) = mpsc::channel::<()>();
    let mut done = false;
    let hook = move |step: Step| {
        if !done && at(step) {
            done = true;
            paused_tx.send(step).expect("test alive");
            resume_rx.recv_timeout(STUCK).expect("resumed");
        }
    };
    (hook, paused, resume)
}

#[test]
fn a_commit_and_a_fetch_complete_while_a_compaction_is_under_way() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = EmbeddedLog::open_with(dir.path(), config(4_000)).expect("open");
    log.create_topic(&TopicSpec::new("cl", 1).compacted())
        .expect("create");
    log.create_topic(&TopicSpec::new("other", 1))
        .expect("create");
    let mut all = Vec::new();
    for at in [
        (|s| matches!(s, Step::MapBuilt { .. })) as fn(Step) -> bool,
        |s| matches!(s, Step::Written { .. }),
    ] {
        all.extend(fill(&log, &rounds(20, 10, 100), 10));
        let (hook, paused, resume) = pause_at(at);
        let maintaining = maintain_with_hook(&log, hook);
        let step = paused
            .recv_timeout(STUCK)
            .expect("the pass reached the step");
        // Another producer's commit, and a fetch, on threads of their own:
        // either would wait for the pass if it held the log's lock.
        let (done_tx, done) = mpsc::channel();
        let committer = {
            let log = log.clone();
            std::thread::spawn(move || {
                let mut p = log.transactional_producer("other").expect("producer");
                p.begin().expect("begin");
                let other = TopicPartition::new("other", 0);
                p.send(&other, &Record::new(Some(b"k"), Some(b"v"), Timestamp(1)))
                    .expect("send");
                p.commit().expect("commit");
                let mut c = log.consumer("g").expect("consumer");
                c.assign(&[tp()]).expect("assign");
                let fetched = c.fetch(Duration::ZERO).expect("fetch");
                done_tx.send(fetched.len()).expect("test alive");
            })
        };
        let fetched = done
            .recv_timeout(STUCK)
            .unwrap_or_else(|e| panic!("a commit and a fetch during the pass at {step:?}: {e}"));
        assert!(fetched > 0);
        committer.join().expect("committer");
        resume.send(()).expect("pass alive");
        let report = maintaining.join().expect("maintain");
        assert_eq!(report.compacted_partitions, 1, "{report:?}");
    }
    check_read(&read_all(&log), &all);
    let mut c = log.consumer("g2").expect("consumer");
    let other = read_to_end(&mut c, &[TopicPartition::new("other", 0)]);
    assert_eq!(other.len(), 2, "both commits of the other topic are there");
}

/// A reader positioned inside a segment when the segment is swapped reads
/// on from the compacted copy: each record it sees is the one committed at
/// that offset, in order, and it misses no key's latest record. A second
/// reader fetches the whole partition over and over during the pass.
#[test]
fn fetches_beside_a_swap_see_the_records_committed_at_their_offsets() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Segments of about 2 MiB; a fetch reads 1 MiB of a partition, so the
    // first one stops inside the first segment.
    let log = EmbeddedLog::open_with(dir.path(), config(2 << 20)).expect("open");
    log.create_topic(&TopicSpec::new("cl", 1).compacted())
        .expect("create");
    let all = fill(&log, &rounds(50, 120, 1_000), 100);
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let free_reader = {
        let log = log.clone();
        let all = all.clone();
        std::thread::spawn(move || {
            let mut reads = 0;
            loop {
                check_read(&read_all(&log), &all);
                reads += 1;
                if stop_rx.try_recv().is_ok() {
                    return reads;
                }
            }
        })
    };
    let (seen_tx, seen) = mpsc::channel();
    let hook = {
        let log = log.clone();
        let mut consumer = log.consumer("mid").expect("consumer");
        let mut got = Vec::new();
        move |step: Step| match step {
            Step::Written { base: 0 } => {
                consumer.assign(&[tp()]).expect("assign");
                consumer.seek(&tp(), SeekTo::Beginning).expect("seek");
                got.extend(rows(&consumer.fetch(Duration::ZERO).expect("fetch")));
                let at = consumer.position(&tp()).expect("position");
                let first_end = log.lock().partitions[&tp()].segments[0].data_end;
                assert!(
                    at.0 > 0 && at.0 < first_end,
                    "the reader stopped inside the first segment: {at:?} of {first_end}"
                );
            }
            Step::Swapped { base: 0 } => {
                got.extend(rows(&read_on(&mut consumer)));
                seen_tx.send(std::mem::take(&mut got)).expect("test alive");
            }
            _ => {}
        }
    };
    let report = maintain_with_hook(&log, hook).join().expect("maintain");
    assert!(report.compacted_records > 0, "{report:?}");
    let got = seen.recv_timeout(STUCK).expect("the hook saw the swap");
    check_read(&got, &all);
    stop_tx.send(()).expect("reader alive");
    assert!(free_reader.join().expect("free reader") > 0);
    check_read(&read_all(&log), &all);
}

/// Fetches from the consumer's position to the end offset.
fn read_on(c: &mut impl Consumer) -> Vec<crate::types::FetchedRecord> {
    let end = c.end_offset(&tp()).expect("end");
    let mut out = Vec::new();
    while c.position(&tp()).expect("position") < end {
        out.extend(c.fetch(Duration::ZERO).expect("fetch"));
    }
    out
}

#[test]
fn a_segment_purged_during_its_rewrite_is_not_swapped_back_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = EmbeddedLog::open_with(dir.path(), config(4_000)).expect("open");
    log.create_topic(&TopicSpec::new("cl", 1).compacted())
        .expect("create");
    let all = fill(&log, &rounds(20, 10, 100), 10);
    let second = log.lock().partitions[&tp()].segments[1].base;
    let (hook, paused, resume) = pause_at(|s| s == Step::Written { base: 0 });
    let maintaining = maintain_with_hook(&log, hook);
    paused.recv_timeout(STUCK).expect("the pass wrote a copy");
    let cleaned = dir
        .path()
        .join("topics/cl/0/00000000000000000000.seg.cleaned");
    assert!(cleaned.exists());
    log.purge_below(&tp(), Offset(second)).expect("purge");
    resume.send(()).expect("pass alive");
    let report = maintaining.join().expect("maintain");
    assert_eq!(report.compaction_discarded_segments, 1, "{report:?}");
    assert!(!cleaned.exists(), "the discarded copy is removed");
    let first = log.lock().partitions[&tp()].segments[0].base;
    assert_eq!(first, second, "the purged segment stays gone");
    let kept: Vec<Row> = all.iter().filter(|r| r.0 >= second).cloned().collect();
    check_read(&read_all(&log), &kept);
}

#[test]
fn a_second_maintain_skips_a_partition_being_compacted() {
    let log = EmbeddedLog::in_memory_with(config(4_000));
    log.create_topic(&TopicSpec::new("cl", 1).compacted())
        .expect("create");
    fill(&log, &rounds(20, 10, 100), 10);
    let (hook, paused, resume) = pause_at(|s| matches!(s, Step::MapBuilt { .. }));
    let maintaining = maintain_with_hook(&log, hook);
    paused.recv_timeout(STUCK).expect("paused");
    let second = log.maintain(Timestamp(0)).expect("maintain");
    assert_eq!(second, MaintenanceReport::default());
    resume.send(()).expect("pass alive");
    assert_eq!(
        maintaining.join().expect("maintain").compacted_partitions,
        1
    );
}

/// Several passes with a map of 16 entries (12 keys) over 150 keys: the
/// result is exactly what one unbounded pass gives. A record of a closed
/// segment stays if it is the latest of its key among the closed segments
/// or its segment's last; the active segment is untouched.
#[test]
fn passes_with_a_small_map_end_where_one_unbounded_pass_does() {
    let mut cfg = config(3_000);
    cfg.compaction_map_bytes = 0;
    let log = EmbeddedLog::in_memory_with(cfg);
    log.create_topic(&TopicSpec::new("cl", 1).compacted())
        .expect("create");
    let mut records = rounds(150, 4, 20);
    // Not round by round: interleave so segments mix keys of all rounds.
    records.sort_by_key(|(k, v)| (v[0] as usize * 7 + k.len() * 13 + k[k.len() - 1] as usize) % 11);
    let all = fill(&log, &records, 17);
    let bounds: Vec<(u64, u64)> = log.lock().partitions[&tp()]
        .segments
        .iter()
        .map(|s| (s.base, s.data_end))
        .collect();
    let (closed, active) = bounds.split_at(bounds.len() - 1);
    assert!(closed.len() > 5, "{bounds:?}");
    let closed_end = closed.last().expect("closed").1;
    let mut latest_closed: HashMap<&Option<Vec<u8>>, u64> = HashMap::new();
    for r in all.iter().filter(|r| r.0 < closed_end) {
        latest_closed.insert(&r.1, r.0);
    }
    let expected: Vec<Row> = all
        .iter()
        .filter(|r| {
            r.0 >= active[0].0
                || latest_closed[&r.1] == r.0
                || closed.iter().any(|(_, end)| r.0 + 1 == *end)
        })
        .cloned()
        .collect();
    let mut passes = 0;
    loop {
        let report = log.maintain(Timestamp(0)).expect("maintain");
        assert!(
            report.compaction_map_bytes
                <= (super::map::MIN_ENTRIES * super::map::ENTRY_BYTES) as u64,
            "{report:?}"
        );
        if report.compacted_partitions == 0 {
            break;
        }
        passes += 1;
        assert!(passes < 1_000, "passes end");
    }
    assert!(passes > 10, "the map holds 12 keys: {passes} passes");
    assert_eq!(read_all(&log), expected);
}

/// Every file of a log directory but its lock.
fn snapshot(root: &Path) -> BTreeMap<std::path::PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<std::path::PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.file_name().is_some_and(|n| n != "LOCK") {
                let rel = p.strip_prefix(root).expect("under root").to_path_buf();
                out.insert(rel, std::fs::read(&p).expect("read file"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn materialize(files: &BTreeMap<std::path::PathBuf, Vec<u8>>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (rel, bytes) in files {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, bytes).expect("write");
    }
    dir
}

/// A crash after a compacted copy was written and synced but before its
/// rename (whole or cut anywhere) opens as the log before the swap, and the
/// copy is removed; a crash right after a rename opens as the log after
/// it. What the log read at each point, live, is the reference.
#[test]
fn a_crash_before_or_after_the_rename_of_a_compacted_segment_opens_as_before_or_after() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = config(4_000);
    let log = EmbeddedLog::open_with(dir.path(), cfg.clone()).expect("open");
    log.create_topic(&TopicSpec::new("cl", 1).compacted())
        .expect("create");
    let all = fill(&log, &rounds(20, 10, 100), 10);
    let (points_tx, points) = mpsc::channel();
    let hook = {
        let log = log.clone();
        let root = dir.path().to_path_buf();
        move |step: Step| {
            if matches!(step, Step::Written { .. } | Step::Swapped { .. }) {
                points_tx
                    .send((step, snapshot(&root), read_all(&log)))
                    .expect("test alive");
            }
        }
    };
    let report = maintain_with_hook(&log, hook).join().expect("maintain");
    assert!(report.compacted_records > 0, "{report:?}");
    let points: Vec<_> = points.try_iter().collect();
    assert!(points.len() >= 4, "two segments or more rewritten");
    let reopen = |files: &BTreeMap<std::path::PathBuf, Vec<u8>>| {
        let d = materialize(files);
        let log = EmbeddedLog::open_with(d.path(), cfg.clone()).expect("opens after the crash");
        let read = read_all(&log);
        drop(log);
        (read, snapshot(d.path()))
    };
    for (step, files, live) in &points {
        let (read, after_open) = reopen(files);
        assert_eq!(&read, live, "crash at {step:?}");
        check_read(&read, &all);
        assert!(
            !after_open
                .keys()
                .any(|p| p.to_string_lossy().ends_with(".cleaned")),
            "the open removes a leftover copy ({step:?})"
        );
        if let Step::Written { base } = step {
            let name = format!("topics/cl/0/{base:020}.seg.cleaned");
            let copy = &files[Path::new(&name)];
            // The copy cut anywhere (its write or sync never finished).
            for cut in [0, 1, copy.len() / 2, copy.len() - 1] {
                let mut cut_files = files.clone();
                cut_files.insert(name.clone().into(), copy[..cut].to_vec());
                assert_eq!(&reopen(&cut_files).0, live, "copy of {base} cut at {cut}");
            }
        }
    }
    assert_eq!(&points.last().expect("a point").2, &read_all(&log));
}

/// A record at offset `u64::MAX` in the middle of a segment (offsets that
/// do not increase, behind a valid checksum) is judged, not an overflow:
/// the test for the segment's last record added 1 to its offset (a panic
/// in debug builds, a wrap to 0 in release).
#[test]
fn keep_judges_a_record_at_the_top_offset_without_overflow() {
    let record = |offset, key| crate::embedded::format::RecordIn {
        offset,
        timestamp: 0,
        key,
        value: None,
        headers: Vec::new(),
    };
    let mut map = super::OffsetMap::new(1 << 16, 16);
    assert!(map.insert(b"k", 10));
    assert!(super::keeps(&record(u64::MAX, Some(b"k")), 0, &map));
    assert!(super::keeps(&record(u64::MAX, None), 0, &map));
    assert!(!super::keeps(&record(5, Some(b"k")), u64::MAX, &map));
    // The segment's last record stays whatever its key's latest offset.
    assert!(super::keeps(&record(5, Some(b"k")), 6, &map));
    assert!(!super::keeps(&record(5, Some(b"k")), 7, &map));
}
