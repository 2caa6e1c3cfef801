//! Integration tests of the facade: the application built from its
//! configuration, on each backend.

#[path = "../../../kafka/tests/it/broker.rs"]
#[allow(dead_code)]
mod broker;
mod from_config;
#[path = "../../../runtime/tests/it/hooked_log.rs"]
#[allow(dead_code)]
mod hooked_log;
mod kafka_backend;
mod key_owner;
#[path = "../../../runtime/tests/it/scripted_group.rs"]
#[allow(dead_code)]
mod scripted_group;
mod store_routes;
mod support;
