//! What the server's tests share: a real application (a tumbling count per
//! key on two partitions, in memory) served on loopback, input written to
//! it by partition, and a plain HTTP client.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use stoatflow_log::{Log, Record, Timestamp, TopicPartition, TopicSpec, TransactionalProducer};
use stoatflow_runtime::{AppState, Backend, RuntimeConfig, StreamsApp};
use stoatflow_server::{HttpServer, HttpServerBuilder, RecordingLevel};
use stoatflow_streams::{
    Consumed, EmitStrategy, Produced, Serdes, StreamsBuilder, TimeWindows, Topology,
};
use stoatflow_time::WatermarkStrategy;

pub const INPUT: &str = "clicks";
pub const OUTPUT: &str = "clicks-per-10s";
pub const PARTITIONS: u32 = 2;
pub const START: i64 = 1_790_071_200_000;

/// Clicks per key in 10 s tumbling windows without grace, final results
/// only; monotonous timestamps, so the watermark is the newest time seen.
pub fn topology() -> Topology {
    let mut builder = StreamsBuilder::new();
    builder
        .stream(
            INPUT,
            Consumed::with(Serdes::string(), Serdes::i64())
                .with_watermark_strategy(WatermarkStrategy::for_monotonous_timestamps()),
        )
        .group_by_key()
        .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_secs(10)))
        .emit_strategy(EmitStrategy::on_window_close())
        .count()
        .to_stream()
        .to(
            OUTPUT,
            Produced::with(
                Serdes::time_windowed(Serdes::string(), 10_000),
                Serdes::i64(),
            ),
        );
    builder.build().expect("the topology builds")
}

/// The application, started and RUNNING, and its listener on 127.0.0.1:0.
pub struct Served {
    pub app: StreamsApp,
    pub server: HttpServer,
    producer: <stoatflow_log::EmbeddedLog as Log>::Producer,
}

impl Served {
    pub fn start(id: &str, level: RecordingLevel) -> Served {
        Self::start_with(id, HttpServer::builder().recording_level(level))
    }

    /// As [`Served::start`], with the listener's other settings from `builder`.
    pub fn start_with(id: &str, builder: HttpServerBuilder) -> Served {
        let config = RuntimeConfig::new(id, Backend::InMemory).with_lanes(1);
        let mut app = StreamsApp::new(topology(), config).unwrap();
        app.log()
            .create_topic(&TopicSpec::new(INPUT, PARTITIONS))
            .unwrap();
        app.log()
            .create_topic(&TopicSpec::new(OUTPUT, PARTITIONS))
            .unwrap();
        let server = builder
            .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
            .history(Duration::from_millis(100), Duration::from_secs(120))
            .start(Arc::new(app.handle()))
            .unwrap();
        let producer = app.log().transactional_producer("test-input").unwrap();
        app.start().unwrap();
        assert_eq!(
            app.wait_for_state(AppState::Running, Duration::from_secs(20)),
            AppState::Running
        );
        Served {
            app,
            server,
            producer,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// Writes `(partition, key, event time)` records in one transaction.
    pub fn produce(&mut self, records: &[(u32, &str, i64)]) {
        self.producer.begin().unwrap();
        for &(p, key, ts) in records {
            let record = Record::new(
                Some(key.as_bytes()),
                Some(&1i64.to_be_bytes()),
                Timestamp(ts),
            );
            self.producer
                .send(&TopicPartition::new(INPUT, p), &record)
                .unwrap();
        }
        self.producer.commit().unwrap();
    }

    /// Waits until the input is committed and `/watermarks` shows
    /// `global_ms`; returns its body.
    pub fn settle(&self, global_ms: i64) -> Value {
        assert!(
            self.app
                .wait_until_caught_up(Duration::from_secs(30))
                .unwrap()
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (status, body) = get_json(self.addr(), "/watermarks");
            if status == 200 && body["globalMs"] == global_ms {
                return body;
            }
            assert!(
                Instant::now() < deadline,
                "/watermarks never showed {global_ms}: {status} {body}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A response: status, headers (lowercase names), body.
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `raw` as the whole request and reads the response.
pub fn request(addr: SocketAddr, raw: &[u8]) -> Response {
    let mut s = TcpStream::connect(addr).expect("connect to the listener");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(raw).unwrap();
    let mut bytes = Vec::new();
    s.read_to_end(&mut bytes).unwrap();
    let text = String::from_utf8(bytes).expect("responses are UTF-8");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Response {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// Waits out the listener's response cache (100 ms by default): the next
/// answer reads the application afresh.
pub fn wait_for_refresh() {
    std::thread::sleep(Duration::from_millis(150));
}

pub fn get(addr: SocketAddr, path: &str) -> Response {
    request(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes(),
    )
}

pub fn get_json(addr: SocketAddr, path: &str) -> (u16, Value) {
    let r = get(addr, path);
    (
        r.status,
        serde_json::from_str(&r.body).unwrap_or(Value::Null),
    )
}
