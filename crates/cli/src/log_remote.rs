//! `stoatflow log ...` on a data directory another process holds: the
//! application that holds it is found through the address file its
//! endpoints write there (`stoatflow::ENDPOINT_FILE`), and the commands go
//! through its log routes (docs/operating.md#log-routes): topics and
//! offsets, committed records of a partition from an offset, and appends,
//! each request one transaction of the application's log.
//!
//! Owns finding the application, the requests and their batching (at most
//! `stoatflow::server::MAX_APPEND_RECORDS` records and
//! `stoatflow::server::MAX_BODY` bytes a request), and turning answers back
//! into the log's record type so `log_cmd` prints them as it prints its
//! own. The rules (what a transaction is, what is committed, which topics
//! may be written) are the application's.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;
use stoatflow::log::{
    FetchedRecord, Header, LogError, Offset, Record, Timestamp, TopicPartition,
    TransactionalProducer,
};
use stoatflow::server::{MAX_APPEND_RECORDS, MAX_BODY, MAX_READ_RECORDS, put_bytes};

use crate::http_get;

/// How long one request may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// How long a follow waits between reads that found nothing.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// The running application that holds a data directory.
#[derive(Debug, Clone)]
pub struct Running {
    /// Its endpoints' URL, `http://host:port`.
    base: String,
}

/// A topic as the application lists it.
#[derive(Debug, Clone)]
pub struct TopicRow {
    pub name: String,
    pub shape: String,
    /// Per partition: (partition, beginning offset, end offset).
    pub partitions: Vec<(u32, u64, u64)>,
}

impl Running {
    /// The application holding `dir`, found through its address file.
    pub fn find(dir: &Path) -> anyhow::Result<Running> {
        let file = dir.join(stoatflow::ENDPOINT_FILE);
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
                "data directory {} is locked by another process, which publishes no endpoint address ({} is missing): \
                 its endpoints are off (runtime.endpoints.enabled), or it is starting or stopping; \
                 run it with its endpoints on to use `stoatflow log` beside it, or stop it",
                dir.display(),
                file.display()
            ),
            Err(e) => {
                return Err(e).with_context(|| format!("reading {}", file.display()));
            }
        };
        let base = text.trim();
        if base
            .strip_prefix("http://")
            .is_none_or(|rest| rest.is_empty() || rest.contains('/'))
        {
            bail!(
                "{}: {base:?} is not the endpoints' address (http://host:port)",
                file.display()
            );
        }
        Ok(Running {
            base: base.to_owned(),
        })
    }

    /// The answer's JSON when its status is 200, else its error.
    fn answer(&self, what: &str, (status, body): (u16, String)) -> anyhow::Result<Value> {
        let json: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        if status != 200 {
            let error = json["error"].as_str().unwrap_or(body.trim());
            bail!(
                "{what}: the running application ({}) answered {status}: {error}",
                self.base
            );
        }
        Ok(json)
    }

    /// `GET path`'s JSON, an error naming `what` unless it answered 200.
    pub fn get(&self, what: &str, path: &str) -> anyhow::Result<Value> {
        let url = format!("{}{path}", self.base);
        let reply = http_get::get(&url, TIMEOUT).with_context(|| {
            format!(
                "{what}: asking the application that holds the data directory ({})",
                self.base
            )
        })?;
        self.answer(what, reply)
    }

    /// `GET path`'s status and JSON when it answered 200 or `also`; an
    /// error naming `what` otherwise.
    pub fn get_or(&self, what: &str, path: &str, also: u16) -> anyhow::Result<(u16, Value)> {
        let url = format!("{}{path}", self.base);
        let (status, body) = http_get::get(&url, TIMEOUT).with_context(|| {
            format!(
                "{what}: asking the application that holds the data directory ({})",
                self.base
            )
        })?;
        if status == also {
            return Ok((status, serde_json::from_str(&body).unwrap_or(Value::Null)));
        }
        Ok((200, self.answer(what, (status, body))?))
    }

    /// Every topic with its partitions' offsets.
    pub fn topics(&self) -> anyhow::Result<Vec<TopicRow>> {
        let json = self.get("listing the topics", "/log/topics")?;
        let rows = json["topics"]
            .as_array()
            .context("the application's /log/topics answer has no topics")?;
        Ok(rows
            .iter()
            .map(|t| TopicRow {
                name: t["name"].as_str().unwrap_or_default().to_owned(),
                shape: t["shape"].as_str().unwrap_or_default().to_owned(),
                partitions: t["partitions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| {
                        (
                            p["partition"].as_u64().unwrap_or_default() as u32,
                            p["beginningOffset"].as_u64().unwrap_or_default(),
                            p["endOffset"].as_u64().unwrap_or_default(),
                        )
                    })
                    .collect(),
            })
            .collect())
    }

    /// `topic`, or an error naming it.
    pub fn topic(&self, topic: &str) -> anyhow::Result<TopicRow> {
        self.topics()?
            .into_iter()
            .find(|t| t.name == topic)
            .with_context(|| {
                format!(
                    "topic {topic} does not exist in the log of the running application ({}), which creates no topic for `log produce`; see `stoatflow log topics`",
                    self.base
                )
            })
    }

    /// Committed records of `topic`-`partition` from `offset`, at most
    /// `max`; and the offset to read from next.
    fn read(
        &self,
        topic: &str,
        partition: u32,
        offset: u64,
        max: usize,
    ) -> anyhow::Result<(Vec<FetchedRecord>, u64)> {
        let json = self.get(
            &format!("reading {topic}-{partition} from offset {offset}"),
            &format!("/log/records?topic={topic}&partition={partition}&offset={offset}&max={max}"),
        )?;
        let records = json["records"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| FetchedRecord {
                partition: TopicPartition::new(topic, partition),
                offset: Offset(r["offset"].as_u64().unwrap_or_default()),
                record: Record {
                    key: bytes(r, "key"),
                    value: bytes(r, "value"),
                    headers: r["headers"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|h| Header {
                            key: h["key"].as_str().unwrap_or_default().to_owned(),
                            value: bytes(h, "value"),
                        })
                        .collect(),
                    timestamp: Timestamp(r["timestamp"].as_i64().unwrap_or_default()),
                },
            })
            .collect();
        let next = json["nextOffset"]
            .as_u64()
            .context("the application's answer has no nextOffset")?;
        Ok((records, next))
    }

    /// `log consume` through the application: every partition of
    /// `partitions` from its beginning to its end as of the call (`follow`:
    /// on, until `stop` is set), at most `limit` records, each given to
    /// `print`; how many.
    pub fn consume(
        &self,
        topic: &str,
        partitions: &[u32],
        limit: u64,
        follow: Option<&AtomicBool>,
        mut print: impl FnMut(&FetchedRecord) -> anyhow::Result<()>,
    ) -> anyhow::Result<u64> {
        let row = self.topic(topic)?;
        let mut at: Vec<(u32, u64, u64)> = Vec::new();
        for &p in partitions {
            let Some(&(_, beginning, end)) = row.partitions.iter().find(|(q, ..)| *q == p) else {
                bail!(
                    "topic {topic} has {} partitions; there is no partition {p}",
                    row.partitions.len()
                );
            };
            at.push((p, beginning, end));
        }
        let mut n = 0u64;
        loop {
            let mut read_any = false;
            for (p, next, end) in &mut at {
                if follow.is_none() && *next >= *end {
                    continue;
                }
                let room = usize::try_from(limit - n).unwrap_or(usize::MAX);
                let max = room.min(MAX_READ_RECORDS);
                if max == 0 {
                    return Ok(n);
                }
                let (records, after) = self.read(topic, *p, *next, max)?;
                for r in &records {
                    if follow.is_none() && r.offset.0 >= *end {
                        break;
                    }
                    print(r)?;
                    n += 1;
                }
                read_any |= !records.is_empty();
                *next = after;
            }
            match follow {
                None if at.iter().all(|(_, next, end)| next >= end) => return Ok(n),
                None => {}
                Some(stop) if stop.load(Ordering::Acquire) => return Ok(n),
                Some(_) if !read_any => std::thread::sleep(FOLLOW_POLL),
                Some(_) => {}
            }
        }
    }

    /// A producer of `topic` through the application.
    pub fn producer(&self, topic: &str) -> RemoteProducer {
        RemoteProducer {
            running: self.clone(),
            topic: topic.to_owned(),
            pending: Vec::new(),
            bytes: 0,
            committed: 0,
        }
    }
}

/// Bytes of field `name` of `o`: text, or `nameHex`, or null.
fn bytes(o: &Value, name: &str) -> Option<Vec<u8>> {
    if let Some(text) = o[name].as_str() {
        return Some(text.as_bytes().to_vec());
    }
    let hex = o[format!("{name}Hex")].as_str()?;
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
        .collect()
}

/// Records sent to the application in requests of at most
/// [`MAX_APPEND_RECORDS`] records and [`MAX_BODY`] bytes, each one
/// transaction of its log; [`RemoteProducer::commit`] sends what is
/// pending.
#[derive(Debug)]
pub struct RemoteProducer {
    running: Running,
    topic: String,
    /// The JSON of each pending record.
    pending: Vec<String>,
    bytes: usize,
    /// Records the application committed so far.
    committed: u64,
}

/// Room for `{"records":[` ... `]}` and the commas.
const ENVELOPE: usize = 64;

impl RemoteProducer {
    /// Adds `record` for `tp`, sending what is pending first if it would
    /// not fit one request.
    pub fn send(&mut self, tp: &TopicPartition, record: &Record) -> anyhow::Result<()> {
        let mut o = serde_json::Map::new();
        o.insert("partition".into(), tp.partition.0.into());
        put_bytes(&mut o, "key", record.key.as_deref());
        put_bytes(&mut o, "value", record.value.as_deref());
        o.insert("timestamp".into(), record.timestamp.0.into());
        let text = Value::Object(o).to_string();
        if text.len() + ENVELOPE > MAX_BODY {
            bail!(
                "a record of {} bytes as JSON does not fit one request to the running application (at most {MAX_BODY} bytes)",
                text.len()
            );
        }
        if self.pending.len() == MAX_APPEND_RECORDS
            || self.bytes + text.len() + 1 + ENVELOPE > MAX_BODY
        {
            self.commit()?;
        }
        self.bytes += text.len() + 1;
        self.pending.push(text);
        Ok(())
    }

    /// Sends what is pending as one transaction.
    pub fn commit(&mut self) -> anyhow::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let body = format!("{{\"records\":[{}]}}", self.pending.join(","));
        let url = format!("{}/log/records?topic={}", self.running.base, self.topic);
        let n = self.pending.len() as u64;
        let what = format!(
            "producing {n} records to {} ({} committed before them)",
            self.topic, self.committed
        );
        let reply = http_get::post_json(&url, body.as_bytes(), TIMEOUT).with_context(|| {
            format!(
                "{what}: sending them to the application that holds the data directory ({}); whether they were committed is unknown",
                self.running.base
            )
        })?;
        let json = self.running.answer(&what, reply)?;
        if json["appended"].as_u64() != Some(n) {
            bail!("{what}: the application answered {json}");
        }
        self.committed += n;
        self.pending.clear();
        self.bytes = 0;
        Ok(())
    }
}

/// What `log produce` writes through: the log's own transactional producer
/// when the command holds the directory, the application's otherwise.
pub trait Transactions {
    fn begin(&mut self) -> anyhow::Result<()>;
    fn send(&mut self, tp: &TopicPartition, record: &Record) -> anyhow::Result<()>;
    fn commit(&mut self) -> anyhow::Result<()>;
}

impl Transactions for RemoteProducer {
    fn begin(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
    fn send(&mut self, tp: &TopicPartition, record: &Record) -> anyhow::Result<()> {
        RemoteProducer::send(self, tp, record)
    }
    fn commit(&mut self) -> anyhow::Result<()> {
        RemoteProducer::commit(self)
    }
}

impl Transactions for stoatflow::log::EmbeddedProducer {
    fn begin(&mut self) -> anyhow::Result<()> {
        Ok(TransactionalProducer::begin(self)?)
    }
    fn send(&mut self, tp: &TopicPartition, record: &Record) -> anyhow::Result<()> {
        Ok(TransactionalProducer::send(self, tp, record)?)
    }
    fn commit(&mut self) -> anyhow::Result<()> {
        Ok(TransactionalProducer::commit(self)?)
    }
}

/// Whether opening the log failed because another process holds it.
pub fn is_locked(e: &LogError) -> bool {
    matches!(e, LogError::Locked { .. })
}
