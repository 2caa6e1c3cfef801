//! `stoatflow.backend: kafka`: the same windowed count on a real broker
//! (noida-db, started as the kafka crate's tests start it), configured by
//! YAML with a pass-through client property.

use stoatflow::config::ConfigLoader;
use stoatflow::*;

use crate::broker::TestBroker;
use crate::support::*;

#[test]
fn the_kafka_backend_from_yaml_runs_on_the_broker() {
    let broker = TestBroker::start("the_kafka_backend_from_yaml_runs_on_the_broker");
    let yaml = format!(
        "application.id: clicks-kafka\nstoatflow:\n  backend: kafka\n  processing:\n    lanes: 1\n  commit-barrier:\n    interval-ms: 200\nbootstrap.servers: {}\nkafka:\n  receive.message.max.bytes: \"200000000\"\n",
        broker.bootstrap()
    );
    let config = ConfigLoader::new()
        .yaml_str("app.yaml", &yaml)
        .unwrap()
        .build()
        .unwrap();
    let mut app = App::from_config(topology(), &config).unwrap();
    let App::Kafka(inner) = &app else {
        panic!("not on Kafka: {app:?}")
    };
    let log = inner.log().clone();
    produce_and_run(&mut app, &*log);
    assert_eq!(read_output(&*log), expected());
}

#[test]
fn a_protected_pass_through_key_is_a_config_error_naming_it() {
    let config = ConfigLoader::new()
        .map([
            ("application.id", "facade"),
            ("stoatflow.backend", "kafka"),
            ("bootstrap.servers", "127.0.0.1:1"),
            ("kafka.isolation.level", "read_uncommitted"),
        ])
        .build()
        .unwrap();
    let e = App::from_config(topology(), &config).unwrap_err();
    assert!(matches!(e, AppError::Config(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        "configuration key kafka.isolation.level is refused: stoatflow sets this property itself; it cannot be overridden"
    );
    assert!(!e.to_string().contains("read_uncommitted"), "{e}");
}
