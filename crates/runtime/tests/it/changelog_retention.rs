//! Window and session changelogs are created `compact,delete` with the
//! store's retention plus `windowstore.changelog.additional.retention.ms`
//! (other changelogs compacted only), so on the embedded log the log's
//! upkeep deletes the segments of expired windows; a store restored from
//! what is left holds exactly the live windows.

use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::{
    CleanupPolicy, Consumer, EmbeddedConfig, EmbeddedLog, Log, TopicPartition, TopicSpec,
};
use stoatflow_runtime::{RuntimeConfig, StreamsApp, WINDOWSTORE_CHANGELOG_ADDITIONAL_RETENTION};
use stoatflow_state::decode_window_key;

use crate::support::*;

/// The tumbling count's store retention: size plus grace.
const STORE_RETENTION: Duration = Duration::from_millis((WINDOW_MS + GRACE_MS) as u64);

fn changelogs(log: &EmbeddedLog, app: &str) -> Vec<TopicSpec> {
    log.topics()
        .into_iter()
        .filter(|t| t.name.starts_with(app) && t.name.ends_with("-changelog"))
        .collect()
}

#[test]
fn windowed_changelogs_are_created_compact_delete_with_retention_and_others_compacted() {
    for (app, extra) in [
        ("retained-default", None),
        ("retained-short", Some(Duration::from_secs(7))),
    ] {
        let log = log_with_input(&[], 1);
        let mut config = config(app, 1);
        if let Some(extra) = extra {
            config = config.with_windowstore_changelog_additional_retention(extra);
        }
        let mut app_run = StreamsApp::with_log(tumbling_count(), config, log.clone()).unwrap();
        start_and_finish(&mut app_run);
        let specs = changelogs(&log, app);
        let windowed: Vec<&TopicSpec> = specs
            .iter()
            .filter(|s| s.shape.cleanup == CleanupPolicy::CompactDelete)
            .collect();
        assert_eq!(windowed.len(), 1, "{specs:?}");
        assert_eq!(
            windowed[0].retention.time,
            Some(STORE_RETENTION + extra.unwrap_or(WINDOWSTORE_CHANGELOG_ADDITIONAL_RETENTION)),
            "{app}"
        );
        // The emit frontier and the watermark stamps: compacted only, kept.
        let others: Vec<&TopicSpec> = specs
            .iter()
            .filter(|s| s.shape.cleanup != CleanupPolicy::CompactDelete)
            .collect();
        assert!(others.len() >= 2, "{specs:?}");
        for s in others {
            assert_eq!(s.shape.cleanup, CleanupPolicy::Compact, "{s:?}");
            assert_eq!(s.retention.time, None, "{s:?}");
        }
    }
}

/// Four keys, one record each 100 ms of event time from [`START`], `n`
/// records from record `from` on, in order.
fn steady(from: i64, n: i64) -> Vec<Input> {
    (from..from + n)
        .map(|i| Input {
            key: format!("k{}", i % 4),
            ts: START + i * 100,
            value: i,
        })
        .collect()
}

#[test]
fn a_store_restored_after_retention_deleted_old_segments_holds_the_live_windows_only() {
    const APP: &str = "retained";
    let log = Arc::new(EmbeddedLog::in_memory_with(EmbeddedConfig {
        segment_bytes: 1_000,
        ..EmbeddedConfig::default()
    }));
    create_topics(&*log);
    // 5 s past the store's retention: above the bound (3 s) the watermark
    // trails the newest record by at the close.
    let extra = Duration::from_secs(5);
    let config = || -> RuntimeConfig {
        let mut c = config(APP, 2).with_windowstore_changelog_additional_retention(extra);
        c.purge_interval = Duration::from_millis(5);
        c
    };
    // 400 s of event time, written while the app runs so that the log's
    // upkeep runs between its commits.
    let first = steady(0, 4_000);
    let mut app = StreamsApp::with_log(tumbling_count(), config(), log.clone()).unwrap();
    app.start().unwrap();
    for chunk in first.chunks(50) {
        produce(&*log, chunk, 50);
        assert!(app.wait_until_caught_up(Duration::from_secs(60)).unwrap());
    }
    assert!(app.close(Duration::from_secs(30)), "{:?}", app.error());

    // Whole segments of old windows went.
    let specs = changelogs(&log, APP);
    let windowed = specs
        .iter()
        .find(|s| !s.name.contains("emitfrontier") && !s.name.contains("stoatflow-watermark"))
        .expect("the count's changelog");
    let tps: Vec<TopicPartition> = (0..windowed.shape.partitions)
        .map(|p| TopicPartition::new(windowed.name.clone(), p))
        .collect();
    let mut c = log.consumer("starts").unwrap();
    let deleted: u64 = tps.iter().map(|tp| c.beginning_offset(tp).unwrap().0).sum();
    assert!(deleted > 0, "no segment of {} was deleted", windowed.name);
    // What a restore reads holds none of the windows of the first half of
    // the event time, long expired (a segment goes whole once its newest
    // record is 20 s older than the partition's newest; one spans well
    // under a minute here).
    let horizon = START + 200_000;
    let left = read_topic(&*log, &windowed.name, windowed.shape.partitions);
    assert!(!left.is_empty());
    for r in &left {
        let key = r.record.key.as_deref().expect("keyed");
        let (_, start, _) = decode_window_key(key).expect("a window key");
        assert!(
            start >= horizon,
            "window at {} s is still in the changelog",
            (start - START) / 1_000
        );
    }

    // A fresh app restores its stores from what is left (in memory, so from
    // the changelog alone), and the windows open at the close go on: more
    // records for them, then one far-future record per partition to close
    // everything. Every window's final count is the uninterrupted one, so
    // each live window came back whole.
    let second: Vec<Input> = steady(3_970, 100)
        .into_iter()
        .chain(input(0, 1, 0))
        .collect();
    produce(&*log, &second, 50);
    let mut app = StreamsApp::with_log(tumbling_count(), config(), log.clone()).unwrap();
    start_and_finish(&mut app);
    assert!(app.restored_records() > 0);
    let all: Vec<Input> = first.iter().chain(&second).cloned().collect();
    let engine = regular(read_output(&*log));
    assert_each_once(&engine);
    assert_same_finals(&engine, &regular(driver_finals(tumbling_count(), &all)));
}
