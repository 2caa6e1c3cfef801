//! Every command that prints ends quietly when its reader has gone
//! (`stoatflow describe ... | head -1`): no panic, status 0.

use std::process::Stdio;

use crate::support::*;

/// Runs with stdout a pipe whose reader is closed before the binary writes,
/// returns (status code, stderr).
fn with_closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    let mut child = stoatflow()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn stoatflow");
    drop(child.stdout.take().expect("stdout"));
    let out = child.wait_with_output().expect("wait");
    (out.status.code(), stderr(&out))
}

#[test]
fn a_closed_stdout_ends_every_printing_command_quietly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = path(dir.path());
    ok(
        &["log", "produce", "--dir", d, "--topic", "clicks"],
        &clicks(),
    );
    for args in [
        &["describe", "--example", "windowed-count"][..],
        &["quickstart"][..],
        &["log", "topics", "--dir", d][..],
        &["log", "describe", "--dir", d, "--topic", "clicks"][..],
        &["log", "consume", "--dir", d, "--topic", "clicks"][..],
        &["log", "produce", "--dir", d, "--topic", "more"][..],
    ] {
        let (status, stderr) = with_closed_stdout(args);
        assert!(!stderr.contains("panicked"), "stoatflow {args:?}: {stderr}");
        assert_eq!(status, Some(0), "stoatflow {args:?}: {stderr}");
    }
}
