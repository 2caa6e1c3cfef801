//! The restore after a crash, end to end (`--query e2e-restore`): an
//! application on the embedded log in a directory builds a window store of
//! `entries` entries, is dropped without a close (a crash: its stores are
//! not checkpointed, so the restart rebuilds them from their changelogs)
//! and is started again on the log reopened from the directory.
//!
//! The topology counts per key in 10-minute windows with an hour of grace,
//! so no window closes and every (key, window) stays in the store: key `i`
//! at `i` ms for `i < entries`, one changelog record per entry. After the
//! crash a few more records are written (outside the clock), so the
//! restarted application has work and commits.
//!
//! Timed after the restart: from `start()` to RUNNING (the restore; its
//! rate is the changelog records restored per second of it) and from
//! `start()` to the first barrier commit. Each run is done with the
//! default (persistent) stores and with in-memory stores on the same kind
//! of log, in the same process, and the lines give both and their ratio.
//!
//! Knows nothing of how stores restore: only the application's public
//! surface.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use stoatflow_log::{
    EmbeddedLog, Log, Record, Timestamp, TopicPartition, TopicSpec, TransactionalProducer,
};
use stoatflow_runtime::{AppState, Backend, RuntimeConfig, StreamsApp};
use stoatflow_streams::{
    Consumed, EmitStrategy, Produced, Serdes, StoreType, StreamsBuilder, TimeWindows, Topology,
};
use stoatflow_time::WatermarkStrategy;

use crate::e2e::{E2eStores, RunDir};

const INPUT: &str = "restore-input";
const OUTPUT: &str = "restore-counts";
const PARTITIONS: u32 = 2;
const WINDOW: Duration = Duration::from_secs(600);
const GRACE: Duration = Duration::from_secs(3_600);
/// Records per input transaction.
const WRITE_BATCH: u64 = 10_000;
/// Records written after the crash, for the restarted application to work on.
const AFTER_CRASH: u64 = 1_000;
/// The longest any phase may take.
const PATIENCE: Duration = Duration::from_secs(1_800);

/// What one crash and restart measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RestoreRun {
    /// Which stores.
    pub stores: E2eStores,
    /// Changelog records the restart restored.
    pub restored: u64,
    /// From `start()` to RUNNING.
    pub to_running: Duration,
    /// From `start()` to the first barrier committed.
    pub to_first_commit: Duration,
    /// Building the state before the crash (not part of the figures).
    pub fill: Duration,
}

impl RestoreRun {
    /// Records restored per second from `start()` to RUNNING.
    pub fn rate(&self) -> f64 {
        self.restored as f64 / self.to_running.as_secs_f64().max(1e-9)
    }

    /// `restore stores=… restored=… to_running_s=… records_per_s=… first_commit_s=… fill_s=…`
    pub fn line(&self) -> String {
        format!(
            "restore stores={} restored={} to_running_s={:.3} records_per_s={:.0} first_commit_s={:.3} fill_s={:.1}",
            self.stores.name(),
            self.restored,
            self.to_running.as_secs_f64(),
            self.rate(),
            self.to_first_commit.as_secs_f64(),
            self.fill.as_secs_f64(),
        )
    }
}

fn topology() -> anyhow::Result<Topology> {
    let mut builder = StreamsBuilder::new();
    builder
        .stream(
            INPUT,
            Consumed::with(Serdes::i64(), Serdes::i64())
                .with_watermark_strategy(WatermarkStrategy::for_monotonous_timestamps()),
        )
        .group_by_key()
        .windowed_by(TimeWindows::of_size_and_grace(WINDOW, GRACE))
        .emit_strategy(EmitStrategy::on_window_close())
        .count()
        .to_stream()
        .to(
            OUTPUT,
            Produced::with(
                Serdes::time_windowed(Serdes::i64(), WINDOW.as_millis() as i64),
                Serdes::i64(),
            ),
        );
    builder.build().context("the restore topology")
}

fn config(stores: E2eStores, dir: &std::path::Path) -> RuntimeConfig {
    let mut config = RuntimeConfig::new(
        "bench-restore",
        Backend::Embedded {
            dir: dir.to_path_buf(),
        },
    )
    .with_lanes(1);
    if stores == E2eStores::InMemory {
        config.streams.default_dsl_store = Some(StoreType::InMemory);
    }
    config
}

/// Writes records `from..to` (key `i`, value 1, at `i` ms) to the input.
fn write(log: &EmbeddedLog, from: u64, to: u64) -> anyhow::Result<()> {
    let mut producer = log.transactional_producer("restore-input")?;
    let tps: Vec<TopicPartition> = (0..PARTITIONS)
        .map(|p| TopicPartition::new(INPUT, p))
        .collect();
    let mut i = from;
    while i < to {
        producer.begin()?;
        let end = (i + WRITE_BATCH).min(to);
        for k in i..end {
            let key = k as i64;
            let record = Record::new(
                Some(&key.to_be_bytes()),
                Some(&1i64.to_be_bytes()),
                Timestamp(key),
            );
            producer.send(&tps[(k % u64::from(PARTITIONS)) as usize], &record)?;
        }
        producer.commit()?;
        i = end;
    }
    Ok(())
}

fn stopped(app: &StreamsApp<EmbeddedLog>, what: &str) -> anyhow::Error {
    anyhow::anyhow!("{what}: state {}, error {:?}", app.state(), app.error())
}

/// Builds `entries` window entries with `stores`, crashes, restarts and
/// measures the restart.
///
/// # Errors
/// The log's or the application's, or a phase that did not end in time.
pub fn crash_and_restore(entries: u64, stores: E2eStores) -> anyhow::Result<RestoreRun> {
    let dir = RunDir::new()?;
    let fill_start = Instant::now();
    {
        let log = Arc::new(EmbeddedLog::open(dir.path())?);
        log.create_topic(&TopicSpec::new(INPUT, PARTITIONS))?;
        log.create_topic(&TopicSpec::new(OUTPUT, PARTITIONS))?;
        write(&log, 0, entries)?;
        let mut app = StreamsApp::with_log(topology()?, config(stores, dir.path()), log.clone())?;
        app.start()?;
        if !app.wait_until_caught_up(PATIENCE)? {
            return Err(stopped(&app, "the state was not built"));
        }
        // Dropped without a close: a crash as far as the log and the stores can tell.
        drop(app);
        write(&log, entries, entries + AFTER_CRASH)?;
    }
    let fill = fill_start.elapsed();

    let log = Arc::new(EmbeddedLog::open(dir.path())?);
    let mut app = StreamsApp::with_log(topology()?, config(stores, dir.path()), log)?;
    let start = Instant::now();
    app.start()?;
    if app.wait_for_state(AppState::Running, PATIENCE) != AppState::Running {
        return Err(stopped(&app, "the restart did not reach RUNNING"));
    }
    let to_running = start.elapsed();
    while app.committed_barriers() == 0 {
        if app.state().has_stopped() || start.elapsed() > PATIENCE {
            return Err(stopped(&app, "the restart committed nothing"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let to_first_commit = start.elapsed();
    let restored = app.restored_records();
    if !app.close(Duration::from_secs(600)) {
        return Err(stopped(&app, "the close failed"));
    }
    if restored < entries {
        bail!("restored {restored} changelog records of the {entries} entries' stores");
    }
    Ok(RestoreRun {
        stores,
        restored,
        to_running,
        to_first_commit,
        fill,
    })
}

/// `--query e2e-restore [--entries N]`: the default stores, then in-memory
/// stores, one line each, then their ratio.
///
/// # Errors
/// A bad argument, or a run's.
pub fn run_from_args(args: &[String]) -> anyhow::Result<()> {
    let mut entries = 2_000_000u64;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--query" => {
                it.next();
            }
            "--entries" | "--events" => {
                let v = it.next().with_context(|| format!("{flag} needs a value"))?;
                entries = v
                    .replace('_', "")
                    .parse()
                    .with_context(|| format!("{flag}: cannot parse {v}"))?;
            }
            other => bail!("unknown argument for --query e2e-restore: {other}"),
        }
    }
    let default = crash_and_restore(entries, E2eStores::Default)?;
    println!("{}", default.line());
    let memory = crash_and_restore(entries, E2eStores::InMemory)?;
    println!("{}", memory.line());
    println!(
        "restore ratio default/in-memory: records_per_s={:.2} first_commit={:.2}",
        default.rate() / memory.rate(),
        default.to_first_commit.as_secs_f64() / memory.to_first_commit.as_secs_f64(),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_and_restart_restores_every_entry_on_both_store_types() {
        for stores in [E2eStores::Default, E2eStores::InMemory] {
            let run = crash_and_restore(3_000, stores).unwrap();
            assert!(run.restored >= 3_000, "{}", run.line());
            assert!(run.to_first_commit >= run.to_running, "{}", run.line());
            assert!(
                run.line()
                    .starts_with(&format!("restore stores={} ", stores.name()))
            );
        }
    }
}
