//! Integration tests of the runtime, through its public API only.

mod crash_points;
mod end_to_end;
mod families;
mod faulty_log;
mod kill;
mod recovery;
mod refusals;
mod support;
mod timed;
