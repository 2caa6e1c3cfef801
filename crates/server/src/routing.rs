//! [`ServerState`] and [`route`]: which response a request line gets.
//!
//! Owns the route table, the status-code rules (400 for a malformed request
//! line or an HTTP/1.1 request without one valid `Host`, 404 for an unknown
//! path, 405 with `Allow` for a method other than GET/HEAD on a known one
//! (POST too on `/log/records`), 413 for a body past the bound, 403 for a
//! log route asked from a peer that is not loopback,
//! the 503 rules of `/watermarks` (docs/operating.md#watermarks-endpoint) and
//! of the probes: liveness fails once the application is failing,
//! PENDING_ERROR or ERROR, so the pod is restarted; readiness in every state
//! but RUNNING) and what the listener keeps between requests: the watermark
//! history it samples and the [`ResponseCache`] through which every
//! application-dependent response is read. The log routes (`log_routes`)
//! are never cached: each request reads or writes the log itself. Knows
//! nothing of sockets.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stoatflow_time::{WallTime, Watermark, WatermarksSnapshot};

use crate::cache::ResponseCache;
use crate::connection::{BodyProblem, Incoming, MAX_BODY};
use crate::endpoints::Endpoints;
use crate::head::host_problem;
use crate::history::WatermarkHistory;
use crate::log_access::LogAccess;
use crate::log_routes;
use crate::metrics::{METRICS_CONTENT_TYPE, MetricsRegistry, RecordingLevel};
use crate::response::{Encoded, Response};
use crate::store_access::StoreAccess;
use crate::store_routes;
use crate::watermarks::{info_json, watermarks_response};

/// The live watermark page, embedded in the binary.
const PAGE: &str = include_str!("../assets/watermarks.html");
/// The OpenAPI description of the JSON endpoints.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// Where a request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Page,
    OpenApi,
    History,
    /// A response read from the application.
    App(Read),
    /// The application's log, read or written (never cached).
    Log(LogRoute),
    /// The application's queryable stores (never cached).
    Stores,
}

/// The log routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LogRoute {
    Topics,
    Records,
}

/// The responses read from the application (through the cache).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    Watermarks,
    Info,
    Metrics,
    Liveness,
    Readiness,
}

fn find_route(path: &str) -> Option<Route> {
    if path == "/stores" || path.starts_with("/stores/") {
        return Some(Route::Stores);
    }
    Some(match path {
        "/" | "/index.html" => Route::Page,
        "/watermarks" => Route::App(Read::Watermarks),
        "/watermarks/history" => Route::History,
        "/info" => Route::App(Read::Info),
        "/metrics" => Route::App(Read::Metrics),
        "/health" | "/health/liveness" => Route::App(Read::Liveness),
        "/ready" | "/health/readiness" => Route::App(Read::Readiness),
        "/openapi.json" => Route::OpenApi,
        "/log/topics" => Route::Log(LogRoute::Topics),
        "/log/records" => Route::Log(LogRoute::Records),
        _ => return None,
    })
}

/// What the listener thread serves from.
pub(crate) struct ServerState {
    app: Arc<dyn Endpoints>,
    show_watermarks: bool,
    metrics: MetricsRegistry,
    history: WatermarkHistory,
    cache: ResponseCache<Route>,
    page: Arc<Encoded>,
    openapi: Arc<Encoded>,
    too_large: Arc<Encoded>,
    /// The log the log routes serve, if the application offers one.
    log: Option<Arc<dyn LogAccess>>,
    /// The stores the store routes query, if the application offers any.
    stores: Option<Arc<dyn StoreAccess>>,
}

impl ServerState {
    /// Serves `app`; application-dependent responses are rebuilt at most
    /// once per `refresh`.
    pub(crate) fn new(
        app: Arc<dyn Endpoints>,
        show_watermarks: bool,
        level: RecordingLevel,
        history: WatermarkHistory,
        refresh: Duration,
    ) -> Self {
        ServerState {
            metrics: MetricsRegistry::new(app.clone(), level),
            app,
            show_watermarks,
            history,
            cache: ResponseCache::new(refresh),
            page: Response::text("text/html; charset=utf-8", PAGE.to_owned()).encode(),
            openapi: Response::text("application/json", OPENAPI.to_owned()).encode(),
            too_large: Response::json(431, &json!({ "error": "request head too large" })).encode(),
            log: None,
            stores: None,
        }
    }

    /// Serves the store routes from `stores`.
    pub(crate) fn with_stores(mut self, stores: Option<Arc<dyn StoreAccess>>) -> Self {
        self.stores = stores;
        self
    }

    /// Serves the log routes from `log`.
    pub(crate) fn with_log(mut self, log: Option<Arc<dyn LogAccess>>) -> Self {
        self.log = log;
        self
    }

    /// Takes a history sample if one is due at `now`.
    pub(crate) fn sample_history(&mut self, now: WallTime) {
        if self.history.is_due(now)
            && let Some(s) = self.app.watermarks()
        {
            self.history.record(now, &s);
        }
    }

    /// The answer to a complete request from `peer`, and whether only its
    /// head is sent (`HEAD`).
    pub(crate) fn answer(
        &mut self,
        request: Incoming<'_>,
        peer: IpAddr,
        now: Instant,
    ) -> (Arc<Encoded>, bool) {
        match request {
            Incoming::TooLarge => (self.too_large.clone(), false),
            Incoming::BadBody(problem) => {
                let (status, error) = match problem {
                    BodyProblem::TooLarge => (
                        413,
                        format!(
                            "request body larger than {MAX_BODY} bytes; send fewer records per request"
                        ),
                    ),
                    BodyProblem::Length(reason) => (400, format!("request with {reason}")),
                    BodyProblem::Short => {
                        (400, "request body shorter than its Content-Length".into())
                    }
                };
                (
                    Response::json(status, &json!({ "error": error })).encode(),
                    false,
                )
            }
            Incoming::Head { line, fields, body } => respond(
                &String::from_utf8_lossy(line),
                fields,
                body,
                peer.is_loopback(),
                self,
                now,
            ),
        }
    }
}

/// The response to a `GET`-like request from loopback without a body (the
/// tests' shorthand for [`respond`]).
#[cfg(test)]
pub(crate) fn route(
    request_line: &str,
    fields: &[u8],
    state: &mut ServerState,
    now: Instant,
) -> (Arc<Encoded>, bool) {
    respond(request_line, fields, b"", true, state, now)
}

/// The response to `request_line` (followed by the header `fields` and
/// `body`, from a loopback peer or not) at `now`, and whether it answers a
/// `HEAD` (the head alone is sent).
pub(crate) fn respond(
    request_line: &str,
    fields: &[u8],
    body: &[u8],
    loopback: bool,
    state: &mut ServerState,
    now: Instant,
) -> (Arc<Encoded>, bool) {
    let Some((method, target, version)) = request_parts(request_line) else {
        return (
            Response::json(400, &json!({ "error": "malformed request line" })).encode(),
            false,
        );
    };
    if version == "HTTP/1.1"
        && let Some(problem) = host_problem(fields)
    {
        return (
            Response::json(400, &json!({ "error": problem })).encode(),
            false,
        );
    }
    let head_only = method == "HEAD";
    let path = target.split(['?', '#']).next().unwrap_or(target);
    let Some(route) = find_route(path) else {
        let body = json!({ "error": format!("no endpoint {path}") });
        return (Response::json(404, &body).encode(), head_only);
    };
    let posts = route == Route::Log(LogRoute::Records);
    if method != "GET" && method != "HEAD" && !(posts && method == "POST") {
        let mut r = Response::json(
            405,
            &json!({ "error": format!("method {method} is not allowed on {path}") }),
        );
        r.allow = Some(if posts {
            "GET, HEAD, POST"
        } else {
            "GET, HEAD"
        });
        return (r.encode(), false);
    }
    let reply = match route {
        Route::Page => state.page.clone(),
        Route::OpenApi => state.openapi.clone(),
        Route::History => match query_param(target, "since").map(str::parse::<i64>) {
            Some(Err(_)) => Response::json(
                400,
                &json!({ "error": "since must be wall-clock milliseconds (an integer)" }),
            )
            .encode(),
            Some(Ok(since)) => Response::json(200, &state.history.to_json(Some(since))).encode(),
            None => {
                let history = &state.history;
                state
                    .cache
                    .get(route, now, || Response::json(200, &history.to_json(None)))
            }
        },
        Route::App(read) => {
            let (app, metrics, show) = (&*state.app, &state.metrics, state.show_watermarks);
            state
                .cache
                .get(route, now, || build(read, app, metrics, show))
        }
        Route::Log(which) => log_route(which, method, target, body, loopback, state).encode(),
        Route::Stores => store_route(path, target, state).encode(),
    };
    (reply, head_only)
}

/// The method, target and version of `request_line`; `None` unless it is
/// exactly three words, the method a token and the version `HTTP/...`.
fn request_parts(request_line: &str) -> Option<(&str, &str, &str)> {
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    if !token(method) || !version.starts_with("HTTP/") || parts.next().is_some() {
        return None;
    }
    Some((method, target, version))
}

/// A log route's response: only to a loopback peer, only when the
/// application serves its log.
fn log_route(
    which: LogRoute,
    method: &str,
    target: &str,
    body: &[u8],
    loopback: bool,
    state: &ServerState,
) -> Response {
    if !loopback {
        return Response::json(
            403,
            &json!({ "error": "the log routes answer loopback clients only: they read and write the application's data" }),
        );
    }
    let Some(log) = state.log.as_deref() else {
        return Response::json(
            404,
            &json!({ "error": "this application serves no log routes (they serve the embedded log only)" }),
        );
    };
    match (which, method) {
        (LogRoute::Topics, _) => log_routes::topics(log),
        (LogRoute::Records, "POST") => log_routes::append(log, query_param(target, "topic"), body),
        (LogRoute::Records, _) => log_routes::read(log, |name| query_param(target, name)),
    }
}

/// A store route's response, when the application serves its stores.
fn store_route(path: &str, target: &str, state: &ServerState) -> Response {
    let Some(stores) = state.stores.as_deref() else {
        return Response::json(
            404,
            &json!({ "error": "this application serves no queryable stores" }),
        );
    };
    let rest = &path["/stores".len()..];
    store_routes::respond(stores, rest, |name| query_param(target, name))
}

/// An application-dependent response, read from the application now.
fn build(read: Read, app: &dyn Endpoints, metrics: &MetricsRegistry, show: bool) -> Response {
    match read {
        Read::Metrics => Response::text(METRICS_CONTENT_TYPE, metrics.render()),
        Read::Watermarks => match app.watermarks() {
            Some(s) => {
                let (status, body) = watermarks_response(&s, true);
                Response::json(status, &body)
            }
            None => Response::json(
                503,
                &json!({ "error": "watermark tracking is not initialised" }),
            ),
        },
        Read::Info => {
            let (name, code) = app.client_state();
            let global = app
                .watermarks()
                .map_or(Watermark::MIN, |s: WatermarksSnapshot| s.global);
            let mut info = json!({
                "applicationId": app.application_id(),
                "state": name,
                "stateCode": code,
            });
            if let (Value::Object(o), Value::Object(w)) = (&mut info, info_json(global, show)) {
                o.extend(w);
            }
            if let (Value::Object(o), Some((active, standby))) = (&mut info, app.tasks()) {
                o.insert(
                    "tasks".into(),
                    json!({ "active": active, "standby": standby }),
                );
            }
            Response::json(200, &info)
        }
        Read::Liveness => {
            let (name, _) = app.client_state();
            health(!matches!(name, "ERROR" | "PENDING_ERROR"), name)
        }
        Read::Readiness => {
            let (name, _) = app.client_state();
            health(name == "RUNNING", name)
        }
    }
}

/// The value of `name` in `target`'s query string.
fn query_param<'a>(target: &'a str, name: &str) -> Option<&'a str> {
    let (_, query) = target.split_once('?')?;
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn health(up: bool, state: &str) -> Response {
    if up {
        Response::json(200, &json!({ "status": "UP", "state": state }))
    } else {
        Response::json(503, &json!({ "status": "DOWN", "state": state }))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// A fixed application that counts how often it is read.
    struct Fixed(&'static str, u8, Option<WatermarksSnapshot>, AtomicU64);

    fn fixed(name: &'static str, code: u8) -> Fixed {
        Fixed(name, code, None, AtomicU64::new(0))
    }

    impl Endpoints for Fixed {
        fn watermarks(&self) -> Option<WatermarksSnapshot> {
            self.3.fetch_add(1, Ordering::Relaxed);
            self.2.clone()
        }
        fn client_state(&self) -> (&'static str, u8) {
            self.3.fetch_add(1, Ordering::Relaxed);
            (self.0, self.1)
        }
        fn application_id(&self) -> String {
            "app".into()
        }
    }

    fn state_with(app: Arc<Fixed>, show: bool, refresh: Duration) -> ServerState {
        let history = WatermarkHistory::new(Duration::from_secs(1), Duration::from_secs(60));
        ServerState::new(app, show, RecordingLevel::Info, history, refresh)
    }

    fn state(app: Fixed) -> ServerState {
        state_with(Arc::new(app), true, Duration::ZERO)
    }

    /// The header fields of the requests the tests send.
    const HOST: &[u8] = b"Host: test\r\n\r\n";

    fn at(line: &str, s: &mut ServerState) -> Arc<Encoded> {
        route(line, HOST, s, Instant::now()).0
    }

    fn get(path: &str, s: &mut ServerState) -> (u16, Value) {
        let r = at(&format!("GET {path} HTTP/1.1"), s);
        (r.status(), r.json_body())
    }

    #[test]
    fn routes_and_status_codes() {
        let mut starting = state(fixed("REBALANCING", 3));
        assert_eq!(get("/watermarks", &mut starting).0, 503);
        assert_eq!(get("/health/readiness", &mut starting).0, 503);
        assert_eq!(get("/ready", &mut starting).0, 503);
        assert_eq!(get("/health/liveness", &mut starting).0, 200);
        assert_eq!(get("/health", &mut starting).0, 200);
        let mut failed = state(fixed("ERROR", 8));
        assert_eq!(get("/health/liveness", &mut failed).0, 503);
        assert_eq!(get("/health", &mut failed).0, 503);
        let mut failing = state(fixed("PENDING_ERROR", 7));
        assert_eq!(get("/health/liveness", &mut failing).0, 503);
        assert_eq!(get("/health/readiness", &mut failing).0, 503);
        let mut stopping = state(fixed("PENDING_SHUTDOWN", 5));
        assert_eq!(get("/health/liveness", &mut stopping).0, 200);
        assert_eq!(get("/health/readiness", &mut stopping).0, 503);
        let mut running = state(fixed("RUNNING", 4));
        assert_eq!(get("/health/readiness", &mut running).0, 200);
        assert_eq!(get("/ready", &mut running).0, 200);
        let (status, info) = get("/info?x=1", &mut running);
        assert_eq!(status, 200);
        assert_eq!(info["stateCode"], 4);
        assert_eq!(info["globalIso"], "N/A");
        assert_eq!(get("/nope", &mut running).0, 404);
        let post = at("POST /info HTTP/1.1", &mut running);
        assert_eq!(post.status(), 405);
        assert!(post.head().contains("\r\nAllow: GET, HEAD\r\n"));
        assert_eq!(at("POST /nope HTTP/1.1", &mut running).status(), 404);
        let (head, head_only) = route("HEAD /info HTTP/1.1", HOST, &mut running, Instant::now());
        assert_eq!((head.status(), head_only), (200, true));
        assert_eq!(at("", &mut running).status(), 400);
        assert_eq!(get("/watermarks/history?since=12", &mut running).0, 200);
        let (status, body) = get("/watermarks/history?since=soon", &mut running);
        assert_eq!(status, 400, "{body}");
        let mut hidden = state_with(Arc::new(fixed("RUNNING", 4)), false, Duration::ZERO);
        let (_, info) = get("/info", &mut hidden);
        assert!(info.get("globalMs").is_none(), "{info}");
    }

    #[test]
    fn an_http_1_1_request_needs_one_valid_host() {
        let mut running = state(fixed("RUNNING", 4));
        let now = Instant::now();
        for (line, fields) in [
            ("GET /info HTTP/1.1", &b""[..]),
            ("GET /nope HTTP/1.1", b"\r\n"),
            ("POST /info HTTP/1.1", b"Host: a\r\nHost: a\r\n\r\n"),
            ("GET /health HTTP/1.1", b"Host: <a>\r\n\r\n"),
        ] {
            let reply = route(line, fields, &mut running, now).0;
            assert_eq!(reply.status(), 400, "{line}");
            assert!(
                reply.json_body()["error"]
                    .as_str()
                    .unwrap()
                    .contains("Host")
            );
        }
        let old = route("GET /info HTTP/1.0", b"\r\n", &mut running, now).0;
        assert_eq!(old.status(), 200, "HTTP/1.0 has no Host rule");
    }

    #[test]
    fn page_openapi_and_metrics_have_their_content_types() {
        let mut running = state(fixed("RUNNING", 4));
        let page = at("GET / HTTP/1.1", &mut running);
        assert!(
            page.head()
                .contains("Content-Type: text/html; charset=utf-8\r\n")
        );
        assert!(page.body().contains("id=\"global-ms\""));
        let api = at("GET /openapi.json HTTP/1.1", &mut running);
        assert_eq!(api.json_body()["openapi"], "3.1.0");
        let metrics = at("GET /metrics HTTP/1.1", &mut running);
        assert!(
            metrics
                .head()
                .contains("Content-Type: text/plain; version=0.0.4")
        );
        assert!(
            metrics.body().contains("\nstoatflow_client_state 4\n"),
            "{}",
            metrics.body()
        );
    }

    #[test]
    fn malformed_request_lines_get_400_or_404_never_a_panic() {
        let mut running = state(fixed("RUNNING", 4));
        for line in [
            "",
            "GET",
            "GET /info",
            "GET /info HTTP/1.1 extra",
            "GET /info FTP/1.0",
            "\u{0}\u{1}\u{2} / HTTP/1.1",
            "\u{7f} /metrics HTTP/1.1",
        ] {
            assert_eq!(at(line, &mut running).status(), 400, "{line:?}");
        }
        let long = format!("GET /{} HTTP/1.1", "a".repeat(8_000));
        for line in [
            "GET * HTTP/1.1",
            "GET http://example/info HTTP/1.1",
            "GET /%2e%2e/etc/passwd HTTP/1.1",
            "GET /../info HTTP/1.1",
            "GET //info HTTP/1.1",
            "GET /info/ HTTP/1.1",
            "GET /\u{fffd}\u{fffd} HTTP/1.1",
            "GET /%zz HTTP/1.1",
            "GET /info% HTTP/1.1",
            "GET /%69nfo HTTP/1.1",
            "GET /%c3%28 HTTP/1.1",
            long.as_str(),
        ] {
            assert_eq!(at(line, &mut running).status(), 404, "{line:?}");
        }
        for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "get"] {
            assert_eq!(
                at(&format!("{method} /metrics HTTP/1.1"), &mut running).status(),
                405,
                "{method:?}"
            );
        }
    }

    #[test]
    fn a_flood_reads_the_application_once_per_refresh_whatever_the_request_rate() {
        let app = Arc::new(fixed("RUNNING", 4));
        let mut s = state_with(app.clone(), true, Duration::from_millis(100));
        let t0 = Instant::now();
        let paths = [
            "/watermarks",
            "/info",
            "/metrics",
            "/health",
            "/health/liveness",
            "/ready",
            "/health/readiness",
        ];
        for i in 0..10_000u64 {
            let path = paths[i as usize % paths.len()];
            let line = format!("GET {path} HTTP/1.1");
            // 10 000 requests over 50 ms: one refresh interval.
            let now = t0 + Duration::from_micros(i * 5);
            assert!(matches!(
                route(&line, HOST, &mut s, now).0.status(),
                200 | 503
            ));
        }
        let reads = app.3.load(Ordering::Relaxed);
        // One build per read route: /watermarks 1 read, /info 2, /metrics 1
        // (plus the registry's own), the two probes 1 each.
        assert!(reads <= 8, "{reads} reads of the application");
        route(
            "GET /info HTTP/1.1",
            HOST,
            &mut s,
            t0 + Duration::from_millis(200),
        );
        assert!(
            app.3.load(Ordering::Relaxed) > reads,
            "read again after the interval"
        );
    }
}
