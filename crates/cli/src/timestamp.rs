//! A record timestamp typed by hand (the third field of a `log produce`
//! line): whole milliseconds since the epoch, within event time's range,
//! 0 (1970-01-01T00:00:00Z) to 9999-12-31T23:59:59.999Z, because the
//! bundled examples read it as their event time. A negative one is what
//! Kafka means by "no timestamp", and one beyond year 9999 is almost surely
//! micro- or nanoseconds: both are refused rather than written.
//!
//! Owns the parsing; the bounds and their messages are `stoatflow::EventTime`'s,
//! the record is `log_cmd`'s.

use stoatflow::EventTime;

/// `text` as a timestamp; the error names the value and what is wrong.
pub fn parse(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let ms: i64 = text.parse().map_err(|_| {
        format!("timestamp {text:?} is not a whole number of milliseconds since the epoch")
    })?;
    EventTime::new(ms)
        .map(|_| ms)
        .map_err(|e| format!("timestamp refused: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounds_are_accepted_and_what_is_outside_is_refused() {
        let max = EventTime::MAX.as_millis();
        assert_eq!(parse("0"), Ok(0));
        assert_eq!(parse(" 1790000000000 "), Ok(1_790_000_000_000));
        assert_eq!(parse(&max.to_string()), Ok(max));
        let e = parse("-5").unwrap_err();
        assert!(
            e == "timestamp refused: negative event time -5 ms: event time must be milliseconds since the epoch, >= 0",
            "{e}"
        );
        let e = parse(&(max + 1).to_string()).unwrap_err();
        assert!(
            e.starts_with(
                "timestamp refused: absurd event time 253402300800000 ms (after year 9999)"
            ),
            "{e}"
        );
        let e = parse("1e3").unwrap_err();
        assert!(
            e.starts_with("timestamp \"1e3\" is not a whole number"),
            "{e}"
        );
    }
}
