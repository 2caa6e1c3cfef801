//! Integration tests of stoatflow-testing: joins, the Processor API,
//! scheduled sources and topology refusals, through the driver.

mod harness;
mod joins;
mod processor_api;
mod refusals;
mod stream_table;
