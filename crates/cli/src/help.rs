//! The `Examples:` section at the end of each subcommand's `--help`:
//! commands to copy, each with what it does. Kept here, one table, so that
//! the examples read as a set; a test checks that every subcommand has one.
//!
//! Owns the examples' text only; the flags they use are `main`'s.

use clap::Command;

/// (subcommand path, examples).
const EXAMPLES: &[(&[&str], &str)] = &[
    (
        &[],
        "  stoatflow quickstart                         # see it work
  stoatflow run --config app.yaml               # run an example with the endpoints
  stoatflow run --help                          # each command's own examples",
    ),
    (
        &["quickstart"],
        "  stoatflow quickstart                     # the orders example in a temporary log
  stoatflow quickstart --dir orders-log    # keep the log, then: stoatflow log topics --dir orders-log",
    ),
    (
        &["run"],
        "  stoatflow run --config app.yaml                       # the windowed count until Ctrl-C
  stoatflow run --config app.yaml --example join --until-caught-up
  stoatflow run --config app.yaml --max-runtime 60 -v   # a minute, with the engine's info lines
  stoatflow run --config app.yaml 2> run.log            # a status line every 10 s in run.log
  STOATFLOW_PROCESSING_LANES=4 stoatflow run --config app.yaml   # a key set from the environment",
    ),
    (
        &["query"],
        "  stoatflow query --dir log click-counts-store u1 --windows    # u1's windows, each final or open
  stoatflow query --dir log click-counts-store u1 --windows --from 1790000000000 --latest
  stoatflow query --dir log totals --from a --limit 10           # a key-value store's keys from a",
    ),
    (
        &["watermarks"],
        "  stoatflow watermarks --url http://127.0.0.1:8080
  stoatflow watermarks --url http://127.0.0.1:8080 --interval-ms 5000   # a slower source",
    ),
    (
        &["config"],
        "  stoatflow config --config app.yaml                  # each key, its value, where it came from
  STOATFLOW_PROCESSING_LANES=4 stoatflow config --config app.yaml   # an override shows its variable",
    ),
    (
        &["describe"],
        "  stoatflow describe --example windowed-count
  stoatflow describe --example join | head -5",
    ),
    (
        &["log"],
        "  stoatflow log topics --dir data
  stoatflow log consume --dir data --topic click-counts",
    ),
    (
        &["log", "topics"],
        "  stoatflow log topics --dir data",
    ),
    (
        &["log", "produce"],
        "  printf 'u1\\tclick\\t1790000000000\\n' | stoatflow log produce --dir data --topic clicks
  printf 'just a value\\n' | stoatflow log produce --dir data --topic notes --partition 0
  stoatflow log produce --dir data --topic clicks --partitions 3 < clicks.tsv",
    ),
    (
        &["log", "consume"],
        "  stoatflow log consume --dir data --topic click-counts
  stoatflow log consume --dir data --topic clicks --partition 0 --max 10",
    ),
    (
        &["log", "describe"],
        "  stoatflow log describe --dir data --topic clicks",
    ),
];

/// `command` with each subcommand's examples after its help.
pub fn with_examples(command: Command) -> Command {
    EXAMPLES
        .iter()
        .fold(command, |command, (path, text)| add(command, path, text))
}

fn add(command: Command, path: &[&str], text: &str) -> Command {
    match path {
        [] => command.after_help(format!("Examples:\n{text}")),
        [name, rest @ ..] => {
            if command.find_subcommand(name).is_none() {
                return command;
            }
            command.mut_subcommand(*name, |sub| add(sub, rest, text))
        }
    }
}
