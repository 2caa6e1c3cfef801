//! Reading stores through the driver: typed accessors per store
//! kind, an error (never a silent `None`) for a wrong type or name, and
//! `all()` on every store kind through the re-exported store traits.
//! Tests the driver's store API itself, so it calls the driver directly.

use std::time::Duration;

use stoatflow_state::{AnyKeyValueStore, STORE_METADATA_FILE};
use stoatflow_streams::{
    Consumed, KeyValueStore, Materialized, Serdes, SessionStore, SessionWindows, StreamsBuilder,
    StreamsConfig, TimeWindows, WindowStore,
};
use stoatflow_testing::{DriverConfig, DriverError, TopologyTestDriver};

fn driver() -> TopologyTestDriver {
    driver_in(None)
}

/// The stores' topology; with `state_dir`, stores on the persistent engine under it.
fn driver_in(state_dir: Option<&std::path::Path>) -> TopologyTestDriver {
    let mut b = StreamsBuilder::new();
    let grouped = b
        .stream("in", Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key();
    let _ = grouped.count_with(Materialized::as_("counts"));
    let _ = grouped
        .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_millis(
            10,
        )))
        .count_with(Materialized::as_("windows"));
    let _ = grouped
        .windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(
            Duration::from_millis(5),
        ))
        .count_with(Materialized::as_("sessions"));
    TopologyTestDriver::with_driver_config(
        b.build().unwrap(),
        StreamsConfig::new("stores"),
        DriverConfig {
            state_dir: state_dir.map(ToOwned::to_owned),
            ..DriverConfig::default()
        },
    )
    .unwrap()
}

/// With a state directory the driver keeps the stores on disk, each in its own
/// directory under `<dir>/<sub-topology>/`; a graceful or crash restart closes
/// them, reopens them and restores them from the committed changelogs.
/// Without one every store stays in memory.
#[test]
fn a_state_dir_puts_the_stores_on_disk_and_restarts_reopen_them() {
    let counts = |d: &TopologyTestDriver| {
        let store = d.key_value_store::<String, i64>("counts").unwrap();
        let store = store.borrow();
        let persistent = matches!(&*store, AnyKeyValueStore::Persistent(_));
        let all: Vec<(String, i64)> = store
            .all()
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k, v.value))
            .collect();
        (persistent, all)
    };
    let pipe = |d: &TopologyTestDriver, k: &str, ts| {
        d.create_input_topic("in", Serdes::string(), Serdes::string())
            .pipe_input_with_timestamp(k.into(), "x".into(), ts)
            .unwrap();
    };
    let dir = crate::harness::scratch_dir().unwrap();
    let d = driver_in(Some(dir.path()));
    for (k, ts) in [("a", 1), ("b", 2), ("a", 3)] {
        pipe(&d, k, ts);
    }
    let want = vec![("a".to_owned(), 2), ("b".to_owned(), 1)];
    assert_eq!(counts(&d), (true, want.clone()));
    assert!(
        dir.path()
            .join("0")
            .join("counts")
            .join(STORE_METADATA_FILE)
            .is_file()
    );
    let d = d.restart().unwrap();
    assert_eq!(counts(&d), (true, want.clone()));
    let d = d.crash_restart().unwrap();
    assert_eq!(counts(&d), (true, want.clone()));
    assert!(!counts(&driver()).0);
}

#[test]
fn typed_accessors_read_every_store_kind_with_all() {
    let d = driver();
    let input = d.create_input_topic("in", Serdes::string(), Serdes::string());
    for (k, ts) in [("a", 1), ("b", 2), ("a", 3), ("a", 20)] {
        input
            .pipe_input_with_timestamp(k.into(), "x".into(), ts)
            .unwrap();
    }
    let counts = d.key_value_store::<String, i64>("counts").unwrap();
    let counts: Vec<_> = counts
        .borrow()
        .all()
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k, v.value))
        .collect();
    assert_eq!(counts, [("a".into(), 3), ("b".into(), 1)]);
    let windows = d.window_store::<String, i64>("windows").unwrap();
    let windows: Vec<_> = windows
        .borrow()
        .all()
        .unwrap()
        .into_iter()
        .map(|(start, k, v)| (start, k, v.value))
        .collect();
    assert_eq!(
        windows,
        [(0, "a".into(), 2), (0, "b".into(), 1), (20, "a".into(), 1)]
    );
    let sessions = d.session_store::<String, i64>("sessions").unwrap();
    let sessions: Vec<_> = sessions
        .borrow()
        .all()
        .unwrap()
        .into_iter()
        .map(|(w, k, v)| ((w.start, w.end), k, v))
        .collect();
    assert_eq!(
        sessions,
        [
            ((2, 2), "b".into(), 1),
            ((1, 3), "a".into(), 2),
            ((20, 20), "a".into(), 1)
        ]
    );
}

#[test]
fn a_wrong_value_type_is_an_error_naming_the_store_and_both_types() {
    let d = driver();
    let e = d.key_value_store::<String, String>("counts").unwrap_err();
    assert!(matches!(e, DriverError::StoreType { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("store counts is a"), "{msg}");
    assert!(msg.contains("ValueAndTimestamp<i64>"), "{msg}");
    assert!(
        msg.contains("ValueAndTimestamp<alloc::string::String>"),
        "{msg}"
    );
    // A window store asked for as a session store.
    let e = d.session_store::<String, i64>("windows").unwrap_err();
    assert!(e.to_string().contains("AnyWindowStore"), "{e}");
}

#[test]
fn an_unknown_store_is_an_error_listing_the_stores_there_are() {
    let e = driver().store::<()>("count").unwrap_err();
    assert!(matches!(e, DriverError::NoStore { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.starts_with("no store named count;"), "{msg}");
    for store in ["counts", "windows", "sessions"] {
        assert!(msg.contains(store), "{msg}");
    }
}
