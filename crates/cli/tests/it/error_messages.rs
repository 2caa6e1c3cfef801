//! What a failure prints: each cause once, on a line of its own; a record
//! timestamp outside event time's range refused, naming the line, the key
//! and the value.

use crate::support::*;

#[test]
fn a_locked_log_says_so_once() {
    let dir = tempfile::tempdir().unwrap();
    let log_dir = dir.path().join("log");
    std::fs::create_dir(&log_dir).unwrap();
    let _held = stoatflow::log::EmbeddedLog::open(&log_dir).unwrap();
    let file = dir.path().join("app.yaml");
    std::fs::write(
        &file,
        format!(
            "application.id: locked\nstoatflow:\n  embedded:\n    dir: {}\nruntime:\n  endpoints:\n    listen: 127.0.0.1:0\n",
            log_dir.display()
        ),
    )
    .unwrap();
    let out = run(&["run", "--config", path(&file), "--max-runtime", "1"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(err.starts_with("Error: "), "{err}");
    assert_eq!(
        err.matches("is locked by another process").count(),
        1,
        "{err}"
    );
    let lines: Vec<&str> = err.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        assert!(!line.trim().is_empty(), "a blank line: {err:?}");
        assert!(!lines[..i].contains(line), "{line:?} printed twice: {err}");
    }

    // A cause the first line does not say gets its own line.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let under = file.join("log");
    let out = run(
        &["log", "produce", "--dir", path(&under), "--topic", "t"],
        "",
    );
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert_eq!(lines[0], format!("Error: creating {}", under.display()));
    assert!(lines[1].starts_with("  because: "), "{err}");
    assert!(!lines[1].contains("creating"), "{err}");
}

#[test]
fn a_timestamp_outside_event_times_range_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = path(dir.path());
    for (line, says) in [
        (
            "k\tv\t-5",
            "line 2 (key \"k\"): timestamp refused: negative event time -5 ms",
        ),
        (
            // Year 3170843: microseconds given as milliseconds.
            "k\tv\t100000000000000000",
            "line 2 (key \"k\"): timestamp refused: absurd event time 100000000000000000 ms (after year 9999)",
        ),
        (
            "k\tv\tyesterday",
            "line 2 (key \"k\"): timestamp \"yesterday\" is not a whole number of milliseconds",
        ),
    ] {
        let input = format!("ok\tv\t{T0}\n{line}\n");
        let out = run(&["log", "produce", "--dir", d, "--topic", "t"], &input);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
        // Nothing of the input was committed.
        let out = ok(&["log", "consume", "--dir", d, "--topic", "t"], "");
        assert_eq!(stdout(&out), "");
    }
    // The latest accepted.
    let out = ok(
        &["log", "produce", "--dir", d, "--topic", "t"],
        "k\tv\t253402300799999\n",
    );
    assert_eq!(stdout(&out), "produced 1 records to t\n");
}
