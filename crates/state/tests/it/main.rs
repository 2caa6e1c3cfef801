//! Integration tests of stoatflow-state: round trips through the changelog, restore of
//! every committed prefix, local damage and the damage sweep,
//! bad input, segment expiry and the engine's own stores.

mod bad_input;
mod damage_sweep;
mod encode_failures;
mod engine_stores;
mod engines;
mod hostile_bytes;
mod local_damage;
mod restart;
mod restore_prefixes;
mod roundtrip;
mod segment_expiry;
mod store_crash_points;
