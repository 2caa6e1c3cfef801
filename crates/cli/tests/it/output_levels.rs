//! How much the binary says: `-q` errors only, `-v` and `RUST_LOG` more
//! (`RUST_LOG` decides over the flags), `run`'s periodic status lines when
//! stderr is not a terminal, and an `Examples:` section in every
//! subcommand's `--help`.

use std::process::{Output, Stdio};

use crate::support::*;

/// Runs with `RUST_LOG` set to `rust_log` (or removed), stdin empty.
fn with_rust_log(rust_log: Option<&str>, args: &[&str]) -> Output {
    let mut command = stoatflow();
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match rust_log {
        Some(v) => command.env("RUST_LOG", v),
        None => command.env_remove("RUST_LOG"),
    };
    let out = command.output().expect("run stoatflow");
    assert!(out.status.success(), "stoatflow {args:?}: {}", stderr(&out));
    out
}

/// The clicks produced into a log under a new directory, and a
/// configuration running the windowed count on it, idleness disabled (which
/// `run` warns about): (directory, file).
fn clicks_app() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    ok(
        &["log", "produce", "--dir", path(&log), "--topic", "clicks"],
        &clicks(),
    );
    let file = dir.path().join("app.yaml");
    std::fs::write(
        &file,
        format!(
            "application.id: levels\nstoatflow:\n  embedded:\n    dir: {}\n  processing:\n    lanes: 1\n  commit-barrier:\n    interval-ms: 100\n  watermark:\n    idleness-timeout-ms: 0\nruntime:\n  endpoints:\n    listen: 127.0.0.1:0\n",
            log.display()
        ),
    )
    .unwrap();
    (dir, file)
}

/// Lines of `text` that a `tracing` event at `level` printed.
fn events(text: &str, level: &str) -> usize {
    let tag = format!(" {level} ");
    text.lines().filter(|l| l.contains(&tag)).count()
}

#[test]
fn quiet_prints_nothing_on_success_but_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let d = path(dir.path());
    let out = ok(
        &["log", "produce", "-q", "--dir", d, "--topic", "t"],
        &clicks(),
    );
    assert_eq!(stdout(&out), "");
    assert_eq!(stderr(&out), "");
    let out = ok(&["-q", "log", "consume", "--dir", d, "--topic", "t"], "");
    assert_eq!(stdout(&out).lines().count(), 21, "{}", stdout(&out));
    assert_eq!(stderr(&out), "");

    // `run` says what it runs, warns (the example's source has idleness
    // disabled) and says it stopped; under -q, nothing.
    let (_dir, file) = clicks_app();
    let run = ["run", "--config", path(&file), "--until-caught-up"];
    let out = with_rust_log(None, &run);
    assert!(stdout(&out).contains("stopping (caught up)"), "{out:?}");
    assert!(events(&stderr(&out), "WARN") > 0, "{}", stderr(&out));
    let out = with_rust_log(None, &[&run[..], &["-q"]].concat());
    assert_eq!(stdout(&out), "");
    assert_eq!(stderr(&out), "");
}

#[test]
fn verbose_and_rust_log_print_more_and_rust_log_decides() {
    let (_dir, file) = clicks_app();
    let run = ["run", "--config", path(&file), "--until-caught-up"];
    let quiet_default = stderr(&with_rust_log(None, &run));
    assert_eq!(events(&quiet_default, "INFO"), 0, "{quiet_default}");
    assert_eq!(events(&quiet_default, "DEBUG"), 0, "{quiet_default}");

    let verbose = stderr(&with_rust_log(None, &[&run[..], &["-v"]].concat()));
    assert!(
        verbose
            .lines()
            .any(|l| l.contains(" INFO ") && l.contains("application state")),
        "{verbose}"
    );
    assert_eq!(events(&verbose, "DEBUG"), 0, "{verbose}");

    // RUST_LOG over -q.
    let debug = stderr(&with_rust_log(Some("debug"), &[&run[..], &["-q"]].concat()));
    assert!(
        debug
            .lines()
            .any(|l| l.contains(" DEBUG ") && l.contains("barrier committed")),
        "{debug}"
    );

    // A target filter: the runtime's debug lines, nobody's warnings.
    let runtime = stderr(&with_rust_log(Some("stoatflow_runtime=debug"), &run));
    assert!(events(&runtime, "DEBUG") > 0, "{runtime}");
    assert!(
        runtime
            .lines()
            .filter(|l| l.contains(" DEBUG ") || l.contains(" WARN "))
            .all(|l| l.contains(" stoatflow_runtime")),
        "{runtime}"
    );

    // One that does not parse is named, and the flags decide.
    let bad = stderr(&with_rust_log(Some("a=b=c"), &run));
    assert!(bad.contains("RUST_LOG=\"a=b=c\" is ignored"), "{bad}");
    assert_eq!(events(&bad, "INFO"), 0, "{bad}");
}

#[test]
fn run_off_a_terminal_prints_a_status_line_every_interval() {
    let (_dir, file) = clicks_app();
    let args = [
        "run",
        "--config",
        path(&file),
        "--max-runtime",
        "3",
        "--status-every",
        "1",
    ];
    let err = stderr(&with_rust_log(None, &args));
    let status: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("RUNNING, watermark "))
        .collect();
    assert!(!status.is_empty(), "{err}");
    assert!(status.len() <= 3, "{err}");
    assert!(status.iter().all(|l| l.ends_with(" records/s")), "{err}");
    // The watermark of the clicks, once they are in.
    assert!(
        status.last().unwrap().contains("watermark 2026-09-21T"),
        "{err}"
    );
    assert!(
        !err.contains('\r'),
        "redrawn in place off a terminal: {err:?}"
    );

    let quiet = stderr(&with_rust_log(None, &[&args[..], &["-q"]].concat()));
    assert_eq!(quiet, "");
}

/// The subcommands `help` lists for `path` (`help` itself left out).
fn subcommands(path: &[&str]) -> Vec<String> {
    let out = ok(&[path, &["--help"]].concat(), "");
    stdout(&out)
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_subcommands_help_ends_with_examples() {
    let top = subcommands(&[]);
    assert!(top.iter().any(|c| c == "run"), "{top:?}");
    let mut paths: Vec<Vec<String>> = Vec::new();
    for command in top {
        let nested = subcommands(&[command.as_str()]);
        paths.push(vec![command.clone()]);
        paths.extend(nested.into_iter().map(|sub| vec![command.clone(), sub]));
    }
    assert!(paths.len() >= 9, "{paths:?}");
    for path in paths {
        let args: Vec<&str> = path.iter().map(String::as_str).chain(["--help"]).collect();
        let help = stdout(&ok(&args, ""));
        let examples = help
            .split("\nExamples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("stoatflow {args:?} has no Examples section:\n{help}"));
        assert!(
            examples
                .lines()
                .all(|l| l.is_empty() || l.contains("stoatflow ")),
            "stoatflow {args:?}: {examples}"
        );
    }
}
