//! A restarted task's sources start from the partition time committed with
//! each partition's offset (per partition, as the poll loop's readers do), so
//! an assigner that falls back to the partition time gives the same event
//! time after a restart as without one.

use std::sync::Arc;

use stoatflow_log::{EmbeddedLog, Log, TopicPartition, TopicSpec};
use stoatflow_runtime::{AppState, StreamsApp, partition_for_key};
use stoatflow_streams::{Consumed, Produced, Serdes, StreamsBuilder, Topology};
use stoatflow_time::TimestampExtractor;

use crate::support::*;

const STAMPED: &str = "stamped";

/// A negative value has no time of its own: it takes its partition's time
/// (Kafka Streams' `UsePartitionTimeOnInvalidTimestamp`, keyed on the value).
struct PartitionTimeForNegatives;

impl TimestampExtractor<String, i64> for PartitionTimeForNegatives {
    fn extract(&self, _: &String, value: &i64, record_timestamp: i64, partition_time: i64) -> i64 {
        if *value < 0 {
            partition_time
        } else {
            record_timestamp
        }
    }
}

fn topology() -> Topology {
    let mut builder = StreamsBuilder::new();
    builder
        .stream(
            INPUT,
            Consumed::with(Serdes::string(), Serdes::i64())
                .with_timestamp_extractor(PartitionTimeForNegatives),
        )
        .to(STAMPED, Produced::with(Serdes::string(), Serdes::i64()));
    builder.build().unwrap()
}

fn run(log: &Arc<EmbeddedLog>) {
    let mut app =
        StreamsApp::with_log(topology(), config("partition-time", 2), log.clone()).unwrap();
    start_and_finish(&mut app);
    assert_eq!(app.state(), AppState::NotRunning);
}

#[test]
fn a_restarted_task_assigns_event_times_from_its_partitions_committed_time() {
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    log.create_topic(&TopicSpec::new(STAMPED, PARTITIONS))
        .unwrap();
    // Two keys on two partitions, each with its own partition time.
    let a = "a".to_string();
    let b = (0..)
        .map(|i| format!("b{i}"))
        .find(|k| {
            partition_for_key(k.as_bytes(), PARTITIONS)
                != partition_for_key(a.as_bytes(), PARTITIONS)
        })
        .unwrap();
    let at = |key: &str, ts: i64, value: i64| Input {
        key: key.into(),
        ts,
        value,
    };
    produce(
        &*log,
        &[at(&a, START + 5_000, 1), at(&b, START + 9_000, 2)],
        1,
    );
    run(&log);
    // After the restart the sources know nothing but what was committed.
    produce(&*log, &[at(&a, 0, -1), at(&b, 0, -2)], 1);
    run(&log);

    let mut consumer = log.consumer("reader").unwrap();
    let tps: Vec<_> = (0..PARTITIONS)
        .map(|p| TopicPartition::new(STAMPED, p))
        .collect();
    let times: Vec<(i64, i64)> = stoatflow_log::contract::read_to_end(&mut consumer, &tps)
        .into_iter()
        .map(|r| {
            let v = i64::from_be_bytes(r.record.value.unwrap().try_into().unwrap());
            (v, r.record.timestamp.0)
        })
        .filter(|(v, _)| *v < 0)
        .collect();
    let mut times = times;
    times.sort();
    assert_eq!(times, [(-2, START + 9_000), (-1, START + 5_000)]);
}
