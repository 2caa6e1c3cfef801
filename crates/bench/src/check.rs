//! Whether several systems computed the same windowed counts: the result
//! check of `bench/compare`, which prints no ratio unless every system
//! produced the same windows with the same counts.
//!
//! Each system writes one line per emitted window, `key start_ms count`
//! (spaces or commas between the fields, in any order of lines); [`parse`]
//! reads one such file into [`WindowCounts`] and [`compare`] finds the first
//! window (by key, then start) on which two systems differ.
//!
//! It knows nothing of how the systems ran or how long they took.

use std::collections::BTreeMap;
use std::fmt;

/// One system's windows: (key, window start in ms) → count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowCounts {
    /// The system that produced them.
    pub system: String,
    /// (key, window start) → count.
    pub counts: BTreeMap<(i64, i64), i64>,
}

impl WindowCounts {
    /// The sum of every window's count.
    pub fn total(&self) -> i64 {
        self.counts.values().sum()
    }
}

/// A results file that is not `key start count` lines.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// A line does not hold three integers.
    #[error("{system}: line {line}: expected `key start count`, got {text:?}")]
    Line {
        /// The system whose file it is.
        system: String,
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
    /// The same window appears twice: a system emitted it more than once.
    #[error("{system}: line {line}: window (key {key}, start {start}) appears a second time")]
    Duplicate {
        /// The system whose file it is.
        system: String,
        /// 1-based line number of the second occurrence.
        line: usize,
        /// The window's key.
        key: i64,
        /// The window's start, ms.
        start: i64,
    },
}

/// How two systems' results differ: the first differing window.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Mismatch {
    /// One system has a window the other does not.
    #[error(
        "results differ: {has} emitted window (key {key}, start {start}) with count {count}, {lacks} did not emit it"
    )]
    Missing {
        /// The system that emitted it.
        has: String,
        /// The system that did not.
        lacks: String,
        /// The window's key.
        key: i64,
        /// The window's start, ms.
        start: i64,
        /// Its count in `has`.
        count: i64,
    },
    /// Both emitted the window with different counts.
    #[error(
        "results differ: window (key {key}, start {start}) counts {left_count} in {left} but {right_count} in {right}"
    )]
    Count {
        /// The window's key.
        key: i64,
        /// The window's start, ms.
        start: i64,
        /// The first system.
        left: String,
        /// Its count there.
        left_count: i64,
        /// The second system.
        right: String,
        /// Its count there.
        right_count: i64,
    },
    /// Fewer than two systems to compare.
    #[error("results cannot be compared: {systems} system(s) produced windows, at least 2 needed")]
    TooFew {
        /// How many there were.
        systems: usize,
    },
}

/// What every system agreed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agreement {
    /// Windows each emitted.
    pub windows: usize,
    /// The sum of their counts (the events counted).
    pub total: i64,
}

impl fmt::Display for Agreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} windows, {} events counted, identical in every system",
            self.windows, self.total
        )
    }
}

/// Reads `system`'s results file text.
pub fn parse(system: &str, text: &str) -> Result<WindowCounts, ParseError> {
    let mut counts = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let bad = || ParseError::Line {
            system: system.to_owned(),
            line: i + 1,
            text: raw.to_owned(),
        };
        let mut fields = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|f| !f.is_empty())
            .map(|f| f.parse::<i64>().map_err(|_| bad()));
        let (Some(key), Some(start), Some(count), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(bad());
        };
        let (key, start) = (key?, start?);
        if counts.insert((key, start), count?).is_some() {
            return Err(ParseError::Duplicate {
                system: system.to_owned(),
                line: i + 1,
                key,
                start,
            });
        }
    }
    Ok(WindowCounts {
        system: system.to_owned(),
        counts,
    })
}

/// Compares every system against the first: the same windows with the same
/// counts, or the first window (by key, then start) where one differs.
pub fn compare(results: &[WindowCounts]) -> Result<Agreement, Mismatch> {
    let [first, rest @ ..] = results else {
        return Err(Mismatch::TooFew { systems: 0 });
    };
    if rest.is_empty() {
        return Err(Mismatch::TooFew { systems: 1 });
    }
    for other in rest {
        let (mut a, mut b) = (
            first.counts.iter().peekable(),
            other.counts.iter().peekable(),
        );
        loop {
            let missing =
                |has: &WindowCounts, lacks: &WindowCounts, (key, start): (i64, i64), count| {
                    Mismatch::Missing {
                        has: has.system.clone(),
                        lacks: lacks.system.clone(),
                        key,
                        start,
                        count,
                    }
                };
            match (a.peek().copied(), b.peek().copied()) {
                (None, None) => break,
                (Some((&w, &n)), None) => return Err(missing(first, other, w, n)),
                (None, Some((&w, &n))) => return Err(missing(other, first, w, n)),
                (Some((&wa, &na)), Some((&wb, &nb))) => {
                    if wa < wb {
                        return Err(missing(first, other, wa, na));
                    }
                    if wb < wa {
                        return Err(missing(other, first, wb, nb));
                    }
                    if na != nb {
                        return Err(Mismatch::Count {
                            key: wa.0,
                            start: wa.1,
                            left: first.system.clone(),
                            left_count: na,
                            right: other.system.clone(),
                            right_count: nb,
                        });
                    }
                    a.next();
                    b.next();
                }
            }
        }
    }
    Ok(Agreement {
        windows: first.counts.len(),
        total: first.total(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tumbling count's windows for `events` events: key `i mod keys` at `i` ms, 10 s windows.
    fn tumbling(events: i64, keys: i64) -> String {
        let mut counts: BTreeMap<(i64, i64), i64> = BTreeMap::new();
        for i in 0..events {
            *counts.entry((i % keys, i - i % 10_000)).or_default() += 1;
        }
        let lines: Vec<String> = counts
            .iter()
            .map(|((k, s), n)| format!("{k} {s} {n}"))
            .collect();
        lines.join("\n")
    }

    #[test]
    fn identical_results_agree_whatever_the_line_order_and_separator() {
        let ours = parse("stoatflow", &tumbling(25_000, 10)).unwrap();
        let text = tumbling(25_000, 10);
        let reversed: Vec<String> = text.lines().rev().map(|l| l.replace(' ', ",")).collect();
        let theirs = parse("bytewax", &reversed.join("\n")).unwrap();
        let agreed = compare(&[ours, theirs]).unwrap();
        assert_eq!(
            agreed,
            Agreement {
                windows: 30,
                total: 25_000
            }
        );
    }

    #[test]
    fn a_deliberately_wrong_count_is_caught_and_named() {
        let good = tumbling(25_000, 10);
        // One window of key 3 counts one event too many.
        let wrong = good.replacen("3 10000 1000", "3 10000 1001", 1);
        assert_ne!(good, wrong, "the fixture has the window to corrupt");
        let results = [
            parse("stoatflow", &good).unwrap(),
            parse("bytewax", &good).unwrap(),
            parse("pyflink-sql", &wrong).unwrap(),
        ];
        let err = compare(&results).unwrap_err();
        assert_eq!(
            err,
            Mismatch::Count {
                key: 3,
                start: 10_000,
                left: "stoatflow".into(),
                left_count: 1_000,
                right: "pyflink-sql".into(),
                right_count: 1_001,
            }
        );
        assert!(
            err.to_string()
                .contains("counts 1000 in stoatflow but 1001 in pyflink-sql")
        );
    }

    #[test]
    fn a_missing_or_extra_window_is_caught() {
        let good = tumbling(25_000, 10);
        let fewer: Vec<&str> = good
            .lines()
            .filter(|l| !l.starts_with("7 20000 "))
            .collect();
        let err = compare(&[
            parse("stoatflow", &good).unwrap(),
            parse("bytewax", &fewer.join("\n")).unwrap(),
        ])
        .unwrap_err();
        assert!(
            matches!(&err, Mismatch::Missing { has, lacks, key: 7, start: 20_000, count: 500 }
                if has == "stoatflow" && lacks == "bytewax"),
            "{err}"
        );
        let extra = format!("{good}\n11 0 1");
        let err = compare(&[
            parse("stoatflow", &good).unwrap(),
            parse("bytewax", &extra).unwrap(),
        ])
        .unwrap_err();
        assert!(
            matches!(
                &err,
                Mismatch::Missing {
                    key: 11,
                    start: 0,
                    count: 1,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn one_system_alone_is_not_an_agreement() {
        let only = parse("stoatflow", "1 0 5").unwrap();
        assert_eq!(compare(&[only]), Err(Mismatch::TooFew { systems: 1 }));
    }

    #[test]
    fn malformed_and_duplicate_lines_are_refused_with_their_position() {
        let err = parse("bytewax", "1 0 5\n2 zero 5").unwrap_err();
        assert_eq!(
            err.to_string(),
            "bytewax: line 2: expected `key start count`, got \"2 zero 5\""
        );
        let err = parse("bytewax", "1 0 5\n1 0 5").unwrap_err();
        assert!(matches!(
            err,
            ParseError::Duplicate {
                line: 2,
                key: 1,
                start: 0,
                ..
            }
        ));
        assert!(parse("bytewax", "1 0").is_err());
        assert!(parse("bytewax", "1 0 5 6").is_err());
    }
}
