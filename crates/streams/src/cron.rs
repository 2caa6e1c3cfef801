//! A small five-field cron parser (`minute hour day-of-month month
//! day-of-week`, UTC): `*`, numbers, lists `a,b`, ranges `a-b` and steps
//! `*/n`, `a-b/n`; day-of-week 0–7 with 0 and 7 Sunday; when both day fields
//! are restricted either may match (Vixie cron). Written here rather than
//! taken from a crate: it is ~150 lines and needs no time-zone database.
//!
//! This module knows only epoch milliseconds; it never reads a clock.

use stoatflow_time::civil_from_days;

use crate::error::TopologyError;

/// A parsed cron expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronSchedule {
    expr: String,
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    dom_any: bool,
    dow_any: bool,
}

fn field(
    spec: &str,
    lo: u32,
    hi: u32,
    name: &str,
    expr: &str,
) -> Result<(u64, bool), TopologyError> {
    let bad = |why: String| TopologyError::InvalidArgument {
        node: format!("cron \"{expr}\""),
        reason: format!("{name} field \"{spec}\": {why}"),
    };
    let mut bits = 0u64;
    for part in spec.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (
                r,
                s.parse::<u32>().map_err(|_| bad(format!("bad step {s}")))?,
            ),
            None => (part, 1),
        };
        if step == 0 {
            return Err(bad("step 0".into()));
        }
        let (a, b) = if range == "*" {
            (lo, hi)
        } else if let Some((a, b)) = range.split_once('-') {
            let a = a
                .parse::<u32>()
                .map_err(|_| bad(format!("bad number {a}")))?;
            let b = b
                .parse::<u32>()
                .map_err(|_| bad(format!("bad number {b}")))?;
            (a, b)
        } else {
            let a = range
                .parse::<u32>()
                .map_err(|_| bad(format!("bad number {range}")))?;
            (a, if part.contains('/') { hi } else { a })
        };
        if a < lo || b > hi || a > b {
            return Err(bad(format!("{a}-{b} outside {lo}-{hi}")));
        }
        let mut v = a;
        while v <= b {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok((bits, spec == "*"))
}

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

impl CronSchedule {
    /// Parses a five-field expression; the error names the expression and field.
    pub fn parse(expr: &str) -> Result<Self, TopologyError> {
        let f: Vec<&str> = expr.split_whitespace().collect();
        if f.len() != 5 {
            return Err(TopologyError::InvalidArgument {
                node: format!("cron \"{expr}\""),
                reason: format!(
                    "expected 5 fields (minute hour day month weekday), got {}",
                    f.len()
                ),
            });
        }
        let (minutes, _) = field(f[0], 0, 59, "minute", expr)?;
        let (hours, _) = field(f[1], 0, 23, "hour", expr)?;
        let (days, dom_any) = field(f[2], 1, 31, "day-of-month", expr)?;
        let (months, _) = field(f[3], 1, 12, "month", expr)?;
        let (mut weekdays, dow_any) = field(f[4], 0, 7, "day-of-week", expr)?;
        if weekdays & (1 << 7) != 0 {
            weekdays |= 1;
        }
        Ok(CronSchedule {
            expr: expr.to_owned(),
            minutes,
            hours,
            days,
            months,
            weekdays,
            dom_any,
            dow_any,
        })
    }

    /// The expression as written.
    pub fn expression(&self) -> &str {
        &self.expr
    }

    fn day_matches(&self, days: i64) -> bool {
        let (_, m, d) = civil_from_days(days);
        if self.months & (1 << m) == 0 {
            return false;
        }
        let wd = (days + 4).rem_euclid(7) as u32; // 1970-01-01 was a Thursday
        let dom = self.days & (1 << d) != 0;
        let dow = self.weekdays & (1 << wd) != 0;
        match (self.dom_any, self.dow_any) {
            (true, true) => true,
            (false, true) => dom,
            (true, false) => dow,
            (false, false) => dom || dow,
        }
    }

    /// The first firing time strictly after `after_ms` (whole minutes), or
    /// `None` if there is none within eight years.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        let mut t = after_ms.div_euclid(MINUTE) * MINUTE + MINUTE;
        let limit = t.saturating_add(8 * 366 * DAY);
        while t < limit {
            let days = t.div_euclid(DAY);
            if !self.day_matches(days) {
                t = (days + 1) * DAY;
                continue;
            }
            let h = (t.rem_euclid(DAY) / HOUR) as u32;
            if self.hours & (1 << h) == 0 {
                t = t.div_euclid(HOUR) * HOUR + HOUR;
                continue;
            }
            let m = (t.rem_euclid(HOUR) / MINUTE) as u32;
            if self.minutes & (1 << m) == 0 {
                t += MINUTE;
                continue;
            }
            return Some(t);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_five_minutes() {
        let c = CronSchedule::parse("*/5 * * * *").unwrap();
        assert_eq!(c.next_after(0), Some(5 * MINUTE));
        assert_eq!(c.next_after(5 * MINUTE), Some(10 * MINUTE));
        assert_eq!(c.next_after(5 * MINUTE - 1), Some(5 * MINUTE));
    }

    #[test]
    fn daily_at_a_time_and_weekdays() {
        // 1970-01-01 was a Thursday (4); the first Monday 09:30 is 1970-01-05.
        let c = CronSchedule::parse("30 9 * * 1").unwrap();
        assert_eq!(c.next_after(0), Some(4 * DAY + 9 * HOUR + 30 * MINUTE));
        let c = CronSchedule::parse("0 0 1 3 *").unwrap();
        assert_eq!(
            civil_from_days(c.next_after(0).unwrap() / DAY),
            (1970, 3, 1)
        );
        let c = CronSchedule::parse("0 12 29 2 *").unwrap();
        assert_eq!(
            civil_from_days(c.next_after(0).unwrap() / DAY),
            (1972, 2, 29)
        );
    }

    #[test]
    fn bad_expressions_name_the_field() {
        let e = CronSchedule::parse("61 * * * *").unwrap_err().to_string();
        assert!(e.contains("minute") && e.contains("61 * * * *"), "{e}");
        assert!(CronSchedule::parse("* * *").is_err());
        assert!(CronSchedule::parse("*/0 * * * *").is_err());
    }
}
