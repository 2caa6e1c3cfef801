//! The one way the commands print to stdout: `outln!` writes through a
//! locked stdout and returns the write's error instead of panicking as
//! `println!` does, and `main` ends quietly with status 0 when that error is
//! a broken pipe (the reader has gone, as in `stoatflow describe | head -1`).
//!
//! Owns stdout's error handling only; what is printed is each command's.

use std::io::{self, Write};

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
