//! What the Kafka benches share: the broker they run against (the one at
//! `STOATFLOW_KAFKA_BOOTSTRAP` if set, else `noida-db` spawned on a free
//! loopback port with its own data directory and killed, by process group,
//! when dropped), their numeric settings from the environment, a producer
//! and a send that waits out its full queue, the input they read, fresh
//! topics for each run, and the median of their repeats.

use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer as _};
use stoatflow_kafka::{KafkaConfig, KafkaLog};
use stoatflow_log::{Log as _, TopicSpec};

pub struct Broker(
    Option<Child>,
    pub String,
    #[allow(dead_code)] Option<tempfile::TempDir>,
);

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            // The entry point is a wrapper; kill its whole process group.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", c.id())])
                .status();
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Broker {
    /// The process group of the broker this bench spawned (its wrapper
    /// leads it), `None` for one it was given.
    #[allow(dead_code)] // not every bench accounts for the broker's CPU
    pub fn process_group(&self) -> Option<u32> {
        self.0.as_ref().map(Child::id)
    }
}

pub fn broker() -> Broker {
    if let Ok(b) = std::env::var("STOATFLOW_KAFKA_BOOTSTRAP") {
        return Broker(None, b, None);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let child = Command::new("noida-db")
        .args([
            "start",
            "--only",
            "kafka",
            "--kafka-port",
            &port.to_string(),
            "--host",
            "127.0.0.1",
            "--data-dir",
        ])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn noida-db (pip install noida-db)");
    let b = Broker(Some(child), format!("127.0.0.1:{port}"), Some(dir));
    let deadline = Instant::now() + Duration::from_secs(60);
    while KafkaLog::connect(config(&b.1).with_request_timeout(Duration::from_secs(2))).is_err() {
        assert!(Instant::now() < deadline, "noida-db not ready");
        std::thread::sleep(Duration::from_millis(100));
    }
    b
}

pub fn config(bootstrap: &str) -> KafkaConfig {
    KafkaConfig::new(bootstrap)
        .with_property("receive.message.max.bytes", "200000000")
        .expect("allowed")
}

/// Creates a fresh input and output topic of `partitions` for run `run`,
/// named after `prefix`: `(input, output)`.
#[allow(dead_code)] // not every bench runs an application
pub fn run_topics(log: &KafkaLog, prefix: &str, run: &str, partitions: u32) -> (String, String) {
    let input = format!("{prefix}-in-{run}");
    let output = format!("{prefix}-out-{run}");
    for t in [&input, &output] {
        log.create_topic(&TopicSpec::new(t.as_str(), partitions))
            .expect("topic");
    }
    (input, output)
}

/// What a bench that runs applications repeats: env `RECORDS` (default
/// 200 000) records, `REPEATS` (default 3) times, with `LANES` (default 2)
/// lanes per instance.
#[allow(dead_code)] // not every bench runs an application
pub struct Sizes {
    pub records: u64,
    pub repeats: u64,
    pub lanes: usize,
}

#[allow(dead_code)]
impl Sizes {
    pub fn from_env() -> Sizes {
        Sizes {
            records: env("RECORDS", 200_000),
            repeats: env("REPEATS", 3),
            lanes: env("LANES", 2) as usize,
        }
    }
}

/// The number in environment variable `name`, else `default`.
pub fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// An idempotent producer (`linger.ms` 5), transactional with an id.
pub fn producer(bootstrap: &str, transactional_id: Option<&str>) -> BaseProducer {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .set("linger.ms", "5");
    if let Some(id) = transactional_id {
        c.set("transactional.id", id);
    }
    let p: BaseProducer = c.create().expect("producer");
    if transactional_id.is_some() {
        p.init_transactions(Duration::from_secs(30))
            .expect("init transactions");
    }
    p
}

/// Writes `n` records over 1 000 keys (`key-0000`, ...; spread over the
/// partitions by the producer's partitioner), each with `value`, with event
/// time `first_ms + i` ms for the `i`th if `first_ms` is given (else the
/// producer's clock), and waits until all are acknowledged.
#[allow(dead_code)] // not every bench reads a filled topic
pub fn fill(bootstrap: &str, topic: &str, n: u64, value: &[u8], first_ms: Option<i64>) {
    let p = producer(bootstrap, None);
    for i in 0..n {
        let key = format!("key-{:04}", i % 1000);
        let mut rec = BaseRecord::to(topic).key(key.as_bytes()).payload(value);
        if let Some(first) = first_ms {
            rec = rec.timestamp(first + i as i64);
        }
        send(&p, rec);
    }
    p.flush(Duration::from_secs(30)).expect("flush the input");
}

/// Sends `rec`, serving the producer while its queue is full.
pub fn send(p: &BaseProducer, mut rec: BaseRecord<'_, [u8], [u8]>) {
    loop {
        match p.send(rec) {
            Ok(()) => return,
            Err((_, back)) => {
                p.poll(Duration::from_millis(5));
                rec = back;
            }
        }
    }
}

/// The median of `v` (the upper one of an even count).
#[allow(dead_code)] // not every bench repeats
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
