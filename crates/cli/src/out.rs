//! The one way the commands print to stdout: `outln!` writes through a
//! locked stdout and returns the write's error instead of panicking as
//! `println!` does, and `main` ends quietly with status 0 when that error is
//! a broken pipe (the reader has gone, as in `stoatflow describe | head -1`).
//!
//! `sayln!` (stdout) and `noteln!` (stderr) print what a command says about
//! its progress rather than its results; `-q` silences them, and the
//! progress bars, through [`set_quiet`].
//!
//! Owns stdout's error handling and the quiet switch; what is printed is
//! each command's.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// `-q`: errors only on stderr, no progress messages or bars.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `-q` was given.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Writes `args` to stdout and flushes it.
pub fn write(args: std::fmt::Arguments<'_>) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_fmt(args)?;
    stdout.flush()
}

/// `println!` that returns `io::Result<()>`.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;

/// [`write`] unless `-q`.
pub fn say(args: std::fmt::Arguments<'_>) -> io::Result<()> {
    if quiet() { Ok(()) } else { write(args) }
}

/// A progress message on stdout (`outln!` that `-q` silences).
macro_rules! sayln {
    ($($arg:tt)*) => {
        $crate::out::say(format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use sayln;

/// A progress message on stderr (`eprintln!` that `-q` silences).
macro_rules! noteln {
    ($($arg:tt)*) => {
        if !$crate::out::quiet() {
            eprintln!($($arg)*);
        }
    };
}
pub(crate) use noteln;

/// `bar`, hidden under `-q` (indicatif already hides it off a terminal).
pub fn bar(bar: indicatif::ProgressBar) -> indicatif::ProgressBar {
    if quiet() {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar
}

/// Whether `error` is stdout's reader having gone: any cause in its chain
/// is an I/O error of kind `BrokenPipe`.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_pipe_is_found_under_context() {
        let e = anyhow::Error::from(io::Error::from(io::ErrorKind::BrokenPipe)).context("printing");
        assert!(is_broken_pipe(&e));
        let other = anyhow::Error::from(io::Error::from(io::ErrorKind::NotFound));
        assert!(!is_broken_pipe(&other));
    }
}
