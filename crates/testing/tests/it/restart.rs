//! Restarts in one process (DESIGN 3.6): the driver closed and rebuilt from
//! the changelogs it committed, gracefully or after a crash. Final results
//! are emitted exactly once across every crash point.

use std::time::Duration;

use proptest::prelude::*;
use stoatflow_streams::{
    Consumed, DropReason, EmitStrategy, Materialized, Produced, Serdes, StreamsBuilder,
    StreamsConfig, TimeWindows, Windowed,
};
use stoatflow_testing::{DriverConfig, TopologyTestDriver};

fn driver(commit_per_pipe: bool) -> TopologyTestDriver {
    let mut b = StreamsBuilder::new();
    b.stream("in", Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key()
        .windowed_by(TimeWindows::of_size_and_grace(
            Duration::from_millis(10),
            Duration::from_millis(2),
        ))
        .emit_strategy(EmitStrategy::on_window_close())
        .count_with(Materialized::as_("counts"))
        .to_stream()
        .map(|k: Windowed<String>, v| (format!("{}@{}", k.key, k.window.start), v))
        .to("out", Produced::with(Serdes::string(), Serdes::i64()));
    TopologyTestDriver::with_driver_config(
        b.build().unwrap(),
        StreamsConfig::new("restart"),
        DriverConfig {
            commit_per_pipe,
            ..DriverConfig::default()
        },
    )
    .unwrap()
}

fn pipe(d: &TopologyTestDriver, key: &str, ts: i64) {
    d.create_input_topic("in", Serdes::string(), Serdes::string())
        .pipe_input_with_timestamp(key.into(), "v".into(), ts)
        .unwrap();
}

fn read(d: &TopologyTestDriver) -> Vec<(String, i64)> {
    d.create_output_topic("out", Serdes::string(), Serdes::i64())
        .read_key_values_to_list()
        .unwrap()
}

#[test]
fn a_pending_window_is_emitted_exactly_once_after_a_graceful_restart() {
    let d = driver(true);
    pipe(&d, "a", 1);
    pipe(&d, "a", 5);
    assert!(read(&d).is_empty());
    let d = d.restart().unwrap();
    pipe(&d, "a", 7);
    pipe(&d, "b", 12);
    assert_eq!(read(&d), [("a@0".to_string(), 3)]);
    d.advance_watermark(100).unwrap();
    assert_eq!(read(&d), [("b@10".to_string(), 1)]);
}

#[test]
fn a_pending_window_is_emitted_exactly_once_after_a_crash() {
    let d = driver(true);
    pipe(&d, "a", 1);
    pipe(&d, "a", 5);
    let d = d.crash_restart().unwrap();
    pipe(&d, "b", 12);
    assert_eq!(read(&d), [("a@0".to_string(), 2)]);
    let d = d.crash_restart().unwrap();
    d.advance_watermark(13).unwrap();
    assert!(
        read(&d).is_empty(),
        "already emitted and committed before the crash"
    );
}

#[test]
fn an_emitted_window_is_not_emitted_again_after_a_crash() {
    let d = driver(true);
    pipe(&d, "a", 1);
    pipe(&d, "a", 30); // closes [0, 10): emitted and committed
    assert_eq!(read(&d), [("a@0".to_string(), 1)]);
    let d = d.crash_restart().unwrap();
    pipe(&d, "a", 31); // the first pass after the crash replays the last one
    d.advance_watermark(35).unwrap();
    assert!(read(&d).is_empty());
}

#[test]
fn a_record_late_before_the_restart_is_still_dropped_after_it() {
    for graceful in [true, false] {
        let d = driver(true);
        pipe(&d, "a", 1);
        pipe(&d, "a", 30);
        pipe(&d, "a", 2); // late: dropped
        assert_eq!(d.metrics().dropped(DropReason::LateWindow), 1);
        let d = if graceful {
            d.restart().unwrap()
        } else {
            d.crash_restart().unwrap()
        };
        pipe(&d, "a", 3);
        assert_eq!(
            d.metrics().dropped(DropReason::LateWindow),
            1,
            "graceful={graceful}: dropped after the restart too"
        );
        d.advance_watermark(100).unwrap();
        let out = read(&d);
        assert!(
            !out.iter().any(|(k, _)| k == "a@0"),
            "graceful={graceful}: {out:?}"
        );
    }
}

#[test]
fn a_crash_mid_epoch_loses_the_uncommitted_emission_and_the_replay_emits_it_once() {
    let d = driver(false);
    pipe(&d, "a", 1);
    d.commit_barrier().unwrap();
    pipe(&d, "a", 4);
    pipe(&d, "b", 20); // emits a@0 = 2 into the open epoch
    let d = d.crash_restart().unwrap();
    assert!(
        read(&d).is_empty(),
        "nothing of the uncommitted epoch is visible"
    );
    // The consumer re-reads what was not committed.
    pipe(&d, "a", 4);
    pipe(&d, "b", 20);
    d.commit_barrier().unwrap();
    assert_eq!(read(&d), [("a@0".to_string(), 2)]);
}

#[derive(Debug, Clone)]
enum Op {
    Pipe(u8, i64),
    Advance(i64),
    Commit,
}

fn apply(d: &TopologyTestDriver, op: &Op) {
    match *op {
        Op::Pipe(k, ts) => pipe(d, &format!("k{k}"), ts),
        Op::Advance(ts) => d
            .advance_watermark(ts.max(d.watermark().as_millis()))
            .unwrap(),
        Op::Commit => d.commit_barrier().unwrap(),
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..3, 0i64..80).prop_map(|(k, t)| Op::Pipe(k, t)),
        1 => (0i64..80).prop_map(Op::Advance),
        2 => Just(Op::Commit),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some() { 256 } else { 48 }))]

    /// Run, crash at any point, restore, replay what was not committed,
    /// finish: the committed output equals an uninterrupted run's.
    #[test]
    fn crash_at_any_point_equals_an_uninterrupted_run(ops in prop::collection::vec(op(), 1..40), crash_at in 0usize..40) {
        let finish = |d: &TopologyTestDriver| {
            d.commit_barrier().unwrap();
            d.advance_watermark(1_000).unwrap();
            d.commit_barrier().unwrap();
        };
        let reference = driver(false);
        ops.iter().for_each(|o| apply(&reference, o));
        finish(&reference);
        let want = read(&reference);

        let crash_at = crash_at.min(ops.len());
        let d = driver(false);
        let mut got = Vec::new();
        let mut since_commit = Vec::new();
        for o in &ops[..crash_at] {
            apply(&d, o);
            if matches!(o, Op::Commit) {
                got.extend(read(&d));
                since_commit.clear();
            } else {
                since_commit.push(o.clone());
            }
        }
        let d = d.crash_restart().unwrap();
        // What was not committed is read again, then the rest.
        since_commit.iter().chain(&ops[crash_at..]).for_each(|o| apply(&d, o));
        finish(&d);
        got.extend(read(&d));
        prop_assert_eq!(got, want);
    }
}
