//! Bad input: a clear error naming the thing, the app in ERROR, nothing
//! committed half.

use std::sync::Arc;
use std::time::Duration;

use stoatflow_log::{EmbeddedLog, Log, TopicSpec};
use stoatflow_runtime::{AppState, Backend, RuntimeConfig, RuntimeError, StreamsApp};

use crate::support::*;

#[test]
fn a_missing_source_topic_stops_the_app_in_error_naming_it() {
    let log = Arc::new(EmbeddedLog::in_memory());
    log.create_topic(&TopicSpec::new(OUTPUT, PARTITIONS))
        .unwrap();
    let mut app = StreamsApp::with_log(tumbling_count(), config("missing", 1), log).unwrap();
    let handled = Arc::new(std::sync::Mutex::new(None));
    let h = handled.clone();
    app.set_uncaught_error_handler(move |e| *h.lock().unwrap() = Some(e.to_string()));
    let error = starts_into_error(&mut app);
    // The error itself, not its message only: a caller can match on it.
    assert!(
        matches!(&*error, RuntimeError::MissingSourceTopic { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains(INPUT), "{message}");
    assert_eq!(handled.lock().unwrap().as_deref(), Some(message.as_str()));
    // ERROR is terminal: a close changes nothing.
    assert!(!app.close(Duration::from_secs(5)));
    assert!(!app.close(Duration::from_secs(5)));
    assert_eq!(app.state(), AppState::Error);
}

#[test]
fn a_changelog_topic_of_the_wrong_shape_is_named() {
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    let config = config("shape", 1);
    let changelog = "shape-stoatflow-watermark-changelog";
    log.create_topic(&TopicSpec::new(changelog, 2)).unwrap();
    let mut app = StreamsApp::with_log(tumbling_count(), config, log).unwrap();
    app.start().unwrap();
    assert_eq!(
        app.wait_for_state(AppState::Error, Duration::from_secs(10)),
        AppState::Error
    );
    let message = app.error().unwrap().to_string();
    assert!(message.contains(changelog), "{message}");
}

#[test]
fn a_locked_data_directory_is_named() {
    let dir = scratch_dir();
    let backend = Backend::Embedded {
        dir: dir.path().to_owned(),
    };
    let _first =
        StreamsApp::new(tumbling_count(), RuntimeConfig::new("a", backend.clone())).unwrap();
    let err = StreamsApp::new(tumbling_count(), RuntimeConfig::new("b", backend)).unwrap_err();
    assert!(
        err.to_string().contains(&dir.path().display().to_string()),
        "{err}"
    );
}

/// A refused setting or topology is refused before the log is opened: the
/// data directory is not created.
#[test]
fn a_refused_setting_or_topology_creates_no_data_directory() {
    use stoatflow_streams::{DispatchMode, StreamsConfig};
    let dir = scratch_dir();
    let data = dir.path().join("data");
    let backend = Backend::Embedded { dir: data.clone() };
    let err = StreamsApp::new(
        tumbling_count(),
        RuntimeConfig::new("bad id!", backend.clone()),
    )
    .unwrap_err();
    assert!(err.to_string().contains("application.id"), "{err}");
    let mut direct = StreamsConfig::new("direct");
    direct.dispatch = DispatchMode::Direct;
    let err = StreamsApp::new(
        tumbling_count(),
        RuntimeConfig::new("direct", backend).with_streams(direct),
    )
    .unwrap_err();
    assert!(err.to_string().contains("DIRECT"), "{err}");
    assert!(!data.exists(), "{} was created", data.display());
}

#[test]
fn a_poisoned_record_goes_to_the_handler_and_loses_nothing_else() {
    use stoatflow_log::{Record, Timestamp, TopicPartition, TransactionalProducer};
    use stoatflow_streams::{DeserializationHandler, StreamsConfig};
    let records = input(200, 3, 6);
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    produce(&*log, &records[..100], 20);
    {
        let mut p = log.transactional_producer("poison").unwrap();
        p.begin().unwrap();
        // A 3-byte value where an i64 is expected.
        let r = Record::new(Some(b"k0"), Some(b"bad"), Timestamp(START + 5_000));
        p.send(&TopicPartition::new(INPUT, 0), &r).unwrap();
        p.commit().unwrap();
    }
    produce(&*log, &records[100..], 20);
    let config = config("poison", 2).with_streams(
        StreamsConfig::new("poison")
            .with_deserialization_handler(DeserializationHandler::LogAndContinue),
    );
    let mut app = StreamsApp::with_log(tumbling_count(), config, log.clone()).unwrap();
    app.start().unwrap();
    assert!(app.wait_until_caught_up(Duration::from_secs(60)).unwrap());
    assert!(app.close(Duration::from_secs(30)));
    let engine = regular(read_output(&*log));
    assert_eq!(engine, regular(driver_finals(tumbling_count(), &records)));
}

#[test]
fn a_poisoned_record_under_log_and_fail_stops_the_app_naming_it() {
    use stoatflow_log::{Record, Timestamp, TopicPartition, TransactionalProducer};
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    {
        let mut p = log.transactional_producer("poison").unwrap();
        p.begin().unwrap();
        let r = Record::new(Some(b"k0"), Some(b"bad"), Timestamp(START));
        p.send(&TopicPartition::new(INPUT, 1), &r).unwrap();
        p.commit().unwrap();
    }
    let mut app = StreamsApp::with_log(tumbling_count(), config("fail", 1), log.clone()).unwrap();
    app.start().unwrap();
    assert_eq!(
        app.wait_for_state(AppState::Error, Duration::from_secs(10)),
        AppState::Error
    );
    let message = app.error().unwrap().to_string();
    assert!(
        message.contains(INPUT) && message.contains("partition 1 offset 0"),
        "{message}"
    );
    // Nothing was committed: no offsets for the group.
    let committed = log
        .committed_offsets("fail", &[TopicPartition::new(INPUT, 1)])
        .unwrap();
    assert_eq!(committed[0].1, None);
}

#[test]
fn sources_of_one_subtopology_with_different_partition_counts_are_refused_naming_both() {
    use stoatflow_streams::{Consumed, Produced, Serdes, StreamsBuilder};
    let log = Arc::new(EmbeddedLog::in_memory());
    log.create_topic(&TopicSpec::new("clicks", 2)).unwrap();
    log.create_topic(&TopicSpec::new("views", 3)).unwrap();
    log.create_topic(&TopicSpec::new(OUTPUT, PARTITIONS))
        .unwrap();
    let mut b = StreamsBuilder::new();
    let clicks = b.stream("clicks", Consumed::with(Serdes::string(), Serdes::i64()));
    let views = b.stream("views", Consumed::with(Serdes::string(), Serdes::i64()));
    clicks
        .merge(&views)
        .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
    let mut app =
        StreamsApp::with_log(b.build().unwrap(), config("copart", 1), log.clone()).unwrap();
    app.start().unwrap();
    assert_eq!(
        app.wait_for_state(AppState::Error, Duration::from_secs(10)),
        AppState::Error
    );
    let message = app.error().unwrap().to_string();
    for part in ["clicks (2 partitions)", "views (3 partitions)"] {
        assert!(message.contains(part), "{message}");
    }
    // Nothing was started on either topic: no offsets committed.
    let committed = log
        .committed_offsets("copart", &[stoatflow_log::TopicPartition::new("clicks", 0)])
        .unwrap();
    assert_eq!(committed[0].1, None);
}

/// A start refused for a missing sink topic creates nothing first: not the
/// repartition topic, the stores' changelogs or the watermark store's.
#[test]
fn a_missing_sink_topic_is_named_and_nothing_is_created() {
    use stoatflow_streams::{Consumed, Grouped, Produced, Serdes, StreamsBuilder};

    let log = Arc::new(EmbeddedLog::in_memory());
    log.create_topic(&TopicSpec::new(INPUT, PARTITIONS))
        .unwrap();
    let mut b = StreamsBuilder::new();
    b.stream(INPUT, Consumed::with(Serdes::string(), Serdes::i64()))
        .select_key(|_, v: &i64| format!("k{}", v % 5))
        .group_by_key_with(Grouped::with(Serdes::string(), Serdes::i64()))
        .count()
        .to_stream()
        .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
    let topology = b.build().unwrap();
    let mut app = StreamsApp::with_log(topology, config("sinkless", 1), log.clone()).unwrap();
    let error = starts_into_error(&mut app);
    assert!(
        matches!(&*error, RuntimeError::MissingSinkTopic { topic } if topic == OUTPUT),
        "{error:?}"
    );
    let topics: Vec<String> = log.topics().into_iter().map(|t| t.name).collect();
    assert_eq!(topics, [INPUT], "a refused start created topics");
}

/// A store whose name makes its changelog's topic name one Kafka refuses
/// stops the start before any internal topic is created, naming the
/// topic and the rule.
#[test]
fn a_store_name_that_makes_an_illegal_topic_name_is_refused_before_any_topic_is_created() {
    use stoatflow_streams::{Materialized, StreamsBuilder};
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    let mut builder = StreamsBuilder::new();
    let grouped = source(&mut builder, INPUT).group_by_key();
    for store in ["aa-legal", "zz fine store"] {
        let _counts = grouped.count_with(Materialized::as_(store));
    }
    let topology = builder.build().unwrap();
    let mut app = StreamsApp::with_log(topology, config("names", 1), log.clone()).unwrap();
    let message = starts_into_error(&mut app).to_string();
    assert!(
        message.contains("names-zz fine store-changelog") && message.contains("character 8 is ' '"),
        "{message}"
    );
    let created: Vec<String> = log.topics().into_iter().map(|t| t.name).collect();
    assert_eq!(created, vec![OUTPUT.to_owned(), INPUT.to_owned()]);
}
