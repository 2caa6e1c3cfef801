//! Integration tests of stoatflow-state: round trips through the changelog, crash points,
//! bad input, segment expiry and the engine's own stores.

mod bad_input;
mod crash_points;
mod damage_sweep;
mod engine_stores;
mod engines;
mod local_damage;
mod restart;
mod roundtrip;
mod segment_expiry;
