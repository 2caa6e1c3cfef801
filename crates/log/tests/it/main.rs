//! Integration tests of stoatflow-log: the contract suite against both
//! embedded modes, crash tests, bad input, maintenance and persistence.

mod bad_input;
mod contract;
mod crash;
mod persistence;
