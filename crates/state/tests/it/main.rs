//! Integration tests of stoatflow-state: round trips through the changelog, restore of
//! every committed prefix, local damage and the damage sweep,
//! bad input, segment expiry, the engine's own stores, and the two engines answering alike.

mod bad_input;
mod damage_sweep;
mod direct_open;
mod disk_bounds;
mod encode_failures;
mod engine_stores;
mod engines;
mod engines_agree;
mod fuzz;
mod hostile_bytes;
mod local_damage;
mod restart;
mod restore_prefixes;
mod roundtrip;
mod segment_expiry;
mod store_crash_points;

/// A proptest configuration of `short` cases, twenty times as many under
/// `STOATFLOW_HEAVY_TESTS`.
pub fn cases(short: u32) -> proptest::prelude::ProptestConfig {
    let heavy = std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some();
    proptest::prelude::ProptestConfig::with_cases(if heavy { short * 20 } else { short })
}

/// A fresh scratch directory, on tmpfs when there is one: the persistent engine syncs on
/// every open and every new segment, which on a busy disk costs far more than the test.
pub fn scratch_root() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(t) = tempfile::tempdir_in(shm)
    {
        return t;
    }
    tempfile::tempdir().expect("tempdir")
}
