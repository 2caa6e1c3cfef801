//! What the libraries' `tracing` events print on stderr: warnings and
//! errors by default, errors only with `-q`, more detail with each `-v`
//! (info, debug, trace); `RUST_LOG`, when set, decides instead, in its
//! simple form: a level, and `target=level` pairs, comma-separated (for
//! example `stoatflow_runtime=debug,warn`).
//!
//! Owns the subscriber's filter only; what is logged is the libraries'.

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The level the flags ask for.
pub fn level(verbose: u8, quiet: bool) -> LevelFilter {
    match (quiet, verbose) {
        (true, _) => LevelFilter::ERROR,
        (false, 0) => LevelFilter::WARN,
        (false, 1) => LevelFilter::INFO,
        (false, 2) => LevelFilter::DEBUG,
        (false, _) => LevelFilter::TRACE,
    }
}

/// The filter: `rust_log` if it is set and parses, else `flags`. The
/// second value is a warning to print when `rust_log` does not parse.
pub fn filter(rust_log: Option<&str>, flags: LevelFilter) -> (Targets, Option<String>) {
    let from_flags = Targets::new().with_default(flags);
    match rust_log.map(str::trim).filter(|s| !s.is_empty()) {
        None => (from_flags, None),
        Some(text) => match text.parse::<Targets>() {
            Ok(targets) => (targets, None),
            Err(e) => (
                from_flags,
                Some(format!(
                    "RUST_LOG={text:?} is ignored: {e} (expected a level such as `debug`, or \
                     `target=level` pairs such as `stoatflow_runtime=debug,warn`)"
                )),
            ),
        },
    }
}

/// Installs the subscriber for the process.
pub fn init(verbose: u8, quiet: bool) {
    let rust_log = std::env::var("RUST_LOG").ok();
    let (targets, warning) = filter(rust_log.as_deref(), level(verbose, quiet));
    tracing_subscriber::registry()
        .with(targets)
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .init();
    if let Some(warning) = warning {
        tracing::warn!("{warning}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_pick_the_level() {
        assert_eq!(level(0, false), LevelFilter::WARN);
        assert_eq!(level(1, false), LevelFilter::INFO);
        assert_eq!(level(2, false), LevelFilter::DEBUG);
        assert_eq!(level(5, false), LevelFilter::TRACE);
        assert_eq!(level(0, true), LevelFilter::ERROR);
    }

    #[test]
    fn rust_log_overrides_and_a_bad_one_is_named() {
        let (t, w) = filter(Some("stoatflow_runtime=debug,warn"), LevelFilter::ERROR);
        assert!(w.is_none());
        assert!(t.would_enable("stoatflow_runtime::engine", &tracing::Level::DEBUG));
        assert!(t.would_enable("other", &tracing::Level::WARN));
        assert!(!t.would_enable("other", &tracing::Level::INFO));

        let (t, w) = filter(Some("a=b=c"), LevelFilter::WARN);
        let w = w.expect("a warning");
        assert!(w.starts_with("RUST_LOG=\"a=b=c\" is ignored"), "{w}");
        assert!(t.would_enable("x", &tracing::Level::WARN));
        assert!(!t.would_enable("x", &tracing::Level::INFO));

        let (t, w) = filter(Some("  "), LevelFilter::INFO);
        assert!(w.is_none());
        assert!(t.would_enable("x", &tracing::Level::INFO));
    }
}
