//! `stoatflow run` checks everything that can fail at start before it
//! creates anything: a taken listen address, a refused setting and a topic
//! of the wrong shape each fail the start with no topic and no directory
//! created, and a later start is not held back by a failed one.

use std::net::TcpListener;
use std::path::Path;

use crate::support::*;

/// A configuration on the embedded log in `data`, listening on `listen`,
/// with `extra` appended.
fn config(dir: &Path, data: &Path, listen: &str, extra: &str) -> std::path::PathBuf {
    let file = dir.join(format!("app-{}.yaml", listen.replace([':', '.'], "-")));
    std::fs::write(
        &file,
        format!(
            "application.id: checks\nstoatflow:\n  embedded:\n    dir: {}\n  processing:\n    lanes: 1\nruntime:\n  endpoints:\n    listen: {listen}\n{extra}",
            data.display()
        ),
    )
    .unwrap();
    file
}

/// Every file and directory under `dir`, relative to it, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if p.is_dir() {
                todo.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The topics of the embedded log in `data`.
fn topics(data: &Path) -> String {
    stdout(&ok(&["log", "topics", "--dir", path(data)], ""))
}

#[test]
fn a_taken_listen_address_fails_the_start_naming_the_key_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let file = config(dir.path(), &data, &addr, "");
    let out = run(&["run", "--config", path(&file), "--until-caught-up"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "runtime.endpoints.listen: cannot listen on {addr}: "
        )),
        "{err}"
    );
    assert!(!data.exists(), "{:?}", listing(&data));
    // Nothing of the failed start holds the next one back: it creates its
    // topics with the partitions it asks for.
    drop(taken);
    let file = config(dir.path(), &data, "127.0.0.1:0", "");
    ok(
        &[
            "run",
            "--config",
            path(&file),
            "--partitions",
            "3",
            "--until-caught-up",
        ],
        "",
    );
    let shape = stdout(&ok(
        &["log", "describe", "--dir", path(&data), "--topic", "clicks"],
        "",
    ));
    assert_eq!(shape.matches("  partition ").count(), 3, "{shape}");
}

#[test]
fn a_refused_setting_creates_no_directory() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // The windowed count needs a watermark, which DIRECT dispatch has not.
    let file = config(
        dir.path(),
        &data,
        "127.0.0.1:0",
        "stoatflow.processing.dispatch-mode: DIRECT\n",
    );
    let out = run(&["run", "--config", path(&file), "--until-caught-up"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr(&out).contains("DIRECT"), "{}", stderr(&out));
    assert!(!data.exists(), "{:?}", listing(&data));
}

#[test]
fn partitions_come_from_the_existing_topics_and_a_disagreement_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let d = path(&data);
    ok(
        &[
            "log",
            "produce",
            "--dir",
            d,
            "--topic",
            "clicks",
            "--partitions",
            "2",
        ],
        &clicks(),
    );
    let file = config(dir.path(), &data, "127.0.0.1:0", "");
    let before = listing(&data);
    let out = run(
        &[
            "run",
            "--config",
            path(&file),
            "--partitions",
            "3",
            "--until-caught-up",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(
        err.contains("topic clicks has 2 partition(s), but --partitions asks for 3"),
        "{err}"
    );
    assert_eq!(listing(&data), before);
    assert!(!topics(&data).contains("click-counts"), "{}", topics(&data));

    // Inputs read together must agree with each other.
    for (topic, n) in [("orders", "1"), ("payments", "2")] {
        ok(
            &[
                "log",
                "produce",
                "--dir",
                d,
                "--topic",
                topic,
                "--partitions",
                n,
            ],
            "",
        );
    }
    let before = listing(&data);
    let out = run(
        &[
            "run",
            "--config",
            path(&file),
            "--example",
            "join",
            "--until-caught-up",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(
        err.contains("input topics orders (1 partition(s)) and payments (2 partition(s)) differ"),
        "{err}"
    );
    assert_eq!(listing(&data), before);

    // Without --partitions, the run takes the input's count for the
    // output it creates.
    ok(&["run", "--config", path(&file), "--until-caught-up"], "");
    let shape = stdout(&ok(
        &["log", "describe", "--dir", d, "--topic", "click-counts"],
        "",
    ));
    assert_eq!(shape.matches("  partition ").count(), 2, "{shape}");
}
