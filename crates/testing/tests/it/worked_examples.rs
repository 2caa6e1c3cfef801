//! Two worked examples: six arrivals on two partitions where the driver
//! emits three and the engine four (docs/test-driver.md#driver-vs-engine),
//! and a late record R processed after a record F that moved the raw watermark
//! past R's close, admitted against its lane's floor (docs/barriers.md#floors).

use std::sync::Arc;
use std::time::Duration;

use stoatflow_streams::{
    BarrierKind, BarrierSchedule, Consumed, EmitStrategy, EpochCommit, Headers, Produced, Serdes,
    StreamTask, StreamsBuilder, StreamsConfig, TimeWindows, Topology, Windowed,
};
use stoatflow_time::{
    EventTime, SourcePartition, TrackerConfig, WallTime, Watermark, WatermarkStrategy,
    WatermarkTracker,
};

use crate::harness::{Scenario, Step, expect_key_values, nothing, pipe_to};

const T10_00: i64 = 1_790_071_200_000; // 2026-09-22T10:00:00Z
const MIN: i64 = 60_000;
const SEC: i64 = 1_000;

fn orders_topology() -> Topology {
    let mut b = StreamsBuilder::new();
    b.stream("orders", Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key()
        .windowed_by(TimeWindows::of_size_and_grace(
            Duration::from_secs(300),
            Duration::from_secs(60),
        ))
        .emit_strategy(EmitStrategy::on_window_close())
        .count()
        .to_stream()
        .filter(|k: &Windowed<String>, _| k.window.start == T10_00)
        .map(|k: Windowed<String>, v| (k.key, v))
        .to("counts", Produced::with(Serdes::string(), Serdes::i64()));
    b.build().unwrap()
}

/// (partition, event time) of the six arrivals; the window [10:00, 10:05)
/// with a minute of grace closes at 10:06:00.
const SIX: [(i32, i64); 6] = [
    (0, T10_00 + MIN),                // ① in the window
    (1, T10_00 + 2 * MIN),            // ②
    (0, T10_00 + 4 * MIN),            // ③
    (0, T10_00 + 6 * MIN + 10 * SEC), // ④ next window: the driver's clock passes the close
    (1, T10_00 + 4 * MIN + 30 * SEC), // ⑤ in the window, between the two crossings
    (1, T10_00 + 6 * MIN + 20 * SEC), // ⑥ P1's next-window record: the engine's watermark reaches the close
];

#[test]
fn six_arrivals_the_driver_emits_three() {
    let mut steps: Vec<Step> = SIX
        .iter()
        .map(|&(_, ts)| pipe_to("orders", "shop", "o", ts))
        .collect();
    // Emitted on the pipe of ④.
    steps.insert(4, expect_key_values("counts", [("shop", 3)]));
    Scenario::new(orders_topology())
        .config(StreamsConfig::new("p4"))
        .input::<String, String>("orders")
        .output::<String, i64>("counts")
        .steps(steps)
        // ⑤ was dropped, nothing more for the window.
        .step(nothing("counts"))
        .dropped(stoatflow_streams::DropReason::LateWindow, 1)
        .run();
}

fn run_barrier(task: &mut StreamTask, stamp: Watermark) -> EpochCommit {
    BarrierSchedule::cross(task, stamp, BarrierKind::Regular).unwrap()
}

fn counts_of(commit: &EpochCommit) -> Vec<i64> {
    commit
        .outputs
        .iter()
        .map(|o| i64::from_be_bytes(o.value.as_deref().unwrap().try_into().unwrap()))
        .collect()
}

#[test]
fn six_arrivals_the_engine_emits_four() {
    // The engine's clock: minimum over the two partitions, less the 10 s bound,
    // stamped on a barrier after each record; the task judges records against
    // the stamp of the barrier before and emits against the one before that.
    let topology = orders_topology();
    let config = Arc::new(StreamsConfig::new("p4"));
    let mut task = topology.instantiate(0, &config);
    let mut tracker = WatermarkTracker::new(TrackerConfig::default());
    let strategy =
        WatermarkStrategy::<(), ()>::for_bounded_out_of_orderness(Duration::from_secs(10));
    let p: Vec<_> = (0..2)
        .map(|i| {
            tracker
                .register(
                    SourcePartition::new("orders", i),
                    strategy.policy(),
                    WallTime::EPOCH,
                )
                .unwrap()
        })
        .collect();
    let mut emitted = Vec::new();
    for &(partition, ts) in &SIX {
        tracker
            .on_record(
                p[partition as usize],
                EventTime::new(ts).unwrap(),
                WallTime::EPOCH,
            )
            .unwrap();
        task.process(
            "orders",
            Some(partition),
            None,
            Some(b"shop"),
            Some(b"o"),
            ts,
            Headers::empty(),
        )
        .unwrap();
        let stamp = tracker.force_watermark(WallTime::EPOCH);
        emitted.extend(counts_of(&run_barrier(&mut task, stamp)));
    }
    assert_eq!(
        tracker.current(),
        Watermark::from_millis(T10_00 + 6 * MIN),
        "⑥ brings the watermark to the close"
    );
    assert!(
        emitted.is_empty(),
        "the frontier is still one barrier behind"
    );
    // Two more barriers: the frontier reaches the close, the emission's records commit in the next epoch.
    let stamp = tracker.force_watermark(WallTime::EPOCH);
    emitted.extend(counts_of(&run_barrier(&mut task, stamp)));
    emitted.extend(counts_of(&run_barrier(&mut task, stamp)));
    assert_eq!(
        emitted,
        [4],
        "①②③ and ⑤: the engine counted the record the driver dropped"
    );
    assert_eq!(
        task.metrics()
            .dropped(stoatflow_streams::DropReason::LateWindow),
        0
    );
}

#[test]
fn race_r_is_admitted_against_w2_and_counted_at_barrier_4() {
    // Window [10:00, 10:05) + 1 min grace closes at 10:06:00. W(2) = 10:05:20.
    // In epoch 3, F (10:06:30) is processed before R (10:04:50): the raw
    // watermark reaches the close, but R's lane judges it against W(2).
    let topology = orders_topology();
    let config = Arc::new(StreamsConfig::new("p3"));
    let mut task = topology.instantiate(0, &config);
    let w1 = Watermark::from_millis(T10_00 + 4 * MIN);
    let w2 = Watermark::from_millis(T10_00 + 5 * MIN + 20 * SEC);
    let w3 = Watermark::from_millis(T10_00 + 6 * MIN);
    let pipe = |task: &mut StreamTask, ts: i64| {
        task.process(
            "orders",
            Some(0),
            None,
            Some(b"shop"),
            Some(b"o"),
            ts,
            Headers::empty(),
        )
        .unwrap();
    };
    // Epochs 1 and 2: three earlier records of the window.
    pipe(&mut task, T10_00 + MIN);
    pipe(&mut task, T10_00 + 2 * MIN);
    assert!(counts_of(&run_barrier(&mut task, w1)).is_empty());
    pipe(&mut task, T10_00 + 3 * MIN);
    assert!(counts_of(&run_barrier(&mut task, w2)).is_empty());
    assert_eq!(task.floor(), w2);
    // Epoch 3: F then R, the adversarial lane order.
    pipe(&mut task, T10_00 + 6 * MIN + 30 * SEC); // F
    pipe(&mut task, T10_00 + 4 * MIN + 50 * SEC); // R: close 10:06:00 > floor 10:05:20, admitted
    let b3 = run_barrier(&mut task, w3);
    assert!(
        counts_of(&b3).is_empty(),
        "barrier 3: the frontier is W(2) = 10:05:20, nothing closes"
    );
    assert_eq!(task.frontier(), w2);
    // Barrier 4: the frontier becomes W(3) = 10:06:00; the count is emitted into epoch 5.
    let b4 = run_barrier(&mut task, w3);
    assert!(
        counts_of(&b4).is_empty(),
        "barrier 4 commits epoch 4, which had no records"
    );
    assert_eq!(task.frontier(), w3);
    let b5 = run_barrier(&mut task, w3);
    assert_eq!(
        counts_of(&b5),
        [4],
        "R and the three earlier records; F is in the next window"
    );
    assert_eq!(
        task.metrics()
            .dropped(stoatflow_streams::DropReason::LateWindow),
        0
    );
    // A record for the window after barrier 4 is late: its lane's floor is W(4) >= the close.
    pipe(&mut task, T10_00 + 4 * MIN + 59 * SEC);
    assert_eq!(
        task.metrics()
            .dropped(stoatflow_streams::DropReason::LateWindow),
        1
    );
}
