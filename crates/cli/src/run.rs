//! `stoatflow run --config app.yaml --example NAME`: a bundled example on
//! the backend and with the endpoints the configuration names, until
//! SIGINT or SIGTERM (or `--until-caught-up`, `--max-runtime`), then a
//! graceful close.
//!
//! Owns the command's lifecycle only: configuration is `stoatflow::config`'s,
//! the application `stoatflow::App`'s.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use stoatflow::config::{BackendSettings, ConfigLoader};
use stoatflow::{App, AppState};

use crate::examples::Example;
use crate::out::sayln;
use crate::status::StatusLine;
use crate::topics;

/// When `run` stops besides a signal.
#[derive(Debug, Clone, Copy)]
pub struct Stop {
    /// Once every record present in the input topics is processed.
    pub caught_up: bool,
    /// After this long.
    pub max_runtime: Option<Duration>,
}

/// `partitions`: `--partitions`, `None` to take the existing topics' count
/// ([`topics::missing`]); `status_every`: the status lines' interval off a
/// terminal ([`StatusLine`]).
pub fn run(
    config: &Path,
    example: Example,
    partitions: Option<u32>,
    stop: Stop,
    status_every: Duration,
) -> anyhow::Result<()> {
    let config = ConfigLoader::new().yaml_file(config)?.env().build()?;
    let backend = match &config.backend {
        BackendSettings::Embedded { dir } => format!("embedded log in {}", dir.display()),
        BackendSettings::Memory => "embedded log in memory".into(),
        BackendSettings::Kafka(k) => format!("kafka at {}", k.bootstrap_servers),
        other => format!("{other:?}"),
    };
    // Everything that can fail at start is checked before anything is
    // created: the settings (above), the listen address (bound here), the
    // topology (before the log's directory is opened), the topics' shapes
    // (before any is created).
    let bound = App::bind_endpoints(&config)?;
    // A second signal during the close exits at once (status 1).
    let signalled = stoatflow::stop_on_signals()?;
    let mut app = App::from_config(example.topology()?, &config)?;
    for spec in topics::missing(&app, example, partitions)? {
        app.ensure_topic(&spec)
            .with_context(|| format!("topic {}", spec.name))?;
    }
    let server = match bound {
        Some(b) => Some(app.serve_endpoints_with(b, &example.stores())?),
        None => None,
    };
    sayln!(
        "running example {} (application id {}) on the {backend}",
        example.name(),
        config.runtime.application_id()
    )?;
    if let Some(server) = &server {
        sayln!("endpoints: http://{}/watermarks", server.local_addr())?;
    }
    app.start()?;
    let started = Instant::now();
    let mut status = StatusLine::new(status_every, started);
    let reason = loop {
        status.update(&app, Instant::now());
        if signalled.load(Ordering::Acquire) {
            break "signal";
        }
        if app.state().has_stopped() {
            break "stopped";
        }
        if stop.max_runtime.is_some_and(|m| started.elapsed() >= m) {
            break "max runtime";
        }
        if stop.caught_up && app.state() == AppState::Running {
            if app.wait_until_caught_up(Duration::from_millis(200))? {
                break "caught up";
            }
        } else {
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    status.finish();
    // A closed stdout must not skip the close: its error waits until after.
    let said = sayln!("stopping ({reason})");
    let closed = app.close(Duration::from_secs(60));
    if let Some(server) = server {
        server.shutdown();
    }
    if let Some(e) = app.error() {
        anyhow::bail!("the application stopped with an error: {e}");
    }
    anyhow::ensure!(closed, "the application did not close in time");
    said?;
    sayln!("closed: every window the watermark closed is committed")?;
    // What the run did, and what held the watermark (why nothing came out).
    sayln!("{}", app.summary())?;
    Ok(())
}
