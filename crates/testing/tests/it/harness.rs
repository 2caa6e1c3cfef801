//! The one helper that calls the driver API: a scenario is a list of steps
//! (pipe left, pipe right, advance the watermark or the wall clock, restart,
//! expect) run against one topology.

use std::time::Duration;

use stoatflow_streams::{Serdes, StreamsConfig, Topology};
use stoatflow_testing::{TestRecord, TopologyTestDriver};

/// One step of a scenario.
#[derive(Debug, Clone)]
pub enum Step {
    /// Pipe (key, value, ts) into the left topic.
    L(i32, &'static str, i64),
    /// Pipe (key, value, ts) into the right topic.
    R(i32, &'static str, i64),
    /// Advance the watermark.
    Advance(i64),
    /// Advance the wall clock by ms.
    Wall(u64),
    /// Rebuild the driver from its committed changelogs.
    Restart,
    /// The output read since the last expectation, in order.
    Expect(Vec<(i32, &'static str, i64)>),
}

pub const LEFT: &str = "left";
pub const RIGHT: &str = "right";
pub const OUT: &str = "out";

/// Runs `steps` against `topology` (reading `left`/`right`, writing `out`
/// with i32 keys and string values).
pub fn run(topology: Topology, steps: &[Step]) {
    let mut driver = TopologyTestDriver::new(topology, StreamsConfig::new("it")).expect("driver");
    for (i, step) in steps.iter().enumerate() {
        let left = driver.create_input_topic(LEFT, Serdes::i32(), Serdes::string());
        let right = driver.create_input_topic(RIGHT, Serdes::i32(), Serdes::string());
        let out = driver.create_output_topic(OUT, Serdes::i32(), Serdes::string());
        match step {
            Step::L(k, v, ts) => left
                .pipe_record(TestRecord::new(*k, (*v).to_owned(), *ts))
                .expect("pipe left"),
            Step::R(k, v, ts) => right
                .pipe_record(TestRecord::new(*k, (*v).to_owned(), *ts))
                .expect("pipe right"),
            Step::Advance(w) => driver.advance_watermark(*w).expect("advance"),
            Step::Wall(ms) => driver
                .advance_wall_clock_time(Duration::from_millis(*ms))
                .expect("wall clock"),
            Step::Restart => driver = driver.restart().expect("restart"),
            Step::Expect(expected) => {
                let got: Vec<(i32, String, i64)> = out
                    .read_records_to_list()
                    .expect("read")
                    .into_iter()
                    .map(|r| (r.key, r.value, r.timestamp))
                    .collect();
                let want: Vec<(i32, String, i64)> = expected
                    .iter()
                    .map(|(k, v, t)| (*k, (*v).to_owned(), *t))
                    .collect();
                assert_eq!(got, want, "step {i}: {step:?}");
            }
        }
    }
}

/// Records `(key, value, ts)` ready to expect.
pub fn none() -> Step {
    Step::Expect(vec![])
}
