//! `AppConfig::effective`: every key with the value the application runs
//! with and where it came from; secrets redacted.

use stoatflow_config::{ConfigLoader, KEYS, Origin, REDACTED, Setting};

fn find<'a>(settings: &'a [Setting], key: &str) -> &'a Setting {
    settings
        .iter()
        .find(|s| s.key == key)
        .unwrap_or_else(|| panic!("no {key} in {settings:?}"))
}

#[test]
fn each_key_says_where_it_came_from_and_secrets_are_redacted() {
    let yaml = "application.id: orders\nstoatflow:\n  backend: kafka\n  watermark:\n    max-out-of-orderness-ms: 1\nbootstrap.servers: b:9092\nkafka:\n  security.protocol: SASL_SSL\n  sasl.password: hunter2\n";
    let c = ConfigLoader::new()
        .yaml_str("app.yaml", yaml)
        .unwrap()
        .env_vars([
            ("STOATFLOW_WATERMARK_MAX_OUT_OF_ORDERNESS_MS", "2000"),
            ("STOATFLOW_KAFKA_SSL_KEY_PASSWORD", "env-secret"),
        ])
        .build()
        .unwrap();
    let settings = c.effective();
    let file = |line, column| Origin::File {
        file: "app.yaml".into(),
        line,
        column,
    };
    let id = find(&settings, "application.id");
    assert_eq!((id.value.as_str(), &id.origin), ("orders", &file(1, 17)));
    let ooo = find(&settings, "stoatflow.watermark.max-out-of-orderness-ms");
    assert_eq!(ooo.value, "2000");
    assert_eq!(
        ooo.origin,
        Origin::Env {
            var: "STOATFLOW_WATERMARK_MAX_OUT_OF_ORDERNESS_MS".into()
        }
    );
    // Defaults resolved: the client id is the application id.
    let client = find(&settings, "client.id");
    assert_eq!(
        (client.value.as_str(), &client.origin),
        ("orders", &Origin::Default)
    );
    let margin = find(&settings, "windowstore.changelog.additional.retention.ms");
    assert_eq!(margin.value, "86400000");
    let plain = find(&settings, "kafka.security.protocol");
    assert_eq!(
        (plain.value.as_str(), &plain.origin),
        ("SASL_SSL", &file(8, 22))
    );
    let secret = find(&settings, "kafka.sasl.password");
    assert_eq!(
        (secret.value.as_str(), &secret.origin),
        (REDACTED, &file(9, 18))
    );
    let env_secret = find(&settings, "kafka.ssl.key.password");
    assert_eq!(env_secret.value, REDACTED);
    let shown = format!("{settings:?}");
    assert!(
        !shown.contains("hunter2") && !shown.contains("env-secret"),
        "{shown}"
    );
    // The embedded log's directory does not apply to Kafka.
    assert!(settings.iter().all(|s| s.key != "stoatflow.embedded.dir"));
}

#[test]
fn every_key_of_the_embedded_backend_is_listed_once() {
    let c = ConfigLoader::new()
        .map([("application.id", "all")])
        .build()
        .unwrap();
    let keys: Vec<String> = c.effective().into_iter().map(|s| s.key).collect();
    let expected: Vec<&str> = KEYS
        .iter()
        .map(|s| s.key)
        .filter(|k| !matches!(*k, "bootstrap.servers" | "client.id" | "replication.factor"))
        .collect();
    assert_eq!(keys, expected);
    let state = c
        .effective()
        .into_iter()
        .find(|s| s.key == "state.dir")
        .unwrap();
    assert_eq!(state.value, "stoatflow-data/state");
    assert_eq!(state.origin, Origin::Default);
}
