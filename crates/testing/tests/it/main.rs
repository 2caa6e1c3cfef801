//! Integration tests of the TopologyTestDriver and, through it, of the
//! streams DSL's windowed aggregations, the late rule and the emission pass.

mod scenario;

mod closed_windows;
mod deserialization;
mod spec_examples;
mod validation;
mod window_scenarios;
