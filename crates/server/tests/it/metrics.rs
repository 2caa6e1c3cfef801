//! `/metrics` of a real application, parsed back by a strict Prometheus
//! text parser: every info-level name present with the engine's figures,
//! the debug-level one only at DEBUG.

use stoatflow_server::{Metric, MetricKind, RecordingLevel};

use crate::prom_text::{Family, parse};
use crate::support::{START, Served, get, wait_for_refresh};

fn scrape(served: &Served) -> std::collections::BTreeMap<String, Family> {
    let r = get(served.addr(), "/metrics");
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("text/plain; version=0.0.4")),
        "{:?}",
        r.headers
    );
    parse(&r.body).unwrap_or_else(|e| panic!("{e}\n{}", r.body))
}

fn value(families: &std::collections::BTreeMap<String, Family>, name: &str) -> f64 {
    families[name].samples[0].value
}

/// Input on both partitions up to START + 60 s, then one record for a
/// window that closed: dropped as late.
fn run(served: &mut Served) {
    served.produce(&[
        (0, "a", START),
        (1, "b", START + 1_000),
        (0, "a", START + 30_000),
        (1, "b", START + 60_000),
        (0, "a", START + 60_000),
    ]);
    served.settle(START + 60_000);
    served.produce(&[(0, "late", START + 2_000)]);
    served.settle(START + 60_000);
}

#[test]
fn metrics_at_info_level_carry_every_required_name_and_not_the_debug_ones() {
    let mut served = Served::start("metrics-info", RecordingLevel::Info);
    run(&mut served);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let families = loop {
        let f = scrape(&served);
        let late = f["stoatflow_dropped_records_total"]
            .samples
            .iter()
            .find(|s| s.labels["reason"] == "late_window")
            .map_or(0.0, |s| s.value);
        if late >= 1.0 && value(&f, "stoatflow_records_in_total") >= 6.0 {
            break f;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "late drop never counted: {f:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    for metric in Metric::at(RecordingLevel::Info) {
        let f = families
            .get(metric.name())
            .unwrap_or_else(|| panic!("{} missing", metric.name()));
        let kind = match metric.kind() {
            MetricKind::Gauge => "gauge",
            MetricKind::Counter => "counter",
            MetricKind::Histogram => "histogram",
            _ => unreachable!(),
        };
        assert_eq!(f.kind, kind, "{}", metric.name());
        assert!(!f.samples.is_empty(), "{} has no sample", metric.name());
        assert!(f.help.as_deref().is_some_and(|h| !h.is_empty()));
    }
    assert!(
        !families.contains_key("stoatflow_watermark_late_records_total"),
        "late.records.total is debug-level"
    );
    let info = &families["stoatflow_app_info"].samples;
    assert_eq!(info.len(), 1, "{info:?}");
    assert_eq!(info[0].labels["application_id"], "metrics-info");
    assert_eq!(info[0].labels["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(info[0].value, 1.0);
    assert_eq!(
        value(&families, "stoatflow_watermark_seconds"),
        (START + 60_000) as f64 / 1_000.0,
        "event time in seconds since the epoch"
    );
    let lag = value(&families, "stoatflow_watermark_lag_seconds");
    let behind = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        - (START + 60_000) as f64 / 1_000.0;
    assert!(
        lag > 0.0 && lag <= behind,
        "lag {lag} s, the watermark is {behind} s behind now"
    );
    assert_eq!(value(&families, "stoatflow_client_state"), 4.0);
    assert_eq!(
        value(&families, "stoatflow_topology_event_time_tracking"),
        1.0
    );
    assert_eq!(value(&families, "stoatflow_records_in_total"), 6.0);
    assert_eq!(
        value(
            &families,
            "stoatflow_watermark_out_of_orderness_max_seconds"
        ),
        58.0,
        "the late record was 58 s older than the newest before it"
    );
    let reasons: Vec<(&str, f64)> = families["stoatflow_dropped_records_total"]
        .samples
        .iter()
        .map(|s| (s.labels["reason"].as_str(), s.value))
        .collect();
    assert_eq!(
        reasons,
        [
            ("late_window", 1.0),
            ("late_session", 0.0),
            ("deserialization_error", 0.0),
            ("null_key", 0.0),
            ("missing_topic", 0.0)
        ]
    );
    let segments = &families["stoatflow_store_segments"].samples;
    assert_eq!(segments.len(), 2, "one window store per task: {segments:?}");
    assert!(
        segments
            .iter()
            .all(|s| s.value >= 1.0 && s.labels.contains_key("store"))
    );
    let barriers = &families["stoatflow_commit_barrier_duration_seconds"].samples;
    let count = barriers
        .iter()
        .find(|s| s.name.ends_with("_count"))
        .unwrap();
    assert!(count.value >= 1.0, "{barriers:?}");
    let intervals = &families["stoatflow_commit_barrier_interval_seconds"].samples;
    let sum = intervals.iter().find(|s| s.name.ends_with("_sum")).unwrap();
    let n = intervals
        .iter()
        .find(|s| s.name.ends_with("_count"))
        .unwrap();
    assert!(
        sum.value > 0.0 && sum.value / n.value < 60.0,
        "barriers were cut at intervals, in seconds: {intervals:?}"
    );
    let bounds: Vec<f64> = intervals
        .iter()
        .filter_map(|s| s.labels.get("le"))
        .map(|le| match le.as_str() {
            "+Inf" => f64::INFINITY,
            b => b.parse().unwrap(),
        })
        .collect();
    assert_eq!(
        bounds,
        [
            0.005,
            0.01,
            0.025,
            0.05,
            0.1,
            0.15,
            0.25,
            0.5,
            1.0,
            2.5,
            5.0,
            10.0,
            f64::INFINITY
        ],
        "bucket bounds in seconds"
    );
    served.app.close(std::time::Duration::from_secs(10));
    wait_for_refresh();
    let after = scrape(&served);
    assert_eq!(value(&after, "stoatflow_client_state"), 6.0, "NOT_RUNNING");
    assert!(
        value(&after, "stoatflow_records_out_total") >= 1.0,
        "the flush emitted final counts"
    );
}

#[test]
fn debug_level_adds_late_records() {
    let mut served = Served::start("metrics-debug", RecordingLevel::Debug);
    run(&mut served);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let f = scrape(&served);
        let late = f
            .get("stoatflow_watermark_late_records_total")
            .expect("late.records.total at debug level");
        assert_eq!(late.kind, "counter");
        if late.samples[0].value == 1.0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{late:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn restore_progress_counts_the_changelog_records_a_restart_reads_back() {
    use std::sync::Arc;
    use std::time::Duration;

    use stoatflow_log::{
        EmbeddedLog, Log, Record, Timestamp, TopicPartition, TopicSpec, TransactionalProducer,
    };
    use stoatflow_runtime::{AppState, Backend, RuntimeConfig, StreamsApp};

    use crate::support::{INPUT, OUTPUT, topology};

    let log = Arc::new(EmbeddedLog::in_memory());
    log.create_topic(&TopicSpec::new(INPUT, 2)).unwrap();
    log.create_topic(&TopicSpec::new(OUTPUT, 2)).unwrap();
    let config = || RuntimeConfig::new("restore", Backend::InMemory).with_lanes(1);
    let mut producer = log.transactional_producer("input").unwrap();
    producer.begin().unwrap();
    for (i, key) in ["a", "b", "c"].iter().enumerate() {
        let r = Record::new(
            Some(key.as_bytes()),
            Some(&1i64.to_be_bytes()),
            Timestamp(START + i as i64),
        );
        producer.send(&TopicPartition::new(INPUT, 0), &r).unwrap();
    }
    producer.commit().unwrap();
    let mut first = StreamsApp::with_log(topology(), config(), log.clone()).unwrap();
    first.start().unwrap();
    assert!(first.wait_until_caught_up(Duration::from_secs(30)).unwrap());
    drop(first); // a crash: the committed changelog is what a restart reads

    let mut second = StreamsApp::with_log(topology(), config(), log.clone()).unwrap();
    let handle = second.handle();
    assert_eq!(
        handle.metrics().restore.records_total,
        0,
        "nothing read before start"
    );
    second.start().unwrap();
    assert_eq!(
        second.wait_for_state(AppState::Running, Duration::from_secs(20)),
        AppState::Running
    );
    let restore = handle.metrics().restore;
    assert!(
        restore.records_total >= 3,
        "three keys' windows were changelogged: {restore:?}"
    );
    assert_eq!(restore.records_restored, restore.records_total);
    let served = stoatflow_server::HttpServer::builder()
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .start(Arc::new(handle))
        .unwrap();
    let families = parse(&get(served.local_addr(), "/metrics").body).unwrap();
    assert_eq!(
        value(&families, "stoatflow_restore_records_restored_total"),
        restore.records_restored as f64
    );
    assert_eq!(value(&families, "stoatflow_restore_records_remaining"), 0.0);
    // One instance owns every task: no copies, nothing behind.
    assert_eq!(handle_lag(&second), Some(0));
    assert_eq!(value(&families, "stoatflow_standby_lag_records"), 0.0);
}

fn handle_lag<L: stoatflow_log::Log + 'static>(
    app: &stoatflow_runtime::StreamsApp<L>,
) -> Option<u64> {
    app.handle().metrics().standby_lag
}
