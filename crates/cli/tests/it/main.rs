//! The `stoatflow` binary, run as a user runs it: outputs asserted.

mod beside_run;
mod closed_stdout;
mod config_cmd;
mod describe;
mod error_messages;
mod log_commands;
mod output_levels;
mod run_and_watermarks;
mod start_checks;
mod support;
