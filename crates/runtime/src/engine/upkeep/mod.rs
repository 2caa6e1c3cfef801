//! The log's upkeep that an application asks for (repartition purges, the
//! log's compaction and retention: `pass.rs`), on a thread of its own,
//! so that no commit ever waits for it. A compaction pass of the embedded
//! log reads and rewrites whole segments; run after a commit on the poll
//! thread, it held up the next barrier for as long.
//!
//! Owns the upkeep thread and each engine's way to it ([`Upkeep`]). One
//! thread serves an application from start to stop, across the engines
//! that replace one another (a rebalance, an engine replaced after an
//! error), so at most one pass runs at a time.
//!
//! At most once per `repartition.purge.interval.ms`, after a commit, the
//! poll loop hands the thread a pass with the offsets that commit made
//! durable: a purge never goes below what is committed, whenever the pass
//! runs. The hand-over never blocks: the thread takes a pass only while it
//! waits for one, so a tick that falls during a pass is skipped (counted),
//! not queued. Between passes the thread waits on its channel, and ends as
//! soon as the application's last engine hung up on it.
//!
//! A pass that panics (a broken invariant in the log) ends the thread: it
//! logs the panic's message and keeps it in the metrics
//! ([`UpkeepFigures::panicked`](crate::UpkeepFigures)), and the application
//! goes on without upkeep; a failed step, by contrast, is retried next pass.
//!
//! At a stop, a pass under way is waited for unless the application was
//! halted (a close that ran out of time, a drop): then it finishes on its
//! own thread. Either way the log sees a pass that completes or, if the
//! process ends first, one cut short as by a crash, which it recovers from.

mod pass;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::mpsc::{
    Receiver, RecvTimeoutError, SyncSender, TrySendError, channel, sync_channel,
};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use stoatflow_log::{Log, OffsetAndMetadata, TopicPartition};

use self::pass::{Pass, Purged};
use super::guard::{Panicked, guarded, panic_message};
use crate::error::RuntimeError;
use crate::observe::metrics::MetricsCells;

/// How often a stop waiting for a pass under way looks for a halt.
const STOP_POLL: Duration = Duration::from_millis(20);

/// The upkeep thread of an application.
pub(crate) struct UpkeepThread {
    /// A rendezvous channel: a pass goes through only while the thread waits.
    passes: SyncSender<Pass>,
    /// Hung up when the thread ends.
    ended: Receiver<()>,
    handle: JoinHandle<()>,
    metrics: Arc<MetricsCells>,
}

impl UpkeepThread {
    /// Starts the thread of application `app` on `log`, which records each
    /// pass in `metrics`.
    pub(crate) fn start<L: Log + 'static>(
        log: Arc<L>,
        app: &str,
        metrics: Arc<MetricsCells>,
    ) -> Result<Self, RuntimeError> {
        let (passes, inbox) = sync_channel::<Pass>(0);
        let (ended_tx, ended) = channel::<()>();
        let recorder = metrics.clone();
        let handle = std::thread::Builder::new()
            .name(format!("{app}-upkeep"))
            .spawn(move || {
                let _ended = ended_tx;
                let mut purged = Purged::default();
                while let Ok(pass) = inbox.recv() {
                    let began = Instant::now();
                    match guarded(|| pass.run(&*log, &mut purged)) {
                        Ok(failures) => recorder.on_upkeep_pass(began.elapsed(), failures),
                        Err(Panicked(message)) => {
                            // A broken invariant in the log: no later pass runs
                            // on what it may have left half-done.
                            tracing::error!(
                                panic = %message,
                                "a pass of the log's upkeep panicked; the log's upkeep no longer runs"
                            );
                            recorder.on_upkeep_panicked(message);
                            return;
                        }
                    }
                }
            })
            .map_err(|e| RuntimeError::ThreadDied {
                thread: "upkeep".into(),
                reason: e.to_string(),
            })?;
        Ok(UpkeepThread {
            passes,
            ended,
            handle,
            metrics,
        })
    }

    /// An engine's way to the thread: a pass at most every `interval` (the
    /// first one interval after `now`), purging the partitions of
    /// `repartition`.
    pub(crate) fn front(
        &self,
        interval: Duration,
        repartition: impl IntoIterator<Item = TopicPartition>,
        now: Instant,
    ) -> Upkeep {
        Upkeep {
            passes: self.passes.clone(),
            interval,
            last: now,
            repartition: repartition.into_iter().collect(),
            metrics: self.metrics.clone(),
            gone: false,
        }
    }

    /// Stops the thread once every engine's [`Upkeep`] is gone: at once if
    /// it is waiting; after the pass under way otherwise, unless `halted`
    /// says to leave that pass to finish on its own.
    pub(crate) fn stop(self, halted: impl Fn() -> bool) {
        let UpkeepThread {
            passes,
            ended,
            handle,
            ..
        } = self;
        drop(passes);
        loop {
            match ended.recv_timeout(STOP_POLL) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                    if let Err(payload) = handle.join() {
                        tracing::error!(
                            panic = %panic_message(&*payload),
                            "the upkeep thread panicked"
                        );
                    }
                    return;
                }
                Err(RecvTimeoutError::Timeout) if halted() => {
                    tracing::info!(
                        "halted during a pass of the log's upkeep; it finishes on its own thread"
                    );
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }
}

/// What the poll loop of one engine holds: when the next pass is due, and
/// which partitions are repartition topics.
pub(crate) struct Upkeep {
    passes: SyncSender<Pass>,
    interval: Duration,
    /// When the last pass was due (handed over or skipped).
    last: Instant,
    repartition: HashSet<TopicPartition>,
    metrics: Arc<MetricsCells>,
    /// The thread is gone (a pass panicked, which it logged): said once.
    gone: bool,
}

impl Upkeep {
    /// After a commit of `committed` (durable: the offsets of a transaction
    /// that committed): when a pass is due, hands it to the thread without
    /// waiting, or skips it if a pass is still under way.
    pub(crate) fn after_commit(&mut self, committed: &[(TopicPartition, OffsetAndMetadata)]) {
        let now = Instant::now();
        if now.duration_since(self.last) < self.interval {
            return;
        }
        self.last = now;
        let purge = committed
            .iter()
            .filter(|(tp, _)| self.repartition.contains(tp))
            .map(|(tp, om)| (tp.clone(), om.offset))
            .collect();
        match self.passes.try_send(Pass { purge }) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.metrics.on_upkeep_skipped();
                tracing::debug!(
                    "a pass of the log's upkeep is still under way; this one is skipped"
                );
            }
            Err(TrySendError::Disconnected(_)) => {
                self.metrics.on_upkeep_skipped();
                if !std::mem::replace(&mut self.gone, true) {
                    tracing::error!("the upkeep thread is gone; the log's upkeep no longer runs");
                }
            }
        }
    }
}
