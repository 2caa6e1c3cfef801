//! A state serde that refuses a value: the barrier that flushes the store's
//! changelog fails with an error naming the store and the key, instead of
//! killing the process.

use std::time::Duration;

use stoatflow_state::StateError;
use stoatflow_streams::{
    Consumed, Materialized, ProcessError, Serde, SerdeError, Serdes, StreamsBuilder, StreamsConfig,
    TimeWindows,
};
use stoatflow_testing::{DriverError, TopologyTestDriver};

/// `i64` big-endian, refusing negative values, as a user serde might refuse
/// a value it has no encoding for.
#[derive(Debug)]
struct NonNegative;

impl Serde<i64> for NonNegative {
    fn name(&self) -> &str {
        "non-negative"
    }

    fn serialize(&self, topic: &str, value: &i64, out: &mut Vec<u8>) -> Result<(), SerdeError> {
        if *value < 0 {
            return Err(SerdeError::Unwritable {
                serde: self.name().into(),
                topic: topic.into(),
                reason: format!("{value} is negative"),
            });
        }
        Serdes::i64().serialize(topic, value, out)
    }

    fn deserialize(&self, topic: &str, bytes: &[u8]) -> Result<i64, SerdeError> {
        Serdes::i64().deserialize(topic, bytes)
    }
}

#[test]
fn an_aggregate_value_the_serde_refuses_fails_the_barrier_naming_store_and_key() {
    let mut b = StreamsBuilder::new();
    let _sums = b
        .stream("amounts", Consumed::with(Serdes::string(), Serdes::i64()))
        .group_by_key()
        .windowed_by(TimeWindows::of_size_and_grace(
            Duration::from_millis(10),
            Duration::ZERO,
        ))
        .aggregate(
            || 0,
            |_, v, sum| sum + v,
            Materialized::as_("sums").with_value_serde(NonNegative),
        );
    let d = TopologyTestDriver::new(b.build().unwrap(), StreamsConfig::new("state-serde")).unwrap();
    let input = d.create_input_topic("amounts", Serdes::string(), Serdes::i64());
    input.pipe_input_with_timestamp("a".into(), 5, 1).unwrap();
    d.commit_barrier().unwrap();
    let committed = d.changelog("sums");
    assert_eq!(committed.len(), 1, "the first epoch committed");

    // The driver commits after each piped record: the barrier after this one
    // flushes `b`'s sum, which the serde refuses.
    let err = input
        .pipe_input_with_timestamp("b".into(), -3, 2)
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("store sums: cannot encode the value of key \"b\""),
        "{msg}"
    );
    assert!(msg.contains("-3 is negative"), "{msg}");
    match err {
        DriverError::Process(ProcessError::State { store, source }) => {
            assert_eq!(store, "sums");
            assert!(
                matches!(*source, StateError::EncodeValue { ref key, .. } if key == "\"b\""),
                "{source:?}"
            );
        }
        other => panic!("expected a store error, got {other:?}"),
    }
    assert_eq!(
        d.changelog("sums"),
        committed,
        "nothing of the failed epoch reached the changelog"
    );
}
