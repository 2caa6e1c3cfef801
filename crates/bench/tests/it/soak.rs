//! The soak mode (`--query soak`): a short run of the binary prints its
//! sample lines, the slopes and a passing check of every closed window. The
//! 10-minute soak that asserts the bounds is its own test binary,
//! `tests/soak.rs`.

use std::process::Command;

/// The fields of a sample line, in order.
const FIELDS: [&str; 11] = [
    "t_s",
    "records_per_s",
    "barrier_gap_max_ms",
    "rss_mib",
    "log_mib",
    "changelog_mib",
    "state_mib",
    "fds",
    "watermark_lag_ms",
    "late_records",
    "commit_interval_ms",
];

/// `key=value` pairs of a line after its first word.
fn fields(line: &str) -> Vec<(&str, &str)> {
    line.split_whitespace()
        .skip(1)
        .filter_map(|f| f.split_once('='))
        .collect()
}

/// 20 s at 2 000 records/s over 500 keys in 2 s windows with 1 s grace,
/// sampled every 2 s: ten sample lines with every field, no late record,
/// and every window closed at the end committed once with its count.
#[test]
fn a_short_soak_prints_its_samples_and_checks_every_closed_window() {
    let out = Command::new(env!("CARGO_BIN_EXE_stoatflow-bench"))
        .args([
            "--query",
            "soak",
            "--duration-s",
            "20",
            "--rate",
            "2000",
            "--keys",
            "500",
            "--segment-mib",
            "1",
            "--window-s",
            "2",
            "--grace-s",
            "1",
            "--sample-s",
            "2",
            "--input-retention-s",
            "10",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let samples: Vec<&str> = stdout.lines().filter(|l| l.starts_with("soak ")).collect();
    assert_eq!(samples.len(), 10, "{stdout}");
    for (i, line) in samples.iter().enumerate() {
        let f = fields(line);
        let names: Vec<&str> = f.iter().map(|(k, _)| *k).collect();
        assert_eq!(names, FIELDS, "{line}");
        assert_eq!(f[0].1, ((i + 1) * 2).to_string(), "{line}");
        for (name, value) in &f {
            if *name != "watermark_lag_ms" {
                let v: f64 = value.parse().unwrap_or_else(|_| panic!("{name} in {line}"));
                assert!(v >= 0.0, "{line}");
            }
        }
        assert_eq!(f[9], ("late_records", "0"), "{line}");
        let rss: f64 = f[3].1.parse().unwrap();
        let fds: u64 = f[7].1.parse().unwrap();
        assert!(rss > 0.0 && fds > 0, "{line}");
    }
    // Records went through, and the log held some.
    let last = fields(samples[9]);
    assert!(last[1].1.parse::<f64>().unwrap() > 0.0, "{}", samples[9]);
    assert!(last[4].1.parse::<f64>().unwrap() > 0.0, "{}", samples[9]);
    for series in [
        "records_per_s",
        "rss_mib",
        "log_mib",
        "changelog_mib",
        "state_mib",
        "fds",
    ] {
        let prefix = format!("soak-slope series={series} ");
        assert!(
            stdout.lines().any(|l| l.starts_with(&prefix)),
            "{series}: {stdout}"
        );
    }
    assert!(
        stdout.lines().any(|l| l.starts_with("soak-gap ")),
        "{stdout}"
    );
    let check = stdout
        .lines()
        .find(|l| l.starts_with("soak-check "))
        .unwrap_or_else(|| panic!("no check line: {stdout}"));
    assert!(check.ends_with(" ok"), "{check}");
    let check = fields(check);
    let closed: u64 = check[0].1.parse().unwrap();
    let results: u64 = check[2].1.parse().unwrap();
    // The watermark trails the newest record by the default 10 s: windows
    // ending before about 20 - 10 - 1 s close, three or four of them.
    assert!(closed >= 3, "{check:?}");
    // Every key has a result in each closed window but perhaps the first
    // (the writer may have started late in it).
    assert!(results >= (closed - 1) * 500, "{check:?}");
    let end = stdout
        .lines()
        .find(|l| l.starts_with("soak-end "))
        .unwrap_or_else(|| panic!("no end line: {stdout}"));
    assert!(end.contains(" late_records=0 "), "{end}");
}

/// Bad options are refused with a message, not a panic.
#[test]
fn a_soak_with_bad_options_is_refused() {
    for args in [["--rate", "0"], ["--sample-s", "30"], ["--stores", "tape"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_stoatflow-bench"))
            .args(["--query", "soak", "--duration-s", "20"])
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            stderr.contains("Error:") && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("soak t_s="),
            "{args:?}"
        );
    }
}
