//! ISO-8601 rendering of millisecond timestamps, UTC, without a calendar crate.
//!
//! Owns the civil-date arithmetic (the one day-to-date conversion of the
//! workspace: the cron schedules of `stoatflow-streams` use it too); it
//! knows nothing of event or wall time.

/// Formats milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ`, adding
/// `.mmm` only when the value has a millisecond part.
pub fn format_iso8601_millis(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (sod / 3600, (sod % 3600) / 60, sod % 60);
    if millis == 0 {
        format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
    } else {
        format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{millis:03}Z")
    }
}

/// Days since 1970-01-01 (negative before it) to (year, month 1–12, day
/// 1–31) in the proleptic Gregorian calendar, UTC (the well-known era-based
/// algorithm: 400-year eras of 146 097 days, years counted from March so the
/// leap day ends one).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_known_instants() {
        assert_eq!(
            format_iso8601_millis(1_790_071_560_000),
            "2026-09-22T10:06:00Z"
        );
        assert_eq!(
            format_iso8601_millis(1_790_071_058_000),
            "2026-09-22T09:57:38Z"
        );
        assert_eq!(
            format_iso8601_millis(1_790_071_592_000),
            "2026-09-22T10:06:32Z"
        );
    }

    #[test]
    fn renders_epoch_leap_day_and_millis() {
        assert_eq!(format_iso8601_millis(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            format_iso8601_millis(951_782_400_000),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(format_iso8601_millis(1_500), "1970-01-01T00:00:01.500Z");
        assert_eq!(format_iso8601_millis(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn days_around_the_epoch_and_before_it() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(-365), (1969, 1, 1));
        assert_eq!(civil_from_days(-366), (1968, 12, 31));
        // 1600-03-01, the first day of an era: the negative era arithmetic.
        assert_eq!(civil_from_days(-135_080), (1600, 3, 1));
        assert_eq!(civil_from_days(-135_081), (1600, 2, 29));
    }

    #[test]
    fn year_boundaries() {
        assert_eq!(civil_from_days(364), (1970, 12, 31));
        assert_eq!(civil_from_days(365), (1971, 1, 1));
        // 2000-01-01 and the day before.
        assert_eq!(civil_from_days(10_957), (2000, 1, 1));
        assert_eq!(civil_from_days(10_956), (1999, 12, 31));
    }

    #[test]
    fn leap_years_by_the_four_hundred_year_rule() {
        // 1972 (divisible by 4): a 29th of February.
        assert_eq!(civil_from_days(789), (1972, 2, 29));
        assert_eq!(civil_from_days(790), (1972, 3, 1));
        // 2000 (divisible by 400): a leap year.
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        // 2100 (divisible by 100, not 400): no 29th of February.
        assert_eq!(civil_from_days(47_540), (2100, 2, 28));
        assert_eq!(civil_from_days(47_541), (2100, 3, 1));
        // 1900 likewise, before the epoch.
        assert_eq!(civil_from_days(-25_509), (1900, 2, 28));
        assert_eq!(civil_from_days(-25_508), (1900, 3, 1));
    }

    #[test]
    fn every_day_follows_the_one_before() {
        // From 1600 to 2400: each day is the previous one's successor in
        // the calendar (month lengths, leap days, year turns).
        let mut prev = civil_from_days(-135_081);
        for days in -135_080..157_000 {
            let (y, m, d) = civil_from_days(days);
            let (py, pm, pd) = prev;
            let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            let month_len = match pm {
                2 if leap(py) => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            let expected = match (pd == month_len, pm == 12) {
                (false, _) => (py, pm, pd + 1),
                (true, false) => (py, pm + 1, 1),
                (true, true) => (py + 1, 1, 1),
            };
            assert_eq!((y, m, d), expected, "day {days}");
            prev = (y, m, d);
        }
    }
}
