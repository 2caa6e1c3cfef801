//! Our exactly-once pipeline on Kafka against plain rdkafka consume-produce
//! loops over the same data, in one run (the target: ours at least 80% of
//! the plain loop).
//!
//! The work is a pass-through: read every record of a 3-partition topic,
//! write it to another. Three contenders, alternated so broker noise is
//! shared, each on fresh topics holding the same records:
//! - `plain`: a read-committed consumer and an idempotent producer, no
//!   transactions, one `flush` at the end (the fastest a loop can be, and
//!   not exactly-once);
//! - `plain eos`: the same loop with a transaction every 500 ms carrying the
//!   consumed offsets (what a hand-written exactly-once loop costs);
//! - `stoatflow`: a `StreamsApp` (`stream → map_values → to`) on a
//!   `KafkaLog`, exactly-once, the default 500 ms barrier, timed from
//!   `start` until the close's final barrier committed (the app closes once
//!   it has consumed every input record).
//!
//! `cargo bench -p stoatflow-kafka --bench pipeline`. Env `RECORDS`
//! (default 200 000), `REPEATS` (default 3), `LANES` (default 2), `ONLY`
//! (`plain`, `plain-eos` or `stoatflow`: that contender alone, for a
//! profiler), `STOATFLOW_KAFKA_BOOTSTRAP` (else noida-db is spawned).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::message::Message as _;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer as _};
use rdkafka::{ClientConfig, Offset as KOffset, TopicPartitionList};
use stoatflow_kafka::KafkaLog;
use stoatflow_runtime::{Backend, RuntimeConfig, StreamsApp};
use stoatflow_streams::{Consumed, Produced, Serdes, StreamsBuilder, Topology};

use common::{Sizes, broker, config, fill, median, producer, run_topics, send};

const PARTITIONS: u32 = 3;
const TIMEOUT: Duration = Duration::from_secs(30);

/// The plain loop: consume everything, produce each record to `output`;
/// with `eos`, a transaction every 500 ms carrying the consumed offsets.
fn plain(bootstrap: &str, input: &str, output: &str, n: u64, eos: bool) -> Duration {
    let group = format!("{output}-group");
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", &group)
        .set("isolation.level", "read_committed")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS as i32 {
        tpl.add_partition_offset(input, p, KOffset::Beginning)
            .expect("tpl");
    }
    consumer.assign(&tpl).expect("assign");
    let tid = format!("{output}-tx");
    let p = producer(bootstrap, eos.then_some(tid.as_str()));
    let mut next = [0i64; PARTITIONS as usize];
    let commit = |p: &BaseProducer, next: &[i64]| {
        let mut offsets = TopicPartitionList::new();
        for (part, &o) in next.iter().enumerate() {
            offsets
                .add_partition_offset(input, part as i32, KOffset::Offset(o))
                .expect("offsets");
        }
        let meta = consumer.group_metadata().expect("group metadata");
        p.send_offsets_to_transaction(&offsets, &meta, TIMEOUT)
            .expect("send offsets");
        p.commit_transaction(TIMEOUT).expect("commit");
    };
    let start = Instant::now();
    if eos {
        p.begin_transaction().expect("begin");
    }
    let mut last_commit = Instant::now();
    let mut got = 0u64;
    while got < n {
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
            send(
                &p,
                BaseRecord::to(output)
                    .key(m.key().unwrap_or_default())
                    .payload(m.payload().unwrap_or_default()),
            );
            next[m.partition() as usize] = m.offset() + 1;
            got += 1;
        }
        if eos && last_commit.elapsed() >= Duration::from_millis(500) {
            commit(&p, &next);
            p.begin_transaction().expect("begin");
            last_commit = Instant::now();
        }
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "stalled at {got}"
        );
    }
    if eos {
        commit(&p, &next);
    } else {
        p.flush(TIMEOUT).expect("flush");
    }
    start.elapsed()
}

fn topology(input: &str, output: &str) -> Topology {
    let mut b = StreamsBuilder::new();
    b.stream(input, Consumed::with(Serdes::string(), Serdes::string()))
        .map_values(|_k: &String, v: String| v)
        .to(output, Produced::with(Serdes::string(), Serdes::string()));
    b.build().expect("topology")
}

/// Ours: from `start` until the final barrier committed: the app closes
/// once it has consumed every input record (as the plain EOS loop commits
/// once it has), and that barrier commits the rest. (The close itself also
/// leaves the group, which is not the pipeline's work: the clock stops at
/// the commit, read from the app's timeline.)
fn ours(bootstrap: &str, input: &str, output: &str, lanes: usize) -> Duration {
    let log = Arc::new(KafkaLog::connect(config(bootstrap)).expect("connect"));
    let app_config =
        RuntimeConfig::new(format!("{output}-app"), Backend::InMemory).with_lanes(lanes);
    let mut app = StreamsApp::with_log(topology(input, output), app_config, log).expect("app");
    let start = Instant::now();
    app.start().expect("start");
    if std::env::var("PHASES").is_ok() {
        app.wait_for_state(
            stoatflow_runtime::AppState::Running,
            Duration::from_secs(60),
        );
        eprintln!("running after {:?}", start.elapsed());
    }
    assert!(
        app.wait_until_consumed(Duration::from_secs(600))
            .expect("consumed"),
        "stoatflow did not consume its input: {:?}",
        app.error()
    );
    assert!(app.close(TIMEOUT), "close: {:?}", app.error());
    let timeline = app.timeline();
    if std::env::var("PHASES").is_ok() {
        for b in timeline.barriers() {
            eprintln!(
                "barrier {} cut {:?} committed {:?}",
                b.barrier,
                b.cut.duration_since(start),
                b.committed.duration_since(start)
            );
        }
    }
    let last = timeline.barriers().last().expect("the final barrier");
    assert!(last.flush, "the last barrier is the close's");
    last.committed.duration_since(start)
}

fn main() {
    let Sizes {
        records: n,
        repeats,
        lanes,
    } = Sizes::from_env();
    let b = broker();
    let log = KafkaLog::connect(config(&b.1)).expect("connect");
    let mut rates: [Vec<f64>; 3] = Default::default();
    let names = [
        "plain rdkafka loop",
        "plain rdkafka eos loop",
        "stoatflow eos",
    ];
    let only = std::env::var("ONLY").ok();
    let keys = ["plain", "plain-eos", "stoatflow"];
    if let Some(o) = &only {
        assert!(keys.contains(&o.as_str()), "ONLY={o}: one of {keys:?}");
    }
    for r in 0..repeats {
        for (i, name) in names.iter().enumerate() {
            if only.as_deref().is_some_and(|o| o != keys[i]) {
                continue;
            }
            let (input, output) = run_topics(&log, "pipe", &format!("{r}-{i}"), PARTITIONS);
            fill(&b.1, &input, n, "v".repeat(100).as_bytes(), None);
            let took = match i {
                0 => plain(&b.1, &input, &output, n, false),
                1 => plain(&b.1, &input, &output, n, true),
                _ => ours(&b.1, &input, &output, lanes),
            };
            let rate = n as f64 / took.as_secs_f64();
            println!(
                "repeat {r} {name:<24} {n:>8} records in {:>7.3} s = {rate:>9.0} records/s",
                took.as_secs_f64()
            );
            rates[i].push(rate);
        }
    }
    if only.is_some() {
        return;
    }
    let [plain, plain_eos, ours] = rates.map(median);
    println!("median records/s: plain {plain:.0}, plain eos {plain_eos:.0}, stoatflow {ours:.0}");
    println!(
        "stoatflow eos / plain loop = {:.2}; stoatflow eos / plain eos loop = {:.2} ({lanes} lanes)",
        ours / plain,
        ours / plain_eos
    );
}
