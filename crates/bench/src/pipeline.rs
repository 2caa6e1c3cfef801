//! [`Pipeline`]: every sub-topology of a topology as one [`StreamTask`] on
//! one thread, with records written to repartition topics handed to the task
//! that reads them — the runtime's wiring without a broker, for benchmarks
//! and their tests.
//!
//! Time is driven as a barrier cadence would drive it: [`Pipeline::advance`]
//! routes pending repartition records, sets every task's floor to the
//! watermark, and runs [`BarrierSchedule`]'s simpler clock: the emission
//! passes in topological order (routing what each emits before the next
//! runs), then the commit.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;

use stoatflow_streams::{
    BarrierSchedule, EpochCommit, OutputRecord, ProcessError, StreamTask, StreamsConfig, Topology,
    TopologyError, TopologyTasks, TypedInput,
};
use stoatflow_time::Watermark;

/// A typed entry into one task of a [`Pipeline`].
#[derive(Debug)]
pub struct Input<K, V> {
    task: usize,
    typed: TypedInput<K, V>,
}

/// All sub-topologies of a topology, wired together in-process.
#[derive(Debug)]
pub struct Pipeline {
    tasks: Vec<StreamTask>,
    task_of_topic: HashMap<String, usize>,
    /// Each repartition topic and the task reading it: a handful, so a scan
    /// comparing names beats hashing each record's topic.
    internal: Vec<(String, usize)>,
    /// Records pushed since internal topics were last routed.
    unrouted: usize,
    /// Records being routed, kept between routings for its capacity.
    moved: Vec<OutputRecord>,
    /// Sink records of external topics, kept until taken.
    outputs: Vec<OutputRecord>,
    /// The watermark of the last barrier.
    watermark: Watermark,
}

thread_local! {
    /// The most entries the stores of this thread's pipeline held at a barrier
    /// (after its emission pass and expiry), for the run's report.
    static PEAK_STORE_ENTRIES: Cell<u64> = const { Cell::new(0) };
}

/// The most entries all stores of the last pipeline built on this thread held
/// at once, sampled at each barrier after expiry.
pub fn peak_store_entries() -> u64 {
    PEAK_STORE_ENTRIES.with(Cell::get)
}

/// How far [`Pipeline::finish`] walks the watermark before jumping to the end.
pub const FINISH_SPAN_MS: i64 = 60_000;

/// Route repartition records at least this often (pushes).
const ROUTE_EVERY: usize = 1024;

impl Pipeline {
    /// Validates `topology` with `config` and instantiates every sub-topology.
    pub fn new(topology: &Topology, config: StreamsConfig) -> Result<Self, TopologyError> {
        topology.validate(&config)?;
        let config = Arc::new(config);
        let tasks = (0..topology.subtopology_count())
            .map(|st| topology.instantiate(st, &config))
            .collect();
        PEAK_STORE_ENTRIES.with(|p| p.set(0));
        let mut task_of_topic = HashMap::new();
        let mut internal = Vec::new();
        for s in topology.sources() {
            task_of_topic.insert(s.topic.clone(), s.subtopology);
            if s.internal {
                internal.push((s.topic, s.subtopology));
            }
        }
        Ok(Pipeline {
            tasks,
            task_of_topic,
            internal,
            unrouted: 0,
            moved: Vec::new(),
            outputs: Vec::new(),
            watermark: Watermark::MIN,
        })
    }

    /// The typed entry of `topic`, if some task reads it with key `K` and value `V`.
    pub fn input<K: 'static, V: 'static>(&self, topic: &str) -> Option<Input<K, V>> {
        let task = *self.task_of_topic.get(topic)?;
        let typed = self.tasks[task].typed_input::<K, V>(topic)?;
        Some(Input { task, typed })
    }

    /// Pushes one typed record at event time `timestamp`.
    #[inline]
    pub fn push<K, V>(
        &mut self,
        input: &Input<K, V>,
        key: K,
        value: V,
        timestamp: i64,
    ) -> Result<(), ProcessError> {
        self.tasks[input.task].push_typed(&input.typed, key, value, timestamp)?;
        if !self.internal.is_empty() {
            self.unrouted += 1;
            if self.unrouted >= ROUTE_EVERY {
                self.route()?;
            }
        }
        Ok(())
    }

    /// The task reading repartition topic `topic`, if it is one.
    #[inline]
    fn internal_task(internal: &[(String, usize)], topic: &str) -> Option<usize> {
        internal
            .iter()
            .find(|(t, _)| t == topic)
            .map(|&(_, task)| task)
    }

    /// Hands records written to repartition topics to the tasks reading them,
    /// until none are left.
    pub fn route(&mut self) -> Result<(), ProcessError> {
        self.unrouted = 0;
        if self.internal.is_empty() {
            return Ok(());
        }
        let mut moved = std::mem::take(&mut self.moved);
        let routed = loop {
            let internal = &self.internal;
            for task in &mut self.tasks {
                if !task.pending_output().is_empty() {
                    task.move_outputs_for(
                        |t| Self::internal_task(internal, t).is_some(),
                        &mut moved,
                    );
                }
            }
            if moved.is_empty() {
                break Ok(());
            }
            if let Err(e) = self.hand_over(&mut moved) {
                break Err(e);
            }
        };
        moved.clear();
        self.moved = moved;
        routed
    }

    /// Hands every record of `moved` to the task reading its topic, in
    /// order, leaving `moved` empty (its capacity kept for the next round).
    fn hand_over(&mut self, moved: &mut Vec<OutputRecord>) -> Result<(), ProcessError> {
        for r in moved.drain(..) {
            let t = Self::internal_task(&self.internal, &r.topic).expect("taken because internal");
            self.tasks[t].process_handed_over(r)?;
        }
        Ok(())
    }

    /// A barrier at watermark `w`: floors rise to `w`, then the barrier
    /// schedule's simpler clock runs: the emission passes in topological
    /// order against `w`, and every task commits.
    pub fn advance(&mut self, w: Watermark) -> Result<(), ProcessError> {
        self.watermark.advance_to(w);
        self.route()?;
        for task in &mut self.tasks {
            task.set_floor(w);
            task.on_watermark(w);
        }
        BarrierSchedule::advance(self, w)?;
        BarrierSchedule::commit(self)?;
        let entries = self.store_entries();
        PEAK_STORE_ENTRIES.with(|p| p.set(p.get().max(entries)));
        Ok(())
    }

    /// Entries held by every store of every task now.
    pub fn store_entries(&self) -> u64 {
        self.tasks
            .iter()
            .flat_map(|t| t.store_names().filter_map(|n| t.state_store(n)))
            .map(|s| s.borrow().approximate_num_entries())
            .sum()
    }

    /// The end of input. The watermark moves on as idle sources would let it,
    /// in 1 s steps for [`FINISH_SPAN_MS`], so every window of up to that size
    /// closes and what it emits still meets the join stores its closing
    /// reaches, then jumps to the maximum.
    pub fn finish(&mut self) -> Result<(), ProcessError> {
        if !self.watermark.is_none_yet() && self.watermark < Watermark::MAX {
            let from = self.watermark.as_millis();
            for step in 1..=FINISH_SPAN_MS / 1000 {
                self.advance(Watermark::from_millis(from.saturating_add(step * 1000)))?;
            }
        }
        self.advance(Watermark::MAX)
    }

    /// Committed records of external sink topics, taken.
    pub fn take_outputs(&mut self) -> Vec<OutputRecord> {
        std::mem::take(&mut self.outputs)
    }

    /// Number of tasks (sub-topologies).
    pub fn task_count(&self) -> usize {
        self.tasks.len()
    }
}

impl TopologyTasks for Pipeline {
    type Error = ProcessError;

    fn tasks(&mut self) -> &mut [StreamTask] {
        &mut self.tasks
    }

    fn route(&mut self) -> Result<(), ProcessError> {
        Pipeline::route(self)
    }

    fn committed(&mut self, _task: usize, commit: EpochCommit) -> Result<(), ProcessError> {
        for r in commit.outputs {
            if let Some(t) = Self::internal_task(&self.internal, &r.topic) {
                // Released at the barrier into a repartition topic: the
                // reading task (later in topological order) takes it now.
                self.tasks[t].process_handed_over(r)?;
            } else {
                self.outputs.push(r);
            }
        }
        Ok(())
    }
}
