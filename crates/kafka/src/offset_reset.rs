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
//! never has to. Owns that rule and its log line; knows nothing of
//! librdkafka.

use stoatflow_log::{LogError, Offset, OffsetReset, TopicPartition};

/// `position` if it lies in `start..=end` of `tp`; otherwise where `reset`
/// moves it (logged), or with [`OffsetReset::None`] the
/// [`LogError::OffsetOutOfRange`] naming the partition, the position and
/// the range.
pub(crate) fn in_range(
    tp: &TopicPartition,
    position: u64,
    (start, end): (u64, u64),
    reset: OffsetReset,
) -> Result<u64, LogError> {
    if (start..=end).contains(&position) {
        return Ok(position);
    }
    let to = match reset {
        OffsetReset::Earliest => start,
        OffsetReset::Latest => end,
        OffsetReset::None => {
            return Err(LogError::OffsetOutOfRange {
                topic: tp.topic.clone(),
                partition: tp.partition,
                offset: Offset(position),
                start: Offset(start),
                end: Offset(end),
            });
        }
    };
    tracing::warn!(partition = %tp, offset = position, start, end, reset = ?reset, to, "the position is out of range; moved by the offset-reset policy");
    Ok(to)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_in_range_stays_and_one_outside_moves_by_the_policy() {
        let tp = TopicPartition::new("t", 0);
        for reset in [
            OffsetReset::Earliest,
            OffsetReset::Latest,
            OffsetReset::None,
        ] {
            for pos in [2, 3, 5] {
                assert_eq!(in_range(&tp, pos, (2, 5), reset).unwrap(), pos);
            }
        }
        assert_eq!(in_range(&tp, 8, (2, 5), OffsetReset::Earliest).unwrap(), 2);
        assert_eq!(in_range(&tp, 1, (2, 5), OffsetReset::Earliest).unwrap(), 2);
        assert_eq!(in_range(&tp, 8, (2, 5), OffsetReset::Latest).unwrap(), 5);
        assert_eq!(in_range(&tp, 1, (2, 5), OffsetReset::Latest).unwrap(), 5);
        let err = in_range(&tp, 8, (2, 5), OffsetReset::None).unwrap_err();
        assert!(
            matches!(
                err,
                LogError::OffsetOutOfRange {
                    offset: Offset(8),
                    start: Offset(2),
                    end: Offset(5),
                    ..
                }
            ),
            "{err:?}"
        );
    }
}
