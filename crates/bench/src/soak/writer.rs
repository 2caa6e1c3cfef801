//! The soak's input writer: records at a steady rate of wall-clock time,
//! each stamped with the wall clock when it is written, so event time moves
//! with real time and windows close in real time.
//!
//! Record `i` has key `i mod keys` and value 1 and goes to partition
//! `key mod 2`; a transaction every [`TICK`] holds the records due by then.
//! Owns what was written: for each window, the range of record numbers
//! stamped inside it ([`WindowSpan`]), from which every window's count per
//! key follows.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use stoatflow_log::{EmbeddedLog, Log, Record, Timestamp, TopicPartition, TransactionalProducer};

use crate::e2e::{E2E_PARTITIONS, INPUT, engine_err};
use crate::error::BenchError;

/// One transaction of input per this much wall-clock time.
const TICK: Duration = Duration::from_millis(20);

/// The records stamped inside one window: numbers `first..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSpan {
    /// The window's start, ms.
    pub start_ms: i64,
    /// The first record number stamped inside it.
    pub first: u64,
    /// One past the last.
    pub end: u64,
}

impl WindowSpan {
    /// How many records of key `key` (of `keys`) it holds.
    pub fn count_of(&self, key: u64, keys: u64) -> u64 {
        // Records `i` in first..end with `i mod keys == key`.
        let below = |n: u64| {
            if n > key { (n - key).div_ceil(keys) } else { 0 }
        };
        below(self.end) - below(self.first)
    }

    /// How many distinct keys (of `keys`) it holds.
    pub fn distinct_keys(&self, keys: u64) -> u64 {
        (self.end - self.first).min(keys)
    }
}

/// What the writer wrote.
#[derive(Debug, Clone, Default)]
pub struct Written {
    /// Records written.
    pub records: u64,
    /// Each window written into, ascending.
    pub windows: Vec<WindowSpan>,
}

impl Written {
    /// Records `first..end` were stamped `ts`, inside the window of `window_ms` starting at a multiple of it.
    fn stamped(&mut self, first: u64, end: u64, ts: i64, window_ms: i64) {
        let start_ms = ts - ts.rem_euclid(window_ms);
        match self.windows.last_mut() {
            Some(last) if last.start_ms == start_ms => last.end = end,
            _ => self.windows.push(WindowSpan {
                start_ms,
                first,
                end,
            }),
        }
        self.records = end;
    }
}

/// What to write.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriterOptions {
    /// Records per second of wall-clock time.
    pub rate: u64,
    /// Distinct keys.
    pub keys: u64,
    /// The window size, ms (to record the spans).
    pub window_ms: i64,
}

/// Writes into the input topic of `log` until `stop` is set, then sets
/// `stop` itself as it returns (so a writer that failed stops the run).
pub(crate) fn write_until_stopped(
    log: &EmbeddedLog,
    opts: WriterOptions,
    stop: &AtomicBool,
) -> Result<Written, BenchError> {
    let result = write(log, opts, stop);
    stop.store(true, Ordering::Release);
    result
}

fn write(log: &EmbeddedLog, opts: WriterOptions, stop: &AtomicBool) -> Result<Written, BenchError> {
    let mut producer = log
        .transactional_producer("bench-soak-input")
        .map_err(engine_err)?;
    let tps: Vec<TopicPartition> = (0..E2E_PARTITIONS)
        .map(|p| TopicPartition::new(INPUT, p))
        .collect();
    let mut written = Written::default();
    let mut last_ts = i64::MIN;
    let start = Instant::now();
    let mut tick = 0u32;
    while !stop.load(Ordering::Acquire) {
        tick += 1;
        if let Some(wait) = (start + TICK * tick).checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let due = (start.elapsed().as_secs_f64() * opts.rate as f64) as u64;
        if due <= written.records {
            continue;
        }
        // Event time is the wall clock, never going back within the input.
        let ts = wall_clock_ms().max(last_ts);
        last_ts = ts;
        producer.begin().map_err(engine_err)?;
        for i in written.records..due {
            let key = (i % opts.keys) as i64;
            let record = Record::new(
                Some(&key.to_be_bytes()),
                Some(&1i64.to_be_bytes()),
                Timestamp(ts),
            );
            producer
                .send(&tps[(key as u32 % E2E_PARTITIONS) as usize], &record)
                .map_err(engine_err)?;
        }
        producer.commit().map_err(engine_err)?;
        written.stamped(written.records, due, ts, opts.window_ms);
    }
    Ok(written)
}

/// Milliseconds since the Unix epoch.
fn wall_clock_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count per key agrees with counting the record numbers one by one.
    #[test]
    fn count_of_counts_the_record_numbers_of_each_key() {
        for (first, end, keys) in [
            (0, 1, 5),
            (0, 23, 5),
            (7, 8, 5),
            (7, 31, 5),
            (13, 13, 4),
            (3, 1000, 7),
        ] {
            let span = WindowSpan {
                start_ms: 0,
                first,
                end,
            };
            for key in 0..keys {
                let brute = (first..end).filter(|i| i % keys == key).count() as u64;
                assert_eq!(
                    span.count_of(key, keys),
                    brute,
                    "{first}..{end} key {key} of {keys}"
                );
            }
            let distinct = (first..end)
                .map(|i| i % keys)
                .collect::<std::collections::HashSet<_>>();
            assert_eq!(span.distinct_keys(keys), distinct.len() as u64);
        }
    }

    /// Records stamped in one window extend its span; a later window starts
    /// a new one.
    #[test]
    fn stamped_records_extend_their_window_or_start_the_next() {
        let mut w = Written::default();
        w.stamped(0, 10, 1_000, 1_000);
        w.stamped(10, 25, 1_999, 1_000);
        w.stamped(25, 30, 2_000, 1_000);
        assert_eq!(w.records, 30);
        assert_eq!(
            w.windows,
            vec![
                WindowSpan {
                    start_ms: 1_000,
                    first: 0,
                    end: 25
                },
                WindowSpan {
                    start_ms: 2_000,
                    first: 25,
                    end: 30
                },
            ]
        );
    }
}
