//! Integration tests of stoatflow-kafka against a real broker (noida-db),
//! started by the tests themselves on a free loopback port.

mod bad_input;
mod broker;
mod contract;
mod cooperative;
mod describe;
mod fencing;
mod group_kill;
mod groups;
mod history;
mod key_metadata;
mod kill;
mod offset_reset;
mod rolling_restart;
mod runtime_eos;
mod standby;
mod static_restart;
