//! Integration tests of the runtime, through its public API only.

mod close_while_restoring;
mod commit_faults;
mod crash_points;
mod direct_dispatch;
mod end_to_end;
mod families;
mod faulty_log;
mod fence_first;
mod hooked_log;
mod idle;
mod kill;
mod migration;
mod output_sequence;
mod overlap;
mod panics;
mod partition_time;
mod persistent_stores;
mod rebalance;
mod recovery;
mod refusals;
mod run_signals;
mod scripted_group;
mod standby;
mod support;
mod timed;
mod trailing_markers;
