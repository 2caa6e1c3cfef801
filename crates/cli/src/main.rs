//! `stoatflow`: the command line.
//!
//! `quickstart` runs the README's first example; `run` runs a bundled
//! example topology from a YAML configuration with the HTTP endpoints;
//! `watermarks` reads a running application's `/watermarks` and applies the
//! watermark runbook (docs/operating.md#runbook); `describe` prints an example's topology; `log` inspects the
//! embedded log. Thin: every rule it shows lives in the library crates.

mod config_cmd;
mod examples;
mod help;
mod http_get;
mod log_cmd;
mod log_remote;
mod logging;
mod out;
mod query_cmd;
mod quickstart;
mod report;
mod run;
mod status;
mod timestamp;
mod topics;
mod watermarks;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

use crate::examples::Example;
use crate::out::outln;

#[derive(Debug, Parser)]
#[command(
    name = "stoatflow",
    version,
    about = "Event-time stream processing: the quickstart and operating tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// More detail on stderr: -v info, -vv debug, -vvv trace (RUST_LOG,
    /// when set, decides instead: e.g. RUST_LOG=stoatflow_runtime=debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Errors only: no warnings, progress messages, bars or status lines.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the orders example on the real engine and print its final results.
    Quickstart {
        /// Keep the embedded log in this directory instead of a temporary one.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Run a bundled example topology from a YAML configuration, with the
    /// HTTP endpoints, until SIGINT or SIGTERM.
    Run {
        /// The YAML configuration (environment variables override keys).
        #[arg(long)]
        config: PathBuf,
        /// Which example.
        #[arg(long, value_enum, default_value = "windowed-count")]
        example: Example,
        /// Partitions of the topics it creates (default: those of the
        /// input topics already there, else 1). Must agree with every
        /// topic already there.
        #[arg(long)]
        partitions: Option<u32>,
        /// Stop once every record already in the input topics is processed.
        #[arg(long)]
        until_caught_up: bool,
        /// Stop after this many seconds.
        #[arg(long)]
        max_runtime: Option<u64>,
        /// Seconds between status lines (state, watermark, records/s) when
        /// stderr is not a terminal; on a terminal the line is redrawn in
        /// place every second.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
        status_every: u64,
    },
    /// Read a running application's /watermarks and say which partition
    /// holds the watermark and which runbook branch applies.
    Watermarks {
        /// The application's endpoints, e.g. http://127.0.0.1:8080.
        #[arg(long)]
        url: String,
        /// Time between the two readings (to see whether the minimum
        /// partition is still receiving records).
        #[arg(long, default_value_t = 1000)]
        interval_ms: u64,
    },
    /// Print the effective configuration: every key's value and where it
    /// came from (file:line:column, environment variable, or default),
    /// secrets redacted.
    Config {
        /// The YAML configuration (environment variables override keys).
        #[arg(long)]
        config: PathBuf,
    },
    /// Print an example's topology.
    Describe {
        /// Which example.
        #[arg(long, value_enum)]
        example: Example,
    },
    /// Ask a store of the application running on an embedded log's
    /// directory (its store routes): a key's value, a key's windows with
    /// how final each is, or a range of keys. Committed state unless
    /// --latest.
    Query {
        /// The embedded log's directory the application holds.
        #[arg(long)]
        dir: PathBuf,
        /// The store.
        store: String,
        /// The key (as text); without it, a range of keys.
        key: Option<String>,
        /// The key's windows (a window or session store).
        #[arg(long)]
        windows: bool,
        /// The earliest window start in ms (with --windows), or the lowest key.
        #[arg(long)]
        from: Option<String>,
        /// The latest window start in ms (with --windows), or the highest key.
        #[arg(long)]
        to: Option<String>,
        /// The most keys of a range (1 to 1000; 100 by default).
        #[arg(long)]
        limit: Option<u32>,
        /// Read what the application has processed, committed or not.
        #[arg(long)]
        latest: bool,
        /// Read the instance's standby copies and tasks still restoring
        /// too (each named with how far behind it is; no window of theirs
        /// is final).
        #[arg(long)]
        stale: bool,
    },
    /// Inspect the embedded log: topics, records, offsets.
    Log {
        #[command(subcommand)]
        command: LogCommand,
    },
}

#[derive(Debug, Subcommand)]
enum LogCommand {
    /// List the topics.
    Topics {
        /// The embedded log's directory.
        #[arg(long)]
        dir: PathBuf,
    },
    /// Write one record per stdin line: `key<TAB>value[<TAB>timestamp-ms]`,
    /// or a bare value (null key). Creates the topic if missing.
    ///
    /// The timestamp is milliseconds since the epoch, from 0 to
    /// 253402300799999 (9999-12-31T23:59:59.999Z); without one, the
    /// current time.
    Produce {
        #[command(flatten)]
        at: TopicArgs,
        /// Write every record to this partition (default: by key, as Kafka).
        #[arg(long)]
        partition: Option<u32>,
        /// Partitions of the topic if it is created.
        #[arg(long, default_value_t = 1)]
        partitions: u32,
    },
    /// Print the committed records with partition, offset, timestamp and headers.
    Consume {
        #[command(flatten)]
        at: TopicArgs,
        /// Only this partition.
        #[arg(long)]
        partition: Option<u32>,
        /// At most this many records.
        #[arg(long)]
        max: Option<u64>,
        /// Keep reading records as they are committed, until SIGINT or
        /// SIGTERM.
        #[arg(long)]
        follow: bool,
    },
    /// A topic's shape and offsets.
    Describe {
        #[command(flatten)]
        at: TopicArgs,
    },
}

/// A topic of the embedded log.
#[derive(Debug, clap::Args)]
struct TopicArgs {
    /// The embedded log's directory.
    #[arg(long)]
    dir: PathBuf,
    /// The topic.
    #[arg(long)]
    topic: String,
}

/// A broken pipe on stdout ends the command quietly with status 0, as
/// `head` closing its input should: the reader has what it wanted, and a
/// status of 0 keeps `set -o pipefail` scripts from failing on it (a
/// SIGPIPE death, 141 in the shell, is what C tools give; Rust ignores
/// SIGPIPE, so the write fails with `BrokenPipe` instead). Any other error
/// prints as `Error: ...`, each further cause on a line of its own
/// (`report`), and exits 1.
fn main() -> ExitCode {
    let matches = help::with_examples(Cli::command()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    logging::init(cli.verbose, cli.quiet);
    out::set_quiet(cli.quiet);
    match command(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if out::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", report::render(&e));
            ExitCode::FAILURE
        }
    }
}

fn command(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Quickstart { dir } => quickstart::run(dir.as_deref()),
        Command::Run {
            config,
            example,
            partitions,
            until_caught_up,
            max_runtime,
            status_every,
        } => run::run(
            &config,
            example,
            partitions,
            run::Stop {
                caught_up: until_caught_up,
                max_runtime: max_runtime.map(Duration::from_secs),
            },
            Duration::from_secs(status_every),
        ),
        Command::Watermarks { url, interval_ms } => {
            watermarks::run(&url, Duration::from_millis(interval_ms))
        }
        Command::Config { config } => config_cmd::run(&config),
        Command::Describe { example } => {
            outln!("{}", example.topology()?.describe().trim_end())?;
            Ok(())
        }
        Command::Query {
            dir,
            store,
            key,
            windows,
            from,
            to,
            limit,
            latest,
            stale,
        } => query_cmd::run(
            &dir,
            &store,
            &query_cmd::Ask {
                key,
                windows,
                from,
                to,
                limit,
                latest,
                stale,
            },
        ),
        Command::Log { command } => match command {
            LogCommand::Topics { dir } => log_cmd::topics(&dir),
            LogCommand::Produce {
                at,
                partition,
                partitions,
            } => log_cmd::produce(
                &at.dir,
                &at.topic,
                partition,
                partitions,
                std::io::stdin().lock(),
            ),
            LogCommand::Consume {
                at,
                partition,
                max,
                follow,
            } => {
                let stop = if follow {
                    Some(stoatflow::stop_on_signals()?)
                } else {
                    None
                };
                log_cmd::consume(
                    &at.dir,
                    &at.topic,
                    partition,
                    max,
                    stop.as_deref(),
                    &mut std::io::stdout().lock(),
                )
            }
            LogCommand::Describe { at } => log_cmd::describe(&at.dir, &at.topic),
        },
    }
}
