//! `stoatflow log topics|describe|produce|consume` beside a running
//! `stoatflow run` on the same data directory, as a Kafka user runs a
//! console producer and consumer beside an application: the commands find
//! the application through the address file its endpoints write into the
//! directory it holds, and go through its log routes.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::*;

/// `key=value` of a consumed line.
fn pair(line: &str) -> String {
    let key = line
        .split(" key=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let value = line.split(" value=").nth(1).unwrap();
    format!("{key}={}", value.rsplit_once(" headers=").unwrap().0)
}

fn sorted_pairs(text: &str) -> Vec<String> {
    let mut pairs: Vec<String> = text.lines().map(pair).collect();
    pairs.sort();
    pairs
}

/// The lines `child` writes to stdout, on a channel (a thread reads them).
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    rx
}

/// The next line, within `deadline`.
fn next_line(rx: &mpsc::Receiver<String>, deadline: Instant, what: &str) -> String {
    let left = deadline.saturating_duration_since(Instant::now());
    rx.recv_timeout(left)
        .unwrap_or_else(|e| panic!("no line ({what}) in time: {e}"))
}

fn terminate(child: &Child) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn spawn(args: &[&str]) -> Child {
    stoatflow()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn log_commands_feed_and_read_a_running_app() {
    let dir = tempfile::tempdir().unwrap();
    let log = path(&dir.path().join("log")).to_owned();
    let log = log.as_str();
    let file = dir.path().join("app.yaml");
    std::fs::write(
        &file,
        format!(
            "application.id: beside\nstoatflow:\n  backend: embedded\n  embedded:\n    dir: {log}\n  processing:\n    lanes: 1\n  commit-barrier:\n    interval-ms: 150\n  watermark:\n    idleness-timeout-ms: 0\n    max-out-of-orderness-ms: 0\nruntime:\n  endpoints:\n    listen: 127.0.0.1:0\n"
        ),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut app = spawn(&[
        "run",
        "--config",
        path(&file),
        "--example",
        "windowed-count",
        "--max-runtime",
        "120",
    ]);
    let app_lines = lines_of(&mut app);
    // Its endpoints listen (and their address file is written) before
    // this line.
    while !next_line(&app_lines, deadline, "the endpoints line").starts_with("endpoints: ") {}
    let address = std::fs::read_to_string(dir.path().join("log").join("ENDPOINT")).unwrap();
    assert!(address.starts_with("http://127.0.0.1:"), "{address}");

    // The example's topics exist before the endpoints line; the app's own
    // (its changelogs) once it has started, just after it.
    let internal = loop {
        let topics = stdout(&ok(&["log", "topics", "--dir", log], ""));
        assert!(topics.contains("clicks\t"), "{topics}");
        assert!(topics.contains("click-counts\t"), "{topics}");
        if let Some(line) = topics
            .lines()
            .find(|l| l.starts_with("beside-") && l.contains("changelog"))
        {
            break line.split('\t').next().unwrap().to_owned();
        }
        assert!(Instant::now() < deadline, "no changelog topic in {topics}");
        std::thread::sleep(Duration::from_millis(50));
    };

    // Reading the output as it is committed, from another process.
    let mut follower = spawn(&[
        "log",
        "consume",
        "--dir",
        log,
        "--topic",
        "click-counts",
        "--follow",
    ]);
    let followed = lines_of(&mut follower);

    let produced = ok(
        &["log", "produce", "--dir", log, "--topic", "clicks"],
        &clicks(),
    );
    assert_eq!(stdout(&produced).trim(), "produced 21 records to clicks");
    let described = stdout(&ok(
        &["log", "describe", "--dir", log, "--topic", "clicks"],
        "",
    ));
    assert!(
        described.contains("partition 0: offsets 0..21 (21 committed records visible)"),
        "{described}"
    );

    // The application's own topics are its alone.
    let refused = run(
        &["log", "produce", "--dir", log, "--topic", &internal],
        "k\tv\n",
    );
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains(&format!(
            "answered 403: topic {internal} is one of the application's internal topics"
        )),
        "{}",
        stderr(&refused)
    );

    let want = [
        "u0@2026-09-21T14:13:20Z=5",
        "u0@2026-09-21T14:13:30Z=5",
        "u1@2026-09-21T14:13:20Z=5",
        "u1@2026-09-21T14:13:30Z=5",
    ];
    // Polled until the final counts are committed.
    let counts = loop {
        let out = ok(
            &["log", "consume", "--dir", log, "--topic", "click-counts"],
            "",
        );
        let text = stdout(&out);
        if text.lines().count() >= want.len() {
            break sorted_pairs(&text);
        }
        assert!(Instant::now() < deadline, "no final counts in time: {text}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(counts, want, "each final count committed once");
    let mut seen: Vec<String> = (0..want.len())
        .map(|_| pair(&next_line(&followed, deadline, "a followed record")))
        .collect();
    seen.sort();
    assert_eq!(seen, want, "the follower saw each count once");

    // The same counts asked of the store, committed: both of u0's windows
    // final (the last click moved the watermark past their close).
    let asked = loop {
        let out = ok(
            &[
                "query",
                "--dir",
                log,
                "click-counts-store",
                "u0",
                "--windows",
            ],
            "",
        );
        let text = stdout(&out);
        if text.lines().filter(|l| l.ends_with("\tfinal")).count() == 2 {
            assert!(
                stderr(&out).contains("committed at barrier"),
                "{}",
                stderr(&out)
            );
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "no final windows in time: {text}"
        );
    };
    let values: Vec<&str> = asked
        .lines()
        .map(|l| l.split('\t').nth(2).unwrap())
        .collect();
    assert_eq!(values, ["5", "5"], "{asked}");
    let refused = run(&["query", "--dir", log, "nope", "k"], "");
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("no queryable store nope"),
        "{}",
        stderr(&refused)
    );

    terminate(&follower);
    let follower_exit = follower.wait_with_output().unwrap();
    assert!(follower_exit.status.success(), "{follower_exit:?}");
    terminate(&app);
    let rest: Vec<String> = app_lines.iter().collect();
    let exit = app.wait_with_output().unwrap();
    assert!(exit.status.success(), "{rest:?} {}", stderr(&exit));
    assert!(
        !dir.path().join("log").join("ENDPOINT").exists(),
        "the address file goes with the application"
    );
    // Now the command opens the directory itself: the same counts, once.
    let out = ok(
        &["log", "consume", "--dir", log, "--topic", "click-counts"],
        "",
    );
    assert_eq!(sorted_pairs(&stdout(&out)), want);
}

#[test]
fn a_locked_directory_without_an_address_names_why() {
    let dir = tempfile::tempdir().unwrap();
    let log = path(&dir.path().join("log")).to_owned();
    let file = dir.path().join("app.yaml");
    std::fs::write(
        &file,
        format!(
            "application.id: closed\nstoatflow:\n  backend: embedded\n  embedded:\n    dir: {log}\nruntime:\n  endpoints:\n    enabled: false\n"
        ),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut app = spawn(&[
        "run",
        "--config",
        path(&file),
        "--example",
        "windowed-count",
        "--max-runtime",
        "120",
    ]);
    let app_lines = lines_of(&mut app);
    while !next_line(&app_lines, deadline, "the running line").starts_with("running example") {}
    let out = run(&["log", "topics", "--dir", &log], "");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("is locked by another process, which publishes no endpoint address"),
        "{err}"
    );
    assert!(err.contains("runtime.endpoints.enabled"), "{err}");
    terminate(&app);
    assert!(app.wait().unwrap().success());
}
