//! Where the offset-reset policy moves a position that lies outside its
//! partition's readable range, for [`KafkaConsumer`](crate::KafkaConsumer):
//! the embedded log's rule (`stoatflow_log::OffsetReset`) on Kafka's
//! watermarks, so both backends deliver the same records after a seek or a
//! committed offset past the end.
//!
//! librdkafka would reset such a position itself, but the consumer tracks
//! positions of its own and drops a record below one as fetched before a
//! seek: after librdkafka's reset to the earliest offset, the records
//! between the partition's end and the position were dropped that way,
//! silently. So the consumer applies the policy itself, and librdkafka
//! never has to. The rule is the log's ([`OffsetReset::place`]); this module
//! owns what librdkafka is told to do with it.

use stoatflow_log::OffsetReset;

/// librdkafka's `auto.offset.reset` for `reset`: what it does with a
/// position that leaves the range after the consumer checked it (retention
/// deleting below it).
pub(crate) fn librdkafka_value(reset: OffsetReset) -> &'static str {
    match reset {
        OffsetReset::Earliest => "earliest",
        OffsetReset::Latest => "latest",
        OffsetReset::None => "error",
    }
}
