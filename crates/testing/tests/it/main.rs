//! The integration tests of stoatflow-testing: topologies run through the
//! driver, data-driven through one helper (`harness::run`).

mod cogroup;
mod harness;
mod properties;
mod retention;
mod sessions;
mod sliding;
mod suppress;
