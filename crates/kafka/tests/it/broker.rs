//! A real Kafka-protocol broker for tests: `noida-db`, spawned on a free
//! loopback port with its own data directory, killed on drop (by process
//! group: its PID leads the group of the wrapper and the broker).
//!
//! The binary is found or installed by [`noida_db`]; a test that cannot
//! have it fails, naming the command that installs it.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use stoatflow_kafka::{KafkaConfig, KafkaLog};

#[path = "noida_db.rs"]
pub mod noida_db;

use noida_db::BINARY;

const READY_WITHIN: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub struct TestBroker {
    child: Child,
    port: u16,
    bin: PathBuf,
    dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind a loopback port")
}

/// Starts noida-db's Kafka service alone on `port` with its data in `dir`.
fn spawn(bin: &std::path::Path, port: u16, dir: &std::path::Path) -> Child {
    Command::new(bin)
        .args([
            "start",
            "--only",
            "kafka",
            "--kafka-port",
            &port.to_string(),
        ])
        .args(["--host", "127.0.0.1", "--data-dir"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group: the PyPI entry point is a wrapper
        // that starts the real binary as a child; both must go.
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {}: {e}", bin.display()))
}

impl TestBroker {
    /// Starts a broker.
    ///
    /// # Panics
    /// If noida-db is missing and cannot be installed, or does not become
    /// ready in time.
    pub fn start(test: &str) -> TestBroker {
        let bin = noida_db::binary();
        eprintln!("{test}: broker {}", bin.display());
        let mut last_err = String::new();
        for _attempt in 0..3 {
            let dir = tempfile::tempdir().expect("tempdir");
            let port = free_port();
            let child = spawn(&bin, port, dir.path());
            let mut broker = TestBroker {
                child,
                port,
                bin: bin.clone(),
                dir,
            };
            match broker.wait_ready() {
                Ok(()) => return broker,
                Err(e) => last_err = e,
            }
        }
        panic!("{BINARY} did not become ready: {last_err}");
    }

    /// Stops the broker with SIGINT (its Ctrl-C: it shuts down and saves its data), waits
    /// until it is gone, then starts it again on the same port and data directory.
    ///
    /// (SIGKILL is no use here: noida-db then loses transactions it had acknowledged as
    /// committed, and can leave a partition's last stable offset stuck behind a transaction
    /// whose state it lost, so no client could be exactly-once across it.)
    ///
    /// # Panics
    /// If it does not stop, or does not become ready again, in time.
    pub fn stop_and_restart(&mut self) {
        let _ = Command::new("kill")
            .args(["-INT", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + READY_WITHIN;
        let addr: SocketAddr = ([127, 0, 0, 1], self.port).into();
        while self.child.try_wait().ok().flatten().is_none()
            || TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok()
        {
            assert!(Instant::now() < deadline, "{BINARY} did not stop on SIGINT");
            std::thread::sleep(Duration::from_millis(50));
        }
        kill_group(&mut self.child);
        self.child = spawn(&self.bin, self.port, self.dir.path());
        if let Err(e) = self.wait_ready() {
            panic!("{BINARY} did not come back on port {}: {e}", self.port);
        }
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_WITHIN;
        let addr: SocketAddr = ([127, 0, 0, 1], self.port).into();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("{BINARY} exited early with {status}"));
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
                && KafkaLog::connect(self.config().with_request_timeout(Duration::from_secs(5)))
                    .is_ok()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "not answering on port {} after {READY_WITHIN:?}",
                    self.port
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A configuration for this broker. noida-db ignores `fetch.max.bytes`,
    /// so the receive limit is raised to match.
    pub fn config(&self) -> KafkaConfig {
        Self::config_at(&self.bootstrap())
    }

    /// [`TestBroker::config`] for a broker at `bootstrap` (a child process's view).
    pub fn config_at(bootstrap: &str) -> KafkaConfig {
        KafkaConfig::new(bootstrap)
            .with_request_timeout(Duration::from_secs(30))
            .with_property("receive.message.max.bytes", "200000000")
            .expect("not a protected key")
    }

    pub fn log(&self) -> KafkaLog {
        KafkaLog::connect(self.config()).expect("connect to the test broker")
    }
}

/// Kills the process group led by `child` (the wrapper and the broker).
pub fn kill_group(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

impl Drop for TestBroker {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}
