//! The group's description on the test broker
//! (docs/scale-out.md#standbys): every member reads who is in the group and
//! which partitions each owns, named as they joined.

use std::collections::BTreeSet;

use stoatflow_kafka::KafkaLog;
use stoatflow_log::{Log, TopicPartition, TopicSpec};

use crate::broker::TestBroker;
use crate::static_restart::{PARTITIONS, Seen, TOPIC, serve, split};

const GROUP: &str = "describe-app";

#[test]
fn every_member_reads_each_members_name_and_partitions() {
    let broker = TestBroker::start("every_member_reads_each_members_name_and_partitions");
    let (log_a, log_b) = (broker.log(), broker.log());
    log_a
        .create_topic(&TopicSpec::new(TOPIC, PARTITIONS))
        .unwrap();
    let join =
        |log: &KafkaLog, name: &str| log.join_group(GROUP, name, &[TOPIC.to_owned()]).unwrap();
    let (mut a, mut b) = (join(&log_a, "app-a"), join(&log_b, "app-b"));
    let mut seen = Seen::default();
    serve(&mut [&mut *a, &mut *b], &mut seen, split);

    for member in [&*a, &*b] {
        let described = member.describe_group().expect("Kafka describes").unwrap();
        let got: Vec<(String, BTreeSet<TopicPartition>)> = described
            .into_iter()
            .map(|m| (m.member, m.partitions.into_iter().collect()))
            .collect();
        assert_eq!(
            got,
            [
                ("app-a".to_owned(), seen.held[0].clone()),
                ("app-b".to_owned(), seen.held[1].clone())
            ]
        );
    }
}
