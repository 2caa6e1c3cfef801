//! Produce to and consume from a topic through either backend.
//!
//! ```text
//! cargo run -p stoatflow-kafka --example logcli -- BACKEND produce TOPIC KEY VALUE
//! cargo run -p stoatflow-kafka --example logcli -- BACKEND consume TOPIC
//! cargo run -p stoatflow-kafka --example logcli -- BACKEND demo
//! ```
//! `BACKEND` is `memory`, `embedded:DIR` or `kafka:HOST:PORT`.

use anyhow::{Context, bail};
use stoatflow_kafka::{KafkaConfig, KafkaLog};
use stoatflow_log::contract::read_to_end;
use stoatflow_log::{
    EmbeddedLog, Log, Record, Timestamp, TopicPartition, TopicSpec, TransactionalProducer,
};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((backend, rest)) = args.split_first() else {
        bail!(
            "usage: logcli (memory | embedded:DIR | kafka:HOST:PORT) (produce TOPIC KEY VALUE | consume TOPIC | demo)"
        );
    };
    if backend == "memory" {
        run(&EmbeddedLog::in_memory(), rest)
    } else if let Some(dir) = backend.strip_prefix("embedded:") {
        run(
            &EmbeddedLog::open(dir).with_context(|| format!("opening {dir}"))?,
            rest,
        )
    } else if let Some(bootstrap) = backend.strip_prefix("kafka:") {
        run(&KafkaLog::connect(KafkaConfig::new(bootstrap))?, rest)
    } else {
        bail!("unknown backend {backend:?}")
    }
}

fn run<L: Log>(log: &L, args: &[String]) -> anyhow::Result<()> {
    match args {
        [cmd, topic, key, value] if cmd == "produce" => produce(log, topic, key, value),
        [cmd, topic] if cmd == "consume" => consume(log, topic),
        [cmd] if cmd == "demo" => {
            produce(log, "logcli-demo", "k", "hello")?;
            consume(log, "logcli-demo")
        }
        _ => bail!("expected: produce TOPIC KEY VALUE | consume TOPIC | demo"),
    }
}

fn produce<L: Log>(log: &L, topic: &str, key: &str, value: &str) -> anyhow::Result<()> {
    log.ensure_topic(&TopicSpec::new(topic, 1))?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    let record = Record::new(
        Some(key.as_bytes()),
        Some(value.as_bytes()),
        Timestamp(now.as_millis() as i64),
    );
    let mut p = log.transactional_producer("logcli")?;
    p.begin()?;
    p.send(&TopicPartition::new(topic, 0), &record)?;
    p.commit()?;
    println!("committed 1 record to {topic}");
    Ok(())
}

fn consume<L: Log>(log: &L, topic: &str) -> anyhow::Result<()> {
    let shape = log
        .describe_topic(topic)?
        .with_context(|| format!("topic {topic:?} does not exist"))?;
    let tps: Vec<TopicPartition> = (0..shape.partitions)
        .map(|p| TopicPartition::new(topic, p))
        .collect();
    let mut c = log.consumer("logcli")?;
    for r in read_to_end(&mut c, &tps) {
        println!(
            "{} @{} ts={} key={:?} value={:?}",
            r.partition,
            r.offset,
            r.record.timestamp.0,
            r.record.key.as_deref().map(String::from_utf8_lossy),
            r.record.value.as_deref().map(String::from_utf8_lossy)
        );
    }
    Ok(())
}
