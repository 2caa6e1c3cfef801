//! The DSL's stores on disk (`<state dir>/<task>/<store>`): a crash and a
//! restart give the uninterrupted run's output; a graceful restart reopens
//! the local copy and restores only the changelog tail past its checkpoint;
//! a damaged local copy falls back to a full restore.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::TransactionalProducer;
use stoatflow_log::{EmbeddedLog, Log, Record, Timestamp, TopicPartition, TopicSpec};
use stoatflow_runtime::{AppState, RuntimeConfig, StreamsApp, partition_for_key};
use stoatflow_streams::{Materialized, Produced, Serdes, Stores, StreamsBuilder, Topology};

use crate::support::*;

const TOTALS: &str = "totals";
const TOTALS_OUT: &str = "totals-out";

/// A running count per key in a store named by an explicit persistent supplier.
fn totals() -> Topology {
    let mut builder = StreamsBuilder::new();
    source(&mut builder, INPUT)
        .group_by_key()
        .count_with(Materialized::as_(Stores::persistent_key_value_store(
            TOTALS,
        )))
        .to_stream()
        .to(TOTALS_OUT, Produced::with(Serdes::string(), Serdes::i64()));
    builder.build().unwrap()
}

fn on_disk(app: &str, lanes: usize, state: &Path) -> RuntimeConfig {
    config(app, lanes).with_state_dir(state)
}

/// Starts `topology`, waits until the input is consumed; returns the app
/// (still running) and the records its start restored.
fn start<L: Log + 'static>(
    topology: Topology,
    config: RuntimeConfig,
    log: &Arc<L>,
) -> (StreamsApp<L>, u64) {
    let mut app = StreamsApp::with_log(topology, config, log.clone()).unwrap();
    app.start().unwrap();
    // Restored before RUNNING; "caught up" can be true before the restore ends.
    assert_eq!(
        app.wait_for_state(AppState::Running, Duration::from_secs(60)),
        AppState::Running,
        "{:?}",
        app.error()
    );
    assert!(
        app.wait_until_caught_up(Duration::from_secs(60)).unwrap(),
        "caught up; state {}, error {:?}",
        app.state(),
        app.error()
    );
    let restored = app.restored_records();
    (app, restored)
}

/// The last count per key in the committed output of [`totals`].
fn last_totals(log: &EmbeddedLog) -> std::collections::BTreeMap<String, i64> {
    let mut consumer = log.consumer("totals-reader").unwrap();
    let tps: Vec<_> = (0..PARTITIONS)
        .map(|p| TopicPartition::new(TOTALS_OUT, p))
        .collect();
    let read = stoatflow_log::contract::read_to_end(&mut consumer, &tps);
    read.into_iter()
        .map(|r| {
            let key = String::from_utf8(r.record.key.unwrap()).unwrap();
            let value = i64::from_be_bytes(r.record.value.unwrap().try_into().unwrap());
            (key, value)
        })
        .collect()
}

#[test]
fn a_crash_then_a_restart_on_persistent_stores_gives_the_uninterrupted_output() {
    let records = input(600, 7, 11);
    let expected = regular(driver_finals(tumbling_count(), &records));
    for (run, lanes) in [(0u64, 1usize), (1, 2), (2, 2)] {
        let state = scratch_dir();
        let log = Arc::new(EmbeddedLog::in_memory());
        create_topics(&*log);
        let (first, rest) = records.split_at(records.len() / 2);
        produce(&*log, first, 25);
        let app_id = format!("persistent-crash-{run}");
        let config = || on_disk(&app_id, lanes, state.path());
        let (app, _) = start(tumbling_count(), config(), &log);
        // The window store lives on disk, per task.
        assert!(std::fs::read_dir(state.path().join("0_0")).unwrap().count() > 0);
        drop(app); // a crash: no checkpoint
        produce(&*log, rest, 25);
        if run == 2 {
            let (again, restored) = start(tumbling_count(), config(), &log);
            assert!(restored > 0, "an unclean stop restores in full");
            drop(again);
        }
        let (mut app, _) = start(tumbling_count(), config(), &log);
        assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());
        let engine = regular(read_output(&*log));
        assert_each_once(&engine);
        assert_eq!(engine, expected, "run {run}");
    }
}

/// An in-memory log with the topics of [`totals`] and `records` on its input.
fn totals_log(records: &[Input]) -> Arc<EmbeddedLog> {
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    log.create_topic(&TopicSpec::new(TOTALS_OUT, PARTITIONS))
        .unwrap();
    produce(&*log, records, 20);
    log
}

#[test]
fn a_graceful_restart_restores_only_the_changelog_tail_past_the_checkpoint() {
    let state = scratch_dir();
    let records = input(200, 5, 3);
    let log = totals_log(&records);
    let config = || on_disk("tail", 2, state.path());

    let (mut app, restored) = start(totals(), config(), &log);
    assert_eq!(restored, 0);
    assert!(app.close(Duration::from_secs(30)));
    let before = last_totals(&log);

    // A clean close: the local copy is trusted and nothing before its
    // checkpoint is read again.
    let (mut app, restored) = start(totals(), config(), &log);
    assert_eq!(restored, 0, "the whole changelog was read again");
    assert!(app.close(Duration::from_secs(30)));

    // Committed changelog records past the checkpoint (as another instance
    // would have left them) are the tail: exactly they are read, and the
    // count goes on from them.
    let key = "k0";
    let p = partition_for_key(key.as_bytes(), PARTITIONS);
    let changelog = TopicPartition::new(format!("tail-{TOTALS}-changelog"), p);
    let mut producer = log.transactional_producer("another-instance").unwrap();
    producer.begin().unwrap();
    for total in [1_000i64, 2_000] {
        // Kafka Streams' timestamped layout: the plain value, its timestamp
        // in the record's.
        let record = Record::new(
            Some(key.as_bytes()),
            Some(&total.to_be_bytes()),
            Timestamp(7),
        );
        producer.send(&changelog, &record).unwrap();
    }
    producer.commit().unwrap();
    produce(
        &*log,
        &[Input {
            key: key.into(),
            ts: records.last().unwrap().ts,
            value: 1,
        }],
        1,
    );
    let (mut app, restored) = start(totals(), config(), &log);
    assert_eq!(restored, 2, "only the tail past the checkpoint");
    assert!(app.close(Duration::from_secs(30)));
    assert_eq!(last_totals(&log)[key], 2_001, "before: {}", before[key]);
}

#[test]
fn a_damaged_local_copy_is_restored_in_full_from_the_changelog() {
    let state = scratch_dir();
    let records = input(150, 4, 8);
    let log = totals_log(&records);
    let config = || on_disk("damaged", 1, state.path());
    let (mut app, _) = start(totals(), config(), &log);
    assert!(app.close(Duration::from_secs(30)));
    let before = last_totals(&log);

    // Every task's store loses its files' integrity: one byte appended to
    // the largest file of each local copy.
    let mut damaged = 0;
    for task in std::fs::read_dir(state.path()).unwrap() {
        let data = task.unwrap().path().join(TOTALS).join("data");
        let mut files: Vec<_> = walk(&data);
        files.sort_by_key(|f| std::fs::metadata(f).unwrap().len());
        if let Some(f) = files.last() {
            let mut bytes = std::fs::read(f).unwrap();
            bytes.push(0xA5);
            std::fs::write(f, bytes).unwrap();
            damaged += 1;
        }
    }
    assert_eq!(damaged, PARTITIONS);

    let (mut app, restored) = start(totals(), config(), &log);
    assert!(app.close(Duration::from_secs(30)));
    // One changelog record per key and epoch it changed in: at least one per key.
    assert!(
        restored >= before.len() as u64,
        "restored {restored} records for {} keys",
        before.len()
    );
    // Counting goes on from the restored totals.
    counts_on(
        totals(),
        config(),
        &log,
        &before,
        records.last().unwrap().ts,
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_persistent_store_without_a_changelog_keeps_its_local_copy_across_a_graceful_restart() {
    let topology = || {
        let mut builder = StreamsBuilder::new();
        source(&mut builder, INPUT)
            .group_by_key()
            .count_with(
                Materialized::as_(Stores::persistent_key_value_store(TOTALS))
                    .with_logging_disabled(),
            )
            .to_stream()
            .to(TOTALS_OUT, Produced::with(Serdes::string(), Serdes::i64()));
        builder.build().unwrap()
    };
    let state = scratch_dir();
    let records = input(60, 3, 9);
    let log = totals_log(&records);
    let config = || on_disk("unlogged", 2, state.path());
    let (mut app, _) = start(topology(), config(), &log);
    assert!(app.close(Duration::from_secs(30)));
    let before = last_totals(&log);
    counts_on(
        topology(),
        config(),
        &log,
        &before,
        records.last().unwrap().ts,
    );
}

/// One more record for a key of `before` (the totals so far), at `ts`; a run
/// of `topology` must count it on top of its total.
fn counts_on(
    topology: Topology,
    config: RuntimeConfig,
    log: &Arc<EmbeddedLog>,
    before: &std::collections::BTreeMap<String, i64>,
    ts: i64,
) {
    let key = before.keys().next().unwrap().clone();
    let one = Input {
        key: key.clone(),
        ts,
        value: 1,
    };
    produce(&**log, &[one], 1);
    let (mut app, _) = start(topology, config, log);
    assert!(app.close(Duration::from_secs(30)));
    assert_eq!(last_totals(log)[&key], before[&key] + 1);
}
