//! Integration tests of stoatflow-state: round trips through the changelog, crash points,
//! bad input, segment expiry and the engine's own stores.

mod bad_input;
mod crash_points;
mod encode_failures;
mod engine_stores;
mod engines;
mod restart;
mod roundtrip;
mod segment_expiry;
