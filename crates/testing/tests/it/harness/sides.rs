//! The two-sided table vocabulary of the join, stream-table and Processor
//! API scenarios: `i32` keys and `String` values on `left` and `right`,
//! results on `out`; for table-table joins the values are nullable, so a
//! side can be deleted and a result can be a tombstone.

use stoatflow_streams::{StreamsConfig, Topology};

use super::Scenario;
use super::cells::Cell;
use super::outcome::{Out, out, tombstone};
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

/// As [`sides`], with nullable values on every topic (table-table joins).
pub fn table_sides(topology: Topology) -> Scenario {
    Scenario::new(topology)
        .config(StreamsConfig::new("it"))
        .input::<i32, Option<String>>(LEFT)
        .input::<i32, Option<String>>(RIGHT)
        .output::<i32, Option<String>>(OUT)
}

/// Pipes a delete of `key` at `ts` into `topic` ([`LEFT`] or [`RIGHT`]).
pub fn delete(topic: &'static str, key: i32, ts: i64) -> Step {
    pipe_to(topic, key, Cell::Null, ts)
}

/// The records of [`OUT`] since its last check, `None` a tombstone.
pub fn expect_rows(rows: &[(i32, Option<&str>, i64)]) -> Step {
    expect(
        OUT,
        rows.iter().map(|&(k, v, ts)| -> Out {
            match v {
                Some(v) => out(k, v, ts),
                None => tombstone(k, ts),
            }
        }),
    )
}
