//! The soak's correctness check: the output topic, read committed, against
//! what the writer wrote.
//!
//! Every window closed at the final barrier's watermark (`end + grace` at
//! or below it) must hold exactly one result per key written into it,
//! with that key's count; no window still open may have any; nothing else
//! may be there. Owns [`WindowCheck`] and reading the output topic.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use stoatflow_log::{Consumer, EmbeddedLog, Log, TopicPartition};
use stoatflow_time::Watermark;

use super::writer::WindowSpan;
use crate::e2e::{E2E_PARTITIONS, OUTPUT, engine_err};
use crate::error::BenchError;

/// What the check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowCheck {
    /// Windows written into and closed at the final watermark.
    pub closed_windows: u64,
    /// Windows written into and still open at the end.
    pub open_windows: u64,
    /// Results read from the output topic.
    pub results: u64,
    /// Results the closed windows should have produced.
    pub expected_results: u64,
    /// (closed window, key written into it) with no result.
    pub missing: u64,
    /// Results for a (window, key) that already had one.
    pub duplicates: u64,
    /// First results with another count than was written.
    pub wrong_counts: u64,
    /// Results of a window that is not closed or was never written into, or
    /// of a key never written into that window.
    pub unexpected: u64,
    /// Records of the output topic that do not decode as a windowed count.
    pub undecodable: u64,
}

impl WindowCheck {
    /// Every closed window committed once with the right counts, and
    /// nothing else.
    pub fn ok(&self) -> bool {
        self.missing == 0
            && self.duplicates == 0
            && self.wrong_counts == 0
            && self.unexpected == 0
            && self.undecodable == 0
            && self.results == self.expected_results
    }
}

impl fmt::Display for WindowCheck {
    /// `soak-check closed_windows=… open_windows=… results=… expected_results=… missing=… duplicates=… wrong_counts=… unexpected=… undecodable=… ok|FAIL`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "soak-check closed_windows={} open_windows={} results={} expected_results={} missing={} duplicates={} wrong_counts={} unexpected={} undecodable={} {}",
            self.closed_windows,
            self.open_windows,
            self.results,
            self.expected_results,
            self.missing,
            self.duplicates,
            self.wrong_counts,
            self.unexpected,
            self.undecodable,
            if self.ok() { "ok" } else { "FAIL" }
        )
    }
}

/// One output record, decoded: key, window start, count; `None` when it
/// does not decode.
pub(crate) type Decoded = Option<(i64, i64, i64)>;

/// A check under way: results go in one at a time.
pub(crate) struct Checker {
    keys: u64,
    /// Per window written into: its span, whether it closed, the keys seen.
    windows: HashMap<i64, (WindowSpan, bool, Vec<bool>)>,
    out: WindowCheck,
}

impl Checker {
    /// A check of the `written` spans of `keys` keys in windows of
    /// `window_ms` with `grace_ms`, at the final watermark `watermark`.
    pub(crate) fn new(
        written: &[WindowSpan],
        keys: u64,
        (window_ms, grace_ms): (i64, i64),
        watermark: Watermark,
    ) -> Checker {
        let mut out = WindowCheck::default();
        let mut windows = HashMap::new();
        for span in written {
            let close = span
                .start_ms
                .saturating_add(window_ms)
                .saturating_add(grace_ms);
            let closed = watermark.has_closed(close);
            if closed {
                out.closed_windows += 1;
                out.expected_results += span.distinct_keys(keys);
            } else {
                out.open_windows += 1;
            }
            windows.insert(span.start_ms, (*span, closed, Vec::new()));
        }
        Checker { keys, windows, out }
    }

    /// One result read from the output topic.
    pub(crate) fn add(&mut self, result: Decoded) {
        let out = &mut self.out;
        out.results += 1;
        let Some((key, start, count)) = result else {
            out.undecodable += 1;
            return;
        };
        let Some((span, closed, seen)) = self.windows.get_mut(&start) else {
            out.unexpected += 1;
            return;
        };
        let written = match u64::try_from(key) {
            Ok(k) if k < self.keys => span.count_of(k, self.keys),
            _ => 0,
        };
        if !*closed || written == 0 {
            out.unexpected += 1;
            return;
        }
        if seen.is_empty() {
            seen.resize(self.keys as usize, false);
        }
        // `written > 0` means 0 <= key < keys.
        if std::mem::replace(&mut seen[key as usize], true) {
            out.duplicates += 1;
        } else if u64::try_from(count).ok() != Some(written) {
            out.wrong_counts += 1;
        }
    }

    /// What the check found.
    pub(crate) fn finish(mut self) -> WindowCheck {
        for (span, closed, seen) in self.windows.values() {
            if *closed {
                let got = seen.iter().filter(|s| **s).count() as u64;
                self.out.missing += span.distinct_keys(self.keys) - got;
            }
        }
        self.out
    }
}

/// Feeds every committed record of the output topic of `log` to `checker`,
/// decoded (key `i64` and window start `i64`, both big-endian, then the
/// count `i64`).
pub(crate) fn read_output(log: &EmbeddedLog, checker: &mut Checker) -> Result<(), BenchError> {
    let mut consumer = log.consumer("bench-soak-check").map_err(engine_err)?;
    let tps: Vec<TopicPartition> = (0..E2E_PARTITIONS)
        .map(|p| TopicPartition::new(OUTPUT, p))
        .collect();
    let mut left = 0;
    for tp in &tps {
        left += consumer.end_offset(tp).map_err(engine_err)?.0
            - consumer.beginning_offset(tp).map_err(engine_err)?.0;
    }
    consumer.assign(&tps).map_err(engine_err)?;
    let i64_at = |b: &[u8], at: usize| {
        b.get(at..at + 8)
            .and_then(|s| <[u8; 8]>::try_from(s).ok())
            .map(i64::from_be_bytes)
    };
    while left > 0 {
        let fetched = consumer.fetch(Duration::from_secs(5)).map_err(engine_err)?;
        if fetched.is_empty() {
            return Err(engine_err(format!(
                "{left} committed records of {OUTPUT} not fetched"
            )));
        }
        for r in fetched {
            let (key, value) = (r.record.key.as_deref(), r.record.value.as_deref());
            checker.add(match (key, value) {
                (Some(k), Some(v)) if k.len() == 16 && v.len() == 8 => i64_at(k, 0)
                    .zip(i64_at(k, 8))
                    .zip(i64_at(v, 0))
                    .map(|((k, s), c)| (k, s, c)),
                _ => None,
            });
            left = left.saturating_sub(1);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: u64 = 4;
    const SIZES: (i64, i64) = (1_000, 100);

    /// Window 0 holds records 0..10 (keys 0,1 thrice, 2,3 twice), window
    /// 1 000 records 10..12 (keys 2, 3 once), window 2 000 records 12..20.
    fn spans() -> Vec<WindowSpan> {
        vec![
            WindowSpan {
                start_ms: 0,
                first: 0,
                end: 10,
            },
            WindowSpan {
                start_ms: 1_000,
                first: 10,
                end: 12,
            },
            WindowSpan {
                start_ms: 2_000,
                first: 12,
                end: 20,
            },
        ]
    }

    /// The right results for windows 0 and 1 000 (closed at 2 100).
    fn right() -> Vec<Decoded> {
        vec![
            Some((0, 0, 3)),
            Some((1, 0, 3)),
            Some((2, 0, 2)),
            Some((3, 0, 2)),
            Some((2, 1_000, 1)),
            Some((3, 1_000, 1)),
        ]
    }

    fn check(watermark: i64, results: Vec<Decoded>) -> WindowCheck {
        let mut c = Checker::new(&spans(), KEYS, SIZES, Watermark::from_millis(watermark));
        results.into_iter().for_each(|r| c.add(r));
        c.finish()
    }

    fn at_2100(results: Vec<Decoded>) -> WindowCheck {
        check(2_100, results)
    }

    #[test]
    fn the_right_results_pass() {
        let c = at_2100(right());
        assert!(c.ok(), "{c}");
        assert_eq!((c.closed_windows, c.open_windows), (2, 1));
        assert_eq!((c.results, c.expected_results), (6, 6));
    }

    /// A window closes at `end + grace` inclusive: one millisecond earlier
    /// it is open, and its results are unexpected.
    #[test]
    fn a_window_closes_at_end_plus_grace() {
        let c = check(2_099, right());
        assert_eq!(
            (c.closed_windows, c.open_windows, c.unexpected),
            (1, 2, 2),
            "{c}"
        );
        assert!(!c.ok());
    }

    #[test]
    fn a_missing_result_fails() {
        let mut r = right();
        r.remove(4);
        let c = at_2100(r);
        assert_eq!(c.missing, 1, "{c}");
        assert!(!c.ok());
    }

    #[test]
    fn a_duplicate_result_fails() {
        let mut r = right();
        r.push(Some((0, 0, 3)));
        let c = at_2100(r);
        assert_eq!(c.duplicates, 1, "{c}");
        assert!(!c.ok());
    }

    #[test]
    fn a_wrong_count_fails() {
        let mut r = right();
        r[1] = Some((1, 0, 4));
        let c = at_2100(r);
        assert_eq!(c.wrong_counts, 1, "{c}");
        assert!(!c.ok());
    }

    /// A result for an open window, for a window never written into, or
    /// for a key not written into its window.
    #[test]
    fn unexpected_results_fail() {
        for extra in [
            (0, 2_000, 2),
            (0, 5_000, 1),
            (0, 1_000, 1),
            (9, 0, 1),
            (-1, 0, 1),
        ] {
            let mut r = right();
            r.push(Some(extra));
            let c = at_2100(r);
            assert_eq!(c.unexpected, 1, "{extra:?}: {c}");
            assert!(!c.ok());
        }
    }

    #[test]
    fn an_undecodable_record_fails() {
        let mut r = right();
        r.push(None);
        let c = at_2100(r);
        assert_eq!(c.undecodable, 1, "{c}");
        assert!(!c.ok());
    }
}
