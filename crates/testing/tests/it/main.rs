//! Integration tests of the TopologyTestDriver and, through it, of the
//! streams DSL: windowed aggregations (time, sliding, session, cogroup), the
//! late rule and the emission pass, suppress, joins, the Processor API,
//! scheduled sources, restarts and topology refusals.
//!
//! Topology tests are tables run by `harness`, the one caller of the driver
//! API among them; its module doc names the files that test the driver API
//! itself and call it directly.

mod harness;
mod harness_checks;

mod closed_windows;
mod cogroup;
mod deserialization;
mod drop_counts;
mod dsl;
mod dynamic_sinks;
mod fk_joins;
mod global_tables;
mod joins;
mod processor_api;
mod properties;
mod refusals;
mod repartition;
mod restart_at_operation_boundaries;
mod restart_handles;
mod retention;
mod sessions;
mod sliding;
mod state_serde;
mod store_access;
mod stream_table;
mod suppress;
mod table_aggregate;
mod table_joins;
mod validation;
mod window_scenarios;
mod worked_examples;
