//! A restart of one of two instances on the test broker, with its state
//! directory kept (docs/scale-out.md#rolling-restart): static members, so
//! the closed instance does not leave the group; it comes back within the
//! session timeout to the same tasks, restoring only its changelogs' tails,
//! while the other instance never rebalances and keeps committing. Read
//! committed, each final result is in the output exactly once.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use stoatflow_kafka::KafkaLog;
use stoatflow_log::{Log, TopicSpec};
use stoatflow_runtime::{AppState, StreamsApp, TaskId};

use crate::broker::TestBroker;
use crate::groups::{
    APP, SIX, assert_no_error, owned, records, until_group_caught_up, until_shared,
};
use crate::runtime_eos::{
    INPUT, OUTPUT, config_for, expected, produce_of, read_committed_of, sentinels_of, topology,
};
use crate::standby::cold_restore;

fn instance(broker: &TestBroker, id: &str, state: &Path) -> StreamsApp<KafkaLog> {
    let log = Arc::new(broker.log());
    let mut config = config_for(APP).with_state_dir(state);
    config.instance_id = id.into();
    let mut app = StreamsApp::with_log(topology(), config, log).unwrap();
    app.start().unwrap();
    app
}

#[test]
fn a_static_instance_restarted_with_its_state_moves_nothing_and_restores_only_tails() {
    let broker = TestBroker::start(
        "a_static_instance_restarted_with_its_state_moves_nothing_and_restores_only_tails",
    );
    let log = broker.log();
    log.create_topic(&TopicSpec::new(INPUT, SIX)).unwrap();
    log.create_topic(&TopicSpec::new(OUTPUT, SIX)).unwrap();
    let mut all = records(0, 1_500);
    produce_of(&log, &all, SIX);

    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut a = instance(&broker, "a", dirs[0].path());
    let mut b = instance(&broker, "b", dirs[1].path());
    until_shared(&[&a, &b], &[3, 3]);
    until_group_caught_up(&log, &[&a, &b]);
    let b_partitions = owned(&b);
    let b_tasks: BTreeSet<TaskId> = b.assignment().active.into_iter().collect();

    // From here on, A must never stop for a rebalance.
    let rebalances = Arc::new(AtomicUsize::new(0));
    let seen = rebalances.clone();
    a.set_state_listener(move |new, _old| {
        if new == AppState::Rebalancing {
            seen.fetch_add(1, Ordering::AcqRel);
        }
    });
    let barriers_before = a.committed_barriers();

    // B closes (checkpointing its stores) and comes back as the same
    // instance with the same state directory; records flow meanwhile.
    assert!(b.close(Duration::from_secs(60)), "{:?}", b.error());
    let closed_at = Instant::now();
    let more = records(1_500, 300);
    produce_of(&log, &more, SIX);
    all.extend(more);
    let mut b = instance(&broker, "b", dirs[1].path());
    until_shared(&[&a, &b], &[3, 3]);
    assert!(
        closed_at.elapsed() < Duration::from_secs(10),
        "back within the session timeout"
    );
    assert_eq!(owned(&b), b_partitions, "B came back to other partitions");
    until_group_caught_up(&log, &[&a, &b]);

    assert_eq!(
        rebalances.load(Ordering::Acquire),
        0,
        "A rebalanced while B restarted"
    );
    assert!(
        a.committed_barriers() > barriers_before,
        "A stopped committing"
    );
    let restored = b.restored_records();
    let cold = cold_restore(&log, &b_tasks);
    eprintln!("B's restart restored {restored} changelog records; a cold restore reads {cold}");
    assert!(cold > 100, "B's tasks have state: {cold}");
    assert!(restored * 10 < cold, "B restored {restored} of {cold}");

    let ends = sentinels_of(SIX);
    produce_of(&log, &ends, SIX);
    all.extend(ends);
    until_group_caught_up(&log, &[&a, &b]);
    assert_no_error(&[&a, &b]);
    assert!(a.close(Duration::from_secs(60)), "{:?}", a.error());
    assert!(b.close(Duration::from_secs(60)), "{:?}", b.error());
    assert_eq!(read_committed_of(&log, SIX), expected(&all));
}
