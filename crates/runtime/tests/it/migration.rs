//! Taking over from Kafka Streams (docs/state.md#takeover): the test writes,
//! in Kafka Streams' own byte layouts, what a Kafka Streams application with
//! the same id and store names left on the log (its input, its committed
//! offsets with partition-time metadata, its window and session changelogs),
//! then runs our app with `migration_from_kafka_streams` on the rest of the
//! input. Each final result must appear exactly once across what Kafka
//! Streams emitted and what we emit.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::{
    EmbeddedLog, Log, Offset, OffsetAndMetadata, Record, Timestamp, TopicPartition, TopicSpec,
    TransactionalProducer,
};
use stoatflow_runtime::StreamsApp;
use stoatflow_streams::{
    EmitStrategy, Materialized, Produced, Serde, Serdes, SessionWindows, StreamsBuilder,
    TimeWindows, Topology, Windowed,
};

use crate::support::*;

const APP: &str = "migrated";
const EVENTS: &str = "ks-events";
const COUNTS: &str = "ks-counts";
const SESSIONS: &str = "ks-sessions";
const T0: i64 = START;
const SIZE: i64 = 10_000;
const GRACE: i64 = 5_000;
const GAP: i64 = 5_000;
const SESSION_GRACE: i64 = 2_000;

fn ms(v: i64) -> Duration {
    Duration::from_millis(v as u64)
}

/// A tumbling count and a session count of one input, both final results
/// only, in stores named as the Kafka Streams application named them.
fn topology() -> Topology {
    let mut builder = StreamsBuilder::new();
    let grouped = source(&mut builder, EVENTS).group_by_key();
    grouped
        .windowed_by(TimeWindows::of_size_and_grace(ms(SIZE), ms(GRACE)))
        .emit_strategy(EmitStrategy::on_window_close())
        .count_with(Materialized::as_("counts"))
        .to_stream()
        .to(
            COUNTS,
            Produced::with(Serdes::time_windowed(Serdes::string(), SIZE), Serdes::i64()),
        );
    grouped
        .windowed_by(SessionWindows::of_inactivity_gap_and_grace(
            ms(GAP),
            ms(SESSION_GRACE),
        ))
        .emit_strategy(EmitStrategy::on_window_close())
        .count_with(Materialized::as_("sessions"))
        .to_stream()
        .to(
            SESSIONS,
            Produced::with(Serdes::session_windowed(Serdes::string()), Serdes::i64()),
        );
    builder.build().unwrap()
}

/// Java's `Base64.getEncoder()` (RFC 4648, padded), written here so the
/// metadata is the test's own bytes.
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            out.push(if i <= c.len() {
                char::from(A[(n >> (18 - 6 * i)) as usize & 63])
            } else {
                '='
            });
        }
    }
    out
}

/// Kafka Streams' `TopicPartitionMetadata`: base64 of magic byte 2, the
/// partition time as a big-endian long, then its `ProcessorMetadata` (none
/// at all when empty, else an int count and per entry an int key length,
/// the UTF-8 key and a long value).
fn kafka_streams_offset_metadata(partition_time: i64, processor: &[(&str, i64)]) -> String {
    let mut bytes = vec![2u8];
    bytes.extend_from_slice(&partition_time.to_be_bytes());
    if !processor.is_empty() {
        bytes.extend_from_slice(&(processor.len() as i32).to_be_bytes());
        for (key, value) in processor {
            bytes.extend_from_slice(&(key.len() as i32).to_be_bytes());
            bytes.extend_from_slice(key.as_bytes());
            bytes.extend_from_slice(&value.to_be_bytes());
        }
    }
    base64(&bytes)
}

/// A `TimestampedWindowStore` changelog record: key = key bytes, window
/// start (long BE), sequence number 0 (int BE); value = the plain count;
/// the record timestamp = the aggregate's timestamp.
fn window_record(key: &str, start: i64, count: i64, ts: i64) -> Record {
    let mut k = key.as_bytes().to_vec();
    k.extend_from_slice(&start.to_be_bytes());
    k.extend_from_slice(&0i32.to_be_bytes());
    Record::new(Some(&k), Some(&count.to_be_bytes()), Timestamp(ts))
}

/// A `SessionStore` changelog record: key = key bytes, session end (long
/// BE), session start (long BE); value = the plain count, or a tombstone.
fn session_record(key: &str, start: i64, end: i64, count: Option<i64>, ts: i64) -> Record {
    let mut k = key.as_bytes().to_vec();
    k.extend_from_slice(&end.to_be_bytes());
    k.extend_from_slice(&start.to_be_bytes());
    let v = count.map(i64::to_be_bytes);
    Record::new(Some(&k), v.as_ref().map(|v| &v[..]), Timestamp(ts))
}

fn event(key: &str, ts: i64) -> Record {
    Record::new(
        Some(key.as_bytes()),
        Some(&1i64.to_be_bytes()),
        Timestamp(ts),
    )
}

/// What the Kafka Streams application left: it processed `a@1s a@2s b@15s
/// a@21s` (stream time 21 s), so its suppress emitted the tumbling window
/// `a@[0,10)` (10 + 5 <= 21) and the session `a@[1,2]` (2 + 5 + 2 <= 21);
/// `b@[10,20)`, `a@[20,30)` and the sessions `b@[15]`, `a@[21]` are still
/// open, in its changelogs.
/// `processor` is the processor metadata committed with the offsets.
fn write_kafka_streams_leftovers(log: &EmbeddedLog, processor: &[(&str, i64)]) {
    let tp = |t: &str| TopicPartition::new(t, 0);
    let mut input = log.transactional_producer("ks-input").unwrap();
    input.begin().unwrap();
    for (k, t) in [("a", 1_000), ("a", 2_000), ("b", 15_000), ("a", 21_000)] {
        input.send(&tp(EVENTS), &event(k, T0 + t)).unwrap();
    }
    input.commit().unwrap();

    // One Kafka Streams transaction: changelog records and the offsets.
    let mut ks = log
        .transactional_producer(&format!("{APP}-ks-0_0"))
        .unwrap();
    ks.begin().unwrap();
    let counts = tp(&format!("{APP}-counts-changelog"));
    for r in [
        window_record("a", T0, 1, T0 + 1_000),
        window_record("a", T0, 2, T0 + 2_000),
        window_record("b", T0 + 10_000, 1, T0 + 15_000),
        window_record("a", T0 + 20_000, 1, T0 + 21_000),
    ] {
        ks.send(&counts, &r).unwrap();
    }
    let sessions = tp(&format!("{APP}-sessions-changelog"));
    for r in [
        session_record("a", T0 + 1_000, T0 + 1_000, Some(1), T0 + 1_000),
        // The merge removes the one-record session and writes the merged one.
        session_record("a", T0 + 1_000, T0 + 1_000, None, T0 + 2_000),
        session_record("a", T0 + 1_000, T0 + 2_000, Some(2), T0 + 2_000),
        session_record("b", T0 + 15_000, T0 + 15_000, Some(1), T0 + 15_000),
        session_record("a", T0 + 21_000, T0 + 21_000, Some(1), T0 + 21_000),
    ] {
        ks.send(&sessions, &r).unwrap();
    }
    ks.send_offsets(
        APP,
        &[(
            tp(EVENTS),
            OffsetAndMetadata {
                offset: Offset(4),
                metadata: kafka_streams_offset_metadata(T0 + 21_000, processor),
            },
        )],
    )
    .unwrap();
    ks.commit().unwrap();
}

/// Finals read back: (key, window start, window end) to every count emitted.
type Emitted = BTreeMap<(String, i64, i64), Vec<i64>>;

fn read_counts(log: &EmbeddedLog) -> Emitted {
    let serde = Serdes::time_windowed(Serdes::string(), SIZE);
    read_windowed(log, COUNTS, |b| serde.deserialize(COUNTS, b).unwrap())
}

fn read_sessions(log: &EmbeddedLog) -> Emitted {
    let serde = Serdes::session_windowed(Serdes::string());
    read_windowed(log, SESSIONS, |b| serde.deserialize(SESSIONS, b).unwrap())
}

fn read_windowed(
    log: &EmbeddedLog,
    topic: &str,
    key: impl Fn(&[u8]) -> Windowed<String>,
) -> Emitted {
    let mut out = Emitted::new();
    for r in read_topic(log, topic, 1) {
        let w = key(&r.record.key.unwrap());
        let count = i64::from_be_bytes(r.record.value.unwrap().try_into().unwrap());
        out.entry((w.key, w.window.start, w.window.end))
            .or_default()
            .push(count);
    }
    out.retain(|(k, ..), _| k != "z");
    out
}

fn window(key: &str, start: i64, end: i64, counts: &[i64]) -> ((String, i64, i64), Vec<i64>) {
    ((key.into(), T0 + start, T0 + end), counts.to_vec())
}

fn send_events(log: &EmbeddedLog, id: &str, events: &[(&str, i64)]) {
    let mut producer = log.transactional_producer(id).unwrap();
    producer.begin().unwrap();
    for (k, t) in events {
        producer
            .send(&TopicPartition::new(EVENTS, 0), &event(k, T0 + t))
            .unwrap();
    }
    producer.commit().unwrap();
}

/// Runs the app with migration asked for (on disk when `state` is given)
/// until the input is consumed, then closes it.
fn run(log: &Arc<EmbeddedLog>, state: Option<&Path>) {
    let mut config = config(APP, 1);
    config.migration_from_kafka_streams = true;
    if let Some(dir) = state {
        config = config.with_state_dir(dir);
    }
    let mut app = StreamsApp::with_log(topology(), config, log.clone()).unwrap();
    start_and_finish(&mut app);
}

/// A log with the topics and what Kafka Streams left.
fn log_left_by_kafka_streams(processor: &[(&str, i64)]) -> Arc<EmbeddedLog> {
    let log = Arc::new(EmbeddedLog::in_memory());
    for t in [EVENTS, COUNTS, SESSIONS] {
        log.create_topic(&TopicSpec::new(t, 1)).unwrap();
    }
    for store in ["counts", "sessions"] {
        log.create_topic(&TopicSpec::new(format!("{APP}-{store}-changelog"), 1).compacted())
            .unwrap();
    }
    write_kafka_streams_leftovers(&log, processor);
    log
}

/// The takeover, then an ordinary restart with the flag still set.
fn take_over_then_restart(state: Option<&Path>) {
    let log = log_left_by_kafka_streams(&[]);
    // What Kafka Streams emitted (by its suppress, on its stream time).
    let ks_counts = Emitted::from([window("a", 0, 10_000, &[2])]);
    let ks_sessions = Emitted::from([window("a", 1_000, 2_000, &[2])]);

    // The rest of the input: a late record for the window Kafka Streams
    // closed, updates of the open windows and sessions, then a far record
    // that closes them all.
    send_events(
        &log,
        "rest-input",
        &[("a", 3_000), ("b", 16_000), ("a", 23_000), ("z", 100_000)],
    );
    run(&log, state);

    let ours_counts = read_counts(&log);
    let ours_sessions = read_sessions(&log);
    let mut expected_counts = Emitted::from([
        window("b", 10_000, 20_000, &[2]),
        window("a", 20_000, 30_000, &[2]),
    ]);
    let mut expected_sessions = Emitted::from([
        window("b", 15_000, 16_000, &[2]),
        window("a", 21_000, 23_000, &[2]),
    ]);
    assert_eq!(
        ours_counts, expected_counts,
        "the windows Kafka Streams left open, each once, with their restored counts"
    );
    assert_eq!(
        ours_sessions, expected_sessions,
        "the sessions Kafka Streams left open, merged with the new records, each once"
    );
    for (ks, ours) in [(&ks_counts, &ours_counts), (&ks_sessions, &ours_sessions)] {
        for w in ks.keys() {
            assert!(!ours.contains_key(w), "{w:?} emitted by both");
        }
    }

    // A restart after the takeover is an ordinary one (a barrier has
    // committed): our own changelogs and emit frontiers restore, nothing is
    // emitted again, and new windows close as usual.
    send_events(&log, "more-input", &[("b", 200_000), ("z", 300_000)]);
    run(&log, state);
    expected_counts.extend([window("b", 200_000, 210_000, &[1])]);
    expected_sessions.extend([window("b", 200_000, 200_000, &[1])]);
    assert_eq!(read_counts(&log), expected_counts);
    assert_eq!(read_sessions(&log), expected_sessions);
}

#[test]
fn a_takeover_from_kafka_streams_emits_each_final_result_once_across_both() {
    take_over_then_restart(None);
}

#[test]
fn a_takeover_restores_kafka_streams_changelogs_into_stores_on_disk() {
    let state = scratch_dir();
    take_over_then_restart(Some(state.path()));
}

/// Kafka Streams' own on-window-close emission (KIP-825) is throttled and
/// commits, per store, the window close time it emitted through: that, not
/// the stream time, says what it emitted. Here it emitted no window (its
/// last close time, 5 s, is before the first window's end) and no session
/// (1.5 s, before the first session's end), so we emit them all, once.
#[test]
fn a_takeover_reads_what_kafka_streams_emit_final_emitted_from_the_offsets() {
    let log = log_left_by_kafka_streams(&[("counts", T0 + 5_000), ("sessions", T0 + 1_500)]);
    send_events(
        &log,
        "rest-input",
        &[("a", 3_000), ("b", 16_000), ("a", 23_000), ("z", 100_000)],
    );
    run(&log, None);
    assert_eq!(
        read_counts(&log),
        Emitted::from([
            window("a", 0, 10_000, &[2]),
            window("b", 10_000, 20_000, &[2]),
            window("a", 20_000, 30_000, &[2]),
        ])
    );
    assert_eq!(
        read_sessions(&log),
        Emitted::from([
            window("a", 1_000, 2_000, &[2]),
            window("b", 15_000, 16_000, &[2]),
            window("a", 21_000, 23_000, &[2]),
        ])
    );
}
