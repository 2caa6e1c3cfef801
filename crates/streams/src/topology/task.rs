//! [`StreamTask`]: applies records, watermark events and barriers to one
//! sub-topology, on one thread.
//!
//! The task owns the two clocks a sub-topology reads (docs/barriers.md#floors): the
//! **floor** records are judged against, and the **frontier** final results
//! are emitted against. It holds the epoch's pending output and the stores'
//! dirty changelog entries until a barrier takes them. It knows nothing of
//! threads, brokers or how the clocks were computed: the test driver feeds it
//! its one-number clock, the runtime feeds it barrier stamps. The order of a
//! barrier's steps on it is [`BarrierSchedule`](crate::BarrierSchedule)'s.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{ChangelogBatch, ChangelogValueLayout, StateStore};
use stoatflow_time::{EventTime, Watermark};

use crate::error::ProcessError;
use crate::record::{Headers, Record};
use crate::topology::context::{DropEvent, OutputRecord, RecordMetadata, TaskContext, TaskMetrics};
use crate::topology::graph::{
    FrontierOperator, Instantiation, Port, SourceInput, StoreHandle, TimeOperator,
};

/// A record as a log holds it, borrowed: what [`StreamTask::process_run`]
/// takes.
#[derive(Debug, Clone)]
pub struct RawRecord<'a> {
    /// Its offset, if from a log.
    pub offset: Option<i64>,
    /// The key bytes; `None` is null.
    pub key: Option<&'a [u8]>,
    /// The value bytes; `None` is null.
    pub value: Option<&'a [u8]>,
    /// The record timestamp, ms.
    pub timestamp: i64,
    /// Its headers.
    pub headers: Headers,
}

/// What one epoch commits: its output records and its changelog writes.
#[derive(Debug, Default)]
pub struct EpochCommit {
    /// The epoch (barrier number) this commit closes.
    pub epoch: u64,
    /// Records for sink and repartition topics.
    pub outputs: Vec<OutputRecord>,
    /// Changelog records per store, one per dirty key, each store's in one batch.
    pub changelogs: Vec<(String, ChangelogBatch)>,
}

impl EpochCommit {
    /// Adds what a later crossing of the same barrier took (a final flush)
    /// to this epoch, after its own records.
    pub(crate) fn absorb(&mut self, later: EpochCommit) {
        self.outputs.extend(later.outputs);
        self.changelogs.extend(later.changelogs);
    }
}

/// The task running one sub-topology.
pub struct StreamTask {
    subtopology: usize,
    cx: TaskContext,
    sources: HashMap<String, Rc<RefCell<dyn SourceInput>>>,
    /// The source of the last processed record's topic: a run of records
    /// of one topic finds it without hashing the topic each time.
    last_source: Option<(Arc<str>, Rc<RefCell<dyn SourceInput>>)>,
    frontier_ops: Vec<Rc<RefCell<dyn FrontierOperator>>>,
    time_ops: Vec<Rc<RefCell<dyn TimeOperator>>>,
    stores: BTreeMap<String, StoreHandle>,
    persistent: Vec<crate::topology::PersistentStore>,
    frontier: Watermark,
    /// The last few barrier stamps, newest last.
    stamps: VecDeque<Watermark>,
    epoch: u64,
}

impl std::fmt::Debug for StreamTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamTask")
            .field("subtopology", &self.subtopology)
            .field("floor", &self.cx.floor)
            .field("frontier", &self.frontier)
            .field("epoch", &self.epoch)
            .finish()
    }
}

const STAMPS_KEPT: usize = 4;

impl StreamTask {
    pub(crate) fn new(subtopology: usize, cx: Instantiation) -> Self {
        StreamTask {
            subtopology,
            cx: TaskContext::default(),
            sources: cx.sources,
            last_source: None,
            frontier_ops: cx.frontier_ops.into_values().collect(),
            time_ops: cx.time_ops.into_values().collect(),
            stores: cx.stores,
            persistent: cx.persistent,
            frontier: Watermark::MIN,
            stamps: VecDeque::new(),
            epoch: 0,
        }
    }

    /// The sub-topology this task runs.
    pub fn subtopology(&self) -> usize {
        self.subtopology
    }

    /// The topics this task reads.
    pub fn source_topics(&self) -> impl Iterator<Item = &str> {
        self.sources.keys().map(String::as_str)
    }

    /// Whether this task reads `topic`.
    pub fn reads(&self, topic: &str) -> bool {
        self.sources.contains_key(topic)
    }

    /// The floor the next record is judged against.
    pub fn floor(&self) -> Watermark {
        self.cx.floor
    }

    /// The last watermark delivered to the task (`current_watermark_ms`).
    pub fn watermark(&self) -> Watermark {
        self.cx.watermark
    }

    /// The frontier final results were last emitted against.
    pub fn frontier(&self) -> Watermark {
        self.frontier
    }

    /// Sets the floor (never lowers it).
    pub fn set_floor(&mut self, floor: Watermark) {
        self.cx.floor.advance_to(floor);
    }

    /// Delivers a watermark event: what `current_watermark_ms()` returns.
    pub fn on_watermark(&mut self, watermark: Watermark) {
        self.cx.watermark.advance_to(watermark);
    }

    /// Fires what runs on event time (docs/barriers.md#watermark-events): STREAM_TIME punctuators
    /// and scheduled sources against `punctuation`, event-time timers
    /// against `timers`. Output joins the current epoch.
    pub fn fire_event_time(
        &mut self,
        punctuation: Watermark,
        timers: Watermark,
    ) -> Result<(), ProcessError> {
        self.cx.meta = RecordMetadata::default();
        for op in &self.time_ops {
            op.borrow_mut()
                .on_event_time(&mut self.cx, punctuation, timers)?;
        }
        Ok(())
    }

    /// A wall-clock tick: wall-clock punctuators and wall-clock or cron
    /// scheduled sources due at or before `now` fire. Output joins the
    /// current epoch.
    pub fn on_wall_clock(&mut self, now: stoatflow_time::WallTime) -> Result<(), ProcessError> {
        self.cx.meta = RecordMetadata::default();
        if now > self.cx.wall_clock {
            self.cx.wall_clock = now;
        }
        for op in &self.time_ops {
            op.borrow_mut().on_wall_clock(&mut self.cx, now)?;
        }
        Ok(())
    }

    /// Applies one record from `topic` in serialized form. Returns its event
    /// time, or `None` when the deserialization handler skipped it.
    #[allow(clippy::too_many_arguments)]
    pub fn process(
        &mut self,
        topic: &str,
        partition: Option<i32>,
        offset: Option<i64>,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        timestamp: i64,
        headers: Headers,
    ) -> Result<Option<i64>, ProcessError> {
        if self.last_source.as_ref().is_none_or(|(t, _)| **t != *topic) {
            self.select_source(Arc::from(topic))?;
        }
        if &*self.cx.meta.topic != topic {
            self.cx.meta.topic = topic.into();
        }
        self.apply_bytes(partition, offset, key, value, timestamp, headers)
    }

    /// Processes `records`, consecutive records of one partition of
    /// `topic`, in order: as [`StreamTask::process`] each, with the source
    /// found and borrowed once for the run. While `topic` is the same
    /// allocation, the source and the context's topic are kept by a pointer
    /// check, not a comparison of bytes. Stops at the first
    /// error, after the records before it.
    ///
    /// # Errors
    /// As [`StreamTask::process`].
    pub fn process_run<'a>(
        &mut self,
        topic: &Arc<str>,
        partition: Option<i32>,
        records: impl Iterator<Item = RawRecord<'a>>,
    ) -> Result<(), ProcessError> {
        self.select_topic(topic)?;
        self.cx.meta.partition = partition;
        let (_, source) = self.last_source.as_ref().expect("selected above");
        let mut source = source.borrow_mut();
        for r in records {
            self.cx.meta.offset = r.offset;
            source.process_bytes(&mut self.cx, r.key, r.value, r.timestamp, r.headers)?;
        }
        Ok(())
    }

    /// Makes `topic`'s source the one records go to and the topic the
    /// records' metadata names, unless they already are (a pointer check).
    fn select_topic(&mut self, topic: &Arc<str>) -> Result<(), ProcessError> {
        if !self
            .last_source
            .as_ref()
            .is_some_and(|(t, _)| Arc::ptr_eq(t, topic))
        {
            self.select_source(topic.clone())?;
        }
        if !Arc::ptr_eq(&self.cx.meta.topic, topic) {
            self.cx.meta.topic = topic.clone();
        }
        Ok(())
    }

    /// Makes `topic`'s source the one records go to.
    fn select_source(&mut self, topic: Arc<str>) -> Result<(), ProcessError> {
        let source = self
            .sources
            .get(&*topic)
            .ok_or_else(|| ProcessError::UnknownTopic {
                topic: topic.to_string(),
            })?
            .clone();
        self.last_source = Some((topic, source));
        Ok(())
    }

    /// Hands a record to the selected source.
    fn apply_bytes(
        &mut self,
        partition: Option<i32>,
        offset: Option<i64>,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        timestamp: i64,
        headers: Headers,
    ) -> Result<Option<i64>, ProcessError> {
        self.cx.meta.partition = partition;
        self.cx.meta.offset = offset;
        let (_, source) = self.last_source.as_ref().expect("selected by the caller");
        source
            .borrow_mut()
            .process_bytes(&mut self.cx, key, value, timestamp, headers)
    }

    /// Applies a record another task of this thread wrote to a repartition
    /// topic this task reads, handed over in process (the test driver, the
    /// benchmarks' pipeline): partition 0, no offset.
    pub fn process_handed_over(
        &mut self,
        record: OutputRecord,
    ) -> Result<Option<i64>, ProcessError> {
        self.process(
            &record.topic,
            Some(0),
            None,
            record.key.as_deref(),
            record.value.as_deref(),
            record.timestamp,
            record.headers,
        )
    }

    /// Seeds the partition time the source of `topic` hands its timestamp assigner (the
    /// largest event time its partition produced, committed with the offset), so a
    /// restarted task assigns event times as the uninterrupted one would. A task is one
    /// partition of its sub-topology, so this is that partition's time. Returns whether
    /// the task reads `topic`.
    pub fn seed_partition_time(&mut self, topic: &str, partition_time: EventTime) -> bool {
        match self.sources.get(topic) {
            Some(source) => {
                source.borrow_mut().seed_partition_time(partition_time);
                true
            }
            None => false,
        }
    }

    /// The typed entry of `topic`'s source, for typed inputs and benchmarks.
    pub fn typed_input<K: 'static, V: 'static>(&self, topic: &str) -> Option<TypedInput<K, V>> {
        let port = self.sources.get(topic)?.borrow().typed_port();
        port.downcast::<Port<K, V>>()
            .ok()
            .map(|p| TypedInput { port: *p })
    }

    /// Pushes a typed record through `input` (the source's event time is the
    /// record's timestamp; no assigner runs).
    pub fn push_typed<K, V>(
        &mut self,
        input: &TypedInput<K, V>,
        key: K,
        value: V,
        timestamp: i64,
    ) -> Result<(), ProcessError> {
        input
            .port
            .borrow_mut()
            .push(&mut self.cx, Record::new(key, value, timestamp))
    }

    /// Runs the emission pass if `frontier` moved past the last one: every
    /// watermark-aware operator, in topological order, emits what closes at
    /// or before it. Output joins the current epoch. A step of
    /// [`BarrierSchedule`](crate::BarrierSchedule), which is how every
    /// runner reaches it; a benchmark of one task may call it directly.
    pub fn advance_frontier(&mut self, frontier: Watermark) -> Result<bool, ProcessError> {
        if !self.frontier.advance_to(frontier) {
            return Ok(false);
        }
        self.cx.meta = RecordMetadata::default();
        for op in &self.frontier_ops {
            op.borrow_mut().on_frontier(&mut self.cx, frontier)?;
        }
        Ok(true)
    }

    /// Crosses a barrier: barrier-gated operators release, then the epoch's
    /// output and changelog are taken. A step of [`BarrierSchedule`], which
    /// is how every runner reaches it; a benchmark of one task may call it
    /// directly.
    ///
    /// [`BarrierSchedule`]: crate::BarrierSchedule
    pub fn commit(&mut self) -> Result<EpochCommit, ProcessError> {
        for op in &self.frontier_ops {
            op.borrow_mut().on_barrier(&mut self.cx)?;
        }
        self.take_epoch()
    }

    fn take_epoch(&mut self) -> Result<EpochCommit, ProcessError> {
        self.epoch += 1;
        let mut changelogs = Vec::new();
        for (name, store) in &self.stores {
            let mut s = store.state.borrow_mut();
            if s.changelog_enabled() && s.dirty_keys() > 0 {
                let mut records = ChangelogBatch::new();
                s.flush_changelog(&mut records)
                    .map_err(|source| ProcessError::State {
                        store: name.clone(),
                        source: Box::new(source),
                    })?;
                if store.value_layout != ChangelogValueLayout::Plain {
                    store.value_layout.to_changelog(&mut records);
                }
                changelogs.push((name.clone(), records));
            }
        }
        Ok(EpochCommit {
            epoch: self.epoch,
            outputs: std::mem::take(&mut self.cx.outputs),
            changelogs,
        })
    }

    /// A barrier's stamp reaches the task (docs/barriers.md#frontier): it joins the task's
    /// last few stamps and the floor rises to it. Returns the stamp before
    /// it, the frontier the engine's emission pass runs on.
    pub(crate) fn push_stamp(&mut self, stamp: Watermark) -> Option<Watermark> {
        let previous = self.stamps.back().copied();
        self.stamps.push_back(stamp);
        if self.stamps.len() > STAMPS_KEPT {
            self.stamps.pop_front();
        }
        self.set_floor(stamp);
        previous
    }

    /// Seeds floor and frontier after a restart (docs/state.md#restart).
    pub fn seed(&mut self, floor: Watermark, frontier: Watermark) {
        self.set_floor(floor);
        self.stamps.clear();
        self.stamps.push_back(frontier);
        self.stamps.push_back(floor);
        self.frontier = frontier;
    }

    /// Output produced since the last commit (not yet committed).
    pub fn pending_output(&self) -> &[OutputRecord] {
        &self.cx.outputs
    }

    /// Moves the output of internal topics produced since the last commit to
    /// the end of `into`, in order, so a runner can feed repartition topics
    /// synchronously. The rest stays pending in order, and the task's output
    /// buffer keeps its capacity (a runner routing every few hundred records
    /// would otherwise regrow it each time).
    pub fn move_outputs_for(
        &mut self,
        is_internal: impl Fn(&str) -> bool,
        into: &mut Vec<OutputRecord>,
    ) {
        into.extend(self.cx.outputs.extract_if(.., |o| is_internal(&o.topic)));
    }

    /// Moves the output produced since the last commit that is not a final
    /// result (every record of an epoch before its barrier: emission passes
    /// run only when a barrier is crossed) to the end of `into`, in order,
    /// so a runner can hand it to its producer before the barrier, inside
    /// the epoch's transaction. Final results stay for the commit, where a
    /// runner merges them across tasks by the window they close.
    pub fn move_early_outputs(&mut self, into: &mut Vec<OutputRecord>) {
        into.extend(self.cx.outputs.extract_if(.., |o| o.emitted.is_none()));
    }

    /// The task's counters.
    pub fn metrics(&self) -> &TaskMetrics {
        &self.cx.metrics
    }

    /// A store by name, typed: `S` is the concrete store type.
    pub fn store<S: 'static>(&self, name: &str) -> Option<Rc<RefCell<S>>> {
        self.stores
            .get(name)?
            .typed
            .clone()
            .downcast::<RefCell<S>>()
            .ok()
    }

    /// Collects dropped records as [`DropEvent`]s from now on (the test
    /// driver does; the engine only counts them).
    pub fn collect_drop_events(&mut self) {
        self.cx.drop_events.get_or_insert_with(Vec::new);
    }

    /// Where the task's dynamic sinks look up the topics they pick (without
    /// one, as under the test driver, every topic exists).
    pub fn set_topic_catalog(&mut self, catalog: std::sync::Arc<dyn crate::TopicCatalog>) {
        self.cx.topics = Some(catalog);
    }

    /// The dropped records collected since the last call.
    pub fn take_drop_events(&mut self) -> Vec<DropEvent> {
        self.cx
            .drop_events
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The concrete type of store `name` (what [`StreamTask::store`] needs), if
    /// this task has it.
    pub fn store_type_name(&self, name: &str) -> Option<&'static str> {
        self.stores.get(name).map(|h| h.type_name)
    }

    /// Names of this task's stores.
    pub fn store_names(&self) -> impl Iterator<Item = &str> {
        self.stores.keys().map(String::as_str)
    }

    /// The persistent stores of this task, with what each one's local copy was found to be
    /// at instantiation (where its changelog restore starts).
    pub fn persistent_stores(&self) -> &[crate::topology::PersistentStore] {
        &self.persistent
    }

    /// The retention (ms) of store `name` if it is a window or session
    /// store, whose changelog then deletes what is past it (with a margin):
    /// its entries expire without tombstones. `None` for other stores.
    pub fn store_retention_ms(&self, name: &str) -> Option<i64> {
        self.stores.get(name).and_then(|s| s.retention_ms)
    }

    /// The windows store `name` holds, if a windowed aggregation writes it.
    pub fn store_window_shape(&self, name: &str) -> Option<crate::topology::graph::WindowShape> {
        self.stores.get(name).and_then(|s| s.window)
    }

    /// A store as a [`StateStore`] (for restore).
    pub fn state_store(&self, name: &str) -> Option<Rc<RefCell<dyn StateStore>>> {
        self.stores.get(name).map(|s| s.state.clone())
    }

    /// How the store `name` lays its values out in its changelog (Kafka
    /// Streams' layout): what the epoch's changelog records were turned into,
    /// and what a restore must turn them back from
    /// ([`ChangelogValueLayout::from_changelog`]) before
    /// [`StateStore::apply_changelog`].
    pub fn changelog_value_layout(&self, name: &str) -> ChangelogValueLayout {
        self.stores
            .get(name)
            .map_or(ChangelogValueLayout::Plain, |s| s.value_layout)
    }

    /// Takes over the state a Kafka Streams application left (its stores
    /// restored from its changelogs), whose stream time for this task was
    /// `stream_time` (the largest partition time committed with the task's
    /// offsets). Kafka Streams emitted a window's final result once its
    /// stream time reached the window's end plus grace (plus the gap for a
    /// session), and dropped records for it from then on: each
    /// on-window-close aggregation marks every window Kafka Streams emitted
    /// as emitted (its emit frontier), and the floor is raised to
    /// `stream_time`, so those windows never change or emit again while the
    /// ones still open are emitted once, at their close. `emit_final` is
    /// Kafka Streams' processor metadata committed with the task's offsets:
    /// its on-window-close emission (KIP-825) keeps, under the store's name,
    /// the window close time it last emitted through, which is exact where
    /// the stream time is not (that emission is throttled).
    ///
    /// # Errors
    /// An emit-frontier store that refuses the write.
    pub fn take_over_from_kafka_streams(
        &mut self,
        stream_time: EventTime,
        emit_final: &[(String, i64)],
    ) -> Result<(), ProcessError> {
        self.set_floor(Watermark::from_millis(stream_time.as_millis()));
        let lookup = |store: &str| {
            emit_final
                .iter()
                .filter(|(k, _)| k == store)
                .map(|(_, v)| *v)
                .max()
        };
        for op in &self.frontier_ops {
            op.borrow_mut()
                .seed_emitted_by_kafka_streams(stream_time.as_millis(), &lookup)?;
        }
        Ok(())
    }
}

/// The typed entry of a source.
pub struct TypedInput<K, V> {
    port: Port<K, V>,
}

impl<K, V> std::fmt::Debug for TypedInput<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TypedInput")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::{Consumed, Produced, Serdes, StreamsBuilder, StreamsConfig};

    /// Records of `a` (the "internal" topic) move to the end of the caller's
    /// vector in order; `b`'s stay pending in order.
    #[test]
    fn moved_outputs_keep_their_order_and_the_rest_stays_pending() {
        let mut b = StreamsBuilder::new();
        let s = b.stream("in", Consumed::with(Serdes::i64(), Serdes::i64()));
        s.filter(|k, _| k % 2 == 0)
            .to("a", Produced::with(Serdes::i64(), Serdes::i64()));
        s.filter(|k, _| k % 2 == 1)
            .to("b", Produced::with(Serdes::i64(), Serdes::i64()));
        let topology = b.build().unwrap();
        let mut task = topology.instantiate(0, &Arc::new(StreamsConfig::new("app")));
        let input = task.typed_input::<i64, i64>("in").unwrap();
        for k in 0..6 {
            task.push_typed(&input, k, k, 100 + k).unwrap();
        }
        let mut moved = task.pending_output()[..1].to_vec();
        let earlier = moved[0].timestamp;
        task.move_outputs_for(|t| t == "a", &mut moved);
        let times = |rs: &[crate::OutputRecord], topic: &str| -> Vec<i64> {
            rs.iter()
                .filter(|r| &*r.topic == topic)
                .map(|r| r.timestamp)
                .collect()
        };
        assert_eq!(moved[0].timestamp, earlier, "what `into` held stays first");
        assert_eq!(times(&moved[1..], "a"), [100, 102, 104]);
        assert_eq!(moved.len(), 4);
        assert_eq!(times(task.pending_output(), "b"), [101, 103, 105]);
        assert_eq!(task.pending_output().len(), 3);
        // Nothing left to move: `into` is unchanged.
        task.move_outputs_for(|t| t == "a", &mut moved);
        assert_eq!(moved.len(), 4);
    }

    /// `process_run` finds each run's source by its topic whatever
    /// allocation carries the name, switching between sources.
    #[test]
    fn runs_by_a_shared_topic_name_reach_their_own_source() {
        let mut b = StreamsBuilder::new();
        let serdes = || Consumed::with(Serdes::i64(), Serdes::i64());
        let ys = b
            .stream("y", serdes())
            .map_values(|_k: &i64, v: i64| v + 2000);
        // One sub-topology: both sources feed one task.
        b.stream("x", serdes())
            .map_values(|_k: &i64, v: i64| v + 1000)
            .merge(&ys)
            .to("out", Produced::with(Serdes::i64(), Serdes::i64()));
        let topology = b.build().unwrap();
        let mut task = topology.instantiate(0, &Arc::new(StreamsConfig::new("app")));
        let (x, y, x_again): (Arc<str>, Arc<str>, Arc<str>) = ("x".into(), "y".into(), "x".into());
        for (i, topic) in [&x, &y, &y, &x_again, &x].into_iter().enumerate() {
            let v = (i as i64).to_be_bytes();
            let record = super::RawRecord {
                offset: Some(i as i64),
                key: Some(&v),
                value: Some(&v),
                timestamp: 10,
                headers: crate::Headers::empty(),
            };
            task.process_run(topic, Some(0), std::iter::once(record))
                .unwrap();
        }
        let values: Vec<i64> = task
            .pending_output()
            .iter()
            .map(|r| i64::from_be_bytes(r.value.as_deref().unwrap().try_into().unwrap()))
            .collect();
        assert_eq!(values, [1000, 2001, 2002, 1003, 1004]);
    }

    /// Records an emission pass forwards carry the window they close (the
    /// runtime merges tasks' final results by it); on-update output and
    /// join matches carry nothing.
    #[test]
    fn final_results_carry_the_window_they_close() {
        use std::time::Duration;

        use crate::{
            EmitStrategy, Emitted, JoinWindows, SessionWindows, StreamJoined, TimeWindows,
        };

        let secs = Duration::from_secs;
        let mut b = StreamsBuilder::new();
        let s = b.stream("in", Consumed::with(Serdes::string(), Serdes::i64()));
        s.group_by_key()
            .windowed_by(TimeWindows::of_size_and_grace(secs(10), secs(2)))
            .emit_strategy(EmitStrategy::on_window_close())
            .count()
            .to_stream()
            .to(
                "tumbling",
                Produced::with(
                    Serdes::time_windowed(Serdes::string(), 10_000),
                    Serdes::i64(),
                ),
            );
        s.group_by_key()
            .windowed_by(SessionWindows::of_inactivity_gap_and_grace(
                secs(3),
                secs(1),
            ))
            .emit_strategy(EmitStrategy::on_window_close())
            .count()
            .to_stream()
            .to(
                "sessions",
                Produced::with(Serdes::session_windowed(Serdes::string()), Serdes::i64()),
            );
        s.group_by_key()
            .windowed_by(TimeWindows::of_size_and_grace(secs(10), secs(2)))
            .count()
            .to_stream()
            .to(
                "updates",
                Produced::with(
                    Serdes::time_windowed(Serdes::string(), 10_000),
                    Serdes::i64(),
                ),
            );
        let other = b.stream("other", Consumed::with(Serdes::string(), Serdes::i64()));
        s.left_join(
            &other,
            |l: &i64, r: Option<&i64>| l + r.copied().unwrap_or(-1),
            JoinWindows::of_time_difference_and_grace(secs(1), secs(2)),
            StreamJoined::with(Serdes::string(), Serdes::i64(), Serdes::i64()),
        )
        .to("joined", Produced::with(Serdes::string(), Serdes::i64()));
        let topology = b.build().unwrap();
        let mut task = topology.instantiate(0, &Arc::new(StreamsConfig::new("app")));
        let input = task.typed_input::<String, i64>("in").unwrap();
        task.push_typed(&input, "a".to_owned(), 1, 1_000).unwrap();
        task.push_typed(&input, "a".to_owned(), 1, 2_000).unwrap();
        let marks = |task: &crate::StreamTask, topic: &str| -> Vec<Option<Emitted>> {
            task.pending_output()
                .iter()
                .filter(|r| &*r.topic == topic)
                .map(|r| r.emitted)
                .collect()
        };
        assert_eq!(marks(&task, "updates"), [None, None]);
        assert!(marks(&task, "joined").is_empty());
        task.advance_frontier(stoatflow_time::Watermark::from_millis(60_000))
            .unwrap();
        // Tumbling [0, 10 s): close 10 s + 2 s.
        let tumbling = Emitted {
            close: 12_000,
            start: 0,
        };
        assert_eq!(marks(&task, "tumbling"), [Some(tumbling)]);
        // Session [1 s, 2 s]: close end + gap + 1 + grace.
        let session = Emitted {
            close: 2_000 + 3_000 + 1 + 1_000,
            start: 1_000,
        };
        assert_eq!(marks(&task, "sessions"), [Some(session)]);
        // Each unmatched left record: close ts + after + 1 + grace.
        let null_side = |ts: i64| {
            Some(Emitted {
                close: ts + 1_000 + 1 + 2_000,
                start: ts,
            })
        };
        assert_eq!(marks(&task, "joined"), [null_side(1_000), null_side(2_000)]);

        // Early output is everything but the final results, in order.
        task.push_typed(&input, "b".to_owned(), 1, 70_000).unwrap();
        let mut early = Vec::new();
        task.move_early_outputs(&mut early);
        let topics = |rs: &[crate::OutputRecord]| -> Vec<String> {
            rs.iter().map(|r| r.topic.to_string()).collect()
        };
        assert_eq!(topics(&early), ["updates", "updates", "updates"]);
        assert!(early.iter().all(|r| r.emitted.is_none()));
        assert_eq!(early[2].timestamp, 70_000, "in order");
        assert!(task.pending_output().iter().all(|r| r.emitted.is_some()));
        assert_eq!(task.pending_output().len(), 4, "the final results stay");
    }

    /// `process_run` hands a run of one topic's records to its source in
    /// order, each with its offset, and names an unknown topic.
    #[test]
    fn a_run_of_records_reaches_its_source_in_order() {
        let mut b = StreamsBuilder::new();
        b.stream("x", Consumed::with(Serdes::i64(), Serdes::i64()))
            .map_values(|_k: &i64, v: i64| v * 10)
            .to("out", Produced::with(Serdes::i64(), Serdes::i64()));
        let topology = b.build().unwrap();
        let mut task = topology.instantiate(0, &Arc::new(StreamsConfig::new("app")));
        let x: Arc<str> = "x".into();
        let bytes: Vec<[u8; 8]> = (1..=3i64).map(i64::to_be_bytes).collect();
        let run = bytes.iter().enumerate().map(|(i, v)| super::RawRecord {
            offset: Some(40 + i as i64),
            key: Some(v),
            value: Some(v),
            timestamp: 10,
            headers: crate::Headers::empty(),
        });
        task.process_run(&x, Some(2), run).unwrap();
        let values: Vec<i64> = task
            .pending_output()
            .iter()
            .map(|r| i64::from_be_bytes(r.value.as_deref().unwrap().try_into().unwrap()))
            .collect();
        assert_eq!(values, [10, 20, 30]);
        assert_eq!(task.cx.meta.offset, Some(42));
        assert_eq!(task.cx.meta.partition, Some(2));
        let z: Arc<str> = "z".into();
        let err = task
            .process_run(&z, Some(0), std::iter::empty())
            .unwrap_err();
        assert!(err.to_string().contains("topic z"), "{err}");
    }
}
