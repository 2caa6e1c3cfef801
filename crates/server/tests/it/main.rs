//! Integration tests of stoatflow-server.

mod flood;
mod http;
mod metrics;
mod monitoring;
mod openapi;
mod page;
mod probes;
mod prom_text;
mod promtool;
mod silence;
mod support;
mod watermarks_endpoint;
