//! Regression tests for known holes in the log's recovery: damage the
//! recovery used to read as a torn tail (losing committed data without a
//! word), a failed open that destroyed files, crash shapes that refused to
//! open, and hostile bytes behind a valid checksum.

use std::path::{Path, PathBuf};

use stoatflow_log::{EmbeddedConfig, EmbeddedLog, Log, LogError};

use crate::files::{Files, frame, materialize, segments, snapshot, txlog};
use crate::small_log::{self, Built, build};

/// Opens a copy of `files`; returns the directory, the result, and the
/// files as the open left them.
fn open(
    files: &Files,
    config: &EmbeddedConfig,
) -> (tempfile::TempDir, Result<EmbeddedLog, LogError>) {
    let dir = materialize(files);
    let log = EmbeddedLog::open_with(dir.path(), config.clone());
    (dir, log)
}

/// Asserts a failed open reported `Corrupt` in `file` and changed no file.
fn assert_refused(files: &Files, config: &EmbeddedConfig, file: &Path) -> LogError {
    let (dir, result) = open(files, config);
    let err = result.expect_err("the damage must be reported");
    match &err {
        LogError::Corrupt { file: f, .. } => {
            assert_eq!(f, &dir.path().join(file), "names the damaged file: {err}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert_eq!(
        &snapshot(dir.path()),
        files,
        "a failed open changes nothing: {err}"
    );
    err
}

/// Frame boundaries of a file: the position after each frame.
fn frame_ends(bytes: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 8 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[pos..pos + 4].try_into().expect("4 bytes")) as usize;
        pos += 8 + len;
        out.push(pos);
    }
    out
}

fn closed_segment_with_frames(b: &Built, at_least: usize) -> PathBuf {
    let segs = segments(&b.files, "a", 0);
    assert!(segs.len() >= 3, "tiny segments roll: {segs:?}");
    segs[..segs.len() - 1]
        .iter()
        .find(|s| frame_ends(&b.files[*s]).len() >= at_least)
        .cloned()
        .expect("a closed segment with several batches")
}

#[test]
fn a_closed_segment_cut_inside_a_frame_is_corrupt_and_nothing_is_truncated() {
    let b = build(false, 10);
    let seg = segments(&b.files, "a", 0)[0].clone();
    let mut files = b.files.clone();
    let len = files[&seg].len();
    files.get_mut(&seg).expect("segment").truncate(len - 3);
    assert_refused(&files, &b.config, &seg);
}

#[test]
fn a_closed_segment_cut_at_a_frame_boundary_is_a_gap() {
    let b = build(false, 10);
    let seg = closed_segment_with_frames(&b, 2);
    let mut files = b.files.clone();
    let first = frame_ends(&files[&seg])[0];
    files.get_mut(&seg).expect("segment").truncate(first);
    let err = assert_refused(&files, &b.config, &seg);
    assert!(err.to_string().contains("missing"), "{err}");
}

#[test]
fn a_missing_segment_file_is_an_error_naming_partition_and_offsets() {
    let b = build(false, 10);
    let segs = segments(&b.files, "a", 0);
    let mut files = b.files.clone();
    files.remove(&segs[1]).expect("second segment");
    let (dir, result) = open(&files, &b.config);
    let err = result.expect_err("a gap must be reported");
    let msg = err.to_string();
    let base = |p: &PathBuf| -> u64 {
        p.file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse().ok())
            .expect("base")
    };
    assert!(msg.contains("a-0"), "{msg}");
    assert!(
        msg.contains(&format!("{}", base(&segs[1])))
            && msg.contains(&format!("{}", base(&segs[2]))),
        "names the missing offset range: {msg}"
    );
    assert_eq!(snapshot(dir.path()), files);
}

#[test]
fn the_first_segment_file_missing_is_an_error() {
    let b = build(false, 10);
    let segs = segments(&b.files, "a", 1);
    let mut files = b.files.clone();
    files.remove(&segs[0]).expect("first segment");
    let (dir, result) = open(&files, &b.config);
    let err = result.expect_err("records from offset 0 are missing");
    assert!(err.to_string().contains("a-1"), "{err}");
    assert_eq!(snapshot(dir.path()), files);
}

#[test]
fn a_damaged_length_in_an_old_transaction_log_frame_is_corrupt_not_a_torn_tail() {
    let b = build(false, 6);
    let txlog = txlog(&b.files);
    for bit in [0x10u8, 0x40, 0x80] {
        let mut files = b.files.clone();
        // Byte 2 of the first frame's length: it now runs past the end of the file.
        files.get_mut(&txlog).expect("txlog")[2] ^= bit;
        let err = assert_refused(&files, &b.config, &txlog);
        assert!(
            matches!(err, LogError::Corrupt { position: 0, .. }),
            "{err:?}"
        );
    }
}

#[test]
fn a_damaged_checkpoint_fails_the_open_and_keeps_every_file() {
    let b = build(true, 10);
    let txlog = txlog(&b.files);
    assert!(
        !txlog.to_string_lossy().contains("txn-00000000000000000000"),
        "rotated"
    );
    let checkpoint_end = frame_ends(&b.files[&txlog])[0];
    for keep_later_frames in [false, true] {
        let mut files = b.files.clone();
        let bytes = files.get_mut(&txlog).expect("txlog");
        if !keep_later_frames {
            bytes.truncate(checkpoint_end);
        }
        bytes[12] ^= 0x04;
        assert_refused(&files, &b.config, &txlog);
    }
}

#[test]
fn a_zero_filled_transaction_log_tail_is_a_torn_tail() {
    let b = build(false, 4);
    let txlog = txlog(&b.files);
    for zeros in [1usize, 7, 8, 100, 512, 4096] {
        let mut files = b.files.clone();
        files
            .get_mut(&txlog)
            .expect("txlog")
            .extend(std::iter::repeat_n(0u8, zeros));
        let (_dir, log) = open(&files, &b.config);
        let log = log.unwrap_or_else(|e| panic!("{zeros} zero bytes after the last frame: {e}"));
        assert_eq!(small_log::read(&log).expect("read"), b.observed[4]);
    }
}

/// The last commit carries a long metadata string, so its frame spans a
/// 512-byte sector boundary of the transaction log.
fn before_and_after_a_long_commit() -> (Files, Files, EmbeddedConfig) {
    let config = small_log::config(false);
    let dir = tempfile::tempdir().expect("tempdir");
    let log = EmbeddedLog::open_with(dir.path(), config.clone()).expect("open");
    small_log::create_topics(&log);
    let mut p = log.transactional_producer("tx").expect("producer");
    small_log::commit(&mut p, 1, 3);
    let before = snapshot(dir.path());
    use stoatflow_log::{Offset, OffsetAndMetadata, TransactionalProducer};
    p.begin().expect("begin");
    p.send_offsets(
        small_log::GROUP,
        &[(
            small_log::source(),
            OffsetAndMetadata {
                offset: Offset(1),
                metadata: "x".repeat(1500),
            },
        )],
    )
    .expect("offsets");
    p.commit().expect("commit");
    (before, snapshot(dir.path()), config)
}

#[test]
fn crash_shapes_of_an_unsynced_transaction_log_append_are_torn_tails() {
    let (before, after, config) = before_and_after_a_long_commit();
    let txlog = txlog(&after);
    let from = before[&txlog].len();
    let to = after[&txlog].len();
    let boundary = from.next_multiple_of(512);
    assert!(boundary + 512 < to, "the frame spans sectors {from}..{to}");
    let expect_before = {
        let (_d, log) = open(&before, &config);
        small_log::read(&log.expect("before opens")).expect("read")
    };
    let mut shapes: Vec<(&str, Vec<u8>)> = Vec::new();
    let full = after[&txlog].clone();
    // The start of the frame was lost (its sector never written), the rest made it.
    let mut lost_start = full.clone();
    lost_start[from..boundary].fill(0);
    shapes.push(("start lost", lost_start.clone()));
    shapes.push(("start lost, cut", lost_start[..boundary + 100].to_vec()));
    // A middle sector never written, the file length already extended.
    let mut hole = full.clone();
    hole[boundary..boundary + 512].fill(0);
    shapes.push(("middle sector lost", hole));
    // Size extended, nothing written.
    let mut nothing = full.clone();
    nothing[from..].fill(0);
    shapes.push(("all zero", nothing));
    // A prefix.
    shapes.push(("prefix", full[..from + 600].to_vec()));
    for (name, bytes) in shapes {
        let mut files = after.clone();
        files.insert(txlog.clone(), bytes);
        let (_dir, log) = open(&files, &config);
        let log = log.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            small_log::read(&log).expect("read"),
            expect_before,
            "{name}"
        );
    }
    // A flipped bit in the last frame is not a crash shape.
    let mut flipped = full.clone();
    flipped[boundary + 40] ^= 0x08;
    let mut files = after.clone();
    files.insert(txlog.clone(), flipped);
    assert_refused(&files, &config, &txlog);
}

// ---- hostile bytes behind a valid checksum -------------------------------

fn put_str(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(&(s.len() as u32).to_le_bytes());
    b.extend_from_slice(s.as_bytes());
}

fn topic_created(name: &str) -> Vec<u8> {
    let mut b = vec![2u8];
    put_str(&mut b, name);
    b.extend_from_slice(&1u32.to_le_bytes());
    b.push(0);
    b.extend_from_slice(&u64::MAX.to_le_bytes());
    b.extend_from_slice(&u64::MAX.to_le_bytes());
    frame(&b)
}

#[test]
fn a_topic_name_read_back_is_validated_before_it_becomes_a_path() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("x").join("y").join("log");
    std::fs::create_dir_all(&root).expect("mkdir");
    for name in ["../../escaped", "..", "", "a/b", "nul\0", &"n".repeat(300)] {
        std::fs::write(
            root.join("txn-00000000000000000000.log"),
            topic_created(name),
        )
        .expect("write");
        let err = EmbeddedLog::open(&root).expect_err("a hostile topic name must be refused");
        assert!(
            matches!(err, LogError::Corrupt { position: 0, .. }),
            "{name:?}: {err:?}"
        );
        assert!(
            !tmp.path().join("x").join("escaped").exists(),
            "wrote outside the data dir"
        );
    }
}

#[test]
fn a_transaction_sequence_at_its_maximum_is_corrupt_not_an_overflow() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A rotated generation: a checkpoint with next_txn = u64::MAX and one
    // producer, then a commit with txn u64::MAX.
    let mut cp = vec![1u8];
    cp.extend_from_slice(&u64::MAX.to_le_bytes());
    cp.extend_from_slice(&0u32.to_le_bytes()); // topics
    cp.extend_from_slice(&0u32.to_le_bytes()); // ends
    cp.extend_from_slice(&0u32.to_le_bytes()); // offsets
    cp.extend_from_slice(&1u32.to_le_bytes()); // producers
    put_str(&mut cp, "tx");
    cp.extend_from_slice(&0u32.to_le_bytes());
    let mut commit = vec![4u8];
    commit.extend_from_slice(&u64::MAX.to_le_bytes());
    put_str(&mut commit, "tx");
    commit.extend_from_slice(&0u32.to_le_bytes()); // epoch
    commit.extend_from_slice(&0u32.to_le_bytes()); // parts
    commit.extend_from_slice(&0u32.to_le_bytes()); // offsets
    let mut bytes = frame(&cp);
    let at = bytes.len() as u64;
    bytes.extend(frame(&commit));
    std::fs::write(tmp.path().join("txn-00000000000000000001.log"), bytes).expect("write");
    let err = EmbeddedLog::open(tmp.path()).expect_err("must be refused");
    assert!(
        matches!(err, LogError::Corrupt { position, .. } if position == at),
        "{err:?}"
    );
}

#[test]
fn bytes_after_the_committed_records_are_dropped_only_in_the_last_segment() {
    let b = build(false, 10);
    let segs = segments(&b.files, "a", 0);
    let tails: [(&str, Vec<u8>); 3] = [
        ("zeros", vec![0u8; 700]),
        (
            "garbage",
            (0..300u32).map(|i| (i * 37 % 251) as u8).collect(),
        ),
        ("a cut header", vec![0x30, 0, 0]),
    ];
    for (name, tail) in tails {
        let mut files = b.files.clone();
        files
            .get_mut(segs.last().expect("last"))
            .expect("segment")
            .extend(&tail);
        let (_dir, log) = open(&files, &b.config);
        let log = log.unwrap_or_else(|e| panic!("{name} after the last segment: {e}"));
        assert_eq!(
            small_log::read(&log).expect("read"),
            b.observed[10],
            "{name}"
        );
        let mut files = b.files.clone();
        files.get_mut(&segs[0]).expect("segment").extend(&tail);
        assert_refused(&files, &b.config, &segs[0]);
    }
}
