//! The delete half of a `compact,delete` topic on the embedded log:
//! retention judged on the partition's own record timestamps.
//!
//! Owns one decision: which closed segments of a partition have passed the
//! topic's retention. A segment goes when its newest record is older than
//! the partition's newest record minus `Retention::time` (or while the
//! partition is larger than `Retention::bytes`), oldest first, whole
//! segments only, never the active one; the latest record of a key goes with
//! its segment. Judging by the partition's own newest record, not the wall
//! clock, keeps a changelog of replayed or back-filled event time (records
//! stamped long ago) whole while its store still holds those entries: the
//! store expires them on event time too. Compaction is the cleaner's; this
//! runs after it, under the log's lock.

use super::{MaintenanceReport, State};
use crate::error::LogError;
use crate::types::{TopicPartition, TopicSpec};

/// Drops the closed segments of `tp` past `spec`'s retention, judged
/// against the partition's newest record timestamp (see the module
/// documentation), recording the new log start first.
///
/// # Errors
/// [`LogError::Io`] recording the log start or removing segment files.
pub(super) fn expire(
    st: &mut State,
    tp: &TopicPartition,
    spec: &TopicSpec,
    report: &mut MaintenanceReport,
) -> Result<(), LogError> {
    let Some(part) = st.partitions.get(tp) else {
        return Ok(());
    };
    let newest = part.segments.iter().map(|s| s.max_ts).max();
    let cutoff = spec
        .retention
        .time
        .zip(newest.filter(|&t| t != i64::MIN))
        .map(|(retention, newest)| cutoff(newest, retention));
    if let Some(start) = part.retention_start(spec.retention.bytes, cutoff) {
        report.deleted_segments += st.move_log_start(tp, start)?;
    }
    Ok(())
}

/// The timestamp a closed segment's newest record must reach to stay:
/// `newest - retention`, saturating.
fn cutoff(newest: i64, retention: std::time::Duration) -> i64 {
    newest.saturating_sub(i64::try_from(retention.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_cutoff_is_the_newest_record_less_the_retention_saturating() {
        assert_eq!(cutoff(100_000, Duration::from_millis(30_000)), 70_000);
        assert_eq!(cutoff(i64::MIN + 5, Duration::from_millis(10)), i64::MIN);
        assert_eq!(cutoff(0, Duration::MAX), -i64::MAX);
    }
}
