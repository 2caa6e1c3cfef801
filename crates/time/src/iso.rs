//! ISO-8601 rendering of millisecond timestamps, UTC, without a calendar crate.
//!
//! Owns the civil-date arithmetic only; it knows nothing of event or wall time.

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

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar (the well-known era-based algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
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
}
