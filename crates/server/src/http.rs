//! [`HttpServer`]: the operating surface's listener over plain HTTP/1.1 on a
//! std `TcpListener`, bounded by construction: one thread, whatever the
//! load; at most `max_connections` connections open (past that, new ones
//! wait in the kernel's listen backlog); at most `max_requests_per_second`
//! answers started per second; every connection finished or dropped within
//! `request_timeout`. Connections are non-blocking and moved forward a step
//! at a time ([`Connection`]), so a client that sends nothing holds one
//! slot, never the thread, and only until a newcomer needs the slot: when
//! every slot is held, a connection that has not sent its request yet is
//! shed for the newcomer ([`crate::shedding`]), so idle clients cannot
//! keep the liveness and readiness probes out. Application-dependent responses come from the
//! [`ServerState`]'s cache, so requests do not take the engine's locks
//! (the request-flood bench, `benches/flood.rs`, measures what a flood
//! costs a running application's barriers), and the thread runs at a lower
//! priority than the engine's ([`crate::priority`]).
//!
//! Owns the listener's settings, the loopback rule, the accept loop and
//! its pacing, and the address file (the listener's URL written where
//! other processes look for it, removed at shutdown). Knows the
//! application only through [`Endpoints`] and, for the log routes,
//! [`LogAccess`]: it never computes a watermark, a state or a figure.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use stoatflow_time::{Clock, SystemClock};

use crate::cache::DEFAULT_REFRESH;
use crate::connection::{Connection, Step};
use crate::endpoints::Endpoints;
use crate::history::WatermarkHistory;
use crate::log_access::LogAccess;
use crate::metrics::RecordingLevel;
use crate::routing::ServerState;
use crate::shedding;
use crate::store_access::StoreAccess;

pub use crate::routing::OPENAPI;

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
    /// The address file written at start, removed at shutdown.
    address_file: Option<PathBuf>,
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
    /// The address file could not be written.
    #[error("cannot write the endpoints' address to {}: {source}", path.display())]
    AddressFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The default of [`HttpServerBuilder::request_timeout`].
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// The default of [`HttpServerBuilder::max_requests_per_second`].
const DEFAULT_MAX_REQUESTS_PER_SECOND: u32 = 200;
/// The default of [`HttpServerBuilder::max_connections`].
const DEFAULT_MAX_CONNECTIONS: usize = 32;
/// The loop's sleep when nothing moved: from `MIN_IDLE`, doubled up to
/// `MAX_IDLE` while nothing moves.
const MIN_IDLE: Duration = Duration::from_millis(1);
const MAX_IDLE: Duration = Duration::from_millis(10);
/// The longest sleep while a paced answer waits (the stop flag is read
/// between sleeps).
const MAX_PACED_WAIT: Duration = Duration::from_millis(100);

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
    max_connections: usize,
    request_timeout: Duration,
    refresh: Duration,
    listener_nice: i32,
    log: Option<Arc<dyn LogAccess>>,
    stores: Option<Arc<dyn StoreAccess>>,
    address_file: Option<PathBuf>,
}

impl std::fmt::Debug for dyn LogAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogAccess")
    }
}

impl std::fmt::Debug for dyn StoreAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreAccess")
    }
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
            max_connections: DEFAULT_MAX_CONNECTIONS,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            refresh: DEFAULT_REFRESH,
            listener_nice: crate::priority::LISTENER_NICE,
            log: None,
            stores: None,
            address_file: None,
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

    /// The most connections open at once (32 by default, at least 1). Past
    /// it, a newcomer takes the place of a connection that has not sent its
    /// request yet (the oldest of the peer holding the most); when every
    /// open connection has its request, new ones wait in the kernel's
    /// listen backlog until one finishes. The listener stays one thread
    /// whatever comes.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// How long a connection may take from accept to the last byte of its
    /// response (5 s by default); past it, it is closed unanswered.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long an application-dependent response (`/watermarks`, `/info`,
    /// `/metrics`, the probes, the whole history) is served before it is
    /// read again (100 ms by default, the engine's snapshot refresh; zero
    /// reads the application for every request).
    pub fn refresh(mut self, refresh: Duration) -> Self {
        self.refresh = refresh;
        self
    }

    /// How many nice steps below the process the listener thread runs
    /// ([`crate::LISTENER_NICE`] by default; 0 keeps the process's priority).
    pub fn listener_nice(mut self, steps: i32) -> Self {
        self.listener_nice = steps.clamp(0, 19);
        self
    }

    /// Serves the log routes (`/log/topics`, `/log/records`) from `log`,
    /// to loopback clients only; without it they answer 404.
    pub fn log(mut self, log: Arc<dyn LogAccess>) -> Self {
        self.log = Some(log);
        self
    }

    /// Writes the listener's URL (`http://address`, one line) to `path`
    /// when it starts serving, atomically (a temporary file renamed over
    /// it), and removes it at shutdown: how another process finds the
    /// endpoints of the application that holds a directory.
    pub fn address_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.address_file = Some(path.into());
        self
    }

    /// Serves the store routes (`/stores...`) from `stores`; without it
    /// they answer 404.
    pub fn stores(mut self, stores: Arc<dyn StoreAccess>) -> Self {
        self.stores = Some(stores);
        self
    }

    /// The wall clock the history's samples are stamped with.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Binds and serves `app`: [`HttpServerBuilder::bind`], then
    /// [`BoundListener::serve`].
    ///
    /// # Errors
    /// [`ServerError::NotLoopback`] for a non-loopback address not allowed
    /// explicitly; [`ServerError::Bind`] naming the address.
    pub fn start(self, app: Arc<dyn Endpoints>) -> Result<HttpServer, ServerError> {
        self.bind()?.serve(app)
    }

    /// Binds the address and serves nothing yet: an application checks that
    /// it can listen before it creates anything (its topics, its data
    /// directory), then serves through [`BoundListener::serve`].
    ///
    /// # Errors
    /// [`ServerError::NotLoopback`] for a non-loopback address not allowed
    /// explicitly; [`ServerError::Bind`] naming the address.
    pub fn bind(self) -> Result<BoundListener, ServerError> {
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
        Ok(BoundListener {
            builder: self,
            listener,
            addr,
        })
    }
}

/// A bound address not served yet ([`HttpServerBuilder::bind`]); until
/// [`BoundListener::serve`], connections wait in the kernel's backlog.
#[derive(Debug)]
#[must_use]
pub struct BoundListener {
    builder: HttpServerBuilder,
    listener: TcpListener,
    addr: SocketAddr,
}

impl BoundListener {
    /// The address it is bound to (the port picked, for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// See [`HttpServerBuilder::log`].
    pub fn log(mut self, log: Arc<dyn LogAccess>) -> Self {
        self.builder.log = Some(log);
        self
    }

    /// Serves the store routes from `stores`.
    pub fn stores(mut self, stores: Arc<dyn StoreAccess>) -> Self {
        self.builder.stores = Some(stores);
        self
    }

    /// Serves `app` on the listener's own thread.
    ///
    /// # Errors
    /// [`ServerError::Bind`] naming the address when the thread cannot be
    /// started.
    pub fn serve(self, app: Arc<dyn Endpoints>) -> Result<HttpServer, ServerError> {
        let BoundListener {
            builder,
            listener,
            addr,
        } = self;
        let bind_err = move |source| ServerError::Bind { addr, source };
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let state = ServerState::new(
            app,
            builder.config.info_show_watermarks,
            builder.recording_level,
            WatermarkHistory::new(builder.history_every, builder.history_span),
            builder.refresh,
        )
        .with_log(builder.log)
        .with_stores(builder.stores);
        let serving = Serving {
            listener,
            state,
            clock: builder.clock,
            gap: match builder.max_requests_per_second {
                0 => Duration::ZERO,
                n => Duration::from_secs(1) / n,
            },
            max_connections: builder.max_connections,
            request_timeout: builder.request_timeout,
        };
        let nice = builder.listener_nice;
        let thread = std::thread::Builder::new()
            .name("stoatflow-http".into())
            .spawn(move || {
                crate::priority::yield_to_engine(nice);
                serving.run(&stopping)
            })
            .map_err(bind_err)?;
        let mut server = HttpServer {
            addr,
            stop,
            thread: Some(thread),
            address_file: None,
        };
        if let Some(path) = builder.address_file {
            // On failure the server is dropped: it stops.
            write_address_file(&path, addr).map_err(|source| ServerError::AddressFile {
                path: path.clone(),
                source,
            })?;
            server.address_file = Some(path);
        }
        Ok(server)
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
        if let Some(path) = self.address_file.take()
            && let Err(e) = std::fs::remove_file(&path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(file = %path.display(), error = %e, "cannot remove the endpoints' address file");
        }
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Writes `http://addr` to `path` through a temporary file renamed over it,
/// so a reader sees the whole line or the file as it was.
fn write_address_file(path: &Path, addr: SocketAddr) -> std::io::Result<()> {
    let mut temp = path.as_os_str().to_owned();
    temp.push(".tmp");
    let temp = PathBuf::from(temp);
    std::fs::write(&temp, format!("http://{addr}\n"))?;
    std::fs::rename(&temp, path)
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// The listener thread: its socket, its connections and what it serves.
struct Serving {
    listener: TcpListener,
    state: ServerState,
    clock: Arc<dyn Clock>,
    /// The least time between two answers' starts (pacing).
    gap: Duration,
    max_connections: usize,
    request_timeout: Duration,
}

impl Serving {
    fn run(mut self, stop: &AtomicBool) {
        let mut open: Vec<Connection> = Vec::with_capacity(self.max_connections);
        let mut next_answer = Instant::now();
        let mut idle = MIN_IDLE;
        while !stop.load(Ordering::Acquire) {
            self.state.sample_history(self.clock.now());
            let now = Instant::now();
            let mut moved = self.accept(&mut open, now);
            let mut paced = false;
            open.retain_mut(|c| match c.step(now) {
                Step::Done => false,
                Step::Idle => true,
                Step::Moved => {
                    moved = true;
                    true
                }
                Step::Ready if now < next_answer => {
                    paced = true;
                    true
                }
                Step::Ready => {
                    let (reply, head_only) = self.state.answer(c.request(), c.peer(), now);
                    c.respond(reply, head_only);
                    next_answer = now + self.gap;
                    moved = true;
                    // Most answers fit the socket's buffer: written now.
                    c.step(now) != Step::Done
                }
            });
            if moved {
                idle = MIN_IDLE;
                continue;
            }
            // A paced answer waits for its turn; nothing else is urgent.
            let sleep = if paced {
                next_answer
                    .saturating_duration_since(now)
                    .min(MAX_PACED_WAIT)
            } else {
                idle
            };
            std::thread::sleep(sleep);
            idle = (idle * 2).min(MAX_IDLE);
        }
    }

    /// Accepts waiting connections; whether any came. While every slot is
    /// held, a newcomer takes the place of a connection that has not sent
    /// its request yet ([`shedding`]), at most `max_connections` a turn;
    /// when every open connection has its request, newcomers wait in the
    /// listen backlog.
    fn accept(&self, open: &mut Vec<Connection>, now: Instant) -> bool {
        let mut accepted = false;
        let mut displacing = self.max_connections;
        loop {
            if open.len() >= self.max_connections {
                if displacing == 0 || !open.iter().any(Connection::awaits_request) {
                    break;
                }
                displacing -= 1;
            }
            let mut c = match self.listener.accept() {
                Ok((stream, _)) => match Connection::new(stream, now + self.request_timeout) {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::debug!(error = %e, "http connection setup failed");
                        continue;
                    }
                },
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    tracing::warn!(error = %e, "http accept failed");
                    break;
                }
            };
            accepted = true;
            // A probe's request is usually here already: read it now, so
            // the newcomer is out of the shedding's reach before it runs.
            if c.step(now) == Step::Done {
                continue;
            }
            open.push(c);
            if open.len() > self.max_connections {
                let held: Vec<_> = open
                    .iter()
                    .map(|c| (c.peer(), c.awaits_request()))
                    .collect();
                if let Some(i) = shedding::victim(&held) {
                    let shed = open.remove(i);
                    tracing::debug!(peer = %shed.peer(), "http connection without a request shed for a newcomer");
                }
            }
        }
        accepted
    }
}
