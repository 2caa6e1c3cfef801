//! The soak: the tumbling count as a user runs it by default, for a long
//! time, fed at a steady rate, sampled to see what grows.
//!
//! The application runs on the embedded log in a fresh directory with the
//! default (persistent) stores, or in-memory ones (`--stores`), exactly-once
//! and on two lanes by default: a count per key over tumbling windows with
//! a grace, final results only. The log rolls segments at
//! [`SoakOptions::segment_bytes`] (every topic: the setting is the log's);
//! the input topic deletes segments older than
//! [`SoakOptions::input_retention`]; the runtime creates its own topics as
//! it always does. A writer thread (`writer`) produces
//! [`SoakOptions::rate`] records per second of wall-clock time, stamped
//! with the wall clock, so windows close in real time.
//!
//! Every [`SoakOptions::sample_every`] the run takes a [`Sample`]
//! (`probe`); at the end it stops the writer, lets the application catch
//! up, closes it, computes the [`Slopes`] (`slopes`) and checks every
//! window closed at the final barrier's watermark against what was written
//! (`check`).

mod check;
mod probe;
mod slopes;
mod writer;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use stoatflow_log::{EmbeddedConfig, EmbeddedLog, Log, Retention, TopicSpec};
use stoatflow_runtime::{Backend, RuntimeConfig, StreamsApp};
use stoatflow_streams::{
    Consumed, EmitStrategy, Produced, Serdes, StoreType, StreamsBuilder, TimeWindows, Topology,
};
use stoatflow_time::Watermark;

pub use self::check::WindowCheck;
pub use self::probe::Sample;
pub use self::slopes::{GAP_BOUND_INTERVALS, GROWTH_BOUND_PCT, GapSlope, Slope, Slopes};
pub use self::writer::{WindowSpan, Written};

use crate::e2e::{E2E_PARTITIONS, E2eStores, INPUT, OUTPUT, RunDir, engine_err};
use crate::error::BenchError;

/// How to soak.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// How long the writer writes (`--duration-s`, default 600 s).
    pub duration: Duration,
    /// Input records per second of wall-clock time (`--rate`, 30 000).
    pub rate: u64,
    /// Distinct keys (`--keys`, 100 000).
    pub keys: u64,
    /// The log's segment size (`--segment-mib`, 4 MiB).
    pub segment_bytes: u64,
    /// The stores (`--stores`, the defaults: persistent).
    pub stores: E2eStores,
    /// Record lanes (`--lanes`, 2).
    pub lanes: usize,
    /// The window size (`--window-s`, 10 s).
    pub window: Duration,
    /// The windows' grace (`--grace-s`, 1 s).
    pub grace: Duration,
    /// The input topic's retention (`--input-retention-s`, 300 s).
    pub input_retention: Duration,
    /// Time between samples (`--sample-s`, 10 s).
    pub sample_every: Duration,
    /// The windowed changelogs' retention beyond the window and its grace
    /// (`--changelog-extra-retention-s`; the runtime's default when `None`).
    pub changelog_extra_retention: Option<Duration>,
}

impl Default for SoakOptions {
    fn default() -> Self {
        SoakOptions {
            duration: Duration::from_secs(600),
            rate: 30_000,
            keys: 100_000,
            segment_bytes: 4 << 20,
            stores: E2eStores::Default,
            lanes: 2,
            window: Duration::from_secs(10),
            grace: Duration::from_secs(1),
            input_retention: Duration::from_secs(300),
            sample_every: Duration::from_secs(10),
            changelog_extra_retention: None,
        }
    }
}

impl SoakOptions {
    fn validate(&self) -> Result<(), BenchError> {
        let bad = |reason: &str| {
            Err(BenchError::Options {
                query: "soak",
                reason: reason.to_owned(),
            })
        };
        if self.rate == 0 || self.keys == 0 || self.lanes == 0 || self.segment_bytes == 0 {
            return bad("--rate, --keys, --lanes and --segment-mib must be positive");
        }
        if self.window.as_millis() == 0 || self.sample_every.is_zero() {
            return bad("--window-s and --sample-s must be positive");
        }
        if self.sample_every > self.duration {
            return bad("--sample-s must not exceed --duration-s");
        }
        if self.keys > 1 << 28 {
            return bad("--keys must not exceed 2^28");
        }
        Ok(())
    }

    /// The window size and grace, ms.
    fn window_ms(&self) -> (i64, i64) {
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        (ms(self.window), ms(self.grace))
    }
}

/// What a soak found.
#[derive(Debug, Clone)]
pub struct SoakReport {
    /// The samples, in order.
    pub samples: Vec<Sample>,
    /// Their slopes.
    pub slopes: Slopes,
    /// The correctness check of the output topic.
    pub check: WindowCheck,
    /// Input records written.
    pub written: u64,
    /// The application's `late.records.total` after its close.
    pub late_records: u64,
    /// How long after its newest record a closed changelog segment is
    /// deleted (the store's retention, window plus grace, plus
    /// `windowstore.changelog.additional.retention.ms`): before this much
    /// event time has passed, the changelog grows by design.
    pub changelog_retention: Duration,
}

impl SoakReport {
    /// The bounds not met (slopes, `late_records == 0`), each with its
    /// figures. The correctness check is [`SoakReport::check`].
    pub fn violations(&self) -> Vec<String> {
        let mut out = self.slopes.violations();
        if self.late_records != 0 {
            out.push(format!("late_records {} (bound 0)", self.late_records));
        }
        out
    }

    /// The lines printed at the end: the slopes, the barrier pauses, the
    /// check and `soak-end written=… late_records=… changelog_retention_s=… failed=…`.
    pub fn summary(&self) -> String {
        let failed: Vec<&str> = self
            .slopes
            .series
            .iter()
            .filter(|s| !s.ok())
            .map(|s| s.series)
            .chain((!self.slopes.gap.ok()).then_some("barrier_gap_max_ms"))
            .chain((self.late_records != 0).then_some("late_records"))
            .collect();
        format!(
            "{}\n{}\nsoak-end written={} late_records={} changelog_retention_s={} failed={}",
            self.slopes,
            self.check,
            self.written,
            self.late_records,
            self.changelog_retention.as_secs(),
            if failed.is_empty() {
                "none".to_owned()
            } else {
                failed.join(",")
            }
        )
    }
}

/// The count: a count per key over tumbling windows with grace, final
/// results only; the sources' watermark as a user gets it without
/// configuring one.
fn topology(window: Duration, grace: Duration) -> Result<Topology, BenchError> {
    let window_ms = i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
    let mut builder = StreamsBuilder::new();
    builder
        .stream(INPUT, Consumed::with(Serdes::i64(), Serdes::i64()))
        .group_by_key()
        .windowed_by(TimeWindows::of_size_and_grace(window, grace))
        .emit_strategy(EmitStrategy::on_window_close())
        .count()
        .to_stream()
        .to(
            OUTPUT,
            Produced::with(
                Serdes::time_windowed(Serdes::i64(), window_ms),
                Serdes::i64(),
            ),
        );
    builder.build().map_err(|source| BenchError::Topology {
        query: "soak",
        source,
    })
}

/// Runs a soak; `on_sample` sees each sample as it is taken.
pub fn run_soak(
    opts: &SoakOptions,
    mut on_sample: impl FnMut(&Sample),
) -> Result<SoakReport, BenchError> {
    opts.validate()?;
    let dir = RunDir::new()?;
    let log = open_log(&dir, opts)?;
    let config = soak_config(&dir, opts);
    let changelog_retention =
        opts.window + opts.grace + config.windowstore_changelog_additional_retention;
    let mut app = StreamsApp::with_log(topology(opts.window, opts.grace)?, config, log.clone())
        .map_err(engine_err)?;
    let start = Instant::now();
    app.start().map_err(engine_err)?;
    let writer_opts = writer::WriterOptions {
        rate: opts.rate,
        keys: opts.keys,
        window_ms: opts.window_ms().0,
    };
    let stop = AtomicBool::new(false);
    let (samples, written) = std::thread::scope(|s| {
        let writer = s.spawn(|| writer::write_until_stopped(&log, writer_opts, &stop));
        let samples = sample(&app, &dir, opts, start, &stop, &mut on_sample);
        stop.store(true, Ordering::Release);
        let written = writer
            .join()
            .map_err(|_| engine_err("the soak's writer panicked"))?;
        Ok::<_, BenchError>((samples?, written?))
    })?;
    drain_and_close(&mut app)?;
    let (late_records, watermark) = final_figures(&app);
    let mut checker = check::Checker::new(&written.windows, opts.keys, opts.window_ms(), watermark);
    check::read_output(&log, &mut checker)?;
    Ok(SoakReport {
        slopes: Slopes::of(
            &samples,
            opts.duration,
            opts.input_retention,
            changelog_retention,
        ),
        samples,
        check: checker.finish(),
        written: written.records,
        late_records,
        changelog_retention,
    })
}

/// Opens the soak's embedded log in `dir` and creates its topics (the input with the
/// options' retention).
fn open_log(dir: &RunDir, opts: &SoakOptions) -> Result<Arc<EmbeddedLog>, BenchError> {
    let log_config = EmbeddedConfig {
        segment_bytes: opts.segment_bytes,
        ..EmbeddedConfig::default()
    };
    let log = Arc::new(EmbeddedLog::open_with(dir.path(), log_config).map_err(engine_err)?);
    let retention = Retention {
        time: Some(opts.input_retention),
        bytes: None,
    };
    log.create_topic(&TopicSpec::new(INPUT, E2E_PARTITIONS).with_retention(retention))
        .map_err(engine_err)?;
    log.create_topic(&TopicSpec::new(OUTPUT, E2E_PARTITIONS))
        .map_err(engine_err)?;
    Ok(log)
}

/// The soak application's configuration: the options' lanes and stores, on the log in `dir`.
fn soak_config(dir: &RunDir, opts: &SoakOptions) -> RuntimeConfig {
    let mut config = RuntimeConfig::new(
        "bench-soak",
        Backend::Embedded {
            dir: dir.path().to_path_buf(),
        },
    )
    .with_lanes(opts.lanes);
    if let Some(extra) = opts.changelog_extra_retention {
        config = config.with_windowstore_changelog_additional_retention(extra);
    }
    if opts.stores == E2eStores::InMemory {
        config.streams.default_dsl_store = Some(StoreType::InMemory);
    }
    config
}

/// Once the writer has stopped: waits until the application has consumed its input, then
/// closes it.
fn drain_and_close(app: &mut StreamsApp<EmbeddedLog>) -> Result<(), BenchError> {
    if !app
        .wait_until_caught_up(Duration::from_secs(600))
        .map_err(engine_err)?
    {
        return Err(engine_err(format!(
            "soak: did not consume its input: state {}, error {:?}",
            app.state(),
            app.error()
        )));
    }
    if !app.close(Duration::from_secs(600)) {
        return Err(engine_err(format!("soak: close failed: {:?}", app.error())));
    }
    Ok(())
}

/// After the close: the late records counted, and the watermark stamped on the last barrier
/// (what the check holds the output to).
fn final_figures(app: &StreamsApp<EmbeddedLog>) -> (u64, Watermark) {
    let late_records = app
        .handle()
        .metrics()
        .watermark
        .map_or(0, |w| w.late_records_total);
    let watermark = app
        .timeline()
        .barriers()
        .last()
        .and_then(|b| b.stamps.first().copied())
        .unwrap_or(Watermark::MIN);
    (late_records, watermark)
}

/// Takes a sample every `opts.sample_every` from `start` until
/// `opts.duration` has passed; stops early with an error if the
/// application stops or the writer does (`stop` set).
fn sample(
    app: &StreamsApp<EmbeddedLog>,
    dir: &RunDir,
    opts: &SoakOptions,
    start: Instant,
    stop: &AtomicBool,
    on_sample: &mut impl FnMut(&Sample),
) -> Result<Vec<Sample>, BenchError> {
    let handle = app.handle();
    let count = (opts.duration.as_secs_f64() / opts.sample_every.as_secs_f64()).floor() as u32;
    let mut samples = Vec::with_capacity(count as usize);
    let (mut previous_at, mut previous_in) = (start, 0u64);
    for k in 1..=count {
        let due = start + opts.sample_every * k;
        loop {
            if app.state().has_stopped() {
                return Err(engine_err(format!(
                    "soak: the application stopped: {:?}",
                    app.error()
                )));
            }
            if stop.load(Ordering::Acquire) {
                return Err(engine_err("soak: the writer stopped"));
            }
            match due.checked_duration_since(Instant::now()) {
                Some(wait) if !wait.is_zero() => {
                    std::thread::sleep(wait.min(Duration::from_millis(100)))
                }
                _ => break,
            }
        }
        let now = Instant::now();
        let metrics = handle.metrics();
        let (gap, interval) = probe::barrier_figures(&app.timeline(), previous_at, now);
        let disk = probe::DiskSplit::of(dir.path());
        let mib = |b: u64| b as f64 / f64::from(1 << 20);
        let dt = now.duration_since(previous_at).as_secs_f64();
        let s = Sample {
            // The nominal time: the bounds compare samples by it.
            t_s: (opts.sample_every * k).as_secs_f64(),
            records_per_s: metrics.records_in.saturating_sub(previous_in) as f64 / dt,
            barrier_gap_max_ms: gap.as_secs_f64() * 1e3,
            commit_interval_ms: interval,
            rss_mib: crate::report::rss_bytes().map_or(f64::NAN, mib),
            log_mib: mib(disk.log),
            changelog_mib: mib(disk.changelog),
            state_mib: mib(disk.state),
            fds: probe::open_fds(),
            watermark_lag_ms: metrics.watermark.as_ref().and_then(|w| w.lag_ms),
            late_records: metrics
                .watermark
                .as_ref()
                .map_or(0, |w| w.late_records_total),
        };
        on_sample(&s);
        (previous_at, previous_in) = (now, metrics.records_in);
        samples.push(s);
    }
    Ok(samples)
}
