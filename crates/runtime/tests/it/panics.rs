//! A panic in user code on a record lane (a processor, a serde, a store
//! supplier): the application stops in ERROR with an error naming the lane,
//! the task and the panic's message, whether it struck while the lanes
//! restore or while they process, and `close()` returns.

use std::sync::mpsc;
use std::time::Duration;

use stoatflow_log::EmbeddedLog;
use stoatflow_runtime::partition_for_key;
use stoatflow_runtime::{AppState, StreamsApp};
use stoatflow_streams::{Produced, Serdes, StreamsBuilder, Topology};

use crate::support::*;

/// The value that makes the topology's `map_values` panic.
const POISON: i64 = 999_999;

/// A tumbling count whose `map_values` panics on [`POISON`].
fn panicking_on_poison() -> Topology {
    tumbling_count_after(|s| {
        s.map_values(|_, v| {
            assert_ne!(v, POISON, "poisoned value {POISON}");
            v
        })
    })
}

/// A pass-through whose processor supplier panics when the task is built on
/// lane 1 (lanes are threads named `<application id>-lane-<n>`).
fn panicking_on_lane_1() -> Topology {
    let mut b = StreamsBuilder::new();
    source(&mut b, INPUT)
        .process(
            || {
                let lane = std::thread::current().name().unwrap_or("").to_owned();
                assert!(
                    !lane.ends_with("-lane-1"),
                    "this supplier refuses lane 1 ({lane})"
                );
                PassThrough
            },
            &[],
        )
        .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
    b.build().unwrap()
}

struct PassThrough;

impl stoatflow_streams::Processor<String, i64, String, i64> for PassThrough {
    fn process(
        &mut self,
        ctx: &mut stoatflow_streams::ProcessorContext<'_, String, i64>,
        r: stoatflow_streams::Record<String, i64>,
    ) -> Result<(), stoatflow_streams::ProcessError> {
        ctx.forward(r)
    }
}

/// Closes `app` on another thread; fails the test if that takes more than
/// 30 s (a close that hangs would otherwise hang the suite).
fn close_within_30s(mut app: StreamsApp<EmbeddedLog>) -> StreamsApp<EmbeddedLog> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        app.close(Duration::from_secs(5));
        let _ = tx.send(app);
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("close() returned within 30 s")
}

#[test]
fn a_panic_while_processing_stops_the_app_in_error_naming_the_task() {
    let mut records = input(600, 12, 7);
    records[300].value = POISON;
    let log = log_with_input(&records, 50);
    let poisoned = partition_for_key(records[300].key.as_bytes(), PARTITIONS);
    let mut app = StreamsApp::with_log(panicking_on_poison(), config("poison", 2), log).unwrap();
    let message = starts_into_error(&mut app).to_string();
    assert!(message.contains("panicked"), "{message}");
    assert!(message.contains("poisoned value 999999"), "{message}");
    assert!(message.contains(&format!("task 0_{poisoned}")), "{message}");
    let app = close_within_30s(app);
    assert_eq!(app.state(), AppState::Error);
}

#[test]
fn a_panic_while_the_lanes_restore_stops_the_app_in_error() {
    let log = log_with_input(&input(60, 6, 3), 20);
    let mut app = StreamsApp::with_log(panicking_on_lane_1(), config("supplier", 2), log).unwrap();
    let message = starts_into_error(&mut app).to_string();
    assert!(message.contains("record lane 1"), "{message}");
    assert!(
        message.contains("this supplier refuses lane 1"),
        "{message}"
    );
    let app = close_within_30s(app);
    assert_eq!(app.state(), AppState::Error);
}
