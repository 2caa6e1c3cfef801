//! DIRECT dispatch (docs/validation.md#dispatch-mode): a topology with
//! nothing a watermark drives and no watermark strategy tracks no event time
//! under `AUTO` (and never under `DISABLED`): its records go to their lanes
//! in fetch order, no `/watermarks` view is published, and each output
//! partition gets its input partition's records in offset order. `ENABLED`
//! tracks anyway.

use std::sync::Arc;

use stoatflow_log::EmbeddedLog;
use stoatflow_runtime::{StreamsApp, partition_for_key};
use stoatflow_streams::{
    Consumed, CoordinationMode, DispatchMode, Produced, Serdes, StreamsBuilder, StreamsConfig,
    Topology,
};

use crate::support::*;

/// `value + 1`, by key, from the input to the output: nothing on event time.
fn stateless() -> Topology {
    let mut b = StreamsBuilder::new();
    b.stream(INPUT, Consumed::with(Serdes::string(), Serdes::i64()))
        .map_values(|_, v: i64| v + 1)
        .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
    b.build().unwrap()
}

/// Runs [`stateless`] over `records` under `coordination`: whether a
/// `/watermarks` view was published, and the output's (key, value) per
/// partition in offset order.
fn run(records: &[Input], coordination: CoordinationMode) -> (bool, Vec<Vec<(String, i64)>>) {
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    produce(&*log, records, 25);
    let streams = StreamsConfig::new("direct")
        .with_coordination(coordination)
        .with_dispatch(DispatchMode::Auto);
    let config = config("direct", 2).with_streams(streams);
    let mut app = StreamsApp::with_log(stateless(), config, log.clone()).unwrap();
    start_and_finish(&mut app);
    let published = app.watermarks().is_some();
    let mut out = vec![Vec::new(); PARTITIONS as usize];
    let mut read = read_topic(&*log, OUTPUT, PARTITIONS);
    read.sort_by_key(|r| (r.partition.partition.0, r.offset.0));
    for r in read {
        let key = String::from_utf8(r.record.key.unwrap()).unwrap();
        let value = i64::from_be_bytes(r.record.value.unwrap().try_into().unwrap());
        out[r.partition.partition.0 as usize].push((key, value));
    }
    (published, out)
}

#[test]
fn a_topology_without_event_time_runs_direct_in_offset_order() {
    let records = input(2_000, 17, 31);
    // Kafka's partitioner sends a key to the same partition of both topics.
    let mut expected = vec![Vec::new(); PARTITIONS as usize];
    for r in &records {
        let p = partition_for_key(r.key.as_bytes(), PARTITIONS) as usize;
        expected[p].push((r.key.clone(), r.value + 1));
    }
    for mode in [CoordinationMode::Auto, CoordinationMode::Disabled] {
        let (published, out) = run(&records, mode);
        assert!(!published, "{mode:?}: no event time is tracked");
        assert_eq!(out, expected, "{mode:?}");
    }
    let (published, out) = run(&records, CoordinationMode::Enabled);
    assert!(published, "ENABLED tracks event time");
    assert_eq!(out, expected);
}

/// A processing-time topology with a repartition hop (re-key, then a count
/// per new key) also runs DIRECT: its downstream sub-topology reads the
/// repartition topic with no markers in it, and the last count per key is
/// the driver's, on 1, 2 and 4 lanes.
#[test]
fn a_processing_time_repartition_hop_runs_direct() {
    use std::collections::BTreeMap;
    use stoatflow_streams::Grouped;

    fn topology() -> Topology {
        let mut b = StreamsBuilder::new();
        b.stream(INPUT, Consumed::with(Serdes::string(), Serdes::i64()))
            .select_key(|_, v: &i64| format!("m{}", v.rem_euclid(7)))
            .group_by_key_with(Grouped::with(Serdes::string(), Serdes::i64()))
            .count()
            .to_stream()
            .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
        b.build().unwrap()
    }
    let records = input(700, 13, 33);
    let driver =
        stoatflow_testing::TopologyTestDriver::new(topology(), StreamsConfig::new("d")).unwrap();
    let topic = driver.create_input_topic(INPUT, Serdes::string(), Serdes::i64());
    let output = driver.create_output_topic(OUTPUT, Serdes::string(), Serdes::i64());
    for r in &records {
        topic
            .pipe_input_with_timestamp(r.key.clone(), r.value, r.ts)
            .unwrap();
    }
    let expected: BTreeMap<String, i64> = output
        .read_key_values_to_map()
        .unwrap()
        .into_iter()
        .collect();
    for lanes in [1, 2, 4] {
        let log = log_with_input(&records, 50);
        let mut app = StreamsApp::with_log(
            topology(),
            config(&format!("hop-{lanes}"), lanes),
            log.clone(),
        )
        .unwrap();
        start_and_finish(&mut app);
        assert!(app.watermarks().is_none(), "no event time is tracked");
        let mut last = BTreeMap::new();
        let mut read = read_topic(&*log, OUTPUT, PARTITIONS);
        read.sort_by_key(|r| (r.partition.partition.0, r.offset.0));
        for r in read {
            let key = String::from_utf8(r.record.key.unwrap()).unwrap();
            let value = i64::from_be_bytes(r.record.value.unwrap().try_into().unwrap());
            last.insert(key, value);
        }
        assert_eq!(last, expected, "{lanes} lanes");
    }
}
