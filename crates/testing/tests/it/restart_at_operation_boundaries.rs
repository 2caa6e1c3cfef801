//! Restarts in one process (docs/state.md#restart) at operation boundaries: the driver
//! closed and rebuilt from the changelogs it committed, gracefully or after a
//! crash, between two driver calls (a pipe, an advance, a commit). Final
//! results are emitted exactly once across such restarts. A crash inside an
//! operation (mid-barrier, between a changelog write and a commit) is not
//! tried here: that enumeration needs the runtime and a fault-injecting log.

use std::time::Duration;

use proptest::prelude::*;
use stoatflow_streams::DropReason::LateWindow;
use stoatflow_streams::{
    Consumed, EmitStrategy, Materialized, Produced, Serdes, SessionWindows, StreamsConfig,
    TimeWindows, Windowed,
};

use crate::closed_windows::counting;
use crate::harness::Step::{Advance, AdvanceUnlessPast, Commit, Crash, Restart};
use crate::harness::{Out, Scenario, Step, dropped, expect_key_values, nothing, pipe_to};

/// A tumbling count (10 ms, grace 2 ms) of `in`, emitted on close to `out`
/// as `(key@start, count)`.
fn tumbling() -> Scenario {
    let windows =
        TimeWindows::of_size_and_grace(Duration::from_millis(10), Duration::from_millis(2));
    counting(windows, EmitStrategy::on_window_close()).config(StreamsConfig::new("restart"))
}

/// Pipes `(key, "v")` at `ts` into `in`.
fn pipe(key: &str, ts: i64) -> Step {
    pipe_to("in", key, "v", ts)
}

/// The keys and values of `out` since its last check.
fn read(pairs: &[(&str, i64)]) -> Step {
    expect_key_values("out", pairs.iter().copied())
}

fn restart(graceful: bool) -> Step {
    if graceful { Restart } else { Crash }
}

#[test]
fn a_pending_window_is_emitted_exactly_once_after_a_graceful_restart() {
    tumbling()
        .steps([
            pipe("a", 1),
            pipe("a", 5),
            nothing("out"),
            Restart,
            pipe("a", 7),
            pipe("b", 12),
            read(&[("a@0", 3)]),
            Advance(100),
            read(&[("b@10", 1)]),
        ])
        .run();
}

#[test]
fn a_pending_window_is_emitted_exactly_once_after_a_crash() {
    tumbling()
        .steps([
            pipe("a", 1),
            pipe("a", 5),
            Crash,
            pipe("b", 12),
            read(&[("a@0", 2)]),
            Crash,
            Advance(13),
            // Already emitted and committed before the crash.
            nothing("out"),
        ])
        .run();
}

#[test]
fn an_emitted_window_is_not_emitted_again_after_a_crash() {
    tumbling()
        .steps([
            pipe("a", 1),
            pipe("a", 30), // closes [0, 10): emitted and committed
            read(&[("a@0", 1)]),
            Crash,
            pipe("a", 31), // the first pass after the crash replays the last one
            Advance(35),
            nothing("out"),
        ])
        .run();
}

#[test]
fn a_record_late_before_the_restart_is_still_dropped_after_it() {
    for graceful in [true, false] {
        let steps = [
            pipe("a", 1),
            pipe("a", 30),
            pipe("a", 2), // late: dropped
            dropped(LateWindow, 1),
            restart(graceful),
            pipe("a", 3),
            // Dropped after the restart too: the counter carries over.
            dropped(LateWindow, 2),
            Advance(100),
        ];
        let after_restart = 5;
        let o = tumbling()
            .named(format!("graceful={graceful}"))
            .steps(steps)
            .run();
        let out = o.since(after_restart, "out");
        assert!(
            !out.iter().any(|r| r.key == "a@0"),
            "graceful={graceful}: {out:?}"
        );
    }
}

#[test]
fn a_crash_mid_epoch_loses_the_uncommitted_emission_and_the_replay_emits_it_once() {
    tumbling()
        .manual_commit()
        .steps([
            pipe("a", 1),
            Commit,
            pipe("a", 4),
            pipe("b", 20), // emits a@0 = 2 into the open epoch
            Crash,
            // Nothing of the uncommitted epoch is visible.
            nothing("out"),
            // The consumer re-reads what was not committed.
            pipe("a", 4),
            pipe("b", 20),
            Commit,
            read(&[("a@0", 2)]),
        ])
        .run();
}

/// A graceful restart's final barrier commits the open epoch: what it
/// releases is readable, where a crash loses it.
#[test]
fn a_graceful_restart_commits_the_open_epoch_and_a_crash_does_not() {
    let open_epoch = [
        pipe("a", 1),
        pipe("b", 20), // emits a@0 = 1 into the open epoch
        nothing("out"),
    ];
    tumbling()
        .manual_commit()
        .steps(open_epoch.clone())
        .steps([Restart, read(&[("a@0", 1)])])
        .run();
    tumbling()
        .manual_commit()
        .steps(open_epoch)
        .steps([Crash, Commit, nothing("out")])
        .run();
}

#[derive(Debug, Clone)]
enum Op {
    Pipe(u8, i64),
    Advance(i64),
    Commit,
}

impl Op {
    fn step(&self) -> Step {
        match *self {
            Op::Pipe(k, ts) => pipe_to("in", format!("k{k}"), "v", ts),
            Op::Advance(ts) => AdvanceUnlessPast(ts),
            Op::Commit => Commit,
        }
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..3, 0i64..80).prop_map(|(k, t)| Op::Pipe(k, t)),
        1 => (0i64..80).prop_map(Op::Advance),
        2 => Just(Op::Commit),
    ]
}

fn key_values(outs: Vec<Out>) -> Vec<(String, Option<String>)> {
    outs.into_iter().map(|o| (o.key, o.value)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some() { 256 } else { 48 }))]

    /// Run, crash between any two driver operations, restore, replay what
    /// was not committed, finish: the committed output equals an
    /// uninterrupted run's.
    #[test]
    fn a_crash_between_any_two_operations_equals_an_uninterrupted_run(ops in prop::collection::vec(op(), 1..40), crash_at in 0usize..40) {
        let finish = [Commit, Advance(1_000), Commit];
        let reference = tumbling()
            .manual_commit()
            .steps(ops.iter().map(Op::step))
            .steps(finish.clone())
            .run();
        let want = key_values(reference.all("out"));

        let crash_at = crash_at.min(ops.len());
        // What was not committed before the crash is read again, then the rest.
        let since_commit = ops[..crash_at]
            .iter()
            .rposition(|o| matches!(o, Op::Commit))
            .map_or(0, |i| i + 1);
        let crashed = tumbling()
            .manual_commit()
            .steps(ops[..crash_at].iter().map(Op::step))
            .step(Crash)
            .steps(ops[since_commit..].iter().map(Op::step))
            .steps(finish)
            .run();
        prop_assert_eq!(key_values(crashed.all("out")), want);
    }
}

/// A session count (gap 10 ms, grace 100 ms) of `in`, emitted on close to
/// `out` as `(key@start-end, count)`.
fn sessions() -> Scenario {
    Scenario::build(|b| {
        b.stream("in", Consumed::with(Serdes::string(), Serdes::string()))
            .group_by_key()
            .windowed_by(SessionWindows::of_inactivity_gap_and_grace(
                Duration::from_millis(10),
                Duration::from_millis(100),
            ))
            .emit_strategy(EmitStrategy::on_window_close())
            .count_with(Materialized::as_("sessions"))
            .to_stream()
            .map(|k: Windowed<String>, v| {
                (format!("{}@{}-{}", k.key, k.window.start, k.window.end), v)
            })
            .to("out", Produced::with(Serdes::string(), Serdes::i64()));
    })
    .config(StreamsConfig::new("restart-sessions"))
    .input::<String, String>("in")
    .output::<String, i64>("out")
}

#[test]
fn a_session_that_merges_across_a_restart_emits_its_merged_result_once() {
    for graceful in [true, false] {
        sessions()
            .named(format!("graceful={graceful}"))
            .steps([
                pipe("a", 0),
                pipe("a", 20), // a second session for "a", 20 - 0 > gap; [0,0] closes at 0 + 10 + 1 + 100
                restart(graceful),
                pipe("a", 10), // within the gap of both: merges [0,0] and [20,20] into [0,20]
                // The merged session is still open.
                nothing("out"),
                restart(graceful),
                Advance(131), // the merged session's close: 20 + 10 + 1 + 100
                read(&[("a@0-20", 3)]),
                restart(graceful),
                Advance(500),
                // Emitted once.
                nothing("out"),
            ])
            .run();
    }
}
