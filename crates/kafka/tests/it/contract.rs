//! The broker contract (the same suite the embedded log passes), against
//! Kafka on a real broker.

use stoatflow_log::contract;

use crate::broker::TestBroker;

macro_rules! kafka_contract_tests {
    ($($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                let Some(broker) = TestBroker::start(concat!("contract::", stringify!($check))) else {
                    return;
                };
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
    batched_fetch,
);

#[test]
fn oversized_record_refused() {
    let Some(broker) = TestBroker::start("contract::oversized_record_refused") else {
        return;
    };
    let log = broker.log();
    let limit = log.config().max_record_bytes;
    contract::oversized_record_refused(&log, "kafka", limit);
}
