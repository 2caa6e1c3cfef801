//! `stoatflow run --config` on the embedded log, read back with
//! `stoatflow log consume`; `stoatflow watermarks` against the running
//! application's endpoints; SIGTERM stops it gracefully; a bad
//! configuration names the key and its position.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use crate::support::*;

/// `inputs` (topic, lines) produced into an embedded log, and a
/// configuration running on it with `extra` appended: (temporary
/// directory, log directory, file).
fn inputs_and_config(
    inputs: &[(&str, String)],
    extra: &str,
) -> (tempfile::TempDir, String, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log = path(&dir.path().join("log")).to_owned();
    for (topic, lines) in inputs {
        ok(&["log", "produce", "--dir", &log, "--topic", topic], lines);
    }
    let file = dir.path().join("app.yaml");
    std::fs::write(&file, config(&log, extra)).unwrap();
    (dir, log, file)
}

fn clicks_and_config(extra: &str) -> (tempfile::TempDir, String, std::path::PathBuf) {
    inputs_and_config(&[("clicks", clicks())], extra)
}

/// `key=value` of every committed record of `topic`, sorted.
fn committed(log: &str, topic: &str) -> Vec<String> {
    let out = ok(&["log", "consume", "--dir", log, "--topic", topic], "");
    let mut pairs: Vec<String> = stdout(&out)
        .lines()
        .map(|line| {
            let key = line
                .split(" key=")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap();
            let value = line.split(" value=").nth(1).unwrap();
            let value = value.rsplit_once(" headers=").unwrap().0;
            format!("{key}={value}")
        })
        .collect();
    pairs.sort();
    pairs
}

fn config(dir: &str, extra: &str) -> String {
    format!(
        "application.id: clicks-cli\nstoatflow:\n  backend: embedded\n  embedded:\n    dir: {dir}\n  processing:\n    lanes: 1\n  commit-barrier:\n    interval-ms: 150\nruntime:\n  endpoints:\n    listen: 127.0.0.1:0\n{extra}"
    )
}

#[test]
fn run_until_caught_up_commits_the_final_counts() {
    let (_dir, l, file) = clicks_and_config(
        "stoatflow.watermark.idleness-timeout-ms: 0\nstoatflow.watermark.max-out-of-orderness-ms: 0\n",
    );
    let l = l.as_str();
    let out = ok(
        &[
            "run",
            "--config",
            path(&file),
            "--example",
            "windowed-count",
            "--until-caught-up",
        ],
        "",
    );
    let text = stdout(&out);
    assert!(
        text.contains("running example windowed-count (application id clicks-cli)"),
        "{text}"
    );
    assert!(text.contains("stopping (caught up)"), "{text}");
    // The part-4 startup warning: the source left without idleness.
    let err = stderr(&out);
    assert_eq!(
        err.matches("idleness is disabled for these sources")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("clicks"), "{err}");

    let counts = committed(l, "click-counts");
    assert_eq!(
        counts,
        [
            "u0@2026-09-21T14:13:20Z=5",
            "u0@2026-09-21T14:13:30Z=5",
            "u1@2026-09-21T14:13:20Z=5",
            "u1@2026-09-21T14:13:30Z=5",
        ]
    );
}

#[test]
fn the_join_and_suppress_examples_run_to_their_final_results() {
    let end = T0 + 3_600_000;
    let readings: String = (0..10)
        .map(|i| format!("s1\t7\t{}\n", T0 + i * 900))
        .chain([format!("s1\t7\t{end}\n")])
        .collect();
    let (_dir, l, file) = inputs_and_config(
        &[
            (
                "orders",
                format!("o1\t10\t{T0}\no2\t20\t{}\nend\tx\t{end}\n", T0 + 2_000),
            ),
            (
                "payments",
                format!("o1\tpaid\t{}\nend\tx\t{end}\n", T0 + 1_000),
            ),
            ("readings", readings),
        ],
        "",
    );
    for example in ["join", "suppress"] {
        // One application id each: a second topology under the first one's
        // id would resume from its watermark and drop everything as late.
        let own = file.with_file_name(format!("{example}.yaml"));
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&own, text.replace("clicks-cli", example)).unwrap();
        let out = ok(
            &[
                "run",
                "--config",
                path(&own),
                "--example",
                example,
                "--until-caught-up",
            ],
            "",
        );
        assert!(
            stdout(&out).contains("stopping (caught up)"),
            "{}",
            stdout(&out)
        );
    }
    assert_eq!(
        committed(&l, "order-payments"),
        [
            "end=order=x payment=x",
            "o1=order=10 payment=paid",
            "o2=order=20 payment=none"
        ]
    );
    // Only the closed window, once, though every reading updated it.
    assert_eq!(
        committed(&l, "sensor-final-counts"),
        ["s1@2026-09-21T14:13:20Z=10"]
    );
}

#[test]
fn watermarks_reads_a_running_app_and_sigterm_stops_it() {
    let (_dir, _log, file) = clicks_and_config("");
    let mut child = stoatflow()
        .args(["run", "--config", path(&file), "--max-runtime", "120"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("an endpoints line").unwrap();
        if let Some(rest) = line.strip_prefix("endpoints: ") {
            break rest.trim_end_matches("/watermarks").to_owned();
        }
    };
    // Wait until the input is dispatched and a watermark is published.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let text = loop {
        let out = ok(&["watermarks", "--url", &url, "--interval-ms", "100"], "");
        let text = stdout(&out);
        if text.contains("clicks:0") && !text.contains("global watermark: N/A") {
            break text;
        }
        assert!(std::time::Instant::now() < deadline, "no watermark: {text}");
        std::thread::sleep(Duration::from_millis(200));
    };
    // T0 + 1 h, less the default 10 s bound.
    assert!(
        text.contains("global watermark: 2026-09-21T15:13:10Z"),
        "{text}"
    );
    let row = text.lines().find(|l| l.contains("clicks:0")).unwrap();
    assert!(row.starts_with('*'), "the minimum is marked: {text}");
    assert!(
        text.contains("* holds the global watermark: clicks:0"),
        "{text}"
    );
    // Months behind wall clock and not receiving: quiet, not yet idle (branch 1).
    assert!(
        text.contains("branch 1 (quiet, not yet idle): clicks:0"),
        "{text}"
    );
    // Its reader gone (`stoatflow watermarks | head -1`), it ends quietly.
    let (status, stderr) =
        with_closed_stdout(&["watermarks", "--url", &url, "--interval-ms", "100"]);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(status, Some(0), "{stderr}");

    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{rest:?}");
    assert!(rest.iter().any(|l| l == "stopping (signal)"), "{rest:?}");
    assert!(rest.iter().any(|l| l.starts_with("closed:")), "{rest:?}");
}

#[test]
fn watermarks_refuses_unreachable_and_non_http_urls() {
    let out = run(
        &[
            "watermarks",
            "--url",
            "http://127.0.0.1:1",
            "--interval-ms",
            "0",
        ],
        "",
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot connect to 127.0.0.1:1"),
        "{}",
        stderr(&out)
    );
    let out = run(&["watermarks", "--url", "ftp://x"], "");
    assert!(
        stderr(&out).contains("only http:// URLs"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_bad_configuration_names_the_key_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    std::fs::write(
        &file,
        "stoatflow:\n  backend: embedded\n  watermark:\n    idleness-timeout: 5\n",
    )
    .unwrap();
    let out = run(&["run", "--config", path(&file)], "");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "unknown configuration key stoatflow.watermark.idleness-timeout at {}:4:5; did you mean stoatflow.watermark.idleness-timeout-ms?",
            file.display()
        )),
        "{err}"
    );
}

/// A hostile configuration file is refused with a message and an exit
/// status, never a crash: 100 000 nested sequences (200 KB) used to
/// overflow the parser's stack and abort the process.
#[test]
fn a_deeply_nested_or_empty_configuration_is_refused_without_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("deep.yaml");
    std::fs::write(&deep, format!("stoatflow:\n{}1\n", "- ".repeat(100_000))).unwrap();
    let out = run(&["run", "--config", path(&deep)], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}:2:", deep.display())) && err.contains("nested deeper than"),
        "{err}"
    );
    let empty = dir.path().join("empty.yaml");
    std::fs::write(&empty, "# nothing yet\n").unwrap();
    let out = run(&["run", "--config", path(&empty)], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).contains("holds no settings"),
        "{}",
        stderr(&out)
    );
}

/// Readings on partitions 0 and 1 of three (the keys' partitions, set by
/// hand): `readings:2` never receives a record, so there is no watermark.
/// `watermarks` names it and says why, without the false "idleness
/// disabled"; `run` ends with a summary naming it (docs/time.md#holder).
#[test]
fn a_never_written_partition_is_named_with_why_by_watermarks_and_by_runs_summary() {
    let dir = tempfile::tempdir().unwrap();
    let log = path(&dir.path().join("log")).to_owned();
    for (p, key) in [("0", "s1"), ("1", "s2")] {
        let lines = format!("{key}\t7\t{T0}\n{key}\t7\t{}\n", T0 + 15_000);
        ok(
            &[
                "log",
                "produce",
                "--dir",
                &log,
                "--topic",
                "readings",
                "--partitions",
                "3",
                "--partition",
                p,
            ],
            &lines,
        );
    }
    // One application id for both runs: the state directory is the id's.
    let file = dir.path().join("silent.yaml");
    std::fs::write(&file, config(&log, "").replace("clicks-cli", "silent")).unwrap();
    let run_args = |f: &std::path::Path| -> Vec<String> {
        [
            "run",
            "--config",
            path(f),
            "--example",
            "suppress",
            "--partitions",
            "3",
        ]
        .map(str::to_owned)
        .to_vec()
    };

    let mut args = run_args(&file);
    args.push("--until-caught-up".into());
    let out = ok(&args.iter().map(String::as_str).collect::<Vec<_>>(), "");
    let text = stdout(&out);
    assert!(
        text.contains("records in: 4, out: 0; dropped: none"),
        "{text}"
    );
    assert!(
        text.contains(
            "final watermark: N/A, held by readings:2: never received a record; counts as idle in "
        ),
        "{text}"
    );
    assert!(
        text.contains("no watermark, so no window closed and nothing final was emitted"),
        "{text}"
    );

    let mut args = run_args(&file);
    args.extend(["--max-runtime".into(), "120".into()]);
    let mut child = stoatflow()
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("an endpoints line").unwrap();
        if let Some(rest) = line.strip_prefix("endpoints: ") {
            break rest.trim_end_matches("/watermarks").to_owned();
        }
    };
    // Until both written partitions have a watermark of their own.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let text = loop {
        let out = ok(&["watermarks", "--url", &url, "--interval-ms", "100"], "");
        let text = stdout(&out);
        let rows_with_watermarks = text
            .lines()
            .filter(|l| l.contains("readings:") && l.contains("2026-09-21T"))
            .count();
        if rows_with_watermarks == 2 {
            break text;
        }
        assert!(std::time::Instant::now() < deadline, "{text}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(text.contains("global watermark: N/A"), "{text}");
    let row = text.lines().find(|l| l.contains("readings:2")).unwrap();
    assert!(row.starts_with('*'), "the holder is marked: {text}");
    assert!(
        text.contains(
            "* holds the global watermark: readings:2 (never received a record; counts as idle in "
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "branch 1 (quiet, not yet idle): readings:2: never received a record; counts as idle in "
        ),
        "{text}"
    );
    assert!(
        !text.contains("disabled"),
        "idleness is on (300 000 ms): {text}"
    );

    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(child.wait().unwrap().success(), "{rest:?}");
    assert!(
        rest.iter()
            .any(|l| l.starts_with("final watermark: N/A, held by readings:2: never received")),
        "{rest:?}"
    );
}
