//! Integration tests of the TopologyTestDriver and, through it, of the
//! streams DSL: windowed aggregations, the late rule and the emission pass,
//! joins, the Processor API, scheduled sources and topology refusals.

mod harness;
mod scenario;

mod closed_windows;
mod deserialization;
mod joins;
mod processor_api;
mod refusals;
mod restart;
mod spec_examples;
mod stream_table;
mod validation;
mod window_scenarios;
