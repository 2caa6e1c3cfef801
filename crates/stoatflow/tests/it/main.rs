//! Integration tests of the facade: the application built from its
//! configuration, on each backend.

#[path = "../../../kafka/tests/it/broker.rs"]
#[allow(dead_code)]
mod broker;
mod from_config;
mod kafka_backend;
mod store_routes;
mod support;
