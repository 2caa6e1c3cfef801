//! The soak of the heavy tier: the defaults (embedded log in a directory,
//! persistent stores, exactly-once, two lanes) run the tumbling count under
//! a steady flow for ten minutes, and the run fails when something a
//! month-long run cannot afford grows (`crates/bench/README.md#soak`).
//!
//! A test binary of its own: cargo runs test binaries one after another, so
//! the pauses it judges are the application's, not those of tests running
//! beside it. It runs with `STOATFLOW_HEAVY_TESTS=1` (CI sets it) for
//! `STOATFLOW_SOAK_SECS` (600). Built for debugging, as `cargo test` builds
//! it, it writes 5 000 records/s over 20 000 keys; with `--release`, the soak
//! mode's defaults (30 000 over 100 000).

use std::time::Duration;

use stoatflow_bench::soak::{SoakOptions, run_soak};

/// RSS, store bytes, changelog bytes and descriptors grow by at most 5 % of
/// their first-minute values per minute once the input's retention (and,
/// for the changelogs, their own) has passed; the longest barrier pause
/// stays within two commit intervals of the first minute's; no record is
/// late; every closed window is committed once with its count.
#[test]
fn a_ten_minute_soak_grows_nothing_it_cannot_afford() {
    if !std::env::var("STOATFLOW_HEAVY_TESTS").is_ok_and(|v| v == "1") {
        eprintln!("the soak runs with STOATFLOW_HEAVY_TESTS=1");
        return;
    }
    let secs: u64 = std::env::var("STOATFLOW_SOAK_SECS")
        .ok()
        .map_or(600, |s| s.parse().expect("STOATFLOW_SOAK_SECS: seconds"));
    let (rate, keys) = if cfg!(debug_assertions) {
        (5_000, 20_000)
    } else {
        let d = SoakOptions::default();
        (d.rate, d.keys)
    };
    let opts = SoakOptions {
        duration: Duration::from_secs(secs),
        rate,
        keys,
        // The judged part starts at half the run or past the input's
        // retention, whichever is later: a shorter run keeps less input.
        input_retention: Duration::from_secs((secs / 2).min(300)),
        // The window changelogs forget a window 120 s after it expires, so
        // that their bytes are judged within the run (the default, 600 s,
        // needs a run of about 20 minutes).
        changelog_extra_retention: Some(Duration::from_secs(120)),
        ..SoakOptions::default()
    };
    let report = run_soak(&opts, |s| eprintln!("{s}")).expect("the soak runs");
    eprintln!("{}", report.summary());
    assert!(report.check.ok(), "{}", report.check);
    let failed = report.violations();
    assert!(failed.is_empty(), "bounds not met:\n{}", failed.join("\n"));
}
