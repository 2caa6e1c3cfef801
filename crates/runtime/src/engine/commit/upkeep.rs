//! The log's upkeep that an application asks for: repartition topics purged
//! below their committed offsets (Kafka Streams' `repartition.purge.interval.ms`:
//! a repartition topic is read once, so what its reader has committed past
//! is garbage), and the log's own compaction and retention where the log
//! does not run them by itself (the embedded log; a Kafka cluster does).
//!
//! At most once per interval, after a commit. Both only free space, so a
//! failure is logged and tried again at the next interval; it never fails
//! an epoch. Owns the interval, the log handle and which partitions are
//! repartition topics; knows nothing of tasks, lanes or barriers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use stoatflow_log::{Log, OffsetAndMetadata, Timestamp, TopicPartition};

pub(crate) struct Upkeep<L: Log> {
    log: Arc<L>,
    interval: Duration,
    last: Instant,
    /// Each repartition partition this instance reads, and the offset it was
    /// last purged below.
    repartition: HashMap<TopicPartition, u64>,
}

impl<L: Log> Upkeep<L> {
    /// Upkeep of `log` every `interval`, purging the partitions of
    /// `repartition`. The first is due one interval after `now`.
    pub(crate) fn new(
        log: Arc<L>,
        interval: Duration,
        repartition: impl IntoIterator<Item = TopicPartition>,
        now: Instant,
    ) -> Self {
        Upkeep {
            log,
            interval,
            last: now,
            repartition: repartition.into_iter().map(|tp| (tp, 0)).collect(),
        }
    }

    /// After a commit of `committed`: when due, purges each repartition
    /// partition below its committed offset and asks the log for its upkeep.
    pub(crate) fn after_commit(&mut self, committed: &[(TopicPartition, OffsetAndMetadata)]) {
        let now = Instant::now();
        if now.duration_since(self.last) < self.interval {
            return;
        }
        self.last = now;
        for (tp, om) in committed {
            let Some(purged) = self.repartition.get_mut(tp) else {
                continue;
            };
            if om.offset.0 <= *purged {
                continue;
            }
            match self.log.purge_below(tp, om.offset) {
                Ok(()) => *purged = om.offset.0,
                Err(e) => tracing::warn!(
                    partition = %tp,
                    below = om.offset.0,
                    error = %e,
                    "purging a repartition topic failed; trying again next interval"
                ),
            }
        }
        if let Err(e) = self.log.upkeep(wall_now()) {
            tracing::warn!(error = %e, "the log's upkeep failed; trying again next interval");
        }
    }
}

/// Retention is judged against the wall clock, as a broker judges it.
fn wall_now() -> Timestamp {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    Timestamp(ms)
}
