//! The broker both Kafka benches run against: the one at
//! `STOATFLOW_KAFKA_BOOTSTRAP` if set, else `noida-db` spawned on a free
//! loopback port with its own data directory and killed (by process group)
//! when dropped.

use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use stoatflow_kafka::{KafkaConfig, KafkaLog};

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
