//! The two-sided table vocabulary of the join, stream-table and Processor
//! API scenarios: `i32` keys and `String` values on `left` and `right`,
//! results on `out`.

use stoatflow_streams::{StreamsConfig, Topology};

use super::Scenario;
use super::step::{Step, expect, nothing, pipe_to};

pub const LEFT: &str = "left";
pub const RIGHT: &str = "right";
pub const OUT: &str = "out";

/// A scenario over `topology` reading [`LEFT`] and [`RIGHT`] and writing [`OUT`].
pub fn sides(topology: Topology) -> Scenario {
    Scenario::new(topology)
        .config(StreamsConfig::new("it"))
        .input::<i32, String>(LEFT)
        .input::<i32, String>(RIGHT)
        .output::<i32, String>(OUT)
}

/// Pipes `(key, value)` at `ts` into [`LEFT`].
pub fn left(key: i32, value: &str, ts: i64) -> Step {
    pipe_to(LEFT, key, value, ts)
}

/// Pipes `(key, value)` at `ts` into [`RIGHT`].
pub fn right(key: i32, value: &str, ts: i64) -> Step {
    pipe_to(RIGHT, key, value, ts)
}

/// The records of [`OUT`] since its last check.
pub fn expect_out(rows: &[(i32, &str, i64)]) -> Step {
    expect(OUT, rows.iter().copied())
}

/// No record of [`OUT`] since its last check.
pub fn none() -> Step {
    nothing(OUT)
}
