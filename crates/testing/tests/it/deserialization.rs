//! Bad input: records that do not deserialize, under both handlers.

use stoatflow_streams::{
    Consumed, DeserializationHandler, DropReason, Produced, Serdes, StreamsBuilder, StreamsConfig,
};
use stoatflow_testing::{DriverError, TopologyTestDriver};

fn driver(handler: DeserializationHandler) -> TopologyTestDriver {
    let mut b = StreamsBuilder::new();
    b.stream("amounts", Consumed::with(Serdes::string(), Serdes::i64()))
        .map_values(|_, v| v * 2)
        .to("doubled", Produced::with(Serdes::string(), Serdes::i64()));
    TopologyTestDriver::new(
        b.build().unwrap(),
        StreamsConfig::new("deser").with_deserialization_handler(handler),
    )
    .unwrap()
}

#[test]
fn fail_handler_names_topic_position_and_serde_and_keeps_what_was_accepted() {
    let d = driver(DeserializationHandler::LogAndFail);
    let input = d.create_input_topic("amounts", Serdes::string(), Serdes::i64());
    let out = d.create_output_topic("doubled", Serdes::string(), Serdes::i64());
    input.pipe_input_with_timestamp("a".into(), 21, 1).unwrap();
    let err = input
        .pipe_raw(Some(b"b".to_vec()), Some(vec![1, 2, 3]), 2)
        .unwrap_err();
    assert!(matches!(err, DriverError::Process(_)));
    let msg = err.to_string();
    assert!(msg.contains("topic amounts"), "{msg}");
    assert!(msg.contains("partition 0 offset 1"), "{msg}");
    assert!(msg.contains("serde i64"), "{msg}");
    assert!(msg.contains("value"), "{msg}");
    assert_eq!(
        out.read_key_value().unwrap(),
        ("a".to_string(), 42),
        "the accepted record is not lost"
    );
}

#[test]
fn continue_handler_skips_and_counts_the_record() {
    let d = driver(DeserializationHandler::LogAndContinue);
    let input = d.create_input_topic("amounts", Serdes::string(), Serdes::i64());
    let out = d.create_output_topic("doubled", Serdes::string(), Serdes::i64());
    input
        .pipe_raw(Some(vec![0xff, 0xfe]), Some(7i64.to_be_bytes().to_vec()), 1)
        .unwrap();
    input.pipe_raw(Some(b"k".to_vec()), None, 2).unwrap();
    input.pipe_input_with_timestamp("c".into(), 5, 3).unwrap();
    assert_eq!(
        out.read_key_values_to_list().unwrap(),
        [("c".to_string(), 10)]
    );
    assert_eq!(d.metrics().dropped(DropReason::DeserializationError), 2);
    // The same two drops as data: where each came from, no key, no window.
    let drops = d.dropped_records();
    let seen: Vec<_> = drops
        .iter()
        .map(|e| {
            (
                e.source.offset,
                e.timestamp,
                e.reason,
                e.key.clone(),
                e.window,
            )
        })
        .collect();
    let r = DropReason::DeserializationError;
    assert_eq!(
        seen,
        [(Some(0), 1, r, None, None), (Some(1), 2, r, None, None)]
    );
}

#[test]
fn a_null_value_for_a_non_nullable_serde_points_to_nullable() {
    let d = driver(DeserializationHandler::LogAndFail);
    let input = d.create_input_topic("amounts", Serdes::string(), Serdes::i64());
    let err = input
        .pipe_raw(Some(b"k".to_vec()), None, 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("Serdes::nullable"), "{err}");
}

#[test]
fn a_negative_timestamp_is_a_clear_error() {
    let d = driver(DeserializationHandler::LogAndFail);
    let input = d.create_input_topic("amounts", Serdes::string(), Serdes::i64());
    let err = input
        .pipe_input_with_timestamp("k".into(), 1, -1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("topic amounts") && err.contains("-1"), "{err}");
}
