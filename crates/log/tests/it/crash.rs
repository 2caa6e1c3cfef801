//! Crash tests: a crash at any byte of a commit leaves exactly the state
//! before or the state after it; damage inside committed data is reported
//! with file and position, never skipped.

use std::path::{Path, PathBuf};

use crate::files::{Files, materialize, snapshot};

use stoatflow_log::contract::read_to_end;
use stoatflow_log::{
    EmbeddedLog, Log, LogError, Offset, OffsetAndMetadata, Record, Timestamp, TopicPartition,
    TopicSpec, TransactionalProducer,
};

fn partitions() -> Vec<TopicPartition> {
    vec![
        TopicPartition::new("a", 0),
        TopicPartition::new("a", 1),
        TopicPartition::new("b", 0),
    ]
}

/// Everything a reader can observe.
#[derive(Debug, PartialEq, Eq)]
struct Visible {
    records: Vec<(String, u32, u64, Option<Vec<u8>>)>,
    offsets: Vec<Option<OffsetAndMetadata>>,
}

fn visible(dir: &Path) -> Result<Visible, LogError> {
    let log = EmbeddedLog::open(dir)?;
    let mut c = log.consumer("observer")?;
    let records = read_to_end(&mut c, &partitions())
        .into_iter()
        .map(|r| {
            (
                r.partition.topic,
                r.partition.partition.0,
                r.offset.0,
                r.record.value,
            )
        })
        .collect();
    let offsets = log
        .committed_offsets("app", &[TopicPartition::new("src", 0)])?
        .into_iter()
        .map(|(_, o)| o)
        .collect();
    Ok(Visible { records, offsets })
}

fn commit_epoch(p: &mut impl TransactionalProducer, epoch: u64, n: usize) {
    p.begin().expect("begin");
    for (i, tp) in partitions().iter().cycle().take(n).enumerate() {
        let value = format!("e{epoch}-r{i}");
        let rec = Record::new(
            Some(value.as_bytes()),
            Some(value.as_bytes()),
            Timestamp(i as i64),
        )
        .with_header("h", Some(b"x"));
        p.send(tp, &rec).expect("send");
    }
    // A record for the offset below to point at (an offset past the end is
    // refused); every epoch commits offset 1, told apart by its metadata.
    let src = TopicPartition::new("src", 0);
    p.send(&src, &Record::new(None, Some(b"s"), Timestamp(0)))
        .expect("send");
    p.send_offsets(
        "app",
        &[(
            src,
            OffsetAndMetadata {
                offset: Offset(1),
                metadata: format!("epoch {epoch}"),
            },
        )],
    )
    .expect("offsets");
    p.commit().expect("commit");
}

/// Returns (files before the last commit, files after it).
fn before_and_after() -> (Files, Files) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = EmbeddedLog::open(dir.path()).expect("open");
    log.create_topic(&TopicSpec::new("a", 2)).expect("create");
    log.create_topic(&TopicSpec::new("b", 1)).expect("create");
    log.create_topic(&TopicSpec::new("src", 1)).expect("create");
    let mut p = log.transactional_producer("tx").expect("producer");
    commit_epoch(&mut p, 1, 7);
    commit_epoch(&mut p, 2, 5);
    let before = snapshot(dir.path());
    commit_epoch(&mut p, 3, 6);
    let after = snapshot(dir.path());
    (before, after)
}

/// The bytes each file gained, in the order the commit writes them:
/// segments (by topic and partition), then the transaction log.
fn appended(before: &Files, after: &Files) -> Vec<(PathBuf, usize, usize)> {
    let mut segs = Vec::new();
    let mut txlog = Vec::new();
    for (rel, bytes) in after {
        let old = before.get(rel).map_or(0, Vec::len);
        assert!(bytes.len() >= old, "{} shrank", rel.display());
        assert_eq!(
            &bytes[..old],
            &before.get(rel).cloned().unwrap_or_default()[..],
            "commit only appends"
        );
        if bytes.len() > old {
            let entry = (rel.clone(), old, bytes.len());
            if rel.to_string_lossy().starts_with("txn-") {
                txlog.push(entry);
            } else {
                segs.push(entry);
            }
        }
    }
    assert_eq!(
        segs.len(),
        4,
        "the commit touches three segments and the source's"
    );
    assert_eq!(txlog.len(), 1, "and the transaction log");
    segs.extend(txlog);
    segs
}

#[test]
fn crash_at_every_byte_of_a_commit_is_before_or_after() {
    let (before, after) = before_and_after();
    let v_before = visible(materialize(&before).path()).expect("before opens");
    let v_after = visible(materialize(&after).path()).expect("after opens");
    assert_ne!(v_before, v_after);
    let writes = appended(&before, &after);
    let total: usize = writes.iter().map(|(_, from, to)| to - from).sum();
    // Crash after k bytes of the commit's writes reached the disk, in order.
    for k in 0..=total {
        let mut files = after.clone();
        let mut left = k;
        for (rel, from, to) in &writes {
            let keep = left.min(to - from);
            left -= keep;
            files.get_mut(rel).expect("file").truncate(from + keep);
        }
        let dir = materialize(&files);
        let v = visible(dir.path()).unwrap_or_else(|e| panic!("open after crash at byte {k}: {e}"));
        if k == total {
            assert_eq!(v, v_after, "all bytes written: after");
        } else {
            assert_eq!(v, v_before, "crash at byte {k} of {total}: must be before");
        }
    }
}

#[test]
fn truncating_any_one_file_inside_the_last_commit_is_before_or_after() {
    let (before, after) = before_and_after();
    let v_before = visible(materialize(&before).path()).expect("before opens");
    let v_after = visible(materialize(&after).path()).expect("after opens");
    for (rel, from, to) in appended(&before, &after) {
        for cut in from..=to {
            let mut files = after.clone();
            files.get_mut(&rel).expect("file").truncate(cut);
            let dir = materialize(&files);
            let v = visible(dir.path())
                .unwrap_or_else(|e| panic!("open after cutting {} at {cut}: {e}", rel.display()));
            if cut == to {
                assert_eq!(v, v_after);
            } else {
                assert_eq!(v, v_before, "{} cut at {cut} of {to}", rel.display());
            }
            // The recovered log takes new commits.
            if cut == from + (to - from) / 2 {
                let log = EmbeddedLog::open(dir.path()).expect("reopen");
                let mut p = log.transactional_producer("tx").expect("producer");
                commit_epoch(&mut p, 9, 3);
            }
        }
    }
}

#[test]
fn a_bad_checksum_mid_segment_is_reported_with_file_and_offset() {
    let (_, after) = before_and_after();
    let seg = PathBuf::from("topics/a/0/00000000000000000000.seg");
    let bytes = &after[&seg];
    // Flip a byte in the first batch's body; later batches follow it.
    let mut files = after.clone();
    files.get_mut(&seg).expect("segment")[40] ^= 0x55;
    let dir = materialize(&files);
    let err = EmbeddedLog::open(dir.path()).expect_err("corruption must be reported");
    match &err {
        LogError::Corrupt { file, position, .. } => {
            assert_eq!(file, &dir.path().join(&seg));
            assert_eq!(*position, 0, "the first batch starts at byte 0");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("00000000000000000000.seg") && msg.contains("byte 0"),
        "{msg}"
    );
    assert!(bytes.len() > 100);
}

#[test]
fn a_bad_checksum_mid_transaction_log_is_reported() {
    let (_, after) = before_and_after();
    let (rel, _) = after
        .iter()
        .find(|(r, _)| r.to_string_lossy().starts_with("txn-"))
        .expect("txlog");
    let mut files = after.clone();
    files.get_mut(rel).expect("txlog")[10] ^= 1;
    let dir = materialize(&files);
    let err = EmbeddedLog::open(dir.path()).expect_err("corruption must be reported");
    assert!(
        matches!(err, LogError::Corrupt { position: 0, .. }),
        "{err:?}"
    );
}

#[test]
fn committed_records_missing_before_the_last_commit_are_corruption() {
    let (before, after) = before_and_after();
    let seg = PathBuf::from("topics/a/0/00000000000000000000.seg");
    let mut files = after.clone();
    // Cut into the second commit's data, not the last one's.
    let cut = before[&seg].len() - 5;
    files.get_mut(&seg).expect("segment").truncate(cut);
    let dir = materialize(&files);
    let err = EmbeddedLog::open(dir.path()).expect_err("lost committed data must be reported");
    assert!(matches!(err, LogError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("is committed"), "{err}");
}
