//! `stoatflow config --config F`: each key's effective value and where it
//! came from; an environment override names its variable; secrets are
//! redacted.

use std::process::Stdio;

use crate::support::*;

/// The line of `key` in `out`, split in (value, source).
fn line<'a>(out: &'a str, key: &str) -> (&'a str, &'a str) {
    let line = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some(key))
        .unwrap_or_else(|| panic!("no {key} in\n{out}"));
    let mut words = line.split_whitespace().skip(1);
    let value = words.next().unwrap();
    let source = line[line.find(value).unwrap() + value.len()..].trim();
    (value, source)
}

#[test]
fn config_prints_each_value_with_its_source_and_redacts_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.yaml");
    std::fs::write(
        &file,
        "application.id: orders\nstoatflow:\n  backend: kafka\n  watermark:\n    max-out-of-orderness-ms: 1\nbootstrap.servers: b:9092\nkafka:\n  sasl.password: hunter2\n",
    )
    .unwrap();
    let out = stoatflow()
        .args(["config", "--config", path(&file)])
        .env("STOATFLOW_WATERMARK_MAX_OUT_OF_ORDERNESS_MS", "2000")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let f = file.display();
    assert_eq!(
        line(&text, "application.id"),
        ("orders", &*format!("{f}:1:17"))
    );
    assert_eq!(
        line(&text, "stoatflow.watermark.max-out-of-orderness-ms"),
        ("2000", "env STOATFLOW_WATERMARK_MAX_OUT_OF_ORDERNESS_MS")
    );
    assert_eq!(
        line(&text, "stoatflow.watermark.idleness-timeout-ms"),
        ("300000", "default")
    );
    assert_eq!(
        line(&text, "kafka.sasl.password"),
        ("<redacted>", &*format!("{f}:8:18"))
    );
    assert!(!text.contains("hunter2"), "{text}");
}

#[test]
fn config_without_an_application_id_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.yaml");
    std::fs::write(&file, "stoatflow:\n  backend: memory\n").unwrap();
    let out = run(&["config", "--config", path(&file)], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).contains("configuration key application.id is required"),
        "{}",
        stderr(&out)
    );
}
