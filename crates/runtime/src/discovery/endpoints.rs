//! The endpoints topic, `<application.id>-stoatflow-endpoints`: one
//! compacted partition where each member that sets `application.server`
//! writes it, keyed by its member name, before it joins the group
//! (docs/queries.md#endpoints). A member learns the others' endpoints by
//! reading it to its end.
//!
//! Owns the topic's name, shape and record form, and the reader that keeps
//! its position between reads. Knows nothing of the group, tasks or keys.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use stoatflow_log::{
    Consumer, Log, LogError, Producer, Record, SeekTo, Timestamp, TopicPartition, TopicSpec,
};

/// The endpoints topic of application `app`.
pub(crate) fn endpoints_topic(app: &str) -> String {
    format!("{app}-stoatflow-endpoints")
}

/// How long one read of the topic to its end may take.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Writes `server` as member `member`'s endpoint (creating the topic if it
/// is missing), and waits until it is durable.
///
/// # Errors
/// The topic exists with another shape, or the log failed.
pub(crate) fn advertise<L: Log>(
    log: &L,
    app: &str,
    member: &str,
    server: &str,
) -> Result<(), LogError> {
    let topic = endpoints_topic(app);
    log.ensure_topic(&TopicSpec::new(&topic, 1).compacted())?;
    let mut producer = log.producer(&format!("{member}-endpoint"))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let record = Record::new(
        Some(member.as_bytes()),
        Some(server.as_bytes()),
        Timestamp(now),
    );
    producer.send(&TopicPartition::new(&topic, 0), &record)?;
    producer.flush()
}

/// Reads the endpoints topic, keeping its consumer and what it read.
#[derive(Debug)]
pub(crate) struct EndpointReader<C> {
    consumer: Option<C>,
    /// The latest endpoint of each member, by member name.
    endpoints: BTreeMap<String, String>,
}

impl<C: Consumer> EndpointReader<C> {
    pub(crate) fn new() -> Self {
        EndpointReader {
            consumer: None,
            endpoints: BTreeMap::new(),
        }
    }

    /// Every member's latest endpoint, read up to the topic's end now; an
    /// empty map while the topic does not exist.
    ///
    /// # Errors
    /// The log failed, or the end was not reached within [`READ_TIMEOUT`].
    pub(crate) fn read<L: Log<Consumer = C>>(
        &mut self,
        log: &L,
        app: &str,
    ) -> Result<&BTreeMap<String, String>, LogError> {
        let topic = endpoints_topic(app);
        let tp = TopicPartition::new(&topic, 0);
        if self.consumer.is_none() {
            if log.describe_topic(&topic)?.is_none() {
                return Ok(&self.endpoints);
            }
            let mut consumer = log.consumer(&format!("{app}-endpoints-reader"))?;
            consumer.assign(std::slice::from_ref(&tp))?;
            consumer.seek(&tp, SeekTo::Beginning)?;
            self.consumer = Some(consumer);
        }
        let consumer = self.consumer.as_mut().expect("set above");
        let end = consumer.end_offset(&tp)?;
        let deadline = Instant::now() + READ_TIMEOUT;
        while consumer.position(&tp)? < end {
            if Instant::now() >= deadline {
                return Err(LogError::Broker {
                    op: format!("reading {topic}"),
                    message: format!("its end, offset {}, not reached in {READ_TIMEOUT:?}", end.0),
                    kind: stoatflow_log::ErrorKind::Retriable,
                });
            }
            for fetched in consumer.fetch(Duration::from_millis(50))? {
                let (Some(key), value) = (fetched.record.key, fetched.record.value) else {
                    continue;
                };
                let member = String::from_utf8_lossy(&key).into_owned();
                match value {
                    Some(v) => self
                        .endpoints
                        .insert(member, String::from_utf8_lossy(&v).into_owned()),
                    None => self.endpoints.remove(&member),
                };
            }
        }
        Ok(&self.endpoints)
    }
}
