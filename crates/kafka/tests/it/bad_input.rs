//! Bad input gives a clear error: an unreachable broker, protected keys.

use std::time::Duration;

use stoatflow_kafka::{KafkaConfig, KafkaLog};
use stoatflow_log::{ErrorKind, LogError};

#[test]
fn unreachable_broker_is_a_clear_retriable_error() {
    // Port 1 on loopback: nothing listens there.
    let config = KafkaConfig::new("127.0.0.1:1").with_request_timeout(Duration::from_secs(2));
    let err = KafkaLog::connect(config).expect_err("nothing listens on port 1");
    assert!(matches!(err, LogError::Unreachable { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Retriable);
    assert!(err.to_string().contains("127.0.0.1:1"), "{err}");
}

#[test]
fn protected_keys_are_refused_and_secrets_stay_out_of_errors() {
    let err = KafkaConfig::new("127.0.0.1:1")
        .with_property("enable.auto.commit", "true")
        .expect_err("protected");
    assert!(matches!(err, LogError::Config { .. }));
    let config = KafkaConfig::new("127.0.0.1:1")
        .with_request_timeout(Duration::from_secs(1))
        .with_property("sasl.password", "s3cr3t-value")
        .expect("allowed");
    let err = KafkaLog::connect(config.clone()).expect_err("unreachable");
    assert!(!err.to_string().contains("s3cr3t-value"), "{err}");
    assert!(!format!("{err:?}").contains("s3cr3t-value"), "{err:?}");
    assert!(!format!("{config:?}").contains("s3cr3t-value"));
}

#[test]
fn an_invalid_property_names_the_key_but_not_the_value() {
    let config = KafkaConfig::new("127.0.0.1:1")
        .with_property("no.such.property", "s3cr3t-value")
        .expect("not protected");
    let err = KafkaLog::connect(config).expect_err("librdkafka refuses unknown properties");
    assert!(err.to_string().contains("no.such.property"), "{err}");
    assert!(!err.to_string().contains("s3cr3t-value"), "{err}");
}
