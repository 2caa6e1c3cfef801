//! [`HttpServer`]: the operating surface's listener — `GET /watermarks`,
//! `GET /info`, `GET /health/liveness`, `GET /health/readiness` — over
//! plain HTTP/1.1 on a std `TcpListener` (one accept thread, one request
//! per connection, `Connection: close`). These are small read-only GETs
//! polled by operators and probes; no async runtime is needed for them.
//!
//! Owns request parsing, routing and status codes. Knows the application
//! only through [`Endpoints`]: it never computes a watermark or a state.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};
use stoatflow_time::{Watermark, WatermarksSnapshot};

use crate::watermarks::{info_json, watermarks_response};

/// What the server reads from the application.
pub trait Endpoints: Send + Sync + 'static {
    /// The tracker's snapshot, or `None` before the engine is initialised.
    fn watermarks(&self) -> Option<WatermarksSnapshot>;
    /// The client state's name and code (`RUNNING` is 4).
    fn client_state(&self) -> (&'static str, u8);
    /// The application id.
    fn application_id(&self) -> String;
}

/// Settings of the listener (`runtime.endpoints.*`).
#[derive(Debug, Clone)]
pub struct EndpointsConfig {
    /// Where to listen (loopback by default).
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
}

/// Largest request head read (request line and headers).
const MAX_HEAD: usize = 8 * 1024;
const IO_TIMEOUT: Duration = Duration::from_secs(5);

impl HttpServer {
    /// Binds `config.listen` (port 0 picks a free port) and serves `app`.
    ///
    /// # Errors
    /// [`ServerError::Bind`] naming the address.
    pub fn start(config: EndpointsConfig, app: Arc<dyn Endpoints>) -> Result<Self, ServerError> {
        let listen = config.listen;
        let bind_err = move |source| ServerError::Bind {
            addr: listen,
            source,
        };
        let listener = TcpListener::bind(config.listen).map_err(bind_err)?;
        let addr = listener.local_addr().map_err(bind_err)?;
        listener.set_nonblocking(true).map_err(bind_err)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("stoatflow-http".into())
            .spawn(move || {
                while !stopping.load(Ordering::Acquire) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            if let Err(e) = serve(stream, &*app, &config) {
                                tracing::debug!(error = %e, "http request failed");
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(10));
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

fn serve(stream: TcpStream, app: &dyn Endpoints, config: &EndpointsConfig) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut head = request_line.len();
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line)?;
        head += n;
        if n == 0 || line == "\r\n" || line == "\n" || head > MAX_HEAD {
            break;
        }
    }
    let (status, body) = if head > MAX_HEAD {
        (431, json!({ "error": "request head too large" }))
    } else {
        route(&request_line, app, config)
    };
    respond(stream, status, &body)
}

/// The status and JSON body for `request_line`.
pub(crate) fn route(
    request_line: &str,
    app: &dyn Endpoints,
    config: &EndpointsConfig,
) -> (u16, Value) {
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return (400, json!({ "error": "malformed request line" }));
    };
    let path = target.split('?').next().unwrap_or(target);
    if method != "GET" {
        return (
            405,
            json!({ "error": format!("method {method} is not allowed on {path}") }),
        );
    }
    let (state, code) = app.client_state();
    match path {
        "/watermarks" => match app.watermarks() {
            Some(s) => watermarks_response(&s, true),
            None => (
                503,
                json!({ "error": "watermark tracking is not initialised" }),
            ),
        },
        "/info" => {
            let global = app
                .watermarks()
                .map_or(Watermark::MIN, |s: WatermarksSnapshot| s.global);
            let mut info = json!({
                "applicationId": app.application_id(),
                "state": state,
                "stateCode": code,
            });
            if let (Value::Object(o), Value::Object(w)) =
                (&mut info, info_json(global, config.info_show_watermarks))
            {
                o.extend(w);
            }
            (200, info)
        }
        "/health/liveness" => {
            if state == "ERROR" {
                (503, json!({ "status": "DOWN", "state": state }))
            } else {
                (200, json!({ "status": "UP", "state": state }))
            }
        }
        "/health/readiness" => {
            if state == "RUNNING" {
                (200, json!({ "status": "UP", "state": state }))
            } else {
                (503, json!({ "status": "DOWN", "state": state }))
            }
        }
        _ => (404, json!({ "error": format!("no endpoint {path}") })),
    }
}

fn respond(mut stream: TcpStream, status: u16, body: &Value) -> std::io::Result<()> {
    let body = body.to_string();
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "",
    };
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
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

    fn get(path: &str, app: &Fixed) -> (u16, Value) {
        route(
            &format!("GET {path} HTTP/1.1\r\n"),
            app,
            &EndpointsConfig::default(),
        )
    }

    #[test]
    fn routes_and_status_codes() {
        let starting = Fixed("REBALANCING", 3, None);
        assert_eq!(get("/watermarks", &starting).0, 503);
        assert_eq!(get("/health/readiness", &starting).0, 503);
        assert_eq!(get("/health/liveness", &starting).0, 200);
        let failed = Fixed("ERROR", 8, None);
        assert_eq!(get("/health/liveness", &failed).0, 503);
        let running = Fixed("RUNNING", 4, None);
        assert_eq!(get("/health/readiness", &running).0, 200);
        let (status, info) = get("/info?x=1", &running);
        assert_eq!(status, 200);
        assert_eq!(info["stateCode"], 4);
        assert_eq!(info["globalIso"], "N/A");
        assert_eq!(get("/nope", &running).0, 404);
        assert_eq!(
            route(
                "POST /info HTTP/1.1\r\n",
                &running,
                &EndpointsConfig::default()
            )
            .0,
            405
        );
        assert_eq!(route("\r\n", &running, &EndpointsConfig::default()).0, 400);
        let hidden = EndpointsConfig {
            info_show_watermarks: false,
            ..EndpointsConfig::default()
        };
        let (_, info) = route("GET /info HTTP/1.1\r\n", &running, &hidden);
        assert!(info.get("globalMs").is_none(), "{info}");
    }
}
