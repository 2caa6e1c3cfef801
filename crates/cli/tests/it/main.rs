//! The `stoatflow` binary, run as a user runs it: outputs asserted.

mod closed_stdout;
mod describe;
mod log_commands;
mod run_and_watermarks;
mod support;
