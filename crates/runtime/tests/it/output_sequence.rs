//! The final output of every output partition is the same sequence whatever
//! the lane count and the barriers' timing (docs/barriers.md#output-order):
//! final results are written merged by (close, key, start), not in the epoch
//! each happened to be emitted in, task after task.

use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::EmbeddedLog;
use stoatflow_runtime::{CommitBarrierConfig, StreamsApp};

use crate::support::*;

/// Every committed output record as (partition, key, value), in offset
/// order per partition.
fn output_sequence(log: &EmbeddedLog) -> Vec<(u32, Vec<u8>, Vec<u8>)> {
    let mut records: Vec<_> = read_topic(log, OUTPUT, PARTITIONS)
        .into_iter()
        .map(|r| {
            (
                r.partition.partition.0,
                r.offset.0,
                r.record.key.unwrap_or_default(),
                r.record.value.unwrap_or_default(),
            )
        })
        .collect();
    records.sort_by_key(|r| (r.0, r.1));
    records.into_iter().map(|(p, _, k, v)| (p, k, v)).collect()
}

/// The tumbling count over `records` on `lanes` lanes, barriers every
/// `interval_ms`, the input written while it runs (so its windows close
/// over many barriers): its output partitions' sequence.
fn run(records: &[Input], lanes: usize, interval_ms: u64) -> Vec<(u32, Vec<u8>, Vec<u8>)> {
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    let config = config("sequence", lanes).with_barrier(CommitBarrierConfig {
        interval: Duration::from_millis(interval_ms),
        min_interval: Duration::from_millis(1),
        ..CommitBarrierConfig::default()
    });
    let mut app = StreamsApp::with_log(tumbling_count(), config, log.clone()).unwrap();
    app.start().unwrap();
    for chunk in records.chunks(50) {
        produce(&*log, chunk, 50);
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        app.wait_until_caught_up(Duration::from_secs(60)).unwrap(),
        "caught up: {:?}",
        app.error()
    );
    assert!(
        app.close(Duration::from_secs(30)),
        "closed: {:?}",
        app.error()
    );
    output_sequence(&log)
}

#[test]
fn each_output_partition_gets_the_same_sequence_whatever_the_lanes_and_the_cadence() {
    let records = input(4_000, 40, 11);
    let reference = run(&records, 1, 1);
    assert!(reference.len() > 500, "{} results", reference.len());
    // Every output partition is fed by several tasks: windowed keys are
    // partitioned by their serialized bytes, not as the input was.
    for (lanes, interval_ms) in [(1, 40), (2, 3), (2, 25), (4, 1), (4, 60)] {
        let ours = run(&records, lanes, interval_ms);
        assert_eq!(
            ours.len(),
            reference.len(),
            "{lanes} lanes, every {interval_ms} ms"
        );
        if let Some(i) = (0..ours.len()).find(|&i| ours[i] != reference[i]) {
            panic!(
                "{lanes} lanes, barriers every {interval_ms} ms: record {i} differs: {:?} against {:?}",
                ours[i], reference[i]
            );
        }
    }
}
