//! `stoatflow log`: produce from stdin, then topics, describe and consume
//! show what was written.

use crate::support::*;

#[test]
fn produce_then_consume_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let d = path(dir.path());
    let input = format!("k1\tv1\t{T0}\nk2\tv2\t{}\nbare value\n\n", T0 + 5);
    let out = ok(
        &[
            "log",
            "produce",
            "--dir",
            d,
            "--topic",
            "t",
            "--partitions",
            "2",
        ],
        &input,
    );
    assert_eq!(stdout(&out), "produced 3 records to t\n");

    let out = ok(&["log", "topics", "--dir", d], "");
    assert_eq!(stdout(&out), "t\t2 partitions, cleanup.policy=delete\n");

    let out = ok(&["log", "consume", "--dir", d, "--topic", "t"], "");
    let text = stdout(&out);
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    assert_eq!(lines.len(), 3, "{text}");
    let k1 = lines.iter().find(|l| l.contains("key=k1")).expect("k1");
    assert!(
        k1.ends_with(&format!(
            "timestamp={T0} (2026-09-21T14:13:20Z) key=k1 value=v1 headers=[]"
        )),
        "{k1}"
    );
    assert!(k1.starts_with("partition="), "{k1}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("key=null value=bare value")),
        "{text}"
    );
    assert!(
        stderr(&out).contains("3 records from t"),
        "{}",
        stderr(&out)
    );

    // Keyed records land where Kafka's partitioner puts them.
    let p = stoatflow::partition_for_key(b"k1", 2);
    assert!(k1.starts_with(&format!("partition={p} offset=0 ")), "{k1}");

    let out = ok(&["log", "describe", "--dir", d, "--topic", "t"], "");
    let text = stdout(&out);
    assert!(
        text.starts_with("topic t: 2 partitions, cleanup.policy=delete\n"),
        "{text}"
    );
    assert_eq!(
        text.matches("committed records visible").count(),
        2,
        "{text}"
    );

    let out = ok(
        &["log", "consume", "--dir", d, "--topic", "t", "--max", "1"],
        "",
    );
    assert_eq!(stdout(&out).lines().count(), 1);
}

#[test]
fn bad_input_names_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let d = path(dir.path());
    let out = run(
        &["log", "produce", "--dir", d, "--topic", "t"],
        "k\tv\tyesterday\n",
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("line 1 (key \"k\"): timestamp \"yesterday\""),
        "{}",
        stderr(&out)
    );
    let out = run(&["log", "consume", "--dir", d, "--topic", "missing"], "");
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("topic missing does not exist"),
        "{}",
        stderr(&out)
    );
}
