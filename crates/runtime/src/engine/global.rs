//! The global thread: restores every global store from its topic in full before
//! the application processes anything, then keeps the stores current by reading
//! their topics (read-committed) until the application stops
//! (docs/global-tables.md#runtime).
//!
//! It reads every partition of each global topic from the beginning, on every
//! instance and at every start: a global store is never changelogged and never
//! checkpointed, so an instance (a restarted one too) starts from empty stores.
//! Lanes only read the stores; this thread is their one writer.
//!
//! Owns the global topics' consumer and the thread. Knows nothing of tasks,
//! barriers or the watermark: a global record moves no time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use stoatflow_log::{Consumer, FetchedRecord, Log, TopicPartition};
use stoatflow_streams::{DeserializationHandler, GlobalRecord, GlobalStores};

use crate::engine::Shared;
use crate::engine::guard::guarded;
use crate::error::RuntimeError;

/// How long one fetch of the global topics waits for records.
const FETCH_WAIT: Duration = Duration::from_millis(20);

/// The running global thread.
pub(crate) struct GlobalThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl GlobalThread {
    /// Restores `stores` from their topics, on the calling thread, to the
    /// read-committed end each topic had when the restore began; then starts the
    /// thread that keeps them current. `None` when there is no global store, or
    /// when the application was halted or stopped during the restore.
    ///
    /// # Errors
    /// A global topic that does not exist (named), a record that does not
    /// deserialize under `LogAndFail` (naming topic, partition and offset), the log's
    /// errors.
    pub(crate) fn start<L: Log + 'static>(
        stores: &GlobalStores,
        log: &L,
        app: &str,
        handler: DeserializationHandler,
        shared: &Arc<Shared>,
    ) -> Result<Option<Self>, RuntimeError> {
        if stores.is_empty() {
            return Ok(None);
        }
        let mut consumer = log.consumer(&format!("{app}-global"))?;
        let tps = assign_from_beginning(&mut consumer, log, stores)?;
        let stopped = || shared.stop.load(Ordering::Acquire) || shared.halt.load(Ordering::Acquire);
        if !restore(&mut consumer, &tps, stores, handler, &stopped)? {
            return Ok(None);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (stores, shared, flag) = (stores.clone(), shared.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name(format!("{app}-global"))
            .spawn(move || keep_current(consumer, &stores, handler, &flag, &shared))
            .map_err(|e| RuntimeError::ThreadDied {
                thread: "global thread".into(),
                reason: e.to_string(),
            })?;
        Ok(Some(GlobalThread {
            stop,
            handle: Some(handle),
        }))
    }

    /// Stops the thread and waits for it.
    pub(crate) fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Every partition of every global topic, assigned at its first readable offset.
fn assign_from_beginning<L: Log>(
    consumer: &mut L::Consumer,
    log: &L,
    stores: &GlobalStores,
) -> Result<Vec<TopicPartition>, RuntimeError> {
    let mut tps = Vec::new();
    for topic in stores.topics() {
        let shape =
            log.describe_topic(&topic)?
                .ok_or_else(|| RuntimeError::MissingSourceTopic {
                    topic: topic.clone(),
                })?;
        tps.extend((0..shape.partitions).map(|p| TopicPartition::new(topic.clone(), p)));
    }
    let mut starts = Vec::with_capacity(tps.len());
    for tp in &tps {
        starts.push((tp.clone(), consumer.beginning_offset(tp)?));
    }
    consumer.assign_at(&starts)?;
    Ok(tps)
}

/// Reads and applies up to each partition's read-committed end as of now.
/// `false` if `stopped` said so first.
fn restore<C: Consumer>(
    consumer: &mut C,
    tps: &[TopicPartition],
    stores: &GlobalStores,
    handler: DeserializationHandler,
    stopped: &dyn Fn() -> bool,
) -> Result<bool, RuntimeError> {
    let mut ends = Vec::with_capacity(tps.len());
    for tp in tps {
        ends.push(consumer.end_offset(tp)?);
    }
    let mut restored = 0u64;
    loop {
        let mut behind = false;
        for (tp, end) in tps.iter().zip(&ends) {
            behind |= consumer.position(tp)? < *end;
        }
        if !behind {
            tracing::info!(records = restored, "global stores restored");
            return Ok(true);
        }
        if stopped() {
            return Ok(false);
        }
        for r in consumer.fetch(FETCH_WAIT)? {
            apply(stores, &r, handler)?;
            restored += 1;
        }
    }
}

/// The thread's body: applies what arrives until told to stop. An error stops the
/// application, as a failed global thread stops a Kafka Streams client.
fn keep_current<C: Consumer>(
    mut consumer: C,
    stores: &GlobalStores,
    handler: DeserializationHandler,
    stop: &AtomicBool,
    shared: &Shared,
) {
    while !stop.load(Ordering::Acquire) && !shared.halt.load(Ordering::Acquire) {
        let fetched = match consumer.fetch(FETCH_WAIT) {
            Ok(records) => records,
            Err(e) if e.kind() == stoatflow_log::ErrorKind::Retriable => {
                tracing::warn!(error = %e, "global thread: fetch failed; retrying");
                continue;
            }
            Err(e) => return fail(shared, e.into()),
        };
        for r in &fetched {
            if let Err(e) = apply(stores, r, handler) {
                return fail(shared, e);
            }
        }
    }
}

fn fail(shared: &Shared, error: RuntimeError) {
    tracing::error!(error = %error, "the global thread failed; stopping the application");
    shared.decide(&error);
    shared.fail(error);
    shared.halt.store(true, Ordering::Release);
}

fn apply(
    stores: &GlobalStores,
    r: &FetchedRecord,
    handler: DeserializationHandler,
) -> Result<(), RuntimeError> {
    let rec = GlobalRecord {
        topic: &r.partition.topic,
        partition: Some(r.partition.partition.0 as i32),
        offset: Some(r.offset.0 as i64),
        key: r.record.key.as_deref(),
        value: r.record.value.as_deref(),
        timestamp: r.record.timestamp.0,
    };
    // A global store's update may be user code (`add_global_store`).
    guarded(|| stores.apply(&rec, handler))
        .map_err(|p| {
            p.naming(format!(
                "the update of the global store of topic {}",
                rec.topic
            ))
        })?
        .map_err(|source| RuntimeError::Process {
            task: "global thread".into(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use stoatflow_log::{EmbeddedLog, Record, Timestamp, TopicSpec, TransactionalProducer};
    use stoatflow_streams::{Consumed, Materialized, Serdes, StreamsBuilder, Topology};

    use super::*;

    fn topology() -> Topology {
        let mut b = StreamsBuilder::new();
        let _ = b.global_table(
            "g",
            Consumed::with(Serdes::string(), Serdes::string()),
            Materialized::as_("g-store"),
        );
        b.build().unwrap()
    }

    /// Writes `rows` to partition `p` of `g` in one transaction, committed or aborted.
    fn write(log: &EmbeddedLog, p: u32, rows: &[(&str, Option<&str>)], commit: bool) {
        let mut producer = log.transactional_producer("writer").unwrap();
        producer.begin().unwrap();
        for (k, v) in rows {
            let r = Record::new(Some(k.as_bytes()), v.map(str::as_bytes), Timestamp(1));
            producer.send(&TopicPartition::new("g", p), &r).unwrap();
        }
        match commit {
            true => producer.commit().unwrap(),
            false => producer.abort().unwrap(),
        }
    }

    fn restored(log: &EmbeddedLog, stores: &GlobalStores) -> Vec<(String, String)> {
        let mut consumer = log.consumer("app-global").unwrap();
        let tps = assign_from_beginning(&mut consumer, log, stores).unwrap();
        let done = restore(
            &mut consumer,
            &tps,
            stores,
            DeserializationHandler::LogAndFail,
            &|| false,
        )
        .unwrap();
        assert!(done);
        let store = stores.store::<String, String>("g-store").unwrap().unwrap();
        store.all().into_iter().map(|(k, v)| (k, v.value)).collect()
    }

    #[test]
    fn the_restore_reads_every_partition_to_its_committed_end_before_returning() {
        let log = EmbeddedLog::in_memory();
        log.create_topic(&TopicSpec::new("g", 2)).unwrap();
        write(&log, 0, &[("a", Some("1")), ("b", Some("2"))], true);
        write(&log, 1, &[("c", Some("3"))], true);
        write(&log, 1, &[("d", Some("aborted"))], false);
        write(&log, 0, &[("b", None), ("a", Some("11"))], true);
        let stores = topology().with_new_global_stores();
        let rows = restored(&log, stores.global_stores());
        let text = |rows: &[(&str, &str)]| -> Vec<(String, String)> {
            rows.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert_eq!(rows, text(&[("a", "11"), ("c", "3")]));
        // Another instance's (or a restarted one's) stores start empty and restore alike.
        let again = topology().with_new_global_stores();
        assert_eq!(restored(&log, again.global_stores()), rows);
    }

    #[test]
    fn a_panicking_global_store_update_is_an_error_naming_the_topic() {
        let log = EmbeddedLog::in_memory();
        log.create_topic(&TopicSpec::new("g", 1)).unwrap();
        write(&log, 0, &[("a", Some("1"))], true);
        let mut b = StreamsBuilder::new();
        b.add_global_store(
            "kept",
            "g",
            Consumed::with(Serdes::string(), Serdes::string()),
            |_: &mut stoatflow_streams::GlobalStoreWriter<'_, String, String>,
             _: stoatflow_streams::Record<String, Option<String>>| {
                panic!("update refused")
            },
        );
        let topology = b.build().unwrap();
        let mut consumer = log.consumer("app-global").unwrap();
        let stores = topology.global_stores();
        let tps = assign_from_beginning(&mut consumer, &log, stores).unwrap();
        let handler = DeserializationHandler::LogAndFail;
        let err = restore(&mut consumer, &tps, stores, handler, &|| false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("topic g") && err.contains("update refused"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_global_topic_is_named() {
        let log = EmbeddedLog::in_memory();
        let topology = topology();
        let mut consumer = log.consumer("app-global").unwrap();
        let err = assign_from_beginning(&mut consumer, &log, topology.global_stores())
            .unwrap_err()
            .to_string();
        assert!(err.contains("topic g does not exist"), "{err}");
    }
}
