//! The committer: the thread that owns the instance's one producer and
//! commits each epoch while the poll loop and the lanes already process the
//! next epoch ("one committing, one processing": docs/barriers.md#epochs).
//!
//! Owns the producer, the sinks' partitions and the order in which an
//! epoch's records are written: the epoch's sink records (in
//! `output_order`'s order), its changelog records in task order, then the
//! repartition topics' watermark markers, then the stamp ring, then the
//! source offsets. Under exactly-once all of it is one transaction of the
//! transactional producer; under at-least-once an untransactional producer
//! sends the records and flushes them, and only then are the offsets
//! committed on their own ([`Log::commit_offsets`]): a crash between the two
//! reads the epoch again (its output repeats, nothing is lost). It commits
//! one job at a time, in the
//! order it gets them, and answers each with its outcome; the poll loop hands
//! it job N+1 only after it heard that N committed (barrier N+1 is cut only
//! then).
//!
//! Early output: a lane hands over the records its tasks produced before the
//! barrier (never final results, which only barriers produce, and nothing
//! of a task still holding final results from its last crossing, which
//! must precede them) as they pile up, tagged with their epoch
//! ([`EarlyOutput`]), so the producer sends them
//! while the lanes still process, and a commit carries only the epoch's
//! tail. Epoch N's early records go into transaction N, begun for them if
//! need be; those of N+1, which a lane that crossed barrier N may send
//! before the poll loop hands over job N, wait until N committed. One
//! channel carries both, and a lane sends its early records before it
//! reports crossing barrier N, so all of epoch N's arrive before job N. In
//! transaction N they come first, in the order they arrived (each task's in
//! its own order), then the job's records as above.
//!
//! Knows the log only through its traits; never the tracker, the lanes, the
//! tasks or the barrier cadence.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use stoatflow_log::{
    ErrorKind, Log, LogError, OffsetAndMetadata, Producer, Record, RecordRef, Timestamp,
    TopicPartition, TransactionalProducer,
};
use stoatflow_state::{ChangelogBatch, ChangelogRecordRef, changelog_topic};
use stoatflow_streams::{EpochCommit, OutputRecord, TopicCatalog, TopicLookup};

use crate::engine::backoff::Backoff;
use crate::engine::commit::output_order::output_order;
use crate::engine::guard::{Panicked, guarded};
use crate::engine::partitioner::partition_for_key;
use crate::error::RuntimeError;
use crate::task_id::TaskId;

/// Retries of a commit that failed with a retriable error.
const COMMIT_RETRIES: u32 = 5;

/// Messages the committer's channel holds: early output and jobs from the
/// lanes and the poll loop. Lanes that fill it wait (backpressure).
const INBOX: usize = 64;

/// What reaches the committer, in order.
#[derive(Debug)]
pub(crate) enum CommitMsg {
    /// Records of epoch `epoch` produced before its barrier, in order.
    Early {
        epoch: u64,
        outputs: Vec<OutputRecord>,
    },
    /// Commit this epoch.
    Job(CommitJob),
    /// Stop (the committer's handle is being dropped).
    Hangup,
}

/// A lane's way to hand early output to the committer.
#[derive(Debug, Clone)]
pub(crate) struct EarlyOutput(SyncSender<CommitMsg>);

impl EarlyOutput {
    /// Hands over `outputs` of `epoch`, waiting while the committer's
    /// inbox is full. A committer that is gone (the engine is ending, and
    /// commits nothing more) drops them.
    pub(crate) fn send(&self, epoch: u64, outputs: Vec<OutputRecord>) {
        let _ = self.0.send(CommitMsg::Early { epoch, outputs });
    }
}

/// How an epoch commits: the processing guarantee, with what it needs.
#[derive(Debug)]
pub(crate) enum CommitPath<L: Log> {
    /// One transaction per epoch: records, changelogs, stamps and offsets.
    ExactlyOnce(L::Producer),
    /// Records sent and flushed, then the offsets committed to `log`.
    AtLeastOnce {
        producer: L::PlainProducer,
        log: Arc<L>,
    },
}

/// One epoch's transaction, everything in it fixed at its barrier.
#[derive(Debug)]
pub(crate) struct CommitJob {
    pub(crate) barrier: u64,
    /// The lanes' commits, in task order.
    pub(crate) commits: Vec<(TaskId, EpochCommit)>,
    /// Watermark markers for the repartition topics, after the records.
    pub(crate) markers: Vec<(TopicPartition, Record)>,
    /// The stamp ring's records (the `stoatflow-watermark` store).
    pub(crate) stamp_records: Vec<(TopicPartition, ChangelogBatch)>,
    /// The source offsets fixed at the barrier.
    pub(crate) offsets: Vec<(TopicPartition, OffsetAndMetadata)>,
}

/// How a job ended. The job's records are dropped on the committer's thread;
/// its offsets come back for the poll loop's bookkeeping.
#[derive(Debug)]
pub(crate) struct CommitDone {
    pub(crate) barrier: u64,
    pub(crate) offsets: Vec<(TopicPartition, OffsetAndMetadata)>,
    pub(crate) result: Result<(), RuntimeError>,
    /// From the job's arrival to the end of its commit (the epoch's early
    /// output went out before: this is the part the barrier waits for).
    pub(crate) took: Duration,
    /// When it ended.
    pub(crate) at: Instant,
}

/// Where each sink's records go: its partitions on the log.
#[derive(Debug)]
pub(crate) struct SinkRouting {
    /// Per sink topic, its partitions on the log: the topology's named
    /// sinks, then the topics dynamic sinks picked, as they are met.
    pub(crate) sinks: Vec<(Arc<str>, Vec<TopicPartition>)>,
    /// Where a topic a dynamic sink picked is looked up (the lane that
    /// wrote the record has found it there already).
    dynamic: Option<Arc<dyn TopicCatalog>>,
    /// The sink of the last output record, and that record's topic (a
    /// sink's records share one name, so most lookups are a pointer check).
    last: usize,
    last_topic: Option<Arc<str>>,
    null_key_counter: u32,
}

impl SinkRouting {
    pub(crate) fn new(
        sinks: Vec<(Arc<str>, Vec<TopicPartition>)>,
        dynamic: Option<Arc<dyn TopicCatalog>>,
    ) -> Self {
        SinkRouting {
            sinks,
            dynamic,
            last: 0,
            last_topic: None,
            null_key_counter: 0,
        }
    }

    /// Adds `topic`, which a dynamic sink picked, as the last sink.
    fn add_dynamic(&mut self, topic: &Arc<str>) -> Result<usize, LogError> {
        let unknown = || LogError::UnknownTopic {
            topic: topic.to_string(),
        };
        let catalog = self.dynamic.as_ref().ok_or_else(unknown)?;
        let Ok(TopicLookup::Exists { partitions }) = catalog.lookup(topic) else {
            return Err(unknown());
        };
        let tps = (0..partitions)
            .map(|p| TopicPartition::new(&**topic, p))
            .collect();
        self.sinks.push((topic.clone(), tps));
        Ok(self.sinks.len() - 1)
    }

    /// The partition `out` goes to: by its key's hash, as Kafka's default
    /// partitioner; a record without a key round-robin.
    fn partition_of(&mut self, out: &OutputRecord) -> Result<&TopicPartition, LogError> {
        let sink = match &self.last_topic {
            Some(last) if Arc::ptr_eq(last, &out.topic) => self.last,
            _ => {
                let sink = match self
                    .sinks
                    .iter()
                    .position(|(topic, _)| **topic == *out.topic)
                {
                    Some(sink) => sink,
                    None => self.add_dynamic(&out.topic)?,
                };
                self.last = sink;
                self.last_topic = Some(out.topic.clone());
                sink
            }
        };
        let tps = &self.sinks[sink].1;
        let partitions = tps.len() as u32;
        let p = match &out.key {
            Some(k) => partition_for_key(k, partitions),
            None => {
                self.null_key_counter = self.null_key_counter.wrapping_add(1);
                self.null_key_counter % partitions
            }
        };
        Ok(&tps[p as usize])
    }
}

/// The committer thread's handle. Dropping it hangs up and waits for the
/// thread: a job under way ends (commits or fails) before the next engine's
/// producer fences this one, and the producer (which holds the log, and an
/// on-disk log's directory lock) is gone when the engine is. Not waiting
/// when idle saved about 2% of a benchmark run, not worth a directory
/// still locked for a moment after `close()`.
#[derive(Debug)]
pub(crate) struct Committer {
    jobs: SyncSender<CommitMsg>,
    done: Receiver<CommitDone>,
    thread: Option<JoinHandle<()>>,
    /// A job was handed over and its answer not yet taken.
    busy: bool,
    /// The thread's name.
    name: String,
    /// What a panic that ended the thread said it was doing, for the error
    /// of the hang-up it leaves.
    last_words: Arc<Mutex<Option<String>>>,
}

/// The committer's inbox, made before the lanes (which send to it) and
/// the thread (which reads it).
pub(crate) fn inbox() -> (EarlyOutput, Receiver<CommitMsg>) {
    let (tx, rx) = sync_channel(INBOX);
    (EarlyOutput(tx), rx)
}

impl Committer {
    /// Starts the thread that owns the producer, reading `inbox` (made by
    /// [`inbox`], with `sender` its sending side). The first transaction is
    /// epoch `first_epoch`'s.
    ///
    /// # Errors
    /// The thread could not be started.
    pub(crate) fn start<L: Log + 'static>(
        path: CommitPath<L>,
        routing: SinkRouting,
        application_id: &str,
        (sender, inbox): (EarlyOutput, Receiver<CommitMsg>),
        first_epoch: u64,
    ) -> Result<Self, RuntimeError> {
        let (answers, done) = sync_channel::<CommitDone>(1);
        let mut work = EpochWriter {
            path,
            routing,
            app: application_id.to_owned(),
            next_epoch: first_epoch,
            open: false,
            held: Vec::new(),
            early_failure: None,
        };
        let name = format!("{application_id}-commit");
        let last_words = Arc::new(Mutex::new(None));
        let thread_words = last_words.clone();
        let thread = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                // A panic (the producer's, or the log's under it) ends the
                // thread as a hang-up would, but says what it was doing
                // first: the poll loop's error names it.
                let mut doing = String::from("starting");
                let served = guarded(|| serve(&mut work, &inbox, &answers, &mut doing));
                if let Err(Panicked(message)) = served {
                    *thread_words.lock().expect("last words lock") =
                        Some(format!("it panicked {doing}: {message}"));
                }
            })
            .map_err(|e| RuntimeError::ThreadDied {
                thread: name.clone(),
                reason: e.to_string(),
            })?;
        Ok(Committer {
            jobs: sender.0,
            done,
            thread: Some(thread),
            busy: false,
            name,
            last_words,
        })
    }

    /// Hands over the next transaction.
    ///
    /// # Errors
    /// The committer thread is gone.
    pub(crate) fn submit(&mut self, job: CommitJob) -> Result<(), RuntimeError> {
        assert!(
            !self.busy,
            "one transaction at a time: the last one's answer is owed first"
        );
        self.jobs
            .send(CommitMsg::Job(job))
            .map_err(|_| self.gone())?;
        self.busy = true;
        Ok(())
    }

    /// The answer of the job under way, waiting at most `wait` for it.
    ///
    /// # Errors
    /// The committer thread is gone.
    pub(crate) fn answer(&mut self, wait: Duration) -> Result<Option<CommitDone>, RuntimeError> {
        if !self.busy {
            return Ok(None);
        }
        let answer = if wait.is_zero() {
            match self.done.try_recv() {
                Ok(a) => Some(a),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => return Err(self.gone()),
            }
        } else {
            match self.done.recv_timeout(wait) {
                Ok(a) => Some(a),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return Err(self.gone()),
            }
        };
        if answer.is_some() {
            self.busy = false;
        }
        Ok(answer)
    }
}

impl Drop for Committer {
    fn drop(&mut self) {
        // Lanes hold senders too: the thread is told to stop. (A thread
        // already gone fails the send.)
        let _ = self.jobs.send(CommitMsg::Hangup);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Committer {
    /// The error of a thread that hung up: what it was doing if it
    /// panicked.
    fn gone(&self) -> RuntimeError {
        let words = self.last_words.lock().expect("last words lock").take();
        RuntimeError::ThreadDied {
            thread: self.name.clone(),
            reason: words.unwrap_or_else(|| "it stopped before answering a commit".into()),
        }
    }
}

/// The committer thread's loop: commits each job `inbox` brings and
/// answers it on `answers`, until a hang-up; says in `doing` what it is
/// doing, for the error of a panic.
fn serve<L: Log>(
    work: &mut EpochWriter<L>,
    inbox: &Receiver<CommitMsg>,
    answers: &SyncSender<CommitDone>,
    doing: &mut String,
) {
    while let Ok(msg) = inbox.recv() {
        let mut job = match msg {
            CommitMsg::Early { epoch, outputs } => {
                *doing = format!("sending epoch {epoch}'s early records");
                work.early(epoch, outputs);
                continue;
            }
            CommitMsg::Job(job) => job,
            CommitMsg::Hangup => return,
        };
        *doing = format!("committing barrier {}", job.barrier);
        let started = Instant::now();
        let result = work.commit(&job);
        let committed = result.is_ok();
        let answer = CommitDone {
            barrier: job.barrier,
            offsets: std::mem::take(&mut job.offsets),
            result,
            took: started.elapsed(),
            at: Instant::now(),
        };
        if answers.send(answer).is_err() {
            return;
        }
        // The records are freed after the answer, off the barrier's path;
        // then the next epoch's early records go out.
        drop(job);
        "beginning the next transaction".clone_into(doing);
        work.next_transaction(committed);
    }
}

/// The committer thread's state: the producer, where records go, and the
/// early output of the epochs to come.
struct EpochWriter<L: Log> {
    path: CommitPath<L>,
    routing: SinkRouting,
    app: String,
    /// The epoch the next job commits.
    next_epoch: u64,
    /// Its transaction is begun (early records were sent in it).
    open: bool,
    /// Early output of the epoch after it, waiting for its commit.
    held: Vec<Vec<OutputRecord>>,
    /// An early record of the next epoch could not be sent: its job fails
    /// with this.
    early_failure: Option<LogError>,
}

impl<L: Log> EpochWriter<L> {
    /// Early output of `epoch`: sent now if it is the next to commit, held
    /// if it is the one after.
    fn early(&mut self, epoch: u64, outputs: Vec<OutputRecord>) {
        if epoch == self.next_epoch {
            self.send_early(&outputs);
        } else {
            assert_eq!(
                epoch,
                self.next_epoch + 1,
                "early output of epoch {epoch} while epoch {} commits next: a lane is at most one barrier ahead",
                self.next_epoch
            );
            self.held.push(outputs);
        }
    }

    fn send_early(&mut self, outputs: &[OutputRecord]) {
        if self.early_failure.is_some() {
            return;
        }
        let sent = self.begin().and_then(|()| {
            for out in outputs {
                send_output(&mut self.routing, out, |tp, r| self.path.send_ref(tp, r))?;
            }
            Ok(())
        });
        if let Err(e) = sent {
            self.early_failure = Some(e);
        }
    }

    /// Begins the next epoch's transaction if it is not yet.
    fn begin(&mut self) -> Result<(), LogError> {
        if !self.open {
            if let CommitPath::ExactlyOnce(producer) = &mut self.path {
                producer.begin()?;
            }
            self.open = true;
        }
        Ok(())
    }

    /// The job of the next epoch committed (or failed, and the engine is
    /// ending): the epoch after it is next, and its held output goes out.
    fn next_transaction(&mut self, committed: bool) {
        self.next_epoch += 1;
        self.open = false;
        self.early_failure = None;
        let held = std::mem::take(&mut self.held);
        if committed {
            for outputs in &held {
                self.send_early(outputs);
            }
        }
    }

    /// One epoch's commit.
    fn commit(&mut self, job: &CommitJob) -> Result<(), RuntimeError> {
        assert_eq!(job.barrier, self.next_epoch, "jobs commit in epoch order");
        if let Some(e) = self.early_failure.take() {
            if let (true, CommitPath::ExactlyOnce(producer)) = (self.open, &mut self.path) {
                let _ = producer.abort();
            }
            return Err(e.into());
        }
        self.begin()?;
        let (routing, app) = (&mut self.routing, self.app.as_str());
        match &mut self.path {
            CommitPath::ExactlyOnce(producer) => {
                let sent = send_records(job, routing, app, |tp, r| producer.send_ref(tp, r))
                    .and_then(|()| match job.offsets.is_empty() {
                        true => Ok(()),
                        false => producer.send_offsets(app, &job.offsets),
                    });
                if let Err(e) = sent {
                    let _ = producer.abort();
                    return Err(e.into());
                }
                with_retries("the commit", || producer.commit()).inspect_err(|e| {
                    // Unless the producer is unusable, the transaction is
                    // aborted (a retriable failure too, once out of retries).
                    if e.kind() != ErrorKind::Fatal {
                        let _ = producer.abort();
                    }
                })?;
            }
            CommitPath::AtLeastOnce { producer, log } => {
                // A failure before the offsets leaves them where they were:
                // the replacement engine reads the epoch again.
                send_records(job, routing, app, |tp, r| producer.send_ref(tp, r))?;
                producer.flush()?;
                if !job.offsets.is_empty() {
                    with_retries("the offset commit", || {
                        log.commit_offsets(app, &job.offsets)
                    })?;
                }
            }
        }
        Ok(())
    }
}

impl<L: Log> CommitPath<L> {
    fn send_ref(&mut self, tp: &TopicPartition, record: RecordRef<'_>) -> Result<(), LogError> {
        match self {
            CommitPath::ExactlyOnce(producer) => producer.send_ref(tp, record),
            CommitPath::AtLeastOnce { producer, .. } => producer.send_ref(tp, record),
        }
    }
}

/// The wait before each retry of a commit: 100 ms, doubling, at most 1.6 s
/// (the fifth), jittered.
const COMMIT_BACKOFF: Backoff =
    Backoff::new(Duration::from_millis(100), Duration::from_millis(1_600));

/// Runs `attempt` until it succeeds, retrying a retriable failure after
/// [`COMMIT_BACKOFF`], at most [`COMMIT_RETRIES`] times; returns the last
/// failure otherwise.
fn with_retries(
    what: &str,
    mut attempt: impl FnMut() -> Result<(), LogError>,
) -> Result<(), LogError> {
    let mut retries = 0;
    loop {
        match attempt() {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::Retriable && retries < COMMIT_RETRIES => {
                retries += 1;
                tracing::warn!(error = %e, attempt = retries, "{what} failed, retrying");
                std::thread::sleep(COMMIT_BACKOFF.wait(retries));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Sends one output record to its sink's partition.
fn send_output(
    routing: &mut SinkRouting,
    out: &OutputRecord,
    mut send: impl FnMut(&TopicPartition, RecordRef<'_>) -> Result<(), LogError>,
) -> Result<(), LogError> {
    let tp = routing.partition_of(out)?;
    if out.headers.is_empty() {
        send(tp, output_ref(out))
    } else {
        send(tp, (&to_log_record(out)).into())
    }
}

/// Sends an epoch's records in their order (see the module documentation).
fn send_records(
    job: &CommitJob,
    routing: &mut SinkRouting,
    app: &str,
    mut send: impl FnMut(&TopicPartition, RecordRef<'_>) -> Result<(), LogError>,
) -> Result<(), LogError> {
    for (c, r) in output_order(&job.commits) {
        let out = &job.commits[c as usize].1.outputs[r as usize];
        send_output(routing, out, &mut send)?;
    }
    for (id, commit) in &job.commits {
        for (store, records) in &commit.changelogs {
            let tp = TopicPartition::new(changelog_topic(app, store), id.partition);
            for r in records {
                send(&tp, changelog_ref(r))?;
            }
        }
    }
    for (tp, marker) in &job.markers {
        send(tp, marker.into())?;
    }
    for (tp, records) in &job.stamp_records {
        for r in records {
            send(tp, changelog_ref(r))?;
        }
    }
    Ok(())
}

fn to_log_record(out: &OutputRecord) -> Record {
    let mut r = Record::new(
        out.key.as_deref(),
        out.value.as_deref(),
        Timestamp(out.timestamp),
    );
    for (k, v) in out.headers.iter() {
        r = r.with_header(k, v);
    }
    r
}

/// An output record without headers, borrowed.
fn output_ref(out: &OutputRecord) -> RecordRef<'_> {
    RecordRef {
        key: out.key.as_deref(),
        value: out.value.as_deref(),
        headers: &[],
        timestamp: Timestamp(out.timestamp),
    }
}

fn changelog_ref(r: ChangelogRecordRef<'_>) -> RecordRef<'_> {
    RecordRef {
        key: Some(r.key),
        value: r.value,
        headers: &[],
        timestamp: Timestamp(r.timestamp),
    }
}
