//! A tiny run of every benchmark, so the binary's code paths stay working
//! without making CI slow.

use stoatflow_bench::run::{Query, RunOptions, run};

#[test]
fn every_query_runs_and_reports_one_line() {
    for &q in Query::ALL {
        let opts = RunOptions {
            events: 3_000,
            frontier_every: 500,
            ..RunOptions::default()
        };
        let report = run(q, &opts).unwrap_or_else(|e| panic!("{}: {e}", q.name()));
        assert_eq!(report.events, 3_000);
        assert!(report.seconds > 0.0);
        let line = report.to_string();
        assert!(
            line.starts_with(&format!("query={} events=3000 ", q.name())),
            "{line}"
        );
        assert!(line.contains("events_per_s_per_core="), "{line}");
        assert!(line.contains("peak_rss_mib="), "{line}");
        let state = if q.takes_changelog_option() {
            "on"
        } else {
            "-"
        };
        assert!(line.contains(&format!(" changelog={state} ")), "{line}");
    }
}

#[test]
fn changelogs_on_and_off_give_the_same_outputs() {
    for &q in Query::ALL.iter().filter(|q| q.takes_changelog_option()) {
        let outputs = |changelog| {
            let opts = RunOptions {
                events: 3_000,
                frontier_every: 500,
                changelog,
                ..RunOptions::default()
            };
            let report = run(q, &opts).unwrap_or_else(|e| panic!("{}: {e}", q.name()));
            assert_eq!(report.changelog, Some(changelog));
            report.outputs
        };
        assert_eq!(outputs(true), outputs(false), "{}", q.name());
    }
}

#[test]
fn query_names_round_trip() {
    for &q in Query::ALL {
        assert_eq!(Query::from_name(q.name()), Some(q));
    }
    assert_eq!(Query::from_name("q99"), None);
}

#[test]
fn the_paced_end_to_end_run_commits_what_the_backlog_run_does() {
    let opts = RunOptions {
        events: 30_000,
        pace: 100_000,
        ..RunOptions::default()
    };
    let paced = run(Query::E2eTumblingPaced, &opts).unwrap();
    let backlog = run(Query::E2eTumbling1, &opts).unwrap();
    // 30 s of event time, 10 s windows, 1 000 keys: the last window is
    // still open when the input ends.
    assert_eq!(backlog.outputs, 2_000);
    assert_eq!(paced.outputs, backlog.outputs);
    // Written at 100 000 records/s, the run cannot be faster than that.
    assert!(paced.seconds >= 0.3, "{}", paced.seconds);
}
