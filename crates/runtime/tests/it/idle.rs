//! What an application does once its input stops (docs/barriers.md#cadence):
//! the emission work signal keeps barriers coming until the last final
//! results are emitted and committed, without `close()`; then the idle
//! throttle stops them. And a restart with no new input resumes its watermark
//! from the committed partition times instead of starting below everything.

use std::time::{Duration, Instant};

use stoatflow_log::EmbeddedLog;
use stoatflow_runtime::StreamsApp;
use stoatflow_time::Watermark;

use crate::support::*;

/// Waits until `app` cut no barrier for `quiet`; false if that did not
/// happen within `within`.
fn goes_quiet(app: &StreamsApp<EmbeddedLog>, quiet: Duration, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut seen = app.committed_barriers();
    let mut since = Instant::now();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        let now = app.committed_barriers();
        if now != seen {
            (seen, since) = (now, Instant::now());
        } else if since.elapsed() >= quiet {
            return true;
        }
    }
    false
}

#[test]
fn final_results_commit_without_close_and_then_barriers_stop() {
    let records = input(500, 8, 51);
    let expected = regular(driver_finals(tumbling_count(), &records));
    let log = log_with_input(&records, 50);
    // Barriers every 20 ms while there is work.
    let mut app = StreamsApp::with_log(tumbling_count(), config("idle", 2), log.clone()).unwrap();
    app.start().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while regular(read_output(&*log)) != expected {
        assert!(
            Instant::now() < deadline,
            "the final results were not committed without close(): {:?}",
            app.error()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Then nothing is left to do: no barrier for 25 intervals.
    assert!(
        goes_quiet(&app, Duration::from_millis(500), Duration::from_secs(10)),
        "barriers kept coming for an idle application"
    );
    assert!(app.close(Duration::from_secs(10)), "{:?}", app.error());
    assert_eq!(regular(read_output(&*log)), expected);
}

#[test]
fn a_restart_without_new_input_resumes_the_watermark_from_partition_times() {
    let records = input(300, 6, 52);
    let log = log_with_input(&records, 50);
    run_to_end(&log, "resumed", 1);
    let mut app = StreamsApp::with_log(tumbling_count(), config("resumed", 1), log).unwrap();
    app.start().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let global = loop {
        if let Some(w) = app.watermarks().map(|s| s.global)
            && w > Watermark::MIN
        {
            break w;
        }
        assert!(
            Instant::now() < deadline,
            "the watermark stayed below everything"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    // Every partition ended with a far-future record; the watermark trails
    // the oldest partition's time by the bound.
    assert!(global.as_millis() > START, "{global:?}");
    assert!(app.close(Duration::from_secs(10)), "{:?}", app.error());
}
