//! [`TaskStamps`]: the `stoatflow-watermark` store, one stamp ring per task
//! this instance owns (docs/state.md#watermark-store,
//! docs/scale-out.md#instance-watermark).
//!
//! Instances of one application own different tasks and each stamps its
//! barriers with the watermark over its own partitions, so one ring per
//! sub-topology would mix stamps of different instances: a task seeded from
//! another instance's ring could get a floor above what it was judged
//! against (on-time records dropped) or below it (late ones admitted). So
//! each task has its own ring, in its own partition of the watermark
//! changelog ([`Layout::watermark_partition`]), written only by the instance
//! that owns the task, and moves with the task like any other state. What a
//! ring holds is the task's floor: the instance's stamp, but never below the
//! floor the task was seeded with (an instance behind the previous owner
//! keeps the task's floor where it was).
//!
//! Owns the rings, their restore and their seeds; knows nothing of lanes or
//! the tracker.

use std::collections::BTreeMap;

use stoatflow_log::{Log, TopicPartition};
use stoatflow_state::{
    BarrierStamp, ChangelogBatch, InMemoryKeyValueStore, StateStore, WATERMARK_STORE_NAME,
    WatermarkKey, WatermarkStore, changelog_topic, in_memory_watermark_store,
};
use stoatflow_time::Watermark;

use crate::config::RuntimeConfig;
use crate::config::layout::Layout;
use crate::engine::restore::changelog_read::read_to_end;
use crate::error::RuntimeError;
use crate::task_id::TaskId;

type Ring = WatermarkStore<InMemoryKeyValueStore<WatermarkKey, i64>>;

struct TaskRing {
    ring: Ring,
    tp: TopicPartition,
    /// The task's floor: seeded, then raised by every stamp.
    floor: Watermark,
}

/// What the rings seed.
#[derive(Debug, Clone)]
pub(crate) struct Seeds {
    /// Per task, (floor, frontier).
    pub(crate) tasks: BTreeMap<TaskId, (Watermark, Watermark)>,
    /// Per sub-topology, the least (frontier, floor) of its tasks here.
    pub(crate) recent: Vec<[Watermark; 2]>,
    /// The newest barrier any owned task's ring has seen.
    pub(crate) last_barrier: u64,
}

/// The stamp rings of the tasks this instance owns.
pub(crate) struct TaskStamps {
    rings: BTreeMap<TaskId, TaskRing>,
}

fn state_err(source: stoatflow_state::StateError) -> RuntimeError {
    RuntimeError::State {
        store: WATERMARK_STORE_NAME.into(),
        source: Box::new(source),
    }
}

impl TaskStamps {
    /// Restores the rings of `tasks` from their watermark changelog partitions.
    pub(crate) fn restore<L: Log>(
        config: &RuntimeConfig,
        log: &L,
        plan: &Layout,
        tasks: impl IntoIterator<Item = TaskId>,
    ) -> Result<Self, RuntimeError> {
        let app = config.application_id();
        let topic = changelog_topic(app, WATERMARK_STORE_NAME);
        let mut rings: BTreeMap<TaskId, TaskRing> = tasks
            .into_iter()
            .map(|id| {
                let tp = TopicPartition::new(topic.as_str(), plan.watermark_partition(id));
                let ring = in_memory_watermark_store(config.streams.changelog_enabled);
                (
                    id,
                    TaskRing {
                        ring,
                        tp,
                        floor: Watermark::MIN,
                    },
                )
            })
            .collect();
        if config.streams.changelog_enabled && !rings.is_empty() {
            let mut consumer = log.consumer(&format!("{app}-restore-watermarks"))?;
            let mut read = read_to_end(
                &mut consumer,
                rings.values().map(|r| (r.tp.clone(), 0)),
                config.restore_stall_timeout,
                WATERMARK_STORE_NAME,
                None,
            )?;
            for r in rings.values_mut() {
                let entries = read
                    .remove(&r.tp)
                    .unwrap_or_default()
                    .into_iter()
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| state_err(e.corrupt(WATERMARK_STORE_NAME, "record has no key")))?;
                let total = entries.len() as u64;
                stoatflow_state::restore(r.ring.store_mut(), entries, total, &mut |_| {})
                    .map_err(state_err)?;
            }
        }
        Ok(TaskStamps { rings })
    }

    /// Each task's floor and frontier (crash or graceful, as its ring says).
    pub(crate) fn seeds(&mut self, subtopologies: usize) -> Result<Seeds, RuntimeError> {
        let mut seeds = Seeds {
            tasks: BTreeMap::new(),
            recent: vec![[Watermark::MIN; 2]; subtopologies],
            last_barrier: 0,
        };
        let mut seen = vec![false; subtopologies];
        for (id, r) in &mut self.rings {
            let seed = r.ring.seed().map_err(state_err)?;
            let floor = Watermark::from_millis(seed.floor);
            let frontier = Watermark::from_millis(seed.frontier);
            tracing::info!(task = %id, graceful = seed.graceful, floor = %floor, frontier = %frontier, last_barrier = ?seed.last_barrier, "seeded from the watermark store");
            r.floor = floor;
            seeds.last_barrier = seeds.last_barrier.max(seed.last_barrier.unwrap_or(0));
            seeds.tasks.insert(*id, (floor, frontier));
            let recent = &mut seeds.recent[id.subtopology];
            if seen[id.subtopology] {
                *recent = [recent[0].min(frontier), recent[1].min(floor)];
            } else {
                *recent = [frontier, floor];
                seen[id.subtopology] = true;
            }
        }
        Ok(seeds)
    }

    /// Records barrier `barrier` in every ring (sub-topology `st`'s stamp
    /// `stamps[st]`, not below the task's floor); with `flush`, marks it a
    /// graceful flush. Returns each ring's changelog records.
    pub(crate) fn record(
        &mut self,
        barrier: u64,
        stamps: &[Watermark],
        flush: bool,
        timestamp: i64,
    ) -> Result<Vec<(TopicPartition, ChangelogBatch)>, RuntimeError> {
        let mut out = Vec::with_capacity(self.rings.len());
        for (id, r) in &mut self.rings {
            r.floor.advance_to(stamps[id.subtopology]);
            r.ring
                .record_stamp(
                    BarrierStamp {
                        barrier,
                        watermark: r.floor.as_millis(),
                    },
                    timestamp,
                )
                .map_err(state_err)?;
            if flush {
                r.ring
                    .mark_graceful_flush(barrier, timestamp)
                    .map_err(state_err)?;
            }
            let mut records = ChangelogBatch::new();
            if r.ring.store().changelog_enabled() {
                r.ring
                    .store_mut()
                    .flush_changelog(&mut records)
                    .map_err(state_err)?;
            }
            out.push((r.tp.clone(), records));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use stoatflow_log::{EmbeddedLog, Record, Timestamp, TopicSpec, TransactionalProducer};

    use super::*;
    use crate::config::Backend;

    fn task(subtopology: usize, partition: u32) -> TaskId {
        TaskId::new(subtopology, partition)
    }

    #[test]
    fn each_task_has_its_own_partition_subtopology_by_subtopology() {
        let plan = Layout {
            partitions: BTreeMap::from([(0, 3), (1, 2)]),
            sinks: HashMap::new(),
        };
        let got: Vec<u32> = [task(0, 0), task(0, 2), task(1, 0), task(1, 1)]
            .into_iter()
            .map(|t| plan.watermark_partition(t))
            .collect();
        assert_eq!(got, [0, 2, 3, 4]);
    }

    /// A task taken over by an instance whose watermark is behind the
    /// previous owner's keeps the floor it had: its ring never records less.
    #[test]
    fn a_task_moved_to_an_instance_behind_keeps_its_floor() {
        let config = RuntimeConfig::new("app", Backend::InMemory);
        let plan = Layout {
            partitions: BTreeMap::from([(0, 2)]),
            sinks: HashMap::new(),
        };
        let log = EmbeddedLog::in_memory();
        let topic = changelog_topic("app", WATERMARK_STORE_NAME);
        log.create_topic(&TopicSpec::new(topic.as_str(), 2).compacted())
            .unwrap();
        let commit = |records: Vec<(TopicPartition, ChangelogBatch)>| {
            let mut p = log.transactional_producer("writer").unwrap();
            p.begin().unwrap();
            for (tp, rs) in records {
                for r in &rs {
                    let rec = Record::new(Some(r.key), r.value, Timestamp(1));
                    p.send(&tp, &rec).unwrap();
                }
            }
            p.commit().unwrap();
        };
        // The first owner of both tasks stamps barrier 7 at 1 000.
        let mut first =
            TaskStamps::restore(&config, &log, &plan, [task(0, 0), task(0, 1)]).unwrap();
        first.seeds(1).unwrap();
        commit(
            first
                .record(7, &[Watermark::from_millis(1_000)], false, 1)
                .unwrap(),
        );
        // Task 0_1 moves to an instance whose own watermark is only 400.
        let mut second = TaskStamps::restore(&config, &log, &plan, [task(0, 1)]).unwrap();
        let seeds = second.seeds(1).unwrap();
        assert_eq!(seeds.tasks[&task(0, 1)].0, Watermark::from_millis(1_000));
        assert_eq!(seeds.last_barrier, 7);
        commit(
            second
                .record(8, &[Watermark::from_millis(400)], false, 1)
                .unwrap(),
        );
        let mut third = TaskStamps::restore(&config, &log, &plan, [task(0, 1)]).unwrap();
        let seeds = third.seeds(1).unwrap();
        assert_eq!(seeds.tasks[&task(0, 1)].0, Watermark::from_millis(1_000));
        assert_eq!(seeds.last_barrier, 8);
        // Task 0_0 was never stamped by the second instance.
        let mut rest = TaskStamps::restore(&config, &log, &plan, [task(0, 0)]).unwrap();
        assert_eq!(rest.seeds(1).unwrap().last_barrier, 7);
    }
}
