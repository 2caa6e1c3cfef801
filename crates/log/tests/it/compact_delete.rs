//! A `compact,delete` topic (a windowed changelog) on the embedded log: its
//! closed segments go once their newest record is older than the
//! partition's newest record less the retention, judged on record
//! timestamps, not the wall clock; it is compacted as well; the policy and
//! its retention survive a reopen.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use stoatflow_log::contract::read_to_end;
use stoatflow_log::{
    CleanupPolicy, Consumer, EmbeddedConfig, EmbeddedLog, Log, Record, Timestamp, TopicPartition,
    TopicSpec, TransactionalProducer,
};

/// Event time of the first round: 1970, so a retention judged against the
/// wall clock would drop every closed segment.
const BASE: i64 = 1_000_000;
const ROUND_MS: i64 = 1_000;
const ROUNDS: i64 = 60;
const RETENTION_MS: i64 = 10_000;

fn wall_now() -> Timestamp {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis();
    Timestamp(i64::try_from(ms).expect("fits"))
}

/// Round `r` writes, at `BASE + r * ROUND_MS`, five keys of its own and
/// the key `live` again (one transaction per round).
fn write_rounds(log: &EmbeddedLog, tp: &TopicPartition) {
    let mut p = log.transactional_producer("w").expect("producer");
    for r in 0..ROUNDS {
        let ts = Timestamp(BASE + r * ROUND_MS);
        p.begin().expect("begin");
        for k in 0..5 {
            let key = format!("r{r}-k{k}");
            let record = Record::new(Some(key.as_bytes()), Some(&[r as u8; 48]), ts);
            p.send(tp, &record).expect("send");
        }
        let live = r.to_be_bytes();
        p.send(tp, &Record::new(Some(b"live"), Some(&live), ts))
            .expect("send");
        p.commit().expect("commit");
    }
}

/// The latest value and timestamp of each key, reading from the log start.
fn latest(log: &EmbeddedLog, tp: &TopicPartition) -> BTreeMap<Vec<u8>, (Vec<u8>, i64)> {
    let mut c = log.consumer("reader").expect("consumer");
    read_to_end(&mut c, std::slice::from_ref(tp))
        .into_iter()
        .map(|r| {
            (
                r.record.key.expect("keyed"),
                (r.record.value.expect("no tombstone"), r.record.timestamp.0),
            )
        })
        .collect()
}

#[test]
fn closed_segments_past_the_retention_go_by_record_time_and_the_live_keys_stay() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = EmbeddedConfig {
        segment_bytes: 1_000,
        ..EmbeddedConfig::default()
    };
    let tp = TopicPartition::new("w", 0);
    let spec =
        TopicSpec::new("w", 1).compacted_with_retention(Duration::from_millis(RETENTION_MS as u64));
    {
        let log = EmbeddedLog::open_with(dir.path(), config.clone()).expect("open");
        log.create_topic(&spec).expect("create");
        write_rounds(&log, &tp);
        let report = log.maintain(wall_now()).expect("maintain");
        assert!(report.deleted_segments > 0, "{report:?}");
        // Compacted as well: older records of `live` went.
        assert!(report.compacted_records > 0, "{report:?}");
    }
    // Reopened: the policy, the retention and the new log start held.
    let log = EmbeddedLog::open_with(dir.path(), config).expect("reopen");
    let found = log.topics().into_iter().find(|s| s.name == "w");
    assert_eq!(found.as_ref(), Some(&spec));
    assert_eq!(
        found.map(|s| s.shape.cleanup),
        Some(CleanupPolicy::CompactDelete)
    );
    let mut c = log.consumer("start").expect("consumer");
    assert!(c.beginning_offset(&tp).expect("start").0 > 0);

    let newest = BASE + (ROUNDS - 1) * ROUND_MS;
    let kept = latest(&log, &tp);
    // Every key written within the retention of the newest record is there
    // with its latest value (a segment goes whole, only once its newest
    // record is past the retention)...
    for r in 0..ROUNDS {
        let ts = BASE + r * ROUND_MS;
        for k in 0..5 {
            let key = format!("r{r}-k{k}").into_bytes();
            if ts >= newest - RETENTION_MS {
                assert_eq!(kept.get(&key), Some(&(vec![r as u8; 48], ts)), "round {r}");
            } else if ts < newest - 2 * RETENTION_MS {
                // ...and the rounds well past it are gone (a segment spans
                // about two rounds).
                assert_eq!(kept.get(&key), None, "round {r}");
            }
        }
    }
    assert_eq!(
        kept.get(b"live".as_slice()),
        Some(&((ROUNDS - 1).to_be_bytes().to_vec(), newest))
    );
}

#[test]
fn nothing_goes_while_every_record_is_within_the_retention_of_the_newest() {
    let log = EmbeddedLog::in_memory_with(EmbeddedConfig {
        segment_bytes: 1_000,
        ..EmbeddedConfig::default()
    });
    let tp = TopicPartition::new("w", 0);
    // The retention spans every round written.
    let span = Duration::from_millis((ROUNDS * ROUND_MS) as u64);
    log.create_topic(&TopicSpec::new("w", 1).compacted_with_retention(span))
        .expect("create");
    write_rounds(&log, &tp);
    // Judged against a wall clock far past every record: still nothing.
    let report = log.maintain(Timestamp(i64::MAX / 2)).expect("maintain");
    assert_eq!(report.deleted_segments, 0, "{report:?}");
    let kept = latest(&log, &tp);
    assert_eq!(kept.len(), (ROUNDS * 5 + 1) as usize);
}
