//! Every command that prints ends quietly when its reader has gone
//! (`stoatflow describe ... | head -1`): no panic, status 0.

use crate::support::*;

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
