//! Integration tests of stoatflow-log: the contract suite against both
//! embedded modes, crash tests, damage (known holes and a sweep over every
//! byte), bad input, maintenance and persistence.

mod bad_input;
mod compact_delete;
mod compaction;
mod contract;
mod crash;
mod damage_sweep;
mod decoders;
mod files;
mod holes;
mod membership;
mod observe;
mod offset_range;
mod open_files;
mod persistence;
mod small_log;
mod topic_bounds;
