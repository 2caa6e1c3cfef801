//! Taking over from a Kafka Streams application of the same application id
//! (`stoatflow.migration.from-kafka-streams`).
//!
//! Owns two decisions: whether this start is a takeover, and what each
//! task's Kafka Streams stream time was. Everything else a takeover needs is
//! already the ordinary start, because the layouts are Kafka Streams' own:
//! changelog topics `<application.id>-<store>-changelog` with partition = task
//! partition, windowed and session keys, values with a timestamped store's
//! timestamp in the record timestamp (`stoatflow_state::ChangelogValueLayout`),
//! and the partition time in the committed offsets' metadata
//! (`stoatflow_log::offset_metadata`). So the stores restore from Kafka
//! Streams' changelogs and the tracker and the sources resume from its
//! partition times with no translation. What Kafka Streams does not leave is
//! an emit frontier: its suppress (`until_window_closes`) and its
//! on-window-close emission forward a window once the task's stream time
//! reaches the window's end + grace (+ gap for sessions), so the stream time
//! says what was emitted; `StreamTask::take_over_from_kafka_streams` turns it
//! into emit frontiers and a floor.
//!
//! Knows nothing of the poll loop, the producer or how stores restore.

use stoatflow_streams::StreamTask;
use stoatflow_time::EventTime;

use crate::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::task_id::TaskId;

/// Whether this start takes over from Kafka Streams: migration is asked for
/// and no barrier was ever committed under this application id (the
/// watermark store holds no stamp, `last_barrier` = 0). Once the first
/// transaction commits, the emit frontiers it carries say what was emitted,
/// and every later start is an ordinary restart.
pub(crate) fn is_takeover(config: &RuntimeConfig, last_barrier: u64) -> bool {
    if !config.migration_from_kafka_streams || last_barrier != 0 {
        return false;
    }
    if !config.streams.changelog_enabled {
        tracing::warn!(
            "stoatflow.migration.from-kafka-streams is set but changelogs are disabled: \
             nothing is taken over"
        );
        return false;
    }
    true
}

/// Kafka Streams' stream time of `task`: the largest partition time
/// committed with the offsets of its source partitions (`partition_times`:
/// per task and source topic). `None` when none was committed (Kafka Streams
/// never processed the task's input, so it emitted nothing from it).
pub(crate) fn stream_time(
    task: TaskId,
    partition_times: &[(TaskId, std::sync::Arc<str>, EventTime)],
) -> Option<EventTime> {
    partition_times
        .iter()
        .filter(|(t, ..)| *t == task)
        .map(|(_, _, time)| *time)
        .max()
}

/// Seeds `task`, its stores already restored from Kafka Streams'
/// changelogs, with what Kafka Streams emitted and dropped by its stream
/// time, or, for an on-window-close aggregation whose store names an entry
/// of the processor metadata (`processor_metadata`: per task, committed with
/// its offsets; KIP-825 keeps the last emitted window close time under the
/// store's name), by that.
pub(crate) fn take_over(
    id: TaskId,
    task: &mut StreamTask,
    partition_times: &[(TaskId, std::sync::Arc<str>, EventTime)],
    processor_metadata: &[(TaskId, String, i64)],
) -> Result<(), RuntimeError> {
    let Some(time) = stream_time(id, partition_times) else {
        tracing::info!(task = %id, "taken over from Kafka Streams: no partition time committed");
        return Ok(());
    };
    let emit_final: Vec<(String, i64)> = processor_metadata
        .iter()
        .filter(|(t, ..)| *t == id)
        .map(|(_, k, v)| (k.clone(), *v))
        .collect();
    tracing::info!(task = %id, stream_time = time.as_millis(), ?emit_final, "taken over from Kafka Streams");
    task.take_over_from_kafka_streams(time, &emit_final)
        .map_err(|source| RuntimeError::Process {
            task: id.to_string(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Backend;

    fn config(migrate: bool) -> RuntimeConfig {
        let mut c = RuntimeConfig::new("app", Backend::InMemory);
        c.migration_from_kafka_streams = migrate;
        c
    }

    #[test]
    fn only_a_first_start_with_migration_asked_for_takes_over() {
        assert!(is_takeover(&config(true), 0));
        assert!(
            !is_takeover(&config(true), 3),
            "a barrier committed: a restart"
        );
        assert!(!is_takeover(&config(false), 0));
        let mut no_changelog = config(true);
        no_changelog.streams.changelog_enabled = false;
        assert!(!is_takeover(&no_changelog, 0));
    }

    #[test]
    fn the_stream_time_is_the_largest_partition_time_of_the_task() {
        let task = |partition| TaskId {
            subtopology: 0,
            partition,
        };
        let t = |ms| EventTime::new(ms).unwrap();
        let times = vec![
            (task(0), "a".into(), t(50)),
            (task(0), "b".into(), t(70)),
            (task(1), "a".into(), t(90)),
        ];
        assert_eq!(stream_time(task(0), &times), Some(t(70)));
        assert_eq!(stream_time(task(1), &times), Some(t(90)));
        assert_eq!(stream_time(task(2), &times), None);
    }
}
