//! The broker contract, run against the in-memory and the on-disk embedded log.

use stoatflow_log::{EmbeddedConfig, EmbeddedLog, contract};

macro_rules! contract_tests {
    ($($check:ident),* $(,)?) => {
        mod in_memory {
            use super::*;
            $(
                #[test]
                fn $check() {
                    contract::$check(&EmbeddedLog::in_memory(), "mem");
                }
            )*
        }
        mod on_disk {
            use super::*;
            $(
                #[test]
                fn $check() {
                    let dir = tempfile::tempdir().expect("tempdir");
                    let log = EmbeddedLog::open(dir.path()).expect("open");
                    contract::$check(&log, "disk");
                }
            )*
        }
    };
}

contract_tests!(
    round_trip,
    per_key_ordering,
    aborted_epoch_invisible,
    committed_epoch_visible,
    zombie_fenced,
    restore_compacted,
    ensure_topic_checks_shape,
    purge_keeps_what_is_at_or_past_it,
    batched_fetch,
    at_least_once_producer,
);

#[test]
fn oversized_record_refused_in_memory_and_on_disk() {
    let config = EmbeddedConfig {
        max_record_bytes: 1000,
        ..EmbeddedConfig::default()
    };
    contract::oversized_record_refused(&EmbeddedLog::in_memory_with(config.clone()), "mem", 1000);
    let dir = tempfile::tempdir().expect("tempdir");
    let log = EmbeddedLog::open_with(dir.path(), config).expect("open");
    contract::oversized_record_refused(&log, "disk", 1000);
}

/// A record size limit past what a record's length fields hold (1 GiB) is
/// refused at open, naming the setting, before anything is written.
#[test]
fn a_record_limit_past_one_gib_is_refused_naming_the_setting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = EmbeddedConfig {
        max_record_bytes: (1 << 30) + 1,
        ..EmbeddedConfig::default()
    };
    let Err(err) = EmbeddedLog::open_with(dir.path().join("log"), config) else {
        panic!("a record limit past 1 GiB");
    };
    assert!(err.to_string().contains("max_record_bytes"), "{err}");
    assert!(!dir.path().join("log").exists(), "nothing is created");
    let at_limit = EmbeddedConfig {
        max_record_bytes: 1 << 30,
        ..EmbeddedConfig::default()
    };
    EmbeddedLog::open_with(dir.path().join("log"), at_limit).expect("1 GiB is allowed");
}

#[test]
fn whole_suite_survives_a_reopen_between_checks() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let log = EmbeddedLog::open(dir.path()).expect("open");
        contract::all(&log, "first");
    }
    let log = EmbeddedLog::open(dir.path()).expect("reopen");
    contract::all(&log, "second");
    // The first run's topics are still there and readable.
    contract::restore_compacted(&log, "first-again");
}

/// Tiny segments, a rotating transaction log, and two open segment files
/// at a time (every other use closes one and opens another).
#[test]
fn small_segments_roll_and_the_suite_still_holds() {
    let config = EmbeddedConfig {
        segment_bytes: 512,
        txlog_rotate_bytes: 2048,
        max_open_segments: 2,
        ..EmbeddedConfig::default()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let log = EmbeddedLog::open_with(dir.path(), config.clone()).expect("open");
        contract::all(&log, "small");
    }
    let log = EmbeddedLog::open_with(dir.path(), config).expect("reopen");
    contract::all(&log, "small2");
}
