//! The harness's checks can fail: each kind of check, given a table that
//! does not hold, fails the test and says at which step; a step's error
//! fails `run` and is returned by `run_until_error`.

use std::time::Duration;

use stoatflow_streams::DropReason::LateWindow;
use stoatflow_streams::{Materialized, TimeWindows};

use crate::harness::Step::Advance;
use crate::harness::{
    INPUT, Scenario, dropped, expect, expect_key_values, grouped_text, nothing, out, pipe,
    to_topic_windowed,
};

/// A tumbling 10 ms count of `input`, updates on `out`.
fn counts() -> Scenario {
    Scenario::build(|b| {
        to_topic_windowed(
            grouped_text(b, INPUT)
                .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_millis(
                    10,
                )))
                .count_with(Materialized::as_("counts"))
                .to_stream(),
            "out",
        )
    })
    .named("counts")
    .text_inputs(&[INPUT])
    .text_outputs(&["out"])
}

#[test]
fn a_table_that_holds_passes_and_each_check_covers_the_records_since_the_last() {
    let o = counts()
        .steps([
            pipe("k", "a", 1),
            expect("out", [("[k@0/10]", "1", 1)]),
            pipe("k", "b", 2),
            pipe("j", "c", 3),
            expect("out", [out("[k@0/10]", "2", 2), out("[j@0/10]", "1", 3)]),
            nothing("out"),
            pipe("k", "d", 20),
            pipe("k", "e", 4),
            expect_key_values("out", [("[k@20/30]", "1")]),
            dropped(LateWindow, 1),
        ])
        .run();
    assert_eq!(o.all("out").len(), 4);
    assert_eq!(o.since(6, "out"), vec![out("[k@20/30]", "1", 20)]);
}

#[test]
#[should_panic(expected = "scenario counts: step 1")]
fn a_wrong_record_fails_at_its_step() {
    counts()
        .steps([pipe("k", "a", 1), expect("out", [("[k@0/10]", "2", 1)])])
        .run();
}

#[test]
#[should_panic(expected = "scenario counts: step 1")]
fn a_wrong_timestamp_fails() {
    counts()
        .steps([pipe("k", "a", 1), expect("out", [("[k@0/10]", "1", 0)])])
        .run();
}

#[test]
#[should_panic(expected = "scenario counts: step 2")]
fn nothing_fails_on_a_record() {
    counts()
        .steps([pipe("k", "a", 1), Advance(5), nothing("out")])
        .run();
}

#[test]
#[should_panic(expected = "scenario counts: step 1")]
fn a_wrong_key_value_fails() {
    counts()
        .steps([
            pipe("k", "a", 1),
            expect_key_values("out", [("[k@0/10]", "7")]),
        ])
        .run();
}

#[test]
#[should_panic(expected = "scenario counts: step 2")]
fn a_wrong_drop_count_fails() {
    counts()
        .steps([
            pipe("k", "a", 20),
            pipe("k", "b", 1),
            dropped(LateWindow, 0),
        ])
        .run();
}

#[test]
#[should_panic(expected = "other is not a declared output")]
fn a_check_of_an_undeclared_topic_fails() {
    counts().steps([pipe("k", "a", 1), nothing("other")]).run();
}

#[test]
#[should_panic(expected = "scenario counts: step 1 (Pipe")]
fn a_step_error_fails_run() {
    // A negative timestamp is refused by the driver.
    counts()
        .steps([pipe("k", "a", 1), pipe("k", "b", -1)])
        .run();
}

#[test]
fn run_until_error_returns_the_error_and_what_came_before() {
    let o = counts()
        .steps([pipe("k", "a", 1), pipe("k", "b", -1), pipe("k", "c", 2)])
        .run_until_error();
    let (step, error) = o.error.clone().expect("the negative timestamp");
    assert_eq!(step, 1);
    assert!(error.contains("-1"), "{error}");
    assert_eq!(o.all("out"), vec![out("[k@0/10]", "1", 1)]);
}
