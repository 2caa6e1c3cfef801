//! End-to-end runs: the same workload as the task path's tumbling count, but
//! through the whole engine — a `StreamsApp` on the in-memory embedded log
//! with exactly-once commits: fetch, event-time reading, ordered dispatch,
//! record lanes, deserialization, barriers, serialized output and one
//! transaction per epoch.
//!
//! The input (key `i mod 1000` as an `i64`, value 1, timestamp `i` ms) is
//! written to two partitions before the clock starts; the timed region runs
//! from `start()` until the input is consumed and `close()` has committed
//! the final barrier.

use std::sync::Arc;
use std::time::{Duration, Instant};

use stoatflow_log::{
    Consumer, EmbeddedLog, Log, Record, Timestamp, TopicPartition, TopicSpec, TransactionalProducer,
};
use stoatflow_runtime::{Backend, RuntimeConfig, StreamsApp};
use stoatflow_streams::{
    Consumed, EmitStrategy, Produced, Serdes, StreamsBuilder, TimeWindows, Topology,
};
use stoatflow_time::WatermarkStrategy;

use crate::error::BenchError;
use crate::workloads::{TUMBLING_KEYS, TUMBLING_WINDOW_MS};

const INPUT: &str = "events";
const OUTPUT: &str = "counts";
/// Input partitions: lanes are partition-affine, so two partitions let two
/// lanes work; the one-lane run reads the same two.
pub const E2E_PARTITIONS: u32 = 2;
/// Records per input transaction when writing the input.
const WRITE_BATCH: usize = 10_000;

fn topology() -> Result<Topology, BenchError> {
    let mut builder = StreamsBuilder::new();
    builder
        .stream(
            INPUT,
            Consumed::with(Serdes::i64(), Serdes::i64())
                .with_watermark_strategy(WatermarkStrategy::for_monotonous_timestamps()),
        )
        .group_by_key()
        .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_millis(
            TUMBLING_WINDOW_MS,
        )))
        .emit_strategy(EmitStrategy::on_window_close())
        .count()
        .to_stream()
        .to(
            OUTPUT,
            Produced::with(
                Serdes::time_windowed(Serdes::i64(), TUMBLING_WINDOW_MS as i64),
                Serdes::i64(),
            ),
        );
    builder.build().map_err(|source| BenchError::Topology {
        query: "e2e-tumbling",
        source,
    })
}

fn engine_err(e: impl std::fmt::Display) -> BenchError {
    BenchError::Engine {
        query: "e2e-tumbling",
        reason: e.to_string(),
    }
}

/// Writes the tumbling workload's `events` records into a fresh in-memory log.
pub fn write_input(events: u64) -> Result<Arc<EmbeddedLog>, BenchError> {
    let log = Arc::new(EmbeddedLog::in_memory());
    log.create_topic(&TopicSpec::new(INPUT, E2E_PARTITIONS))
        .map_err(engine_err)?;
    log.create_topic(&TopicSpec::new(OUTPUT, E2E_PARTITIONS))
        .map_err(engine_err)?;
    let mut producer = log
        .transactional_producer("bench-input")
        .map_err(engine_err)?;
    let mut i = 0u64;
    while i < events {
        producer.begin().map_err(engine_err)?;
        let end = (i + WRITE_BATCH as u64).min(events);
        for j in i..end {
            let ts = j as i64;
            let key = ts % TUMBLING_KEYS;
            let record = Record::new(
                Some(&key.to_be_bytes()),
                Some(&1i64.to_be_bytes()),
                Timestamp(ts),
            );
            let tp = TopicPartition::new(INPUT, (key as u32) % E2E_PARTITIONS);
            producer.send(&tp, &record).map_err(engine_err)?;
        }
        producer.commit().map_err(engine_err)?;
        i = end;
    }
    Ok(log)
}

/// Runs the tumbling count end to end on `lanes` lanes over `events`
/// records: (seconds, final results committed).
pub fn run_e2e_tumbling(events: u64, lanes: usize) -> Result<(f64, u64), BenchError> {
    let log = write_input(events)?;
    let config = RuntimeConfig::new("bench-e2e", Backend::InMemory).with_lanes(lanes);
    let mut app = StreamsApp::with_log(topology()?, config, log.clone()).map_err(engine_err)?;
    let start = Instant::now();
    app.start().map_err(engine_err)?;
    if !app
        .wait_until_caught_up(Duration::from_secs(3_600))
        .map_err(engine_err)?
    {
        return Err(engine_err(format!(
            "did not consume its input: state {}, error {:?}",
            app.state(),
            app.error()
        )));
    }
    if !app.close(Duration::from_secs(600)) {
        return Err(engine_err(format!("close failed: {:?}", app.error())));
    }
    let seconds = start.elapsed().as_secs_f64();
    Ok((seconds, committed_records(&log, OUTPUT)?))
}

fn committed_records(log: &EmbeddedLog, topic: &str) -> Result<u64, BenchError> {
    let mut consumer = log.consumer("bench-reader").map_err(engine_err)?;
    let mut total = 0;
    for p in 0..E2E_PARTITIONS {
        let tp = TopicPartition::new(topic, p);
        total += consumer.end_offset(&tp).map_err(engine_err)?.0
            - consumer.beginning_offset(&tp).map_err(engine_err)?.0;
    }
    Ok(total)
}
