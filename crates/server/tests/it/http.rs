//! The listener in front of a real application on the embedded log, over
//! loopback: readiness follows the lifecycle, `/watermarks` and `/info`
//! answer with the engine's values.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use stoatflow_log::{EmbeddedLog, Log, TopicSpec};
use stoatflow_runtime::{AppState, Backend, RuntimeConfig, StreamsApp};
use stoatflow_server::{EndpointsConfig, HttpServer};
use stoatflow_streams::{Consumed, Produced, Serdes, StreamsBuilder};
use stoatflow_time::WatermarkStrategy;

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

/// The app `builder` describes, on one lane in memory with its topics `in`
/// and `out` (2 partitions each), and a listener on loopback in front of it.
fn served(builder: StreamsBuilder, app_id: &str) -> (StreamsApp<EmbeddedLog>, HttpServer) {
    let config = RuntimeConfig::new(app_id, Backend::InMemory).with_lanes(1);
    let app = StreamsApp::new(builder.build().unwrap(), config).unwrap();
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
    (app, server)
}

#[test]
fn endpoints_follow_a_running_application() {
    // A watermark strategy on the source: the engine tracks event time.
    let mut builder = StreamsBuilder::new();
    builder
        .stream(
            "in",
            Consumed::with(Serdes::string(), Serdes::i64()).with_watermark_strategy(
                WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(1)),
            ),
        )
        .to("out", Produced::with(Serdes::string(), Serdes::i64()));
    let (mut app, server) = served(builder, "served");
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
    // One instance owns both tasks of its one sub-topology, keeps no copies.
    assert_eq!(
        info["tasks"],
        serde_json::json!({ "active": ["0_0", "0_1"], "standby": [] }),
        "{info}"
    );
    // Answers are read from the application at most every 100 ms: the
    // readiness answered before the start may still be served that long.
    let deadline = Instant::now() + Duration::from_secs(2);
    while get(addr, "/health/readiness").0 != 200 {
        assert!(Instant::now() < deadline, "RUNNING never became ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(app.close(Duration::from_secs(10)));
    // Answers are read from the application at most every 100 ms.
    std::thread::sleep(Duration::from_millis(150));
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

/// `bind` holds the address without serving: a second bind of it fails
/// naming it (so an application learns its address is taken before it
/// creates anything), and once served, a connection made while it was only
/// bound is answered.
#[test]
fn bind_holds_the_address_and_serve_answers_what_waited() {
    let bound = HttpServer::builder()
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .bind()
        .unwrap();
    let addr = bound.local_addr();
    assert_ne!(addr.port(), 0);
    let err = HttpServer::builder().listen(addr).bind().unwrap_err();
    assert!(
        matches!(&err, stoatflow_server::ServerError::Bind { addr: a, .. } if *a == addr),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with(&format!("cannot listen on {addr}: ")),
        "{err}"
    );
    let mut waiting = TcpStream::connect(addr).expect("the kernel's backlog takes it");
    write!(waiting, "GET /info HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
    let server = bound.serve(Arc::new(Idle)).unwrap();
    assert_eq!(server.local_addr(), addr);
    let mut response = String::new();
    waiting.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let body: Value = serde_json::from_str(response.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["applicationId"], "idle", "{response}");
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
        (
            b"GET /\xff\xfe HTTP/1.1\r\nHost: test\r\n\r\n".to_vec(),
            "404",
        ),
        (b"GET /info\r\n\r\n".to_vec(), "400"),
        (b"BREW /info HTTP/1.1\r\nHost: test\r\n\r\n".to_vec(), "405"),
        (
            b"DELETE /watermarks HTTP/1.1\r\nHost: test\r\n\r\n".to_vec(),
            "405",
        ),
        (
            b"GET /watermarks/../info HTTP/1.1\r\nHost: test\r\n\r\n".to_vec(),
            "404",
        ),
        (
            b"GET /metrics?x=%00%ff HTTP/1.1\r\nHost: test\r\n\r\n".to_vec(),
            "200",
        ),
        (huge, "431"),
        (Vec::new(), ""),
        (b"GET /info HTTP/1.1\r\nHost: x".to_vec(), "200"),
        // HTTP/1.1 asks for exactly one Host (RFC 9112); HTTP/1.0 does not.
        (b"GET /info HTTP/1.1\r\n\r\n".to_vec(), "400"),
        (b"GET /nowhere HTTP/1.1\r\n\r\n".to_vec(), "400"),
        (
            b"GET /info HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n".to_vec(),
            "400",
        ),
        (b"GET /info HTTP/1.1\r\nHost: a b\r\n\r\n".to_vec(), "400"),
        (b"GET /info HTTP/1.0\r\n\r\n".to_vec(), "200"),
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
    let hostless = raw(addr, b"GET /health HTTP/1.1\r\n\r\n");
    assert!(
        hostless.ends_with(r#"{"error":"an HTTP/1.1 request without a Host header field"}"#),
        "{hostless}"
    );
    let head = raw(addr, b"HEAD /info HTTP/1.1\r\nHost: test\r\n\r\n");
    assert!(
        head.starts_with("HTTP/1.1 200 ") && head.ends_with("\r\n\r\n"),
        "{head:?}"
    );
    let not_allowed = raw(addr, b"PUT /metrics HTTP/1.1\r\nHost: test\r\n\r\n");
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

/// Every path the listener serves.
const ENDPOINTS: [&str; 11] = [
    "/",
    "/index.html",
    "/watermarks",
    "/watermarks/history",
    "/info",
    "/metrics",
    "/health",
    "/health/liveness",
    "/ready",
    "/health/readiness",
    "/openapi.json",
];

fn status_of(response: &str) -> &str {
    response.split(' ').nth(1).unwrap_or("")
}

#[test]
fn bad_paths_get_404_and_other_methods_405_on_every_endpoint() {
    let server = HttpServer::builder()
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .max_requests_per_second(0)
        .start(Arc::new(Idle))
        .unwrap();
    let addr = server.local_addr();
    let mut not_found: Vec<Vec<u8>> = [
        "/%",
        "/%zz",
        "/info%",
        "/%69nfo",
        "/%c3%28",
        "/%ff%fe",
        "/info%00",
        "/metrics/",
        "/watermarks/history/x",
        "/.",
        "/..",
        "/info;x",
        "/INFO",
    ]
    .iter()
    .map(|p| format!("GET {p} HTTP/1.1\r\nHost: test\r\n\r\n").into_bytes())
    .collect();
    // Not UTF-8: a lone continuation byte, an overlong encoding, a
    // surrogate, a truncated sequence.
    for bad in [&b"\x80"[..], b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82"] {
        let mut request = b"GET /info".to_vec();
        request.extend_from_slice(bad);
        request.extend_from_slice(b" HTTP/1.1\r\nHost: test\r\n\r\n");
        not_found.push(request);
    }
    // A path as long as the head allows.
    not_found
        .push(format!("GET /{} HTTP/1.1\r\nHost: test\r\n\r\n", "x".repeat(8_000)).into_bytes());
    for request in &not_found {
        let response = raw(addr, request);
        assert_eq!(
            status_of(&response),
            "404",
            "{:?} got {response:?}",
            String::from_utf8_lossy(&request[..request.len().min(40)])
        );
    }
    let too_long = format!("GET /{} HTTP/1.1\r\nHost: test\r\n\r\n", "x".repeat(9_000));
    assert_eq!(status_of(&raw(addr, too_long.as_bytes())), "431");
    for path in ENDPOINTS {
        for method in ["PUT", "DELETE", "POST", "PATCH", "OPTIONS", "CONNECT"] {
            let response = raw(
                addr,
                format!("{method} {path} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes(),
            );
            assert_eq!(status_of(&response), "405", "{method} {path}: {response:?}");
            assert!(response.contains("\r\nAllow: GET, HEAD\r\n"), "{response}");
        }
        let head = raw(
            addr,
            format!("HEAD {path} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes(),
        );
        let get = raw(
            addr,
            format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes(),
        );
        assert!(
            head.ends_with("\r\n\r\n"),
            "HEAD {path} has no body: {head:?}"
        );
        assert_eq!(status_of(&head), status_of(&get), "HEAD {path} as GET");
        assert!(["200", "503"].contains(&status_of(&head)), "{path}: {head}");
        let length = |r: &str| {
            r.lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .map(str::to_owned)
        };
        assert_eq!(length(&head), length(&get), "HEAD {path} says GET's length");
    }
    assert_eq!(
        get(addr, "/health").0,
        200,
        "still serving: nothing panicked"
    );
}

/// Threads of this process (Linux; `None` elsewhere).
fn threads() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/task").ok()?.count())
}

#[test]
fn a_hundred_connections_past_its_cap_cost_the_listener_no_thread() {
    let server = HttpServer::builder()
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .max_connections(2)
        .request_timeout(Duration::from_secs(30))
        .start(Arc::new(Idle))
        .unwrap();
    let addr = server.local_addr();
    let threads_before = threads();
    // Clients that connect and send nothing: two hold the slots, the
    // others are shed or wait in the listen backlog (`probes.rs`).
    let mut silent: Vec<TcpStream> = (0..102)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    // The oldest was shed once the listener reached the newcomers.
    silent[0]
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut rest = Vec::new();
    assert!(silent[0].read_to_end(&mut rest).is_ok() && rest.is_empty());
    if let (Some(before), Some(after)) = (threads_before, threads()) {
        assert!(
            after < before + 20,
            "102 connections must not take a thread each: {before} threads before, {after} after"
        );
    }
    assert_eq!(get(addr, "/health").0, 200, "serving on");
    drop(silent);
}

#[test]
fn a_silent_client_is_dropped_at_the_request_timeout_and_blocks_no_one() {
    let server = HttpServer::builder()
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .request_timeout(Duration::from_millis(300))
        .start(Arc::new(Idle))
        .unwrap();
    let addr = server.local_addr();
    let mut silent = TcpStream::connect(addr).unwrap();
    let started = Instant::now();
    // Others are served while it sits there.
    for _ in 0..5 {
        assert_eq!(get(addr, "/health").0, 200);
    }
    assert!(
        started.elapsed() < Duration::from_millis(300),
        "not held up"
    );
    silent
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut rest = Vec::new();
    let closed = silent.read_to_end(&mut rest);
    assert!(
        closed.is_ok() && rest.is_empty(),
        "closed unanswered: {closed:?} {rest:?}"
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
}

/// The nice value (field 19 of `/proc/.../stat`) of the process or a thread.
fn nice_of(stat_path: &std::path::Path) -> i32 {
    let stat = std::fs::read_to_string(stat_path).unwrap();
    // The command name, in parentheses, may hold spaces: count after it.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(16).unwrap().parse().unwrap()
}

#[test]
fn the_listener_thread_yields_to_the_engine() {
    let server = HttpServer::start(
        EndpointsConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..EndpointsConfig::default()
        },
        Arc::new(Idle),
    )
    .unwrap();
    let process = nice_of(std::path::Path::new("/proc/self/stat"));
    let deadline = Instant::now() + Duration::from_secs(5);
    let listener = loop {
        let found = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(Result::ok)
            .map(|t| t.path())
            .filter(|t| {
                std::fs::read_to_string(t.join("comm")).is_ok_and(|c| c.trim() == "stoatflow-http")
            })
            .map(|t| nice_of(&t.join("stat")))
            .find(|&n| n != process);
        if let Some(n) = found {
            break n;
        }
        assert!(
            Instant::now() < deadline,
            "no lowered stoatflow-http thread"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(
        listener,
        (process + stoatflow_server::LISTENER_NICE).min(19)
    );
    server.shutdown();
}

/// A processing-time topology (nothing on event time, no watermark
/// strategy) runs DIRECT: no event time is tracked, so `/watermarks`
/// answers 503 while it runs, by design
/// (docs/validation.md#coordination-mode), and the tracking gauge reads 0.
#[test]
fn a_processing_time_topology_has_no_watermarks_by_design() {
    let mut builder = StreamsBuilder::new();
    builder
        .stream("in", Consumed::with(Serdes::string(), Serdes::i64()))
        .to("out", Produced::with(Serdes::string(), Serdes::i64()));
    let (mut app, server) = served(builder, "direct");
    let addr = server.local_addr();
    app.start().unwrap();
    assert_eq!(
        app.wait_for_state(AppState::Running, Duration::from_secs(10)),
        AppState::Running
    );
    // Past the view's refresh and the server's answer cache.
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(get(addr, "/watermarks").0, 503);
    assert!(!app.handle().metrics().event_time_tracking);
    assert!(app.close(Duration::from_secs(10)));
    server.shutdown();
}

/// A state listener that panics (on the engine's thread, told of RUNNING)
/// stops the application in ERROR, and liveness fails: the engine is not
/// left dead behind a state that still says RUNNING.
#[test]
fn liveness_fails_once_a_panicking_state_listener_stopped_the_application() {
    let mut builder = StreamsBuilder::new();
    builder
        .stream("in", Consumed::with(Serdes::string(), Serdes::i64()))
        .to("out", Produced::with(Serdes::string(), Serdes::i64()));
    let (mut app, server) = served(builder, "listener-panics");
    let addr = server.local_addr();
    app.set_state_listener(|new, _| {
        assert_ne!(new, AppState::Running, "this listener refuses RUNNING");
    });
    app.start().unwrap();
    assert_eq!(
        app.wait_for_state(AppState::Error, Duration::from_secs(10)),
        AppState::Error
    );
    let error = app.error().expect("an error").to_string();
    assert!(
        error.starts_with("the state listener panicked: "),
        "{error}"
    );
    let (status, body) = get(addr, "/health/liveness");
    assert_eq!(status, 503, "{body}");
    assert_eq!(get(addr, "/health").0, 503);
    assert_eq!(get(addr, "/health/readiness").0, 503);
    app.close(Duration::from_secs(10));
    assert_eq!(app.state(), AppState::Error);
}

/// While the application is on its way to ERROR (PENDING_ERROR: the engine
/// has stopped, the state listener is still being told), liveness already
/// fails: the pod is restarted for a dying application, not only a dead
/// one. Readiness fails as in every state but RUNNING.
#[test]
fn liveness_fails_while_the_application_is_pending_error() {
    let mut builder = StreamsBuilder::new();
    builder
        .stream("in", Consumed::with(Serdes::string(), Serdes::i64()))
        .to("out", Produced::with(Serdes::string(), Serdes::i64()));
    let (mut app, server) = served(builder, "pending-error");
    let addr = server.local_addr();
    let (entered, in_pending_error) = std::sync::mpsc::channel::<()>();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let released = std::sync::Mutex::new(released);
    app.set_state_listener(move |new, _| {
        // Refusing RUNNING stops the application with an error...
        assert_ne!(new, AppState::Running, "this listener refuses RUNNING");
        // ...and it is held in PENDING_ERROR until the test has probed.
        if new == AppState::PendingError {
            let _ = entered.send(());
            let _ = released
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(30));
        }
    });
    app.start().unwrap();
    in_pending_error
        .recv_timeout(Duration::from_secs(10))
        .expect("PENDING_ERROR reached");
    assert_eq!(app.state(), AppState::PendingError);
    let (status, body) = get(addr, "/health/liveness");
    assert_eq!(
        (status, &body["state"]),
        (503, &Value::from("PENDING_ERROR")),
        "{body}"
    );
    assert_eq!(get(addr, "/health/readiness").0, 503);
    release.send(()).unwrap();
    assert_eq!(
        app.wait_for_state(AppState::Error, Duration::from_secs(10)),
        AppState::Error
    );
    app.close(Duration::from_secs(10));
}
