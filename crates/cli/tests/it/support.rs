//! Runs the binary.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

pub fn stoatflow() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stoatflow"))
}

/// Runs with `stdin`, returns the output; panics (with stderr) on failure.
pub fn ok(args: &[&str], stdin: &str) -> Output {
    let out = run(args, stdin);
    assert!(
        out.status.success(),
        "stoatflow {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

pub fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = stoatflow()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn stoatflow");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

/// Runs with stdout a pipe whose reader is closed before the binary writes,
/// returns (status code, stderr).
pub fn with_closed_stdout(args: &[&str]) -> (Option<i32>, String) {
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

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// 2026-09-21T14:13:20Z.
pub const T0: i64 = 1_790_000_000_000;

/// Clicks of two users over two 10 s windows, then one far ahead.
pub fn clicks() -> String {
    let mut lines = String::new();
    for i in 0..20 {
        lines.push_str(&format!("u{}\tclick\t{}\n", i % 2, T0 + i * 1_000));
    }
    lines.push_str(&format!("late\tclick\t{}\n", T0 + 3_600_000));
    lines
}
