//! Each class of bad configuration gives its message, naming the key and
//! where it was written; no error shows a secret.

use stoatflow_config::{ConfigError, ConfigLoader};

fn err(yaml: &str) -> ConfigError {
    ConfigLoader::new()
        .yaml_str("app.yaml", yaml)
        .and_then(ConfigLoader::build)
        .expect_err(yaml)
}

#[test]
fn unknown_key_names_it_with_position_and_a_suggestion() {
    let e = err("stoatflow:\n  commit-barrier:\n    interval: 500\n");
    assert_eq!(
        e.to_string(),
        "unknown configuration key stoatflow.commit-barrier.interval at app.yaml:3:5; did you mean stoatflow.commit-barrier.interval-ms?"
    );
    let e = err("application.id: a\nsasl.password: hunter2\n");
    assert_eq!(
        e.to_string(),
        "unknown configuration key sasl.password at app.yaml:2:1; did you mean kafka.sasl.password (librdkafka properties go under kafka.)?"
    );
}

/// As in Kafka Streams, `application.id` has no default: a configuration
/// without one is refused naming the key and how to set it.
#[test]
fn a_missing_application_id_is_refused_naming_the_key() {
    let e = err("stoatflow:\n  backend: memory\n");
    assert!(
        matches!(&e, ConfigError::Missing { key, .. } if key == "application.id"),
        "{e:?}"
    );
    let message = e.to_string();
    assert!(
        message.starts_with("configuration key application.id is required: "),
        "{message}"
    );
    assert!(message.contains("STOATFLOW_APPLICATION_ID"), "{message}");
    // The environment may name it.
    let c = ConfigLoader::new()
        .yaml_str("app.yaml", "stoatflow:\n  backend: memory\n")
        .unwrap()
        .env_vars([("STOATFLOW_APPLICATION_ID", "from-env")])
        .build()
        .unwrap();
    assert_eq!(c.runtime.application_id(), "from-env");
}

#[test]
fn wrong_type_names_key_position_and_what_was_expected() {
    let e = err("stoatflow:\n  watermark:\n    idleness-timeout-ms: five minutes\n");
    assert_eq!(
        e.to_string(),
        "configuration key stoatflow.watermark.idleness-timeout-ms at app.yaml:3:26: expected an integer, found \"five minutes\""
    );
    let e = err("stoatflow.changelog.enabled: [true]\n");
    assert_eq!(
        e.to_string(),
        "configuration key stoatflow.changelog.enabled at app.yaml:1:30: expected a boolean (true or false), found a sequence"
    );
    let e = err("stoatflow:\n  watermark: 5\n");
    assert!(
        e.to_string()
            .contains("stoatflow.watermark at app.yaml:2:14: expected a mapping of keys"),
        "{e}"
    );
}

#[test]
fn out_of_range_names_key_position_and_range() {
    let e = err("stoatflow.processing.lanes: 0\n");
    assert_eq!(
        e.to_string(),
        "configuration key stoatflow.processing.lanes at app.yaml:1:29: \"0\" is not accepted: must be between 1 and 1024"
    );
    let e = err("stoatflow.commit-barrier.interval-factor: 0.5\n");
    assert!(
        e.to_string()
            .contains("stoatflow.commit-barrier.interval-factor at app.yaml:1:43"),
        "{e}"
    );
    let e = err("stoatflow.processing.timestamp-coordination-mode: SOMETIMES\n");
    assert!(
        e.to_string()
            .ends_with("\"SOMETIMES\" is not accepted: must be one of AUTO, ENABLED, DISABLED"),
        "{e}"
    );
    // A store cache below the floor a spill needs, or beyond any machine's memory.
    let e = err("stoatflow.state.cache-max-bytes: 4096\n");
    assert_eq!(
        e.to_string(),
        "configuration key stoatflow.state.cache-max-bytes at app.yaml:1:34: \"4096\" is not accepted: must be between 1048576 and 68719476736"
    );
    let e = err("stoatflow.state.block-cache-bytes: 1e12\n");
    assert!(
        e.to_string()
            .starts_with("configuration key stoatflow.state.block-cache-bytes at app.yaml:1:36"),
        "{e}"
    );
    // A check across keys, named by the runtime, still points at the file.
    let e = err("stoatflow.commit-barrier:\n  min-interval-ms: 9000\n  max-interval-ms: 100\n");
    assert!(
        e.to_string().starts_with(
            "configuration key stoatflow.commit-barrier.min-interval-ms at app.yaml:2:20"
        ),
        "{e}"
    );
}

#[test]
fn an_unknown_backend_names_the_key_and_value() {
    let e = err("stoatflow.backend: rabbitmq\n");
    assert_eq!(
        e.to_string(),
        "configuration key stoatflow.backend at app.yaml:1:20: \"rabbitmq\" is not accepted: must be one of embedded, memory, kafka"
    );
}

#[test]
fn kafka_needs_brokers_and_kafka_keys_need_kafka() {
    let e = err("stoatflow.backend: kafka\n");
    assert!(
        matches!(&e, ConfigError::Missing { key, .. } if key == "bootstrap.servers"),
        "{e}"
    );
    let e = err("bootstrap.servers: b:9092\n");
    assert!(
        e.to_string().starts_with("configuration key bootstrap.servers at app.yaml:1:20 has no effect: stoatflow.backend is embedded"),
        "{e}"
    );
    let e =
        err("stoatflow.backend: kafka\nbootstrap.servers: b:1\nkafka.sasl.password: [hunter2]\n");
    assert_eq!(
        e.to_string(),
        "configuration key kafka.sasl.password at app.yaml:3:22: expected a string, found <redacted>"
    );
    let e = err("stoatflow.backend: memory\nkafka.sasl.password: hunter2\n");
    assert!(e.to_string().contains("kafka.sasl.password"), "{e}");
    assert!(!e.to_string().contains("hunter2"), "{e}");
}

#[test]
fn endpoints_refuse_a_non_loopback_address_unless_opted_in() {
    let e = err("runtime.endpoints.listen: 0.0.0.0:8080\n");
    assert_eq!(
        e.to_string(),
        "configuration key runtime.endpoints.listen at app.yaml:1:27: 0.0.0.0:8080 is not accepted: not a loopback address; set runtime.endpoints.allow-non-loopback: true to expose the endpoints beyond this machine"
    );
    let ok = ConfigLoader::new()
        .yaml_str(
            "app.yaml",
            "application.id: a\nruntime.endpoints:\n  listen: 0.0.0.0:8080\n  allow-non-loopback: true\n",
        )
        .unwrap()
        .build()
        .unwrap();
    assert!(ok.endpoints.listen.ip().is_unspecified());
    let e = err("runtime.endpoints.listen: nowhere\n");
    assert!(matches!(e, ConfigError::WrongType { .. }), "{e}");
}

#[test]
fn environment_errors_name_the_variable() {
    let e = ConfigLoader::new()
        .env_vars([("STOATFLOW_PROCESSING_LANES", "many")])
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "configuration key stoatflow.processing.lanes at environment variable STOATFLOW_PROCESSING_LANES: expected an integer, found \"many\""
    );
}

#[test]
fn syntax_errors_and_unreadable_files_name_the_file() {
    let e = err("stoatflow:\n  backend: [\n");
    assert!(e.to_string().starts_with("app.yaml:"), "{e}");
    let e = ConfigLoader::new()
        .yaml_file("/nonexistent/app.yaml")
        .unwrap_err();
    assert!(e.to_string().contains("/nonexistent/app.yaml"), "{e}");
}

#[test]
fn a_bad_application_server_names_the_key_and_what_is_wrong() {
    let e = err("application.id: a\napplication.server: localhost\n");
    let message = e.to_string();
    assert!(
        message.contains("application.server at app.yaml:2:21") && message.contains("host:port"),
        "{message}"
    );
    let e = err("application.id: a\napplication.server: localhost:99999\n");
    assert!(e.to_string().contains("port \"99999\""), "{e}");
}
