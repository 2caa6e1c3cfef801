//! The windowed workloads (windows and joins), written with the public DSL,
//! on the same input shapes as `crates/streams/benches/windows.rs` and
//! `join.rs` so the figures are comparable. Each builds onto a
//! [`StreamsBuilder`] and returns its result stream; the caller attaches the
//! sink and drives the input ([`crate::run`]).
//!
//! | workload | input | DSL shape |
//! |---|---|---|
//! | tumbling | [`tumbling_record`] on [`TUMBLING_TOPIC`] | tumbling count, 10 s, on close |
//! | sliding | [`windowed_record`] on [`WINDOWED_TOPIC`] | sliding count, D = 10 s, on close |
//! | session | [`windowed_record`] on [`WINDOWED_TOPIC`] | session count, gap = 5 s, on close |
//! | join-inner | [`join_record`] on [`LEFT_TOPIC`] and [`RIGHT_TOPIC`] | 1 s windowed inner join |
//! | join-left | [`join_record`] on [`LEFT_TOPIC`] and [`RIGHT_TOPIC`] | 1 s windowed left join |
//!
//! [`StreamsBuilder`]: stoatflow_streams::StreamsBuilder

mod join;
mod session;
mod sliding;
mod tumbling;

use std::time::Duration;

pub use join::{JOIN_WINDOW, join_inner, join_left};
pub use session::{SESSION_GAP, session};
pub use sliding::{SLIDING_DIFFERENCE, sliding};
pub use tumbling::tumbling;

/// The topic the sliding and session workloads read: `i64` keys, `i64` values.
pub const WINDOWED_TOPIC: &str = "windowed-events";
/// Keys of the sliding and session workloads.
pub const WINDOWED_KEYS: i64 = 1_000;
/// Consecutive records of one key, 1 ms apart; a key recurs every 8 s.
pub const BURST: i64 = 8;
/// Event time of the first record, ms.
pub const BASE_MS: i64 = 1_700_000_000_000;
/// How far the watermark trails the newest event time in the sliding and
/// session workloads.
pub const WINDOWED_LAG: Duration = Duration::from_millis(100);

/// Record `i` of the sliding and session workloads: `(key, event time)`.
/// Bursts of [`BURST`] records per key, 1 ms apart, keys in turn, so a key
/// recurs every `BURST × WINDOWED_KEYS` ms (8 s).
#[inline]
pub fn windowed_record(i: u64) -> (i64, i64) {
    let i = i as i64;
    ((i / BURST) % WINDOWED_KEYS, BASE_MS + i)
}

/// The left input of the join workloads.
pub const LEFT_TOPIC: &str = "join-left";
/// The right input of the join workloads.
pub const RIGHT_TOPIC: &str = "join-right";
/// Keys of the join workloads.
pub const JOIN_KEYS: u64 = 10_000;

/// One left record in this many has a key the right side never has, so the
/// left join emits its null side (and the inner join drops it).
pub const JOIN_UNMATCHED_EVERY: u64 = 10;

/// Pair `i` of the join workloads: `(left key, right key, event time)`, both
/// sides at the same time, advancing 1 ms per 10 pairs; the sides walk the
/// keys in different orders, so matches are not all immediate. Every
/// [`JOIN_UNMATCHED_EVERY`]-th left record takes a key at or above
/// [`JOIN_KEYS`], which no right record has: it matches nothing. The value of
/// both records is `i`.
#[inline]
pub fn join_record(i: u64) -> (i64, i64, i64) {
    let left = if i % JOIN_UNMATCHED_EVERY == JOIN_UNMATCHED_EVERY - 1 {
        JOIN_KEYS + (i / JOIN_UNMATCHED_EVERY) % JOIN_KEYS
    } else {
        i % JOIN_KEYS
    };
    (
        left as i64,
        ((i * 7 + 3) % JOIN_KEYS) as i64,
        (i / 10) as i64,
    )
}

/// The topic the tumbling workload reads: `i64` keys, `i64` values.
pub const TUMBLING_TOPIC: &str = "events";
/// Keys of the tumbling workload.
pub const TUMBLING_KEYS: i64 = 1_000;
/// Window of the tumbling workload, ms.
pub const TUMBLING_WINDOW_MS: u64 = 10_000;

/// Record `i` of the tumbling workload: `(key, event time)`, key `i mod
/// 1000` at `i` ms, so each window of a key counts 10 records.
#[inline]
pub fn tumbling_record(i: u64) -> (i64, i64) {
    let i = i as i64;
    (i % TUMBLING_KEYS, i)
}

/// The input shape of a keyed count workload: its topic, its `i`-th record,
/// and how far the watermark trails the newest event time.
#[derive(Debug, Clone, Copy)]
pub struct KeyedInput {
    /// The topic read.
    pub topic: &'static str,
    /// Record `i`: `(key, event time)`; the value is 1.
    pub record: fn(u64) -> (i64, i64),
    /// The watermark's lag behind the newest event time.
    pub lag: Duration,
}

/// The tumbling workload's input: [`tumbling_record`], watermark at the newest time.
pub const TUMBLING_INPUT: KeyedInput = KeyedInput {
    topic: TUMBLING_TOPIC,
    record: tumbling_record,
    lag: Duration::ZERO,
};

/// The sliding and session workloads' input: [`windowed_record`], watermark
/// [`WINDOWED_LAG`] behind.
pub const WINDOWED_INPUT: KeyedInput = KeyedInput {
    topic: WINDOWED_TOPIC,
    record: windowed_record,
    lag: WINDOWED_LAG,
};
