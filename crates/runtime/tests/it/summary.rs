//! The run's summary (`StreamsApp::summary`, logged by `close()`): records
//! in and out, drops by reason, the final watermark and the partition that
//! held it, with why (docs/time.md#holder).

use std::time::Duration;

use stoatflow_runtime::{StreamsApp, partition_for_key};
use stoatflow_time::{HoldReason, SourcePartition, Watermark};

use crate::support::*;

/// Keys that land on partitions 0 and 1 only: partition 2 never receives a record.
fn keys_off_partition_2() -> Vec<String> {
    (0..)
        .map(|i| format!("k{i}"))
        .filter(|k| partition_for_key(k.as_bytes(), PARTITIONS) != 2)
        .take(4)
        .collect()
}

#[test]
fn a_run_whose_third_partition_is_never_written_ends_naming_it_without_a_watermark() {
    let records: Vec<Input> = keys_off_partition_2()
        .into_iter()
        .enumerate()
        .map(|(i, key)| Input {
            key,
            ts: START + i as i64 * 1_000,
            value: 1,
        })
        .collect();
    let log = log_with_input(&records, 10);
    let mut app = StreamsApp::with_log(tumbling_count(), config("summary", 1), log).unwrap();
    start_and_finish(&mut app);
    let summary = app.summary();
    assert_eq!(summary.records_in, records.len() as u64);
    assert_eq!(summary.records_out, 0, "no window closed");
    assert_eq!(summary.watermark, Watermark::MIN);
    let holder = summary.holder.as_ref().expect("the holder is named");
    assert_eq!(holder.partition, SourcePartition::new(INPUT, 2));
    assert!(
        matches!(
            holder.reason,
            HoldReason::NeverReceived {
                idle_in: Some(d)
            } if d > Duration::ZERO && d <= Duration::from_secs(300)
        ),
        "{holder}"
    );
    let text = summary.to_string();
    assert!(
        text.contains(
            "final watermark: N/A, held by events:2: never received a record; counts as idle in "
        ),
        "{text}"
    );
    assert!(text.contains("nothing final was emitted"), "{text}");
    assert!(
        text.starts_with(&format!(
            "records in: {}, out: 0; dropped: none",
            records.len()
        )),
        "{text}"
    );
}
