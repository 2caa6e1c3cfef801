//! Every key of the table, set to a value other than its default, from a
//! YAML file and from the environment, lands in its typed field.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use stoatflow_config::{
    AppConfig, BackendSettings, ConfigLoader, KEYS, PropertyValue, RecordingLevel, env_name,
};
use stoatflow_runtime::ProcessingGuarantee;
use stoatflow_streams::{
    CoordinationMode, DeserializationHandler, DispatchMode, ProductionHandler, StoreType,
};
use stoatflow_time::GeneratorSpec;

type Check = fn(&AppConfig) -> bool;

/// (key, a value other than the default, what it must set). Keys of the
/// Kafka backend are checked with `stoatflow.backend: kafka`.
fn table() -> Vec<(&'static str, &'static str, Check)> {
    vec![
        ("application.id", "orders-app", |c| {
            c.runtime.application_id() == "orders-app"
        }),
        ("processing.guarantee", "at_least_once", |c| {
            c.runtime.guarantee == ProcessingGuarantee::AtLeastOnce
        }),
        (
            "default.deserialization.exception.handler",
            "log-and-continue",
            |c| c.runtime.streams.deserialization_handler == DeserializationHandler::LogAndContinue,
        ),
        ("default.production.exception.handler", "continue", |c| {
            c.runtime.streams.production_handler == ProductionHandler::Continue
        }),
        (
            "bootstrap.servers",
            "b1:9092,b2:9092",
            |c| matches!(&c.backend, BackendSettings::Kafka(k) if k.bootstrap_servers == "b1:9092,b2:9092"),
        ),
        (
            "client.id",
            "orders-client",
            |c| matches!(&c.backend, BackendSettings::Kafka(k) if k.client_id == "orders-client"),
        ),
        (
            "replication.factor",
            "3",
            |c| matches!(&c.backend, BackendSettings::Kafka(k) if k.replication_factor == Some(3)),
        ),
        ("metrics.recording.level", "debug", |c| {
            c.recording_level == RecordingLevel::Debug
        }),
        ("runtime.endpoints.enabled", "false", |c| {
            !c.endpoints.enabled
        }),
        ("runtime.endpoints.listen", "127.0.0.1:9999", |c| {
            c.endpoints.listen == "127.0.0.1:9999".parse::<SocketAddr>().unwrap()
        }),
        ("runtime.endpoints.allow-non-loopback", "true", |c| {
            c.endpoints.allow_non_loopback
        }),
        ("runtime.endpoints.info.show-watermarks", "false", |c| {
            !c.endpoints.info_show_watermarks
        }),
        ("runtime.endpoints.max-connections", "4", |c| {
            c.endpoints.max_connections == 4
        }),
        ("runtime.endpoints.request-timeout-ms", "250", |c| {
            c.endpoints.request_timeout == Duration::from_millis(250)
        }),
        ("runtime.endpoints.max-requests-per-second", "50", |c| {
            c.endpoints.max_requests_per_second == 50
        }),
        ("runtime.endpoints.refresh-ms", "0", |c| {
            c.endpoints.refresh == Duration::ZERO
        }),
        ("stoatflow.backend", "memory", |c| {
            c.backend == BackendSettings::Memory
        }),
        ("stoatflow.embedded.dir", "/var/lib/orders", |c| {
            c.backend
                == BackendSettings::Embedded {
                    dir: PathBuf::from("/var/lib/orders"),
                }
        }),
        ("stoatflow.changelog.enabled", "false", |c| {
            !c.runtime.streams.changelog_enabled
        }),
        ("stoatflow.commit-barrier.interval-ms", "700", |c| {
            c.runtime.barrier.interval == Duration::from_millis(700)
        }),
        ("stoatflow.commit-barrier.interval-factor", "2.5", |c| {
            c.runtime.barrier.interval_factor == 2.5
        }),
        ("stoatflow.commit-barrier.min-interval-ms", "200", |c| {
            c.runtime.barrier.min_interval == Duration::from_millis(200)
        }),
        ("stoatflow.commit-barrier.max-interval-ms", "9000", |c| {
            c.runtime.barrier.max_interval == Duration::from_millis(9_000)
        }),
        (
            "stoatflow.processing.timestamp-coordination-mode",
            "ENABLED",
            |c| c.runtime.streams.coordination == CoordinationMode::Enabled,
        ),
        ("stoatflow.processing.dispatch-mode", "LANE", |c| {
            c.runtime.streams.dispatch == DispatchMode::Lane
        }),
        ("stoatflow.processing.lanes", "3", |c| c.runtime.lanes == 3),
        ("stoatflow.processing.instance-id", "pod-7", |c| {
            c.runtime.instance_id == "pod-7"
        }),
        ("stoatflow.processing.poll-wait-ms", "20", |c| {
            c.runtime.poll_wait == Duration::from_millis(20)
        }),
        ("stoatflow.restore.stall-timeout-ms", "60000", |c| {
            c.runtime.restore_stall_timeout == Duration::from_secs(60)
        }),
        ("repartition.purge.interval.ms", "5000", |c| {
            c.runtime.purge_interval == Duration::from_secs(5)
        }),
        ("stoatflow.migration.from-kafka-streams", "true", |c| {
            c.runtime.migration_from_kafka_streams
        }),
        ("num.standby.replicas", "1", |c| {
            c.runtime.standby_replicas == 1
        }),
        ("application.server", "10.0.0.7:8080", |c| {
            c.runtime.application_server.as_deref() == Some("10.0.0.7:8080")
        }),
        (
            "windowstore.changelog.additional.retention.ms",
            "86400000",
            |c| c.runtime.windowstore_changelog_additional_retention == Duration::from_secs(86_400),
        ),
        ("stoatflow.watermark.max-out-of-orderness-ms", "2500", |c| {
            c.runtime.streams.max_out_of_orderness == Duration::from_millis(2_500)
                && matches!(
                    c.runtime.tracker.default_policy.generator(),
                    GeneratorSpec::BoundedOutOfOrderness(d) if *d == Duration::from_millis(2_500)
                )
        }),
        ("stoatflow.watermark.idleness-timeout-ms", "0", |c| {
            c.runtime.tracker.default_idleness == Duration::ZERO
        }),
        ("stoatflow.watermark.auto-interval-ms", "50", |c| {
            c.runtime.tracker.auto_interval == Duration::from_millis(50)
        }),
        ("stoatflow.watermark.preview-after-ms", "0", |c| {
            c.runtime.tracker.preview_after == Duration::ZERO
        }),
        ("state.dir", "/var/lib/orders-state", |c| {
            c.runtime.state_dir == Some(PathBuf::from("/var/lib/orders-state"))
        }),
        ("default.dsl.store", "in_memory", |c| {
            c.runtime.streams.default_dsl_store == Some(StoreType::InMemory)
        }),
        ("stoatflow.state.cache-max-bytes", "8388608", |c| {
            c.runtime.streams.store_cache_max_bytes == 8 << 20
        }),
        ("stoatflow.state.block-cache-bytes", "0", |c| {
            c.runtime.streams.store_block_cache_bytes == 0
        }),
    ]
}

/// On Kafka, whose broker judges a changelog's retention against the wall
/// clock, the windowed changelogs' margin is Kafka Streams' day unless set.
#[test]
fn the_windowed_changelog_margin_is_a_day_on_kafka_unless_set() {
    let build = |pairs: &[(&str, &str)]| {
        ConfigLoader::new()
            .map([("application.id", "margin")])
            .map(pairs.to_vec())
            .build()
            .unwrap()
    };
    let kafka = [
        ("stoatflow.backend", "kafka"),
        ("bootstrap.servers", "b:9092"),
    ];
    assert_eq!(
        build(&kafka)
            .runtime
            .windowstore_changelog_additional_retention,
        Duration::from_secs(86_400)
    );
    assert_eq!(
        build(&[])
            .runtime
            .windowstore_changelog_additional_retention,
        stoatflow_runtime::WINDOWSTORE_CHANGELOG_ADDITIONAL_RETENTION
    );
    let set = [
        kafka[0],
        kafka[1],
        ("windowstore.changelog.additional.retention.ms", "60000"),
    ];
    assert_eq!(
        build(&set)
            .runtime
            .windowstore_changelog_additional_retention,
        Duration::from_secs(60)
    );
}

/// Settings a key needs beside it to be valid.
fn companions(key: &str) -> Vec<(&'static str, &'static str)> {
    // Every configuration names its application (the key's own test
    // replaces it).
    let mut pairs = match key {
        "application.id" => vec![],
        _ => vec![("application.id", "companion")],
    };
    match key {
        "bootstrap.servers" => pairs.push(("stoatflow.backend", "kafka")),
        "client.id" | "replication.factor" => pairs.extend([
            ("stoatflow.backend", "kafka"),
            ("bootstrap.servers", "b:9092"),
        ]),
        _ => {}
    }
    pairs
}

/// YAML with every key nested at its dots (`a.b.c: v` as `a:\n  b:\n    c: v`);
/// `{}` for none.
fn nested_yaml(pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        return "{}\n".into();
    }
    let mut out = String::new();
    // The mappings the last key opened: a key under the same ones
    // (`application.id`, then `application.server`) goes on in them.
    let mut open: Vec<&str> = Vec::new();
    for (key, value) in pairs {
        let parts: Vec<&str> = key.split('.').collect();
        let parents = &parts[..parts.len() - 1];
        let shared = open.iter().zip(parents).take_while(|(a, b)| a == b).count();
        open = parents.to_vec();
        for (depth, part) in parts.iter().enumerate().skip(shared) {
            out.push_str(&"  ".repeat(depth));
            out.push_str(part);
            out.push(':');
            if depth + 1 == parts.len() {
                out.push(' ');
                out.push_str(value);
            }
            out.push('\n');
        }
    }
    out
}

#[test]
fn the_table_covers_every_key() {
    let tested: Vec<&str> = table().iter().map(|(k, _, _)| *k).collect();
    for spec in KEYS {
        assert!(tested.contains(&spec.key), "no test for {}", spec.key);
    }
}

#[test]
fn every_key_from_a_yaml_file() {
    let dir = tempfile::tempdir().unwrap();
    for (key, value, check) in table() {
        let mut pairs = companions(key);
        pairs.push((key, value));
        let file = dir.path().join("app.yaml");
        std::fs::write(&file, nested_yaml(&pairs)).unwrap();
        let config = ConfigLoader::new()
            .yaml_file(&file)
            .and_then(ConfigLoader::build)
            .unwrap_or_else(|e| panic!("{key}: {e}"));
        assert!(check(&config), "{key}: {value} not applied: {config:?}");
        // Without the key (bootstrap.servers has no default to compare with).
        if let Ok(defaults) = ConfigLoader::new().map(companions(key)).build() {
            assert!(!check(&defaults), "{key}: {value} is its default");
        }
    }
}

#[test]
fn every_key_from_the_environment_overrides_the_file() {
    for (key, value, check) in table() {
        let base = ConfigLoader::new()
            .yaml_str("base.yaml", &nested_yaml(&companions(key)))
            .unwrap();
        let config = base
            .env_vars([(env_name(key), value), ("UNRELATED".into(), "x")])
            .build()
            .unwrap_or_else(|e| panic!("{key}: {e}"));
        assert!(check(&config), "{} = {value} not applied", env_name(key));
    }
    let config = ConfigLoader::new()
        .yaml_str(
            "f.yaml",
            "application.id: a\nstoatflow.watermark.max-out-of-orderness-ms: 1",
        )
        .unwrap()
        .env_vars([("STOATFLOW_WATERMARK_MAX_OUT_OF_ORDERNESS_MS", "7")])
        .build()
        .unwrap();
    assert_eq!(
        config.runtime.streams.max_out_of_orderness,
        Duration::from_millis(7)
    );
}

#[test]
fn every_key_from_a_string_map() {
    for (key, value, check) in table() {
        let mut pairs = companions(key);
        pairs.push((key, value));
        let config = ConfigLoader::new().map(pairs).build().unwrap();
        assert!(check(&config), "{key}");
    }
}

#[test]
fn kafka_pass_through_from_yaml_and_environment_secrets_redacted() {
    let yaml = "application.id: k\nstoatflow.backend: kafka\nbootstrap.servers: b:9092\nkafka:\n  security.protocol: SASL_SSL\n  sasl:\n    password: from-file\n";
    let config = ConfigLoader::new()
        .yaml_str("k.yaml", yaml)
        .unwrap()
        .env_vars([
            ("STOATFLOW_KAFKA_SASL_USERNAME", "orders"),
            ("STOATFLOW_KAFKA_SSL_KEY_PASSWORD", "env-secret"),
        ])
        .build()
        .unwrap();
    let BackendSettings::Kafka(k) = &config.backend else {
        panic!("not kafka: {config:?}")
    };
    let props: Vec<(&str, &str)> = k
        .properties
        .iter()
        .map(|(k, v)| (k.as_str(), v.expose()))
        .collect();
    assert_eq!(
        props,
        [
            ("sasl.password", "from-file"),
            ("sasl.username", "orders"),
            ("security.protocol", "SASL_SSL"),
            ("ssl.key.password", "env-secret"),
        ]
    );
    assert!(matches!(
        k.properties["sasl.password"],
        PropertyValue::Secret(_)
    ));
    let debug = format!("{config:?}");
    assert!(
        !debug.contains("from-file") && !debug.contains("env-secret"),
        "{debug}"
    );
    assert!(
        debug.contains("SASL_SSL") && debug.contains("sasl.password"),
        "{debug}"
    );
}

#[test]
fn defaults_without_any_setting_but_the_application_id() {
    let c = ConfigLoader::new()
        .map([("application.id", "defaults")])
        .build()
        .unwrap();
    assert_eq!(c.runtime.application_id(), "defaults");
    assert_eq!(
        c.backend,
        BackendSettings::Embedded {
            dir: PathBuf::from("stoatflow-data")
        }
    );
    assert_eq!(
        c.endpoints.listen,
        "127.0.0.1:8080".parse::<SocketAddr>().unwrap()
    );
    assert!(c.endpoints.enabled && c.endpoints.info_show_watermarks);
    assert_eq!(c.runtime.tracker.default_idleness, Duration::from_secs(300));
    assert_eq!(c.runtime.tracker.auto_interval, Duration::from_millis(200));
    assert_eq!(c.runtime.streams.coordination, CoordinationMode::Auto);
    assert_eq!(c.runtime.barrier.interval, Duration::from_millis(500));
}
