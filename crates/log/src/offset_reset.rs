//! Where a consumer's out-of-range position goes: the offset-reset rule both backends'
//! consumers apply ([`OffsetReset::place`]). Above `types` and `error`; knows nothing of a
//! backend.

use crate::error::LogError;
use crate::types::{Offset, OffsetReset, TopicPartition};

impl OffsetReset {
    /// `position` if it lies in the readable range `start..=end` of `tp`;
    /// otherwise where this policy moves it (logged), or with
    /// [`OffsetReset::None`] the [`LogError::OffsetOutOfRange`] naming
    /// the partition, the position and the range. The one rule both
    /// backends' consumers apply.
    ///
    /// # Errors
    /// [`LogError::OffsetOutOfRange`] under [`OffsetReset::None`].
    pub fn place(
        self,
        tp: &TopicPartition,
        position: u64,
        (start, end): (u64, u64),
    ) -> Result<u64, LogError> {
        if (start..=end).contains(&position) {
            return Ok(position);
        }
        let to = match self {
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
        tracing::warn!(partition = %tp, offset = position, start, end, reset = ?self, to, "the position is out of range; moved by the offset-reset policy");
        Ok(to)
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
                assert_eq!(reset.place(&tp, pos, (2, 5)).unwrap(), pos);
            }
        }
        assert_eq!(OffsetReset::Earliest.place(&tp, 8, (2, 5)).unwrap(), 2);
        assert_eq!(OffsetReset::Earliest.place(&tp, 1, (2, 5)).unwrap(), 2);
        assert_eq!(OffsetReset::Latest.place(&tp, 8, (2, 5)).unwrap(), 5);
        assert_eq!(OffsetReset::Latest.place(&tp, 1, (2, 5)).unwrap(), 5);
        let err = OffsetReset::None.place(&tp, 8, (2, 5)).unwrap_err();
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
