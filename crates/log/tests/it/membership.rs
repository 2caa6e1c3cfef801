//! Group membership on the embedded log: one member owns every partition,
//! and a second process on the same directory is refused (the lock tests in
//! `bad_input`), so nothing is ever shared or rebalanced.

use std::time::Duration;

use stoatflow_log::{EmbeddedLog, GroupEvent, Log, LogError, TopicPartition, TopicSpec};

#[test]
fn the_embedded_logs_member_owns_every_partition_of_its_topics_for_good() {
    let log = EmbeddedLog::in_memory();
    log.create_topic(&TopicSpec::new("a", 2)).unwrap();
    log.create_topic(&TopicSpec::new("b", 3)).unwrap();
    log.create_topic(&TopicSpec::new("other", 1)).unwrap();
    let mut member = log
        .join_group("app", "app-0", &["a".into(), "b".into()])
        .unwrap();
    let expected: Vec<TopicPartition> = [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2)]
        .into_iter()
        .map(|(t, p)| TopicPartition::new(t, p))
        .collect();
    assert_eq!(
        member.poll(Duration::ZERO).unwrap(),
        Some(GroupEvent::Assigned(expected))
    );
    // Nothing changes afterwards, even for a second member of the group.
    assert_eq!(member.poll(Duration::from_millis(1)).unwrap(), None);
    let mut second = log.join_group("app", "app-1", &["a".into()]).unwrap();
    assert!(
        matches!(second.poll(Duration::ZERO).unwrap(), Some(GroupEvent::Assigned(p)) if p.len() == 2)
    );
    assert_eq!(member.poll(Duration::ZERO).unwrap(), None);
    member.release().unwrap();
}

#[test]
fn joining_with_an_unknown_topic_names_it() {
    let log = EmbeddedLog::in_memory();
    log.create_topic(&TopicSpec::new("a", 2)).unwrap();
    let err = log
        .join_group("app", "app-0", &["a".into(), "missing".into()])
        .unwrap_err();
    assert!(
        matches!(&err, LogError::UnknownTopic { topic } if topic == "missing"),
        "{err}"
    );
    assert!(err.to_string().contains("missing"), "{err}");
}
