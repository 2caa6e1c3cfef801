//! A log of more segments than the process may open files: 10 000
//! segments under a limit of 1 024 open files open, take appends and serve
//! fetches, because segment files are held open through a bounded pool.
//!
//! The limit is set on a child process (`ulimit -n` in `sh`) that runs this
//! one test, so the other tests of the binary keep theirs.
//!
//! And a log that runs for long holds the descriptors of its active
//! segments and of those read lately, never one per segment it wrote: the
//! descriptors are counted in `/proc/self/fd` by target, only those inside
//! the test's own directory, so other tests opening files beside it do not
//! count.

use std::time::Duration;

use stoatflow_log::{
    Consumer, EmbeddedConfig, EmbeddedLog, Log, Record, Timestamp, TopicPartition, TopicSpec,
    TransactionalProducer,
};

const CHILD: &str = "STOATFLOW_LOG_OPEN_FILES_CHILD";
const LIMIT: u32 = 1024;
const PARTITIONS: u32 = 2_000;
/// Each commit after the first rolls every partition: 5 commits make
/// 10 000 segments.
const COMMITS: u64 = 5;

fn config() -> EmbeddedConfig {
    EmbeddedConfig {
        segment_bytes: 1,
        ..EmbeddedConfig::default()
    }
}

/// Commit `n`: one record to every partition, valued `n`.
fn commit(log: &EmbeddedLog, n: u64) {
    let mut p = log.transactional_producer("tx").expect("producer");
    p.begin().expect("begin");
    for partition in 0..PARTITIONS {
        p.send(
            &TopicPartition::new("wide", partition),
            &Record::new(None, Some(&n.to_be_bytes()), Timestamp(0)),
        )
        .expect("send");
    }
    p.commit().expect("commit");
}

/// Every record of every partition, as the commits' numbers, in order.
fn read_all(log: &EmbeddedLog) -> Vec<Vec<u64>> {
    let tps: Vec<TopicPartition> = (0..PARTITIONS)
        .map(|p| TopicPartition::new("wide", p))
        .collect();
    let mut c = log.consumer("reader").expect("consumer");
    let mut seen = vec![Vec::new(); PARTITIONS as usize];
    for r in stoatflow_log::contract::read_to_end(&mut c, &tps) {
        let value = r.record.value.expect("value");
        let n = u64::from_be_bytes(value.try_into().expect("8 bytes"));
        seen[r.partition.partition.0 as usize].push(n);
    }
    let _ = c.fetch(Duration::ZERO).expect("a fetch at the end");
    seen
}

fn segments(dir: &std::path::Path) -> usize {
    (0..PARTITIONS)
        .map(|p| {
            std::fs::read_dir(dir.join("topics").join("wide").join(p.to_string()))
                .expect("list")
                .count()
        })
        .sum()
}

/// The work, in the child under the limit.
fn under_the_limit() {
    let limits = std::fs::read_to_string("/proc/self/limits").expect("limits");
    let open_files = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("a limit on open files");
    assert!(
        open_files.split_whitespace().nth(3) == Some(&LIMIT.to_string()),
        "the child runs under the limit: {open_files}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let log = EmbeddedLog::open_with(dir.path(), config()).expect("open");
        log.create_topic(&TopicSpec::new("wide", PARTITIONS))
            .expect("a topic of more partitions than the limit");
        for n in 0..COMMITS {
            commit(&log, n);
        }
        assert_eq!(segments(dir.path()), (PARTITIONS as u64 * COMMITS) as usize);
        let want: Vec<u64> = (0..COMMITS).collect();
        assert!(read_all(&log).iter().all(|p| *p == want));
    }
    let log = EmbeddedLog::open_with(dir.path(), config()).expect("reopen");
    commit(&log, COMMITS);
    let want: Vec<u64> = (0..=COMMITS).collect();
    assert!(read_all(&log).iter().all(|p| *p == want));
}

#[test]
fn ten_thousand_segments_open_append_and_serve_fetches_under_a_limit_of_1024_open_files() {
    if std::env::var_os(CHILD).is_some() {
        under_the_limit();
        return;
    }
    let name = "open_files::ten_thousand_segments_open_append_and_serve_fetches_under_a_limit_of_1024_open_files";
    let exe = std::env::current_exe().expect("this test binary");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n {LIMIT} && exec \"$0\" \"$@\""))
        .arg(exe)
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the child failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

#[test]
fn no_open_segment_file_at_all_is_refused_naming_the_setting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = EmbeddedConfig {
        max_open_segments: 0,
        ..EmbeddedConfig::default()
    };
    let Err(err) = EmbeddedLog::open_with(dir.path(), config) else {
        panic!("a pool of no files");
    };
    assert!(err.to_string().contains("max_open_segments"), "{err}");
}

/// Open descriptors of this process whose file lies under `dir`: (segment
/// files, every other file).
fn open_under(dir: &std::path::Path) -> (usize, usize) {
    let mut segs = 0;
    let mut other = 0;
    for entry in std::fs::read_dir("/proc/self/fd").expect("list /proc/self/fd") {
        let Ok(entry) = entry else { continue };
        // A descriptor closed since the listing has no link: not open.
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        if target.starts_with(dir) {
            if target.extension().is_some_and(|e| e == "seg") {
                segs += 1;
            } else {
                other += 1;
            }
        }
    }
    (segs, other)
}

/// `rounds` commits of one record to each of `partitions` partitions of
/// `topic`, each commit rolling every partition.
fn write_rounds(log: &EmbeddedLog, topic: &str, partitions: u32, rounds: u64) {
    let mut p = log.transactional_producer("tx").expect("producer");
    for n in 0..rounds {
        p.begin().expect("begin");
        for partition in 0..partitions {
            p.send(
                &TopicPartition::new(topic, partition),
                &Record::new(None, Some(&n.to_be_bytes()), Timestamp(0)),
            )
            .expect("send");
        }
        p.commit().expect("commit");
    }
}

/// On the defaults, however many segments a log writes, the files it keeps
/// open are its active segments; reading every segment opens at most
/// `max_open_segments` of them; and round after round of writes and reads
/// the count stays there: it does not grow with the segments written.
#[test]
fn a_long_run_holds_its_active_segments_and_those_read_lately_not_every_segment_written() {
    const PARTITIONS: u32 = 12;
    const ROUNDS: u64 = 30;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = EmbeddedConfig {
        segment_bytes: 1,
        ..EmbeddedConfig::default()
    };
    let bound = config.max_open_segments;
    let log = EmbeddedLog::open_with(dir.path(), config).expect("open");
    log.create_topic(&TopicSpec::new("long", PARTITIONS))
        .expect("topic");
    let tps: Vec<TopicPartition> = (0..PARTITIONS)
        .map(|p| TopicPartition::new("long", p))
        .collect();
    let (_, others) = open_under(dir.path());
    let mut written = 0;
    let mut most = 0;
    for round in 0..4 {
        write_rounds(&log, "long", PARTITIONS, ROUNDS);
        written += ROUNDS;
        let (segs, other) = open_under(dir.path());
        if round == 0 {
            assert_eq!(
                segs,
                PARTITIONS as usize,
                "after writing {} segments (none read), only the active segment of each partition is open",
                written * PARTITIONS as u64
            );
        } else {
            assert!(
                segs <= most,
                "round {round}: {segs} segment files open after writing, {most} before: growing"
            );
        }
        assert_eq!(other, others, "round {round}: no other file opened");
        let mut c = log.consumer("reader").expect("consumer");
        let read = stoatflow_log::contract::read_to_end(&mut c, &tps);
        assert_eq!(read.len() as u64, written * PARTITIONS as u64);
        drop(c);
        let (segs, other) = open_under(dir.path());
        assert!(
            segs <= bound,
            "round {round}: {segs} segment files open after reading {} segments, bound {bound}",
            written * PARTITIONS as u64
        );
        assert_eq!(other, others, "round {round}: no other file opened");
        if round > 0 {
            assert!(
                segs <= most,
                "round {round}: {segs} segment files open, {most} after the first round: growing"
            );
        }
        most = most.max(segs);
    }
    assert!(
        written * PARTITIONS as u64 > 2 * bound as u64,
        "the run writes more segments than twice the bound"
    );
}
