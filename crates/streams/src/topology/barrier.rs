//! [`BarrierSchedule`]: the one sequence a commit barrier runs on the tasks of
//! a thread (docs/barriers.md#frontier), and its form on the test driver's
//! simpler clock (docs/test-driver.md#one-number-clock). The runtime's lanes, the test driver and the benchmarks'
//! pipeline all cross barriers through it and call no barrier step of a task
//! themselves, so the order cannot drift between runners.
//!
//! The steps, each one call on a task: **stamp** (the barrier's stamp reaches
//! the task: the floor rises to it), **flush** (the emission pass on a
//! frontier), **cross** (barrier-gated operators release, then the epoch's
//! output and dirty changelog are taken: what the runner commits). The two
//! clocks run them in the same cyclic order and differ in where the frontier
//! is and where a barrier cuts the cycle:
//!
//! - the engine: barrier N crosses (epoch N ends), stamps
//!   W(N), flushes on W(N−1), whose output belongs to epoch N+1; a final
//!   barrier also flushes on W(N) and crosses again, into epoch N;
//! - the simpler clock: event time moves to W and every task
//!   flushes on W, in topological order, each task's repartition output
//!   handed on before the next runs; a barrier then crosses every task.
//!   Floors are the runner's (the driver judges each record against the
//!   watermark before it).
//!
//! Knows no threads, no log and no stamp store: committing what it returns
//! (and recording the stamp) is the runner's.

use stoatflow_time::Watermark;

use crate::error::ProcessError;
use crate::topology::task::{EpochCommit, StreamTask};

/// Whether a barrier is the final one of a graceful shutdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BarrierKind {
    /// An ordinary barrier: the emission pass trails the stamp by one.
    Regular,
    /// The final barrier (shutdown, docs/barriers.md#final-barrier): every window closing at or
    /// before its stamp is emitted into the epoch it closes.
    FinalFlush,
}

/// The tasks of every sub-topology on one thread, in topological order, with
/// repartition topics handed over in process (the test driver, the
/// benchmarks' pipeline): what [`BarrierSchedule::advance`] and
/// [`BarrierSchedule::commit`] run on.
pub trait TopologyTasks {
    /// What routing and committing fail with.
    type Error: From<ProcessError>;

    /// The tasks, in topological order.
    fn tasks(&mut self) -> &mut [StreamTask];

    /// Hands records written to repartition topics to the tasks reading
    /// them; called after each task's emission pass.
    fn route(&mut self) -> Result<(), Self::Error>;

    /// Task `task` crossed the barrier: `commit` is its epoch (what the
    /// runner commits; records it released into a repartition topic are
    /// for a later task, which crosses after it).
    fn committed(&mut self, task: usize, commit: EpochCommit) -> Result<(), Self::Error>;
}

/// The barrier sequence, in one place. See the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct BarrierSchedule;

impl BarrierSchedule {
    /// Barrier `N` stamped `stamp` reaches `task` on the engine's clock,
    /// once every record of epoch `N` has been processed: barrier-gated
    /// operators release and epoch `N` is taken (returned), the floor becomes
    /// `W(N)`, and the emission pass runs on `W(N−1)`, its records in epoch
    /// `N+1`. A [`BarrierKind::FinalFlush`] then runs the pass on `W(N)` and
    /// adds what it and the release after it produce to the epoch returned.
    pub fn cross(
        task: &mut StreamTask,
        stamp: Watermark,
        kind: BarrierKind,
    ) -> Result<EpochCommit, ProcessError> {
        cross_engine(task, stamp, kind, &mut |_| {})
    }

    /// [`BarrierSchedule::cross`], calling `observe` with the task at the
    /// one moment its stores hold exactly what the returned epoch commits:
    /// right after the epoch is taken (before the emission pass, whose
    /// writes belong to the next epoch), or for a final barrier once its
    /// own pass has been taken too. What a read-committed query reads.
    ///
    /// # Errors
    /// As [`BarrierSchedule::cross`].
    pub fn cross_observed(
        task: &mut StreamTask,
        stamp: Watermark,
        kind: BarrierKind,
        observe: &mut dyn FnMut(&StreamTask),
    ) -> Result<EpochCommit, ProcessError> {
        cross_engine(task, stamp, kind, observe)
    }

    /// The simpler clock: event time moved to `watermark`. Each task in
    /// topological order hears the watermark and runs its emission pass on
    /// it; what it wrote to repartition topics is routed before the next
    /// task runs. Output joins the current epoch.
    pub fn advance<S: TopologyTasks>(tasks: &mut S, watermark: Watermark) -> Result<(), S::Error> {
        advance_all(&mut InProcess(tasks), watermark)
    }

    /// The simpler clock: a barrier. Each task in topological order crosses
    /// it (barrier-gated operators release, the epoch is taken) and hands
    /// its epoch to [`TopologyTasks::committed`].
    pub fn commit<S: TopologyTasks>(tasks: &mut S) -> Result<(), S::Error> {
        commit_all(&mut InProcess(tasks))
    }
}

/// What a barrier asks of one task, one call per step.
trait TaskSteps {
    /// Barrier-gated operators release, then the epoch's output and dirty
    /// changelog are taken.
    fn cross(&mut self) -> Result<EpochCommit, ProcessError>;
    /// The stamp reaches the task's clock: the floor rises to it. Returns
    /// the stamp before it, if any.
    fn stamp(&mut self, stamp: Watermark) -> Option<Watermark>;
    /// The watermark reaches the task (what `current_watermark_ms` returns).
    fn watermark(&mut self, watermark: Watermark);
    /// The emission pass on `frontier`, if it moved.
    fn flush(&mut self, frontier: Watermark) -> Result<bool, ProcessError>;
}

impl TaskSteps for StreamTask {
    fn cross(&mut self) -> Result<EpochCommit, ProcessError> {
        self.commit()
    }

    fn stamp(&mut self, stamp: Watermark) -> Option<Watermark> {
        self.push_stamp(stamp)
    }

    fn watermark(&mut self, watermark: Watermark) {
        self.on_watermark(watermark);
    }

    fn flush(&mut self, frontier: Watermark) -> Result<bool, ProcessError> {
        self.advance_frontier(frontier)
    }
}

/// The tasks of one thread, as the simpler clock's two halves see them.
trait TaskList {
    type Task: TaskSteps;
    type Error: From<ProcessError>;
    fn len(&mut self) -> usize;
    fn task(&mut self, i: usize) -> &mut Self::Task;
    fn route(&mut self) -> Result<(), Self::Error>;
    fn committed(&mut self, i: usize, commit: EpochCommit) -> Result<(), Self::Error>;
}

struct InProcess<'a, S>(&'a mut S);

impl<S: TopologyTasks> TaskList for InProcess<'_, S> {
    type Task = StreamTask;
    type Error = S::Error;

    fn len(&mut self) -> usize {
        self.0.tasks().len()
    }

    fn task(&mut self, i: usize) -> &mut StreamTask {
        &mut self.0.tasks()[i]
    }

    fn route(&mut self) -> Result<(), S::Error> {
        self.0.route()
    }

    fn committed(&mut self, i: usize, commit: EpochCommit) -> Result<(), S::Error> {
        self.0.committed(i, commit)
    }
}

fn cross_engine<T: TaskSteps>(
    task: &mut T,
    stamp: Watermark,
    kind: BarrierKind,
    observe: &mut dyn FnMut(&T),
) -> Result<EpochCommit, ProcessError> {
    let mut commit = task.cross()?;
    if kind == BarrierKind::Regular {
        observe(task);
    }
    if let Some(previous) = task.stamp(stamp) {
        task.flush(previous)?;
    }
    if kind == BarrierKind::FinalFlush {
        task.flush(stamp)?;
        commit.absorb(task.cross()?);
        observe(task);
    }
    Ok(commit)
}

fn advance_all<T: TaskList>(tasks: &mut T, watermark: Watermark) -> Result<(), T::Error> {
    for i in 0..tasks.len() {
        let task = tasks.task(i);
        task.watermark(watermark);
        task.flush(watermark)?;
        tasks.route()?;
    }
    Ok(())
}

fn commit_all<T: TaskList>(tasks: &mut T) -> Result<(), T::Error> {
    for i in 0..tasks.len() {
        let commit = tasks.task(i).cross()?;
        tasks.committed(i, commit)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The order of the steps, recorded: a runner that reorders them (a
    //! fourth copy of the wiring) cannot pass through here unnoticed.

    use super::*;

    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Call {
        Cross(usize),
        Stamp(usize, i64),
        Watermark(usize, i64),
        Flush(usize, i64),
        Route,
        Committed(usize, u64),
    }

    type Log = std::rc::Rc<std::cell::RefCell<Vec<Call>>>;

    struct Recorder {
        id: usize,
        log: Log,
        stamps: Vec<Watermark>,
        epochs: u64,
    }

    impl Recorder {
        fn new(id: usize, log: &Log) -> Self {
            Recorder {
                id,
                log: log.clone(),
                stamps: Vec::new(),
                epochs: 0,
            }
        }
    }

    impl TaskSteps for Recorder {
        fn cross(&mut self) -> Result<EpochCommit, ProcessError> {
            self.log.borrow_mut().push(Call::Cross(self.id));
            self.epochs += 1;
            Ok(EpochCommit {
                epoch: self.epochs,
                outputs: Vec::new(),
                changelogs: vec![(
                    format!("crossing {}", self.epochs),
                    stoatflow_state::ChangelogBatch::new(),
                )],
            })
        }

        fn stamp(&mut self, stamp: Watermark) -> Option<Watermark> {
            self.log
                .borrow_mut()
                .push(Call::Stamp(self.id, stamp.as_millis()));
            let previous = self.stamps.last().copied();
            self.stamps.push(stamp);
            previous
        }

        fn watermark(&mut self, watermark: Watermark) {
            self.log
                .borrow_mut()
                .push(Call::Watermark(self.id, watermark.as_millis()));
        }

        fn flush(&mut self, frontier: Watermark) -> Result<bool, ProcessError> {
            self.log
                .borrow_mut()
                .push(Call::Flush(self.id, frontier.as_millis()));
            Ok(true)
        }
    }

    struct Recorded {
        tasks: Vec<Recorder>,
        log: Log,
    }

    impl TaskList for Recorded {
        type Task = Recorder;
        type Error = ProcessError;

        fn len(&mut self) -> usize {
            self.tasks.len()
        }

        fn task(&mut self, i: usize) -> &mut Recorder {
            &mut self.tasks[i]
        }

        fn route(&mut self) -> Result<(), ProcessError> {
            self.log.borrow_mut().push(Call::Route);
            Ok(())
        }

        fn committed(&mut self, i: usize, commit: EpochCommit) -> Result<(), ProcessError> {
            self.log.borrow_mut().push(Call::Committed(i, commit.epoch));
            Ok(())
        }
    }

    fn w(ms: i64) -> Watermark {
        Watermark::from_millis(ms)
    }

    /// A count per 10 ms window, emitted when the window closes.
    fn counting_task() -> StreamTask {
        use crate::{
            Consumed, EmitStrategy, Produced, Serdes, StreamsBuilder, StreamsConfig, TimeWindows,
        };
        use std::time::Duration;
        let mut b = StreamsBuilder::new();
        b.stream("in", Consumed::with(Serdes::string(), Serdes::string()))
            .group_by_key()
            .windowed_by(TimeWindows::of_size_and_grace(
                Duration::from_millis(10),
                Duration::ZERO,
            ))
            .emit_strategy(EmitStrategy::on_window_close())
            .count()
            .to_stream()
            .to(
                "out",
                Produced::with(Serdes::time_windowed(Serdes::string(), 10), Serdes::i64()),
            );
        let topology = b.build().unwrap();
        let config = std::sync::Arc::new(StreamsConfig::new("barrier"));
        topology.validate(&config).unwrap();
        let mut task = topology.instantiate(0, &config);
        task.process(
            "in",
            Some(0),
            None,
            Some(b"k"),
            Some(b"v"),
            1,
            crate::Headers::empty(),
        )
        .unwrap();
        task
    }

    #[test]
    fn on_the_engine_clock_a_window_closed_by_stamp_n_commits_two_barriers_later() {
        let mut task = counting_task();
        let closed = w(20); // the window [0, 10) closes at 10
        let outputs = |c: EpochCommit| c.outputs.len();
        let first = BarrierSchedule::cross(&mut task, closed, BarrierKind::Regular).unwrap();
        assert_eq!(task.floor(), closed, "the floor is the stamp crossed");
        let second = BarrierSchedule::cross(&mut task, closed, BarrierKind::Regular).unwrap();
        assert_eq!(
            task.frontier(),
            closed,
            "the second barrier flushed on the first's stamp"
        );
        let third = BarrierSchedule::cross(&mut task, closed, BarrierKind::Regular).unwrap();
        assert_eq!(
            [outputs(first), outputs(second), outputs(third)],
            [0, 0, 1],
            "the pass's result belongs to the epoch after the barrier that ran it"
        );
    }

    #[test]
    fn a_final_flush_commits_what_closes_at_its_stamp_in_its_own_epoch() {
        let mut task = counting_task();
        let last = BarrierSchedule::cross(&mut task, w(20), BarrierKind::FinalFlush).unwrap();
        assert_eq!(last.outputs.len(), 1);
        assert_eq!(last.epoch, 1, "one epoch, though the task crossed twice");
    }

    #[test]
    fn an_engine_barrier_crosses_then_stamps_then_flushes_on_the_stamp_before() {
        let log = Log::default();
        let mut task = Recorder::new(0, &log);
        let first = cross_engine(&mut task, w(10), BarrierKind::Regular, &mut |_| {}).unwrap();
        let second = cross_engine(&mut task, w(20), BarrierKind::Regular, &mut |_| {}).unwrap();
        assert_eq!(
            *log.borrow(),
            [
                // The first barrier has no stamp before it: no pass.
                Call::Cross(0),
                Call::Stamp(0, 10),
                Call::Cross(0),
                Call::Stamp(0, 20),
                Call::Flush(0, 10),
            ]
        );
        assert_eq!((first.epoch, second.epoch), (1, 2));
    }

    /// A read-committed query sees the stores as the epoch commits them:
    /// after the epoch is taken and before the pass of the next epoch; on a
    /// final barrier, after its own pass was taken too.
    #[test]
    fn the_observer_sees_the_task_where_its_stores_hold_the_epoch_committed() {
        let log = Log::default();
        let mut task = Recorder::new(0, &log);
        let calls = |log: &Log| log.borrow().len();
        let mut seen = Vec::new();
        for (stamp, kind) in [
            (10, BarrierKind::Regular),
            (20, BarrierKind::Regular),
            (30, BarrierKind::FinalFlush),
        ] {
            let l = log.clone();
            cross_engine(&mut task, w(stamp), kind, &mut |_| seen.push(calls(&l))).unwrap();
        }
        let at = |n: usize| log.borrow()[n - 1].clone();
        assert_eq!(seen.len(), 3, "once per barrier");
        assert_eq!([at(seen[0]), at(seen[1])], [Call::Cross(0), Call::Cross(0)]);
        assert_eq!(
            at(seen[2]),
            Call::Cross(0),
            "the final one after its second take"
        );
        assert_eq!(seen[2], calls(&log), "nothing after it on a final barrier");
        assert!(
            matches!(log.borrow()[seen[2] - 2], Call::Flush(0, 30)),
            "the final barrier's own pass came before it"
        );
    }

    #[test]
    fn a_final_barrier_flushes_on_its_own_stamp_into_the_epoch_it_closes() {
        let log = Log::default();
        let mut task = Recorder::new(0, &log);
        cross_engine(&mut task, w(10), BarrierKind::Regular, &mut |_| {}).unwrap();
        log.borrow_mut().clear();
        let last = cross_engine(&mut task, w(30), BarrierKind::FinalFlush, &mut |_| {}).unwrap();
        assert_eq!(
            *log.borrow(),
            [
                Call::Cross(0),
                Call::Stamp(0, 30),
                Call::Flush(0, 10),
                Call::Flush(0, 30),
                Call::Cross(0),
            ]
        );
        // One epoch: the barrier's, with what the flush released added.
        assert_eq!(last.epoch, 2);
        let crossings: Vec<&str> = last.changelogs.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(crossings, ["crossing 2", "crossing 3"]);
    }

    #[test]
    fn the_simpler_clock_flushes_task_by_task_routing_between_then_crosses_in_order() {
        let log = Log::default();
        let mut tasks = Recorded {
            tasks: vec![Recorder::new(0, &log), Recorder::new(1, &log)],
            log: log.clone(),
        };
        advance_all(&mut tasks, w(7)).unwrap();
        commit_all(&mut tasks).unwrap();
        assert_eq!(
            *log.borrow(),
            [
                Call::Watermark(0, 7),
                Call::Flush(0, 7),
                Call::Route,
                Call::Watermark(1, 7),
                Call::Flush(1, 7),
                Call::Route,
                Call::Cross(0),
                Call::Committed(0, 1),
                Call::Cross(1),
                Call::Committed(1, 1),
            ]
        );
        assert!(
            tasks.tasks.iter().all(|t| t.stamps.is_empty()),
            "the simpler clock leaves floors to its runner"
        );
    }
}
