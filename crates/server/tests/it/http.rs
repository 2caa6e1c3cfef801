//! The listener in front of a real application on the embedded log, over
//! loopback: readiness follows the lifecycle, `/watermarks` and `/info`
//! answer with the engine's values.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use stoatflow_log::{Log, TopicSpec};
use stoatflow_runtime::{AppState, Backend, RuntimeConfig, StreamsApp};
use stoatflow_server::{EndpointsConfig, HttpServer};
use stoatflow_streams::{Consumed, Produced, Serdes, StreamsBuilder};

fn get(addr: SocketAddr, path: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).expect("connect to the listener");
    write!(s, "GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    let status: u16 = response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"));
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[test]
fn endpoints_follow_a_running_application() {
    let mut builder = StreamsBuilder::new();
    builder
        .stream("in", Consumed::with(Serdes::string(), Serdes::i64()))
        .to("out", Produced::with(Serdes::string(), Serdes::i64()));
    let config = RuntimeConfig::new("served", Backend::InMemory).with_lanes(1);
    let mut app = StreamsApp::new(builder.build().unwrap(), config).unwrap();
    app.log().create_topic(&TopicSpec::new("in", 2)).unwrap();
    app.log().create_topic(&TopicSpec::new("out", 2)).unwrap();
    let server = HttpServer::start(
        EndpointsConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..EndpointsConfig::default()
        },
        Arc::new(app.handle()),
    )
    .unwrap();
    let addr = server.local_addr();
    assert_eq!(
        get(addr, "/health/readiness").0,
        503,
        "CREATED is not ready"
    );
    assert_eq!(get(addr, "/health/liveness").0, 200);
    app.start().unwrap();
    assert_eq!(
        app.wait_for_state(AppState::Running, Duration::from_secs(10)),
        AppState::Running
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let watermarks = loop {
        let (status, body) = get(addr, "/watermarks");
        if status == 200 {
            break body;
        }
        assert!(Instant::now() < deadline, "/watermarks stayed {status}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(watermarks["partitions"]["in:0"].is_object(), "{watermarks}");
    assert_eq!(watermarks["globalIso"], "N/A");
    let (status, info) = get(addr, "/info");
    assert_eq!(status, 200);
    assert_eq!(info["applicationId"], "served");
    assert_eq!(info["state"], "RUNNING");
    assert_eq!(info["stateCode"], 4);
    assert_eq!(get(addr, "/health/readiness").0, 200);
    assert!(app.close(Duration::from_secs(10)));
    assert_eq!(get(addr, "/health/readiness").0, 503);
    assert_eq!(get(addr, "/nothing-here").0, 404);
    server.shutdown();
    assert!(TcpStream::connect(addr).is_err(), "the listener stopped");
}
