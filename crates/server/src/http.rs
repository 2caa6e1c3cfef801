//! [`HttpServer`]: the operating surface's listener over plain HTTP/1.1 on a
//! std `TcpListener` (one accept thread, one request per connection,
//! `Connection: close`). These are small read-only GETs polled by operators,
//! probes, Prometheus and the live page; no async runtime is needed for
//! them (the request-flood bench in `benches/flood.rs` measures what they
//! cost a running application).
//!
//! Owns request parsing, routing, status codes, the loopback rule and the
//! watermark history's sampling. Knows the application only through
//! [`Endpoints`]: it never computes a watermark, a state or a figure.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stoatflow_runtime::MetricsSnapshot;
use stoatflow_time::{Clock, SystemClock, Watermark, WatermarksSnapshot};

use crate::endpoints::Endpoints;
use crate::history::WatermarkHistory;
use crate::metrics::{METRICS_CONTENT_TYPE, MetricsRegistry, RecordingLevel};
use crate::watermarks::{info_json, watermarks_response};

/// The live watermark page, embedded in the binary.
const PAGE: &str = include_str!("../assets/watermarks.html");
/// The OpenAPI description of the JSON endpoints.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// Settings of the listener (`runtime.endpoints.*`).
#[derive(Debug, Clone)]
pub struct EndpointsConfig {
    /// Where to listen (loopback by default; any other address is refused
    /// unless [`HttpServerBuilder::allow_non_loopback`] says so).
    pub listen: SocketAddr,
    /// `runtime.endpoints.info.show-watermarks` (default on).
    pub info_show_watermarks: bool,
}

impl Default for EndpointsConfig {
    fn default() -> Self {
        EndpointsConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            info_show_watermarks: true,
        }
    }
}

/// A running listener; dropped (or [`HttpServer::shutdown`]), it stops.
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Why the listener could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A non-loopback address without explicit permission.
    #[error(
        "refusing to listen on {addr}: it is not a loopback address, and the endpoints (watermarks, metrics, state) would be reachable from other hosts; allow it explicitly (HttpServerBuilder::allow_non_loopback) or listen on 127.0.0.1"
    )]
    NotLoopback {
        /// The address.
        addr: SocketAddr,
    },
}

/// Largest request head read (request line and headers).
const MAX_HEAD: usize = 8 * 1024;
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// The default of [`HttpServerBuilder::max_requests_per_second`].
const DEFAULT_MAX_REQUESTS_PER_SECOND: u32 = 200;
/// How long the accept loop sleeps when no connection is waiting.
const ACCEPT_IDLE: Duration = Duration::from_millis(10);

/// Builds an [`HttpServer`]: the listener's settings, the loopback rule,
/// the metrics recording level and the watermark history.
#[derive(Debug)]
#[must_use]
pub struct HttpServerBuilder {
    config: EndpointsConfig,
    allow_non_loopback: bool,
    recording_level: RecordingLevel,
    history_every: Duration,
    history_span: Duration,
    clock: Arc<dyn Clock>,
    max_requests_per_second: u32,
}

impl Default for HttpServerBuilder {
    fn default() -> Self {
        HttpServerBuilder {
            config: EndpointsConfig::default(),
            allow_non_loopback: false,
            recording_level: RecordingLevel::Info,
            history_every: Duration::from_secs(1),
            history_span: Duration::from_secs(15 * 60),
            clock: Arc::new(SystemClock),
            max_requests_per_second: DEFAULT_MAX_REQUESTS_PER_SECOND,
        }
    }
}

impl HttpServerBuilder {
    /// Replaces the listener's settings.
    pub fn config(mut self, config: EndpointsConfig) -> Self {
        self.config = config;
        self
    }

    /// Where to listen (port 0 picks a free port).
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.config.listen = addr;
        self
    }

    /// `runtime.endpoints.info.show-watermarks`.
    pub fn info_show_watermarks(mut self, show: bool) -> Self {
        self.config.info_show_watermarks = show;
        self
    }

    /// Allows a non-loopback listen address (off by default: the endpoints
    /// are unauthenticated).
    pub fn allow_non_loopback(mut self, allow: bool) -> Self {
        self.allow_non_loopback = allow;
        self
    }

    /// `metrics.recording.level` (INFO by default).
    pub fn recording_level(mut self, level: RecordingLevel) -> Self {
        self.recording_level = level;
        self
    }

    /// How often the watermark history is sampled (1 s) and how much of it
    /// is kept (15 min).
    pub fn history(mut self, every: Duration, span: Duration) -> Self {
        self.history_every = every;
        self.history_span = span;
        self
    }

    /// The most requests served per second (200 by default; 0: no limit).
    /// Past it, connections wait in the listen backlog: a flood costs the
    /// engine at most this many requests' work per second, while probes,
    /// scrapes and the page (4 requests a second) stay far below it.
    pub fn max_requests_per_second(mut self, n: u32) -> Self {
        self.max_requests_per_second = n;
        self
    }

    /// The wall clock the history's samples are stamped with.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Binds and serves `app`.
    ///
    /// # Errors
    /// [`ServerError::NotLoopback`] for a non-loopback address not allowed
    /// explicitly; [`ServerError::Bind`] naming the address.
    pub fn start(self, app: Arc<dyn Endpoints>) -> Result<HttpServer, ServerError> {
        let listen = self.config.listen;
        if !listen.ip().is_loopback() && !self.allow_non_loopback {
            return Err(ServerError::NotLoopback { addr: listen });
        }
        let bind_err = move |source| ServerError::Bind {
            addr: listen,
            source,
        };
        let listener = TcpListener::bind(listen).map_err(bind_err)?;
        let addr = listener.local_addr().map_err(bind_err)?;
        listener.set_nonblocking(true).map_err(bind_err)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let mut state = ServerState {
            metrics: MetricsRegistry::new(app.clone(), self.recording_level),
            history: WatermarkHistory::new(self.history_every, self.history_span),
            app,
            config: self.config,
        };
        let clock = self.clock;
        let gap = match self.max_requests_per_second {
            0 => Duration::ZERO,
            n => Duration::from_secs(1) / n,
        };
        let thread = std::thread::Builder::new()
            .name("stoatflow-http".into())
            .spawn(move || {
                while !stopping.load(Ordering::Acquire) {
                    state.sample_history(clock.now());
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let started = Instant::now();
                            if let Err(e) = serve(stream, &state) {
                                tracing::debug!(error = %e, "http request failed");
                            }
                            // Pacing: the next request no sooner than `gap`
                            // after this one started.
                            std::thread::sleep(gap.saturating_sub(started.elapsed()));
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(ACCEPT_IDLE);
                        }
                        Err(e) => tracing::warn!(error = %e, "http accept failed"),
                    }
                }
            })
            .map_err(bind_err)?;
        Ok(HttpServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }
}

impl HttpServer {
    /// A builder with the defaults: 127.0.0.1:8080, INFO metrics.
    pub fn builder() -> HttpServerBuilder {
        HttpServerBuilder::default()
    }

    /// Binds `config.listen` (port 0 picks a free port) and serves `app`
    /// with the builder's other defaults.
    ///
    /// # Errors
    /// As [`HttpServerBuilder::start`].
    pub fn start(config: EndpointsConfig, app: Arc<dyn Endpoints>) -> Result<Self, ServerError> {
        Self::builder().config(config).start(app)
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops listening and waits for the listener thread.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// What the listener thread serves from.
pub(crate) struct ServerState {
    pub(crate) app: Arc<dyn Endpoints>,
    pub(crate) config: EndpointsConfig,
    pub(crate) metrics: MetricsRegistry,
    pub(crate) history: WatermarkHistory,
}

impl ServerState {
    fn sample_history(&mut self, now: stoatflow_time::WallTime) {
        if self.history.is_due(now)
            && let Some(s) = self.app.watermarks()
        {
            self.history.record(now, &s);
        }
    }
}

/// A response: status, content type and body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) body: String,
    /// `Allow`, on a 405.
    pub(crate) allow: bool,
}

impl Response {
    fn json(status: u16, body: &Value) -> Self {
        Response {
            status,
            content_type: "application/json",
            body: body.to_string(),
            allow: false,
        }
    }

    fn text(content_type: &'static str, body: String) -> Self {
        Response {
            status: 200,
            content_type,
            body,
            allow: false,
        }
    }

    /// The body as JSON (tests).
    #[cfg(test)]
    pub(crate) fn json_body(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

fn serve(stream: TcpStream, state: &ServerState) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?).take(MAX_HEAD as u64 + 1);
    let mut request_line = Vec::new();
    reader.read_until(b'\n', &mut request_line)?;
    let mut head = request_line.len();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        head += n;
        if n == 0 || line == b"\r\n" || line == b"\n" || head > MAX_HEAD {
            break;
        }
    }
    let (response, head_only) = if head > MAX_HEAD {
        (
            Response::json(431, &json!({ "error": "request head too large" })),
            false,
        )
    } else {
        let line = String::from_utf8_lossy(&request_line);
        (route(&line, state), line.starts_with("HEAD "))
    };
    let unread = response.status == 431;
    respond(&stream, &response, head_only)?;
    if unread {
        // Closing with unread input resets the connection, which can lose
        // the response on its way: drain a bounded amount first.
        stream.shutdown(std::net::Shutdown::Write)?;
        stream.set_read_timeout(Some(Duration::from_millis(100)))?;
        let _ = std::io::copy(&mut (&stream).take(1 << 20), &mut std::io::sink());
    }
    Ok(())
}

/// Where a request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Page,
    Watermarks,
    History,
    Info,
    Metrics,
    Liveness,
    Readiness,
    OpenApi,
}

fn find_route(path: &str) -> Option<Route> {
    Some(match path {
        "/" | "/index.html" => Route::Page,
        "/watermarks" => Route::Watermarks,
        "/watermarks/history" => Route::History,
        "/info" => Route::Info,
        "/metrics" => Route::Metrics,
        "/health" | "/health/liveness" => Route::Liveness,
        "/ready" | "/health/readiness" => Route::Readiness,
        "/openapi.json" => Route::OpenApi,
        _ => return None,
    })
}

/// The response to `request_line`.
pub(crate) fn route(request_line: &str, state: &ServerState) -> Response {
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Response::json(400, &json!({ "error": "malformed request line" }));
    };
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    if !token(method) || !version.starts_with("HTTP/") || parts.next().is_some() {
        return Response::json(400, &json!({ "error": "malformed request line" }));
    }
    let path = target.split(['?', '#']).next().unwrap_or(target);
    let Some(route) = find_route(path) else {
        return Response::json(404, &json!({ "error": format!("no endpoint {path}") }));
    };
    if method != "GET" && method != "HEAD" {
        let mut r = Response::json(
            405,
            &json!({ "error": format!("method {method} is not allowed on {path}") }),
        );
        r.allow = true;
        return r;
    }
    let app = &*state.app;
    let (name, code) = app.client_state();
    match route {
        Route::Page => Response::text("text/html; charset=utf-8", PAGE.to_owned()),
        Route::OpenApi => Response::text("application/json", OPENAPI.to_owned()),
        Route::Metrics => Response::text(METRICS_CONTENT_TYPE, state.metrics.render()),
        Route::History => match query_param(target, "since").map(str::parse::<i64>) {
            Some(Err(_)) => Response::json(
                400,
                &json!({ "error": "since must be wall-clock milliseconds (an integer)" }),
            ),
            since => Response::json(200, &state.history.to_json(since.and_then(Result::ok))),
        },
        Route::Watermarks => match app.watermarks() {
            Some(s) => {
                let (status, body) = watermarks_response(&s, true);
                Response::json(status, &body)
            }
            None => Response::json(
                503,
                &json!({ "error": "watermark tracking is not initialised" }),
            ),
        },
        Route::Info => {
            let global = app
                .watermarks()
                .map_or(Watermark::MIN, |s: WatermarksSnapshot| s.global);
            let mut info = json!({
                "applicationId": app.application_id(),
                "state": name,
                "stateCode": code,
            });
            if let (Value::Object(o), Value::Object(w)) = (
                &mut info,
                info_json(global, state.config.info_show_watermarks),
            ) {
                o.extend(w);
            }
            Response::json(200, &info)
        }
        Route::Liveness => {
            let up = name != "ERROR";
            health(up, name)
        }
        Route::Readiness => health(name == "RUNNING", name),
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

fn respond(mut stream: &TcpStream, r: &Response, head_only: bool) -> std::io::Result<()> {
    let reason = match r.status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "",
    };
    let allow = if r.allow { "Allow: GET, HEAD\r\n" } else { "" };
    write!(
        stream,
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n{allow}Connection: close\r\n\r\n",
        r.status,
        r.content_type,
        r.body.len()
    )?;
    if !head_only {
        stream.write_all(r.body.as_bytes())?;
    }
    stream.flush()
}

impl Endpoints for stoatflow_runtime::AppHandle {
    fn watermarks(&self) -> Option<WatermarksSnapshot> {
        stoatflow_runtime::AppHandle::watermarks(self)
    }
    fn client_state(&self) -> (&'static str, u8) {
        let s = self.state();
        (s.name(), s.code())
    }
    fn application_id(&self) -> String {
        stoatflow_runtime::AppHandle::application_id(self).to_owned()
    }
    fn metrics(&self) -> Option<MetricsSnapshot> {
        Some(stoatflow_runtime::AppHandle::metrics(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(&'static str, u8, Option<WatermarksSnapshot>);

    impl Endpoints for Fixed {
        fn watermarks(&self) -> Option<WatermarksSnapshot> {
            self.2.clone()
        }
        fn client_state(&self) -> (&'static str, u8) {
            (self.0, self.1)
        }
        fn application_id(&self) -> String {
            "app".into()
        }
    }

    fn state(app: Fixed, config: EndpointsConfig) -> ServerState {
        let app: Arc<dyn Endpoints> = Arc::new(app);
        ServerState {
            metrics: MetricsRegistry::new(app.clone(), RecordingLevel::Info),
            history: WatermarkHistory::new(Duration::from_secs(1), Duration::from_secs(60)),
            app,
            config,
        }
    }

    fn get(path: &str, s: &ServerState) -> (u16, Value) {
        let r = route(&format!("GET {path} HTTP/1.1\r\n"), s);
        (r.status, r.json_body())
    }

    #[test]
    fn routes_and_status_codes() {
        let starting = state(Fixed("REBALANCING", 3, None), EndpointsConfig::default());
        assert_eq!(get("/watermarks", &starting).0, 503);
        assert_eq!(get("/health/readiness", &starting).0, 503);
        assert_eq!(get("/ready", &starting).0, 503);
        assert_eq!(get("/health/liveness", &starting).0, 200);
        assert_eq!(get("/health", &starting).0, 200);
        let failed = state(Fixed("ERROR", 8, None), EndpointsConfig::default());
        assert_eq!(get("/health/liveness", &failed).0, 503);
        assert_eq!(get("/health", &failed).0, 503);
        let running = state(Fixed("RUNNING", 4, None), EndpointsConfig::default());
        assert_eq!(get("/health/readiness", &running).0, 200);
        assert_eq!(get("/ready", &running).0, 200);
        let (status, info) = get("/info?x=1", &running);
        assert_eq!(status, 200);
        assert_eq!(info["stateCode"], 4);
        assert_eq!(info["globalIso"], "N/A");
        assert_eq!(get("/nope", &running).0, 404);
        let post = route("POST /info HTTP/1.1\r\n", &running);
        assert_eq!((post.status, post.allow), (405, true));
        assert_eq!(route("POST /nope HTTP/1.1\r\n", &running).status, 404);
        assert_eq!(route("HEAD /info HTTP/1.1\r\n", &running).status, 200);
        assert_eq!(route("\r\n", &running).status, 400);
        assert_eq!(get("/watermarks/history?since=12", &running).0, 200);
        let (status, body) = get("/watermarks/history?since=soon", &running);
        assert_eq!(status, 400, "{body}");
        let hidden = state(
            Fixed("RUNNING", 4, None),
            EndpointsConfig {
                info_show_watermarks: false,
                ..EndpointsConfig::default()
            },
        );
        let (_, info) = get("/info", &hidden);
        assert!(info.get("globalMs").is_none(), "{info}");
    }

    #[test]
    fn page_openapi_and_metrics_have_their_content_types() {
        let running = state(Fixed("RUNNING", 4, None), EndpointsConfig::default());
        let page = route("GET / HTTP/1.1", &running);
        assert_eq!(page.content_type, "text/html; charset=utf-8");
        assert!(page.body.contains("id=\"global-ms\""));
        let api = route("GET /openapi.json HTTP/1.1", &running);
        assert_eq!(api.json_body()["openapi"], "3.1.0");
        let metrics = route("GET /metrics HTTP/1.1", &running);
        assert!(
            metrics
                .content_type
                .starts_with("text/plain; version=0.0.4")
        );
        assert!(
            metrics.body.contains("\nstoatflow_client_state 4\n"),
            "{}",
            metrics.body
        );
    }

    #[test]
    fn malformed_request_lines_get_400_or_404_never_a_panic() {
        let running = state(Fixed("RUNNING", 4, None), EndpointsConfig::default());
        for line in [
            "",
            "GET",
            "GET /info",
            "GET /info HTTP/1.1 extra",
            "GET /info FTP/1.0",
            "\u{0}\u{1}\u{2} / HTTP/1.1",
            "\u{7f} /metrics HTTP/1.1",
        ] {
            assert_eq!(route(line, &running).status, 400, "{line:?}");
        }
        for line in [
            "GET * HTTP/1.1",
            "GET http://example/info HTTP/1.1",
            "GET /%2e%2e/etc/passwd HTTP/1.1",
            "GET /../info HTTP/1.1",
            "GET //info HTTP/1.1",
            "GET /info/ HTTP/1.1",
            "GET /\u{fffd}\u{fffd} HTTP/1.1",
        ] {
            assert_eq!(route(line, &running).status, 404, "{line:?}");
        }
        for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "get"] {
            assert_eq!(
                route(&format!("{method} /metrics HTTP/1.1"), &running).status,
                405,
                "{method:?}"
            );
        }
    }
}
