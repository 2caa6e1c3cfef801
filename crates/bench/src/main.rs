//! `stoatflow-bench`: runs Nexmark queries and windowed workloads on the task
//! path and prints one line per run.
//!
//! ```text
//! stoatflow-bench --query q5 --events 10000000
//! stoatflow-bench --query all --events 10000000     # each query in its own process
//! ```

use std::process::Command;

use anyhow::{Context, bail};
use stoatflow_bench::run::{Query, RunOptions, run};

const USAGE: &str = "usage: stoatflow-bench --query <gen|q0|q1|q2|q5|q7|q8|tumbling|sliding|session|join-inner|join-left|all> [--events N] [--rate EVENTS_PER_S] [--out-of-order GROUP] [--frontier-every N]";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut query = None;
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
            "--out-of-order" => opts.generator.out_of_order_group_size = parse(value()?, flag)?,
            "--frontier-every" => opts.frontier_every = parse::<u64>(value()?, flag)?.max(1),
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => bail!("unknown argument {other}\n{USAGE}"),
        }
    }
    let query = query.with_context(|| format!("--query is required\n{USAGE}"))?;
    if query == "all" {
        // One process per query, so each line's peak RSS is its own.
        let exe = std::env::current_exe().context("cannot find this binary")?;
        for q in Query::ALL {
            let mut child_args = args.clone();
            let at = child_args
                .iter()
                .position(|a| a == "--query")
                .context("--query given")?;
            child_args[at + 1] = q.name().to_owned();
            let status = Command::new(&exe)
                .args(&child_args)
                .status()
                .with_context(|| format!("cannot run {}", exe.display()))?;
            if !status.success() {
                bail!("query {} failed: {status}", q.name());
            }
        }
        return Ok(());
    }
    let q = Query::from_name(&query).with_context(|| format!("unknown query {query}\n{USAGE}"))?;
    let report = run(q, &opts)?;
    println!("{report}");
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
