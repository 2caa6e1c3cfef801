//! Kafka-backend figures against a real broker, next to plain rdkafka in the
//! same run: transactional produce (100-byte records, 1,000-record
//! transactions) and read-committed consume.
//!
//! `cargo bench -p stoatflow-kafka --bench kafka`. Uses the broker at
//! `STOATFLOW_KAFKA_BOOTSTRAP` if set, else spawns `noida-db` on a free
//! loopback port (and kills it at the end). Env `EPOCHS` (default 100).

mod common;

use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::producer::{BaseRecord, Producer as _};
use rdkafka::{Offset as KOffset, TopicPartitionList};
use stoatflow_kafka::KafkaLog;

use common::{broker, config, env, producer, send};
use stoatflow_log::{
    Consumer, Log, Record, Timestamp, TopicPartition, TopicSpec, TransactionalProducer,
};

fn rate(label: &str, n: u64, d: Duration) -> f64 {
    let r = n as f64 / d.as_secs_f64();
    println!(
        "{label:<46} {n:>8} records in {:>7.3} s = {r:>10.0} records/s",
        d.as_secs_f64()
    );
    r
}

fn ours_produce(log: &KafkaLog, topic: &str, epochs: u64) -> Duration {
    let tp = TopicPartition::new(topic, 0);
    let mut p = log
        .transactional_producer(&format!("{topic}-tx"))
        .expect("producer");
    let value = [7u8; 100];
    let start = Instant::now();
    for e in 0..epochs {
        p.begin().expect("begin");
        for i in 0..1000u64 {
            let key = (e * 1000 + i).to_be_bytes();
            p.send(&tp, &Record::new(Some(&key), Some(&value), Timestamp(1)))
                .expect("send");
        }
        p.commit().expect("commit");
    }
    start.elapsed()
}

fn plain_produce(bootstrap: &str, topic: &str, epochs: u64) -> Duration {
    let p = producer(bootstrap, Some(&format!("{topic}-tx")));
    let value = [7u8; 100];
    let start = Instant::now();
    for e in 0..epochs {
        p.begin_transaction().expect("begin");
        for i in 0..1000u64 {
            let key = (e * 1000 + i).to_be_bytes();
            send(
                &p,
                BaseRecord::to(topic)
                    .partition(0)
                    .key(&key[..])
                    .payload(&value[..])
                    .timestamp(1),
            );
        }
        p.commit_transaction(Duration::from_secs(30))
            .expect("commit");
    }
    start.elapsed()
}

fn ours_consume(log: &KafkaLog, topic: &str, n: u64) -> Duration {
    let tp = TopicPartition::new(topic, 0);
    let mut c = log.consumer(&format!("{topic}-ours")).expect("consumer");
    c.assign(std::slice::from_ref(&tp)).expect("assign");
    let start = Instant::now();
    let mut got = 0u64;
    while got < n {
        got += c.fetch(Duration::from_millis(500)).expect("fetch").len() as u64;
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "consume stalled at {got}"
        );
    }
    start.elapsed()
}

fn plain_consume(bootstrap: &str, topic: &str, n: u64) -> Duration {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", format!("{topic}-plain"))
        .set("isolation.level", "read_committed")
        .set("enable.auto.commit", "false")
        .set("receive.message.max.bytes", "200000000")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, KOffset::Beginning)
        .expect("tpl");
    c.assign(&tpl).expect("assign");
    let start = Instant::now();
    let mut got = 0u64;
    let mut bytes = 0usize;
    while got < n {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(500)) {
            use rdkafka::message::Message as _;
            bytes += m.payload().map_or(0, <[u8]>::len);
            got += 1;
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "consume stalled at {got}"
        );
    }
    assert!(bytes > 0);
    start.elapsed()
}

fn main() {
    let epochs = env("EPOCHS", 100);
    let n = epochs * 1000;
    let b = broker();
    let log = KafkaLog::connect(config(&b.1)).expect("connect");
    for t in ["bench-ours", "bench-plain"] {
        log.ensure_topic(&TopicSpec::new(t, 1)).expect("topic");
    }
    // Warm up both paths, then alternate to spread broker noise.
    let _ = ours_produce(&log, "bench-ours", 2);
    let _ = plain_produce(&b.1, "bench-plain", 2);
    let warm = 2000;
    let po = rate(
        "stoatflow-kafka: transactional produce",
        n,
        ours_produce(&log, "bench-ours", epochs),
    );
    let pp = rate(
        "plain rdkafka:   transactional produce",
        n,
        plain_produce(&b.1, "bench-plain", epochs),
    );
    let co = rate(
        "stoatflow-kafka: read-committed consume",
        n + warm,
        ours_consume(&log, "bench-ours", n + warm),
    );
    let cp = rate(
        "plain rdkafka:   read-committed consume",
        n + warm,
        // The same committed data ours read: only the consumer differs.
        plain_consume(&b.1, "bench-ours", n + warm),
    );
    println!(
        "overhead of our layer: produce {:+.1}%, consume {:+.1}%",
        (pp / po - 1.0) * 100.0,
        (cp / co - 1.0) * 100.0
    );
}
