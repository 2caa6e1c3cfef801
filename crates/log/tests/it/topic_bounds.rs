//! What a topic may be: Kafka's names, and the log's bounds on partitions
//! and topics, refused before anything is written, in memory and on disk.

use stoatflow_log::{
    EmbeddedConfig, EmbeddedLog, Log, LogError, Record, Timestamp, TopicPartition, TopicSpec,
    TransactionalProducer,
};

/// Both embedded modes with `config`: (label, log, its directory).
fn logs(config: &EmbeddedConfig) -> Vec<(&'static str, EmbeddedLog, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let disk = EmbeddedLog::open_with(dir.path(), config.clone()).expect("open");
    vec![
        ("memory", EmbeddedLog::in_memory_with(config.clone()), None),
        ("disk", disk, Some(dir)),
    ]
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("list") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                todo.push(path.clone());
            }
            out.push(path);
        }
    }
    out.sort();
    out
}

/// (file, size) of everything in `dir`: what "nothing was written" compares.
fn snapshot(dir: &std::path::Path) -> Vec<(std::path::PathBuf, u64)> {
    files_under(dir)
        .into_iter()
        .map(|p| {
            let len = std::fs::metadata(&p).expect("metadata").len();
            (p, len)
        })
        .collect()
}

#[test]
fn names_kafka_refuses_are_refused_with_the_rule() {
    let too_long = "x".repeat(250);
    let refused: &[(&str, &str)] = &[
        ("", "must not be empty"),
        (".", "must not be \".\" or \"..\""),
        ("..", "must not be \".\" or \"..\""),
        ("a b", "only ASCII letters, digits, '.', '_' and '-'"),
        ("new\nline", "'\\n'"),
        ("*", "'*'"),
        ("what?", "'?'"),
        ("a:b", "':'"),
        ("<tag>", "'<'"),
        ("pi|pe", "'|'"),
        ("right\u{202e}left", "'\\u{202e}'"),
        (&too_long, "at most 249 characters"),
    ];
    for (mode, log, dir) in logs(&EmbeddedConfig::default()) {
        let before = dir.as_ref().map(|d| snapshot(d.path()));
        for (name, rule) in refused {
            let err = log
                .create_topic(&TopicSpec::new(*name, 1))
                .expect_err(&format!("{mode}: {name:?} is refused"));
            assert!(
                matches!(err, LogError::InvalidTopicName { .. }),
                "{mode}: {err:?}"
            );
            assert!(err.to_string().contains(rule), "{mode}: {err}");
            let err = log
                .ensure_topic(&TopicSpec::new(*name, 1))
                .expect_err("ensure_topic refuses it too");
            assert!(
                matches!(err, LogError::InvalidTopicName { .. }),
                "{mode}: {err:?}"
            );
            assert_eq!(log.describe_topic(name).expect("describe"), None);
        }
        assert_eq!(
            dir.as_ref().map(|d| snapshot(d.path())),
            before,
            "{mode}: nothing was written"
        );
        for legal in ["orders", "A.b_c-9", "...", ".hidden", &"y".repeat(249)] {
            log.create_topic(&TopicSpec::new(legal, 1))
                .unwrap_or_else(|e| panic!("{mode}: {legal:?} is legal: {e}"));
        }
    }
}

#[test]
fn partitions_past_the_bound_are_refused_before_anything_is_written() {
    for (mode, log, dir) in logs(&EmbeddedConfig::default()) {
        let before = dir.as_ref().map(|d| snapshot(d.path()));
        let started = std::time::Instant::now();
        let err = log
            .create_topic(&TopicSpec::new("huge", u32::MAX))
            .expect_err("u32::MAX partitions");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{mode}: refused at once"
        );
        assert!(matches!(err, LogError::LimitExceeded { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains("\"huge\"") && msg.contains("max_partitions_per_topic = 10000"),
            "{mode}: {msg}"
        );
        assert_eq!(log.describe_topic("huge").expect("describe"), None);
        assert_eq!(
            dir.as_ref().map(|d| snapshot(d.path())),
            before,
            "{mode}: nothing was written"
        );
        log.create_topic(&TopicSpec::new("fine", 3))
            .expect("within the bound");
        if let Some(d) = dir {
            drop(log);
            let log = EmbeddedLog::open(d.path()).expect("the directory still opens");
            assert_eq!(log.describe_topic("huge").expect("describe"), None);
        }
    }
}

#[test]
fn each_bound_names_its_setting() {
    let config = EmbeddedConfig {
        max_topics: 2,
        max_partitions_per_topic: 8,
        max_partitions: 10,
        ..EmbeddedConfig::default()
    };
    for (mode, log, _dir) in logs(&config) {
        let refused = |spec: TopicSpec, setting: &str| {
            let err = log
                .create_topic(&spec)
                .expect_err(&format!("{mode}: {spec:?}"));
            assert!(matches!(err, LogError::LimitExceeded { .. }), "{err:?}");
            let msg = err.to_string();
            assert!(msg.contains(setting), "{mode}: {msg}");
            assert!(msg.contains(&format!("{:?}", spec.name)), "{mode}: {msg}");
            assert_eq!(log.describe_topic(&spec.name).expect("describe"), None);
        };
        refused(TopicSpec::new("nine", 9), "max_partitions_per_topic = 8");
        log.create_topic(&TopicSpec::new("a", 8)).expect("8 of 10");
        refused(TopicSpec::new("b", 3), "max_partitions = 10");
        log.create_topic(&TopicSpec::new("b", 2)).expect("10 of 10");
        refused(TopicSpec::new("c", 1), "max_topics = 2");
    }
}

/// A directory written under a larger bound names its topic when opened
/// under a smaller one, whether the topic's frame is replayed as written
/// or from a rotated checkpoint.
#[test]
fn an_open_under_a_smaller_bound_refuses_the_topic_by_name() {
    for rotate in [false, true] {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = EmbeddedConfig {
            txlog_rotate_bytes: if rotate { 1 } else { 16 << 20 },
            ..EmbeddedConfig::default()
        };
        {
            let log = EmbeddedLog::open_with(dir.path(), config.clone()).expect("open");
            log.create_topic(&TopicSpec::new("wide", 40))
                .expect("create");
            let mut p = log.transactional_producer("tx").expect("producer");
            p.begin().expect("begin");
            p.send(
                &TopicPartition::new("wide", 0),
                &Record::new(None, Some(b"v"), Timestamp(1)),
            )
            .expect("send");
            p.commit().expect("commit, which rotates when asked");
        }
        let txlog = std::fs::read_dir(dir.path())
            .expect("list")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| n.starts_with("txn-"))
            .expect("a transaction log");
        assert_eq!(txlog != "txn-00000000000000000000.log", rotate);
        let smaller = EmbeddedConfig {
            max_partitions_per_topic: 16,
            ..config
        };
        let Err(err) = EmbeddedLog::open_with(dir.path(), smaller) else {
            panic!("beyond the bound");
        };
        let msg = err.to_string();
        assert!(matches!(err, LogError::LimitExceeded { .. }), "{err:?}");
        assert!(
            msg.contains("\"wide\"") && msg.contains("max_partitions_per_topic = 16"),
            "{msg}"
        );
        EmbeddedLog::open(dir.path()).expect("opens under the bound it was written under");
    }
}
