//! One pass of the log's upkeep, on the upkeep thread: repartition
//! partitions purged below offsets their reader committed (Kafka Streams'
//! `repartition.purge.interval.ms`: a repartition topic is read once, so
//! what its reader has committed past is garbage), then the log's own
//! compaction and retention where the log does not run them by itself (the
//! embedded log; a Kafka cluster does).
//!
//! Owns what was purged so far. Both steps only free space, so a failure
//! is logged, counted and tried again at the next pass; it never fails an
//! epoch or the application. Knows nothing of tasks, lanes or barriers.

use std::collections::HashMap;

use stoatflow_log::{Log, Offset, Timestamp, TopicPartition};
use stoatflow_time::{Clock, SystemClock};

/// What one pass is asked to do: purge each partition below its offset.
#[derive(Debug, Default)]
pub(crate) struct Pass {
    /// Repartition partitions and offsets their reader committed (by a
    /// transaction that committed before the pass was handed over).
    pub(crate) purge: Vec<(TopicPartition, Offset)>,
}

/// Each repartition partition, and the offset it was last purged below.
#[derive(Debug, Default)]
pub(crate) struct Purged(HashMap<TopicPartition, u64>);

impl Pass {
    /// Runs the pass on `log`. Returns the steps that failed (logged).
    pub(crate) fn run<L: Log>(self, log: &L, purged: &mut Purged) -> u64 {
        let mut failures = 0;
        for (tp, below) in self.purge {
            // Only forward: an older hand-over never asks for less.
            let done = purged.0.get(&tp).copied().unwrap_or(0);
            if below.0 <= done {
                continue;
            }
            match log.purge_below(&tp, below) {
                Ok(()) => {
                    purged.0.insert(tp, below.0);
                }
                Err(e) => {
                    failures += 1;
                    tracing::warn!(
                        partition = %tp,
                        below = below.0,
                        error = %e,
                        "purging a repartition topic failed; trying again next interval"
                    );
                }
            }
        }
        if let Err(e) = log.upkeep(wall_now()) {
            failures += 1;
            tracing::warn!(error = %e, "the log's upkeep failed; trying again next interval");
        }
        failures
    }
}

/// Retention is judged against the system's wall clock, as a broker judges it: never the
/// application's injected clock (a test's manual clock must not age the log).
fn wall_now() -> Timestamp {
    Timestamp(SystemClock.now().as_millis())
}
