//! A Kafka Streams setting name is answered with ours (or with how the
//! thing is set here), not with a `kafka.` pass-through guess.

use stoatflow_config::{ConfigError, ConfigLoader, KAFKA_STREAMS_NAMES, KEYS, suggest};

fn message(key: &str) -> String {
    let e = ConfigLoader::new()
        .yaml_str("app.yaml", &format!("{key}: 1\n"))
        .and_then(ConfigLoader::build)
        .expect_err(key);
    assert!(matches!(e, ConfigError::UnknownKey { .. }), "{e:?}");
    e.to_string()
}

#[test]
fn each_kafka_streams_name_gets_ours() {
    let cache = "here it is stoatflow.state.cache-max-bytes (a bound per persistent store \
                 here, not per instance; stoatflow.state.block-cache-bytes bounds each store's \
                 engine block cache)";
    for (theirs, then) in [
        (
            "num.stream.threads",
            "here it is stoatflow.processing.lanes".to_owned(),
        ),
        (
            "commit.interval.ms",
            "here it is stoatflow.commit-barrier.interval-ms".to_owned(),
        ),
        (
            "max.task.idle.ms",
            "here it is stoatflow.watermark.idleness-timeout-ms (how long a partition \
             without records holds the watermark back)"
                .to_owned(),
        ),
        ("statestore.cache.max.bytes", cache.to_owned()),
        ("cache.max.bytes.buffering", cache.to_owned()),
    ] {
        assert_eq!(
            message(theirs),
            format!(
                "unknown configuration key {theirs} at app.yaml:1:1: \
                 {theirs} is Kafka Streams' name; {then}"
            ),
        );
        assert!(
            !suggest(theirs).unwrap_or_default().starts_with("kafka."),
            "{theirs}"
        );
    }
    assert_eq!(KAFKA_STREAMS_NAMES.len(), 5, "a name is untested");
}

#[test]
fn the_table_names_only_keys_that_exist_and_none_of_ours() {
    for name in KAFKA_STREAMS_NAMES {
        assert!(KEYS.iter().all(|s| s.key != name.theirs), "{}", name.theirs);
        if let Some(ours) = name.ours {
            assert!(KEYS.iter().any(|s| s.key == ours), "{ours}");
            assert_eq!(suggest(name.theirs).as_deref(), Some(ours));
        }
    }
    // Kafka Streams' names that are ours too are set, not refused.
    let config = ConfigLoader::new()
        .yaml_str(
            "app.yaml",
            "application.id: orders\nprocessing.guarantee: at_least_once\nstoatflow:\n  backend: memory\n",
        )
        .and_then(ConfigLoader::build)
        .unwrap();
    assert_eq!(config.runtime.application_id(), "orders");
    // A librdkafka-looking name still gets the pass-through hint.
    assert!(
        message("sasl.password")
            .ends_with("did you mean kafka.sasl.password (librdkafka properties go under kafka.)?"),
        "{}",
        message("sasl.password")
    );
}
