//! `stoatflow-bench`: runs Nexmark queries and windowed workloads on the task
//! path and prints one line per run; checks that several systems computed the
//! same windows.
//!
//! ```text
//! stoatflow-bench --query q5 --events 10000000                 # changelogs on
//! stoatflow-bench --query q5 --events 10000000 --changelog off
//! stoatflow-bench --query all --events 10000000     # each query in its own process, on and off
//! stoatflow-bench --query tumbling --windows-out ours.txt      # and its windows, `key start count`
//! stoatflow-bench --check-windows stoatflow=ours.txt bytewax=theirs.txt
//! stoatflow-bench --query soak --duration-s 600 --rate 30000 --keys 100000
//! stoatflow-bench --query e2e-restore --entries 2000000   # crash, restart, restore
//! ```

use std::fmt::Write as _;
use std::process::Command;

use anyhow::{Context, bail};
use stoatflow_bench::check;
use stoatflow_bench::run::{Query, RunOptions, run, tumbling_windows};
use stoatflow_bench::soak::{SoakOptions, run_soak};

const USAGE: &str = "usage: stoatflow-bench --query <gen|q0|q1|q2|q5|q7|q8|tumbling|sliding|session|join-inner|join-left|e2e-tumbling-1-lane|e2e-tumbling-2-lanes|e2e-q5-1-lane|e2e-q5-2-lanes|e2e-tumbling-paced|e2e-q7-1-lane|e2e-q8-1-lane|e2e-sliding-1-lane|e2e-session-1-lane|e2e-join-inner-1-lane|e2e-join-left-1-lane|all> [--events N] [--pace RECORDS_PER_S (e2e-tumbling-paced)] [--stores default|in-memory (e2e-)] [--changelog on|off] [--rate EVENTS_PER_S] [--out-of-order GROUP] [--frontier-every N] [--windows-out PATH (tumbling only)]\n       stoatflow-bench --query soak [--duration-s 600] [--rate RECORDS_PER_S (30000)] [--keys 100000] [--segment-mib 4] [--stores default|in-memory] [--lanes 2] [--window-s 10] [--grace-s 1] [--input-retention-s 300] [--sample-s 10] [--changelog-extra-retention-s 600]
       stoatflow-bench --query e2e-restore [--entries 2000000]
       stoatflow-bench --query e2e-tumbling-queried [--events 2000000] [--pairs 3] [--queries-per-s 100] [--lanes 2] [--stores default|in-memory]
       stoatflow-bench --check-windows SYSTEM=PATH SYSTEM=PATH...";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--check-windows") {
        return check_windows(&args[1..]);
    }
    if args.windows(2).any(|w| w[0] == "--query" && w[1] == "soak") {
        return soak(&args);
    }
    if args
        .windows(2)
        .any(|w| w[0] == "--query" && w[1] == "e2e-restore")
    {
        return stoatflow_bench::restore::run_from_args(&args);
    }
    if args
        .windows(2)
        .any(|w| w[0] == "--query" && w[1] == "e2e-tumbling-queried")
    {
        return stoatflow_bench::e2e_queried::run_from_args(&args);
    }
    let mut query = None;
    let mut changelog = None;
    let mut windows_out = None;
    let mut opts = RunOptions::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .with_context(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match flag.as_str() {
            "--query" => query = Some(value()?.clone()),
            "--events" => opts.events = parse(value()?, flag)?,
            "--rate" => opts.generator.rate = parse(value()?, flag)?,
            "--pace" => opts.pace = parse::<u64>(value()?, flag)?.max(1),
            "--out-of-order" => opts.generator.out_of_order_group_size = parse(value()?, flag)?,
            "--frontier-every" => opts.frontier_every = parse::<u64>(value()?, flag)?.max(1),
            "--changelog" => {
                changelog = Some(match value()?.as_str() {
                    "on" => true,
                    "off" => false,
                    other => bail!("--changelog: expected on or off, got {other}\n{USAGE}"),
                })
            }
            "--stores" => {
                let name = value()?;
                opts.stores =
                    stoatflow_bench::e2e::E2eStores::from_name(name).with_context(|| {
                        format!("--stores: expected default or in-memory, got {name}\n{USAGE}")
                    })?;
            }
            "--windows-out" => windows_out = Some(value()?.clone()),
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => bail!("unknown argument {other}\n{USAGE}"),
        }
    }
    let query = query.with_context(|| format!("--query is required\n{USAGE}"))?;
    if query == "all" {
        return run_all(&args, changelog);
    }
    let q = Query::from_name(&query).with_context(|| format!("unknown query {query}\n{USAGE}"))?;
    opts.changelog = changelog.unwrap_or(true);
    let report = match windows_out {
        None => run(q, &opts)?,
        Some(path) => {
            if q != Query::Tumbling {
                bail!("--windows-out is only for --query tumbling\n{USAGE}");
            }
            let (report, windows) = tumbling_windows(&opts)?;
            let mut text = String::with_capacity(windows.len() * 24);
            for (key, start, count) in windows {
                writeln!(text, "{key} {start} {count}").expect("writing to a string");
            }
            std::fs::write(&path, text).with_context(|| format!("cannot write {path}"))?;
            report
        }
    };
    println!("{report}");
    Ok(())
}

/// Every query in its own process, so each line's peak RSS is its own; with
/// changelogs on, then off, unless `--changelog` chose one.
fn run_all(args: &[String], changelog: Option<bool>) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("cannot find this binary")?;
    let states: &[bool] = match changelog {
        Some(true) => &[true],
        Some(false) => &[false],
        None => &[true, false],
    };
    for q in Query::ALL {
        for &on in states {
            if !on && !q.takes_changelog_option() {
                continue;
            }
            let mut child_args: Vec<String> = Vec::new();
            let mut rest = args.iter();
            while let Some(a) = rest.next() {
                if a == "--query" || a == "--changelog" {
                    rest.next();
                } else {
                    child_args.push(a.clone());
                }
            }
            child_args.extend(["--query".to_owned(), q.name().to_owned()]);
            if q.takes_changelog_option() {
                let state = if on { "on" } else { "off" };
                child_args.extend(["--changelog".to_owned(), state.to_owned()]);
            }
            let status = Command::new(&exe)
                .args(&child_args)
                .status()
                .with_context(|| format!("cannot run {}", exe.display()))?;
            if !status.success() {
                bail!("query {} failed: {status}", q.name());
            }
        }
    }
    Ok(())
}

/// `--query soak ...`: prints a sample line every `--sample-s`, then the
/// slopes, the barrier pauses and the check of the output; fails if the
/// check does (a bound not met is reported, not a failure: the run is a
/// measurement).
fn soak(args: &[String]) -> anyhow::Result<()> {
    use std::time::Duration;
    let mut opts = SoakOptions::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .with_context(|| format!("{flag} needs a value\n{USAGE}"))
        };
        let secs = |v: &String| parse::<f64>(v, flag).and_then(|s| seconds(s, flag));
        match flag.as_str() {
            "--query" => {
                value()?;
            }
            "--duration-s" => opts.duration = secs(value()?)?,
            "--rate" => opts.rate = parse(value()?, flag)?,
            "--keys" => opts.keys = parse(value()?, flag)?,
            "--segment-mib" => {
                opts.segment_bytes = parse::<u64>(value()?, flag)?.saturating_mul(1 << 20)
            }
            "--stores" => {
                let name = value()?;
                opts.stores =
                    stoatflow_bench::e2e::E2eStores::from_name(name).with_context(|| {
                        format!("--stores: expected default or in-memory, got {name}\n{USAGE}")
                    })?;
            }
            "--lanes" => opts.lanes = parse(value()?, flag)?,
            "--window-s" => opts.window = secs(value()?)?,
            "--grace-s" => opts.grace = secs(value()?)?,
            "--input-retention-s" => opts.input_retention = secs(value()?)?,
            "--sample-s" => opts.sample_every = secs(value()?)?,
            "--changelog-extra-retention-s" => {
                opts.changelog_extra_retention = Some(secs(value()?)?)
            }
            other => bail!("unknown argument for --query soak: {other}\n{USAGE}"),
        }
    }
    fn seconds(s: f64, flag: &str) -> anyhow::Result<Duration> {
        Duration::try_from_secs_f64(s).with_context(|| format!("{flag}: not a duration: {s}"))
    }
    let report = run_soak(&opts, |sample| println!("{sample}"))?;
    println!("{}", report.summary());
    if !report.check.ok() {
        bail!("the soak's output is wrong: {}", report.check);
    }
    Ok(())
}

/// `--check-windows SYSTEM=PATH...`: every system's windows against the first's;
/// fails, naming the first differing window, unless all agree.
fn check_windows(args: &[String]) -> anyhow::Result<()> {
    let mut results = Vec::new();
    for arg in args {
        let (system, path) = arg
            .split_once('=')
            .with_context(|| format!("--check-windows: expected SYSTEM=PATH, got {arg}"))?;
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {system}'s windows from {path}"))?;
        results.push(check::parse(system, &text)?);
    }
    let agreed = check::compare(&results)?;
    println!("{agreed}");
    Ok(())
}

fn parse<T: std::str::FromStr>(v: &str, flag: &str) -> anyhow::Result<T>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    v.replace('_', "")
        .parse()
        .with_context(|| format!("{flag}: cannot parse {v}"))
}
