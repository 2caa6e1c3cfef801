//! Integration tests of the TopologyTestDriver and, through it, of the
//! streams DSL: windowed aggregations (time, sliding, session, cogroup), the
//! late rule and the emission pass, suppress, joins, the Processor API,
//! scheduled sources, restarts and topology refusals.
//!
//! Data-driven cases go through three helpers, each the single caller of the
//! driver API for its family: `scenario` (time-windowed aggregations),
//! `harness` (sliding, session, cogroup, suppress, retention) and
//! `join_harness` (joins, Processor API, stream-table).

mod harness;
mod join_harness;
mod scenario;

mod closed_windows;
mod cogroup;
mod deserialization;
mod dsl;
mod joins;
mod processor_api;
mod properties;
mod refusals;
mod restart;
mod retention;
mod sessions;
mod sliding;
mod spec_examples;
mod state_serde;
mod stream_table;
mod suppress;
mod validation;
mod window_scenarios;
