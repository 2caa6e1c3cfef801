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
//! ```

use std::fmt::Write as _;
use std::process::Command;

use anyhow::{Context, bail};
use stoatflow_bench::check;
use stoatflow_bench::run::{Query, RunOptions, run, tumbling_windows};

const USAGE: &str = "usage: stoatflow-bench --query <gen|q0|q1|q2|q5|q7|q8|tumbling|sliding|session|join-inner|join-left|e2e-tumbling-1-lane|e2e-tumbling-2-lanes|e2e-q5-1-lane|e2e-q5-2-lanes|e2e-tumbling-paced|all> [--events N] [--pace RECORDS_PER_S (e2e-tumbling-paced)] [--stores default|in-memory (e2e-)] [--changelog on|off] [--rate EVENTS_PER_S] [--out-of-order GROUP] [--frontier-every N] [--windows-out PATH (tumbling only)]\n       stoatflow-bench --check-windows SYSTEM=PATH SYSTEM=PATH...";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--check-windows") {
        return check_windows(&args[1..]);
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
