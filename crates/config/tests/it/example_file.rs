//! The README's complete example file loads, and holds the defaults it
//! says it holds.

use std::path::PathBuf;

use stoatflow_config::{BackendSettings, ConfigLoader};

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config/stoatflow.yaml")
}

#[test]
fn the_example_file_loads_with_the_defaults_it_documents() {
    let c = ConfigLoader::new()
        .yaml_file(example())
        .unwrap()
        .build()
        .unwrap();
    let d = ConfigLoader::new()
        .map([("application.id", "orders-app")])
        .build()
        .unwrap();
    assert_eq!(c.runtime.application_id(), "orders-app");
    // Relative to the working directory: the file runs as any user, not
    // only one that may write under /var/lib.
    assert_eq!(
        c.backend,
        BackendSettings::Embedded {
            dir: "stoatflow-data/orders-app".into()
        }
    );
    assert!(c.runtime.state_dir.is_none());
    assert_eq!(c.endpoints, d.endpoints);
    assert_eq!(c.recording_level, d.recording_level);
    assert_eq!(
        c.runtime.tracker.default_idleness,
        d.runtime.tracker.default_idleness
    );
    assert_eq!(
        c.runtime.tracker.auto_interval,
        d.runtime.tracker.auto_interval
    );
    assert_eq!(
        c.runtime.tracker.preview_after,
        d.runtime.tracker.preview_after
    );
    assert_eq!(
        c.runtime.streams.max_out_of_orderness,
        d.runtime.streams.max_out_of_orderness
    );
    assert_eq!(c.runtime.barrier, d.runtime.barrier);
    assert_eq!(c.runtime.guarantee, d.runtime.guarantee);
    assert_eq!(
        c.runtime.streams.coordination,
        d.runtime.streams.coordination
    );
    assert_eq!(c.runtime.streams.dispatch, d.runtime.streams.dispatch);
    assert_eq!(c.runtime.poll_wait, d.runtime.poll_wait);
    assert_eq!(
        c.runtime.restore_stall_timeout,
        d.runtime.restore_stall_timeout
    );
    assert_eq!(c.runtime.purge_interval, d.runtime.purge_interval);
    assert_eq!(
        c.runtime.windowstore_changelog_additional_retention,
        d.runtime.windowstore_changelog_additional_retention
    );
}

#[test]
fn the_commented_kafka_part_loads_when_uncommented() {
    let text = std::fs::read_to_string(example()).unwrap();
    let (base, commented) = text
        .split_once("# With `stoatflow.backend: kafka`")
        .expect("the Kafka part");
    let mut kafka: String = base
        .lines()
        .filter(|l| !l.contains("embedded:") && !l.contains("dir:"))
        .map(|l| format!("{}\n", l.replace("backend: embedded", "backend: kafka")))
        .collect();
    for line in commented.lines().skip(1) {
        kafka.push_str(line.strip_prefix("# ").unwrap_or(line));
        kafka.push('\n');
    }
    let c = ConfigLoader::new()
        .yaml_str("uncommented.yaml", &kafka)
        .unwrap()
        .build();
    let c = c.unwrap_or_else(|e| panic!("{e}\n{kafka}"));
    let BackendSettings::Kafka(k) = &c.backend else {
        panic!("not kafka")
    };
    assert_eq!(k.bootstrap_servers, "broker-1:9092,broker-2:9092");
    assert_eq!(k.properties["sasl.password"].expose(), "change-me");
    assert!(!format!("{c:?}").contains("change-me"));
}
