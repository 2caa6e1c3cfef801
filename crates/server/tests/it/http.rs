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

struct Idle;

impl stoatflow_server::Endpoints for Idle {
    fn watermarks(&self) -> Option<stoatflow_time::WatermarksSnapshot> {
        None
    }
    fn client_state(&self) -> (&'static str, u8) {
        ("RUNNING", 4)
    }
    fn application_id(&self) -> String {
        "idle".into()
    }
}

#[test]
fn a_non_loopback_address_is_refused_unless_allowed_explicitly() {
    let any = SocketAddr::from(([0, 0, 0, 0], 0));
    let err = HttpServer::start(
        EndpointsConfig {
            listen: any,
            ..EndpointsConfig::default()
        },
        Arc::new(Idle),
    )
    .unwrap_err();
    assert!(
        matches!(err, stoatflow_server::ServerError::NotLoopback { addr } if addr == any),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("refusing to listen on 0.0.0.0:0: it is not a loopback address")
    );
    let err = HttpServer::builder()
        .listen(SocketAddr::from(([192, 0, 2, 1], 0)))
        .start(Arc::new(Idle))
        .unwrap_err();
    assert!(err.to_string().contains("allow it explicitly"), "{err}");
    let allowed = HttpServer::builder()
        .listen(any)
        .allow_non_loopback(true)
        .start(Arc::new(Idle))
        .unwrap();
    let port = allowed.local_addr().port();
    let (status, info) = get(SocketAddr::from(([127, 0, 0, 1], port)), "/info");
    assert_eq!(
        (status, &info["applicationId"]),
        (200, &Value::from("idle"))
    );
    let v6 = HttpServer::builder()
        .listen("[::1]:0".parse().unwrap())
        .start(Arc::new(Idle));
    if let Err(e) = &v6 {
        assert!(
            matches!(e, stoatflow_server::ServerError::Bind { .. }),
            "::1 is loopback: only a missing IPv6 stack may refuse it: {e}"
        );
    }
}

fn raw(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn malformed_requests_get_an_error_status_and_the_listener_keeps_serving() {
    let server = HttpServer::builder()
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .start(Arc::new(Idle))
        .unwrap();
    let addr = server.local_addr();
    let mut huge = b"GET /info HTTP/1.1\r\n".to_vec();
    for i in 0..2_000 {
        huge.extend_from_slice(format!("X-Filler-{i}: aaaaaaaa\r\n").as_bytes());
    }
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"\xff\xfe\xfd\r\n\r\n".to_vec(), "400"),
        (b"GET /\xff\xfe HTTP/1.1\r\n\r\n".to_vec(), "404"),
        (b"GET /info\r\n\r\n".to_vec(), "400"),
        (b"BREW /info HTTP/1.1\r\n\r\n".to_vec(), "405"),
        (b"DELETE /watermarks HTTP/1.1\r\n\r\n".to_vec(), "405"),
        (b"GET /watermarks/../info HTTP/1.1\r\n\r\n".to_vec(), "404"),
        (b"GET /metrics?x=%00%ff HTTP/1.1\r\n\r\n".to_vec(), "200"),
        (huge, "431"),
        (Vec::new(), ""),
        (b"GET /info HTTP/1.1\r\nHost: x".to_vec(), "200"),
    ];
    for (bytes, want) in cases {
        let response = raw(addr, &bytes);
        if want.is_empty() {
            continue;
        }
        assert!(
            response.starts_with(&format!("HTTP/1.1 {want} ")),
            "{:?} got {response:?}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(60)])
        );
    }
    let head = raw(addr, b"HEAD /info HTTP/1.1\r\n\r\n");
    assert!(
        head.starts_with("HTTP/1.1 200 ") && head.ends_with("\r\n\r\n"),
        "{head:?}"
    );
    let not_allowed = raw(addr, b"PUT /metrics HTTP/1.1\r\n\r\n");
    assert!(
        not_allowed.contains("Allow: GET, HEAD\r\n"),
        "{not_allowed}"
    );
    assert_eq!(get(addr, "/health").0, 200, "still serving");
}

#[test]
fn the_listener_paces_requests_to_its_limit() {
    let server = HttpServer::builder()
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .max_requests_per_second(10)
        .start(Arc::new(Idle))
        .unwrap();
    let started = Instant::now();
    for _ in 0..6 {
        assert_eq!(get(server.local_addr(), "/health").0, 200);
    }
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "six requests at 10 per second start at least 100 ms apart: {:?}",
        started.elapsed()
    );
}
