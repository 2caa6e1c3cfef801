//! [`Pipeline`]: every sub-topology of a topology as one [`StreamTask`] on
//! one thread, with records written to repartition topics handed to the task
//! that reads them — the runtime's wiring without a broker, for benchmarks
//! and their tests.
//!
//! Time is driven as a barrier cadence would drive it: [`Pipeline::advance`]
//! routes pending repartition records, sets every task's floor to the
//! watermark, runs the emission passes in topological order (routing what
//! each emits before the next runs) and commits.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use stoatflow_streams::{
    OutputRecord, ProcessError, StreamTask, StreamsConfig, Topology, TopologyError, TypedInput,
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
    internal: HashSet<String>,
    /// Records pushed since internal topics were last routed.
    unrouted: usize,
    /// Sink records of external topics, kept until taken.
    outputs: Vec<OutputRecord>,
    /// The watermark of the last barrier.
    watermark: Watermark,
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
        let mut task_of_topic = HashMap::new();
        let mut internal = HashSet::new();
        for s in topology.sources() {
            task_of_topic.insert(s.topic.clone(), s.subtopology);
            if s.internal {
                internal.insert(s.topic);
            }
        }
        Ok(Pipeline {
            tasks,
            task_of_topic,
            internal,
            unrouted: 0,
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

    /// Hands records written to repartition topics to the tasks reading them,
    /// until none are left.
    pub fn route(&mut self) -> Result<(), ProcessError> {
        self.unrouted = 0;
        if self.internal.is_empty() {
            return Ok(());
        }
        loop {
            let mut moved = Vec::new();
            for task in &mut self.tasks {
                if !task.pending_output().is_empty() {
                    moved.extend(task.take_outputs_for(|t| self.internal.contains(t)));
                }
            }
            if moved.is_empty() {
                return Ok(());
            }
            for r in moved {
                let t = self.task_of_topic[&*r.topic];
                self.tasks[t].process(
                    &r.topic,
                    Some(0),
                    None,
                    r.key.as_deref(),
                    r.value.as_deref(),
                    r.timestamp,
                    r.headers,
                )?;
            }
        }
    }

    /// A barrier at watermark `w`: floors rise to `w`, the emission passes
    /// run in topological order against `w`, and every task commits.
    pub fn advance(&mut self, w: Watermark) -> Result<(), ProcessError> {
        self.watermark.advance_to(w);
        self.route()?;
        for task in &mut self.tasks {
            task.set_floor(w);
            task.on_watermark(w);
        }
        for i in 0..self.tasks.len() {
            self.tasks[i].advance_frontier(w)?;
            self.route()?;
        }
        for i in 0..self.tasks.len() {
            let commit = self.tasks[i].commit()?;
            for r in commit.outputs {
                if self.internal.contains(&*r.topic) {
                    // Released at the barrier into a repartition topic: the
                    // reading task (later in topological order) takes it now.
                    let t = self.task_of_topic[&*r.topic];
                    self.tasks[t].process(
                        &r.topic,
                        Some(0),
                        None,
                        r.key.as_deref(),
                        r.value.as_deref(),
                        r.timestamp,
                        r.headers,
                    )?;
                } else {
                    self.outputs.push(r);
                }
            }
        }
        Ok(())
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
