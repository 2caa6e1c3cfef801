//! The broker contract (the same suite the embedded log passes), against
//! Kafka on a real broker.

use stoatflow_log::contract;

use crate::broker::TestBroker;

macro_rules! kafka_contract_tests {
    ($($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                let broker = TestBroker::start(concat!("contract::", stringify!($check)));
                contract::$check(&broker.log(), "kafka");
            }
        )*
    };
}

kafka_contract_tests!(
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
fn oversized_record_refused() {
    let broker = TestBroker::start("contract::oversized_record_refused");
    let log = broker.log();
    let limit = log.config().max_record_bytes;
    contract::oversized_record_refused(&log, "kafka", limit);
}

/// `TopicSpec::new` promises no retention limit: on Kafka that must be said
/// (`retention.ms = -1`), or the broker's default (7 days of record time)
/// deletes the head of a topic fed records with old event-time timestamps.
/// The kill -9 test lost its first final results that way on a loaded
/// machine before topics were created like this.
#[test]
fn topics_are_created_with_the_retention_their_spec_says() {
    use std::time::Duration;
    use stoatflow_log::{Log, Retention, TopicSpec};

    let broker = TestBroker::start("contract::topics_are_created_with_the_retention");
    let log = broker.log();
    log.create_topic(&TopicSpec::new("unlimited", 1)).unwrap();
    log.create_topic(&TopicSpec::new("limited", 1).with_retention(Retention {
        bytes: Some(1 << 30),
        time: Some(Duration::from_secs(3_600)),
    }))
    .unwrap();
    let unlimited = log.topic_config("unlimited").unwrap();
    let limited = log.topic_config("limited").unwrap();
    let get = |c: &std::collections::BTreeMap<String, String>, k: &str| c.get(k).cloned();
    assert_eq!(
        get(&unlimited, "retention.ms").as_deref(),
        Some("-1"),
        "{unlimited:?}"
    );
    assert_eq!(
        get(&unlimited, "retention.bytes").as_deref(),
        Some("-1"),
        "{unlimited:?}"
    );
    assert_eq!(
        get(&limited, "retention.ms").as_deref(),
        Some("3600000"),
        "{limited:?}"
    );
    assert_eq!(
        get(&limited, "retention.bytes").as_deref(),
        Some("1073741824"),
        "{limited:?}"
    );
}

/// A windowed changelog's spec: `cleanup.policy=compact,delete` with its
/// retention on the broker, and described back as such (Kafka Streams
/// creates windowed changelogs so; a compacted-only one keeps every window).
#[test]
fn a_compacted_topic_with_retention_is_created_compact_and_delete() {
    use std::time::Duration;
    use stoatflow_log::{CleanupPolicy, Log, TopicShape, TopicSpec};

    let broker = TestBroker::start("contract::a_compacted_topic_with_retention");
    let log = broker.log();
    let spec = TopicSpec::new("windowed-changelog", 2)
        .compacted_with_retention(Duration::from_millis(615_000));
    log.create_topic(&spec).unwrap();
    let config = log.topic_config("windowed-changelog").unwrap();
    assert_eq!(
        config
            .get("cleanup.policy")
            .map(|p| CleanupPolicy::from_kafka_str(p)),
        Some(CleanupPolicy::CompactDelete),
        "{config:?}"
    );
    assert_eq!(
        config.get("retention.ms").map(String::as_str),
        Some("615000"),
        "{config:?}"
    );
    assert_eq!(
        log.describe_topic("windowed-changelog").unwrap(),
        Some(TopicShape::new(2, CleanupPolicy::CompactDelete))
    );
    log.ensure_topic(&spec).unwrap();
}
