//! Retention of sliding and session stores (docs/state.md#retention): `with_retention`,
//! else `2·D + grace` / `gap + grace`, expired on the frontier only and never
//! before a window's close.

use std::time::Duration;

use stoatflow_state::StateStore;
use stoatflow_streams::{
    Materialized, SessionStoreOf, SessionWindows, SlidingWindows, StreamsBuilder, WindowStoreOf,
};

use crate::harness::{INPUT, Outcome, Scenario, Step, grouped_text, pipe, to_topic_windowed};

fn sessions(retention: Option<Duration>) -> impl FnOnce(&mut StreamsBuilder) {
    move |b| {
        let mut m = Materialized::as_("sessions");
        if let Some(r) = retention {
            m = m.with_retention(r);
        }
        to_topic_windowed(
            grouped_text(b, INPUT)
                .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(
                    Duration::from_secs(60),
                ))
                .count_with(m)
                .to_stream(),
            "out",
        )
    }
}

/// Runs `steps` over `build`, which writes to `out`.
fn run(build: impl FnOnce(&mut StreamsBuilder), steps: &[Step]) -> Outcome {
    Scenario::build(build)
        .text_inputs(&[INPUT])
        .text_outputs(&["out"])
        .steps(steps.iter().cloned())
        .run()
}

fn session_entries(o: &Outcome) -> u64 {
    o.store::<SessionStoreOf<String, i64>>("sessions")
        .borrow()
        .approximate_num_entries()
}

/// Segments are 60 s wide at least; a session ending at 0 expires once the
/// whole first segment has: frontier > 59 999 + retention.
#[test]
fn session_store_expires_on_the_frontier_after_gap_plus_grace() {
    let steps = [
        pipe("k", "x", 0),
        Step::Advance(119_999),
        Step::Advance(120_000),
    ];
    let o = run(sessions(None), &steps[..2]);
    assert_eq!(session_entries(&o), 1, "kept up to 59 999 + 60 000");
    let o = run(sessions(None), &steps);
    assert_eq!(session_entries(&o), 0, "expired past it");
    let o = run(sessions(Some(Duration::from_secs(600))), &steps);
    assert_eq!(session_entries(&o), 1, "with_retention keeps it longer");
}

#[test]
fn sliding_store_default_retention_is_twice_the_difference_plus_grace() {
    let build = |b: &mut StreamsBuilder| {
        to_topic_windowed(
            grouped_text(b, INPUT)
                .windowed_by(SlidingWindows::of_time_difference_and_grace(
                    Duration::from_secs(40),
                    Duration::from_secs(10),
                ))
                .count_with(Materialized::as_("sliding"))
                .to_stream(),
            "out",
        )
    };
    let entries = |steps: &[Step]| {
        let o = run(build, steps);
        let store = o.store::<WindowStoreOf<String, i64>>("sliding");
        store.borrow().approximate_num_entries()
    };
    // Retention 90 s, segment 60 s: [0, 40 000] (start 0) goes past 59 999 + 90 000.
    assert_eq!(entries(&[pipe("k", "x", 0), Step::Advance(149_999)]), 1);
    assert_eq!(entries(&[pipe("k", "x", 0), Step::Advance(150_000)]), 0);
}

#[test]
fn retention_shorter_than_the_default_is_refused_naming_the_store() {
    let mut b = StreamsBuilder::new();
    let _ = grouped_text(&mut b, INPUT)
        .windowed_by(SessionWindows::of_inactivity_gap_and_grace(
            Duration::from_secs(5),
            Duration::from_secs(5),
        ))
        .count_with(Materialized::as_("short").with_retention(Duration::from_secs(9)));
    let err = b.build().map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("short") && err.contains("10000"), "{err}");
}
