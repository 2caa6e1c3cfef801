//! The steps of a scenario table: what is done to the driver (pipe, advance
//! the watermark or the wall clock, commit, restart, crash) and what is
//! checked on the way (the output since the last check of a topic, a drop
//! counter). Plain data: running them is [`super::Scenario`]'s job.

use stoatflow_streams::{DropReason, Headers};

use super::cells::Cell;
use super::outcome::Out;

/// The topic [`pipe`] writes to.
pub const INPUT: &str = "input";

/// One step of a scenario.
#[derive(Debug, Clone)]
pub enum Step {
    /// Pipes `(key, value)` at `ts` into `topic`, with headers.
    Pipe {
        topic: &'static str,
        key: Cell,
        value: Cell,
        ts: i64,
        headers: Headers,
    },
    /// `advance_watermark`.
    Advance(i64),
    /// `advance_watermark` to the larger of this and the driver's watermark
    /// (with commit-per-pipe off a backward advance is an error).
    AdvanceUnlessPast(i64),
    /// `advance_wall_clock_time`, in ms.
    Wall(u64),
    /// `commit_barrier`.
    Commit,
    /// A graceful `restart`: what its final barrier commits is read too.
    Restart,
    /// `crash_restart`: what was not committed is lost.
    Crash,
    /// Checks the records of `topic` that became readable since the last
    /// `Expect` or `ExpectKeyValues` of that topic (since the start if none).
    Expect {
        topic: &'static str,
        records: Vec<Out>,
    },
    /// As `Expect`, comparing keys and values only.
    ExpectKeyValues {
        topic: &'static str,
        pairs: Vec<(String, Option<String>)>,
    },
    /// Checks `stoatflow.dropped.records.total{reason}` of the running driver.
    Dropped(DropReason, u64),
}

/// Pipes `(key, value)` at `ts` into [`INPUT`].
pub fn pipe(key: impl Into<Cell>, value: impl Into<Cell>, ts: i64) -> Step {
    pipe_to(INPUT, key, value, ts)
}

/// Pipes `(key, value)` at `ts` into `topic`.
pub fn pipe_to(topic: &'static str, key: impl Into<Cell>, value: impl Into<Cell>, ts: i64) -> Step {
    Step::Pipe {
        topic,
        key: key.into(),
        value: value.into(),
        ts,
        headers: Headers::empty(),
    }
}

/// The records of `topic` since its last check: `(key, value, ts)` rows or [`Out`]s.
pub fn expect<R: Into<Out>>(topic: &'static str, rows: impl IntoIterator<Item = R>) -> Step {
    Step::Expect {
        topic,
        records: rows.into_iter().map(Into::into).collect(),
    }
}

/// No record of `topic` since its last check.
pub fn nothing(topic: &'static str) -> Step {
    Step::Expect {
        topic,
        records: Vec::new(),
    }
}

/// The keys and values of `topic` since its last check, timestamps aside.
pub fn expect_key_values<K: Into<Cell>, V: Into<Cell>>(
    topic: &'static str,
    pairs: impl IntoIterator<Item = (K, V)>,
) -> Step {
    Step::ExpectKeyValues {
        topic,
        pairs: pairs
            .into_iter()
            .map(|(k, v)| (k.into().render(), Some(v.into().render())))
            .collect(),
    }
}

/// `n` records dropped for `reason` so far.
pub fn dropped(reason: DropReason, n: u64) -> Step {
    Step::Dropped(reason, n)
}
