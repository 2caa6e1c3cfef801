//! The log routes of docs/operating.md#log-routes: `GET /log/topics`,
//! `GET /log/records` (committed records of one partition from an offset)
//! and `POST /log/records` (records appended in one transaction). What the
//! command line's `log` commands use while the application holds its data
//! directory.
//!
//! Owns the JSON both ways (bytes as text when they are UTF-8, else as hex
//! in a `...Hex` field), the query parameters, the bounds of a request
//! (records per append, records and bytes per read) and which status each
//! [`LogAccessError`] gets. Knows the log only through [`LogAccess`]; knows
//! nothing of sockets (the loopback rule is the router's).

use serde_json::{Map, Value, json};

use crate::log_access::{LogAccess, LogAccessError, NewRecord, PartitionOffsets, StoredRecord};
use crate::response::Response;

/// The most records one append may carry.
pub const MAX_APPEND_RECORDS: usize = 10_000;
/// The most records one read returns (`max`'s bound).
pub const MAX_READ_RECORDS: usize = 1_000;
/// Records per read without `max`.
const DEFAULT_READ_RECORDS: usize = 500;
/// About the most key and value bytes one read returns.
const MAX_READ_BYTES: usize = 256 * 1024;

/// `GET /log/topics`.
pub(crate) fn topics(log: &dyn LogAccess) -> Response {
    match log.topics() {
        Ok(topics) => {
            let topics: Vec<Value> = topics
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name,
                        "shape": t.shape,
                        "partitions": t.partitions.iter().map(offsets_json).collect::<Vec<_>>(),
                    })
                })
                .collect();
            Response::json(200, &json!({ "topics": topics }))
        }
        Err(e) => failure(&e),
    }
}

/// `GET /log/records?topic=T&partition=P[&offset=O][&max=M]`; `param`
/// reads the query.
pub(crate) fn read<'a>(log: &dyn LogAccess, param: impl Fn(&str) -> Option<&'a str>) -> Response {
    let parsed = (|| {
        let topic = param("topic").ok_or("topic is required (?topic=NAME)")?;
        let partition = param("partition")
            .ok_or("partition is required (&partition=N)")?
            .parse::<u32>()
            .map_err(|_| "partition must be a non-negative integer")?;
        let offset = param("offset")
            .map(str::parse::<u64>)
            .transpose()
            .map_err(|_| "offset must be a non-negative integer")?
            .unwrap_or(0);
        let max = match param("max").map(str::parse::<usize>) {
            None => DEFAULT_READ_RECORDS,
            Some(Ok(m)) if (1..=MAX_READ_RECORDS).contains(&m) => m,
            Some(_) => return Err("max must be an integer from 1 to 1000"),
        };
        Ok((topic, partition, offset, max))
    })();
    let (topic, partition, offset, max) = match parsed {
        Ok(p) => p,
        Err(reason) => return bad_request(reason),
    };
    match log.read(topic, partition, offset, max, MAX_READ_BYTES) {
        Ok(batch) => Response::json(
            200,
            &json!({
                "topic": topic,
                "partition": partition,
                "records": batch.records.iter().map(record_json).collect::<Vec<_>>(),
                "nextOffset": batch.next_offset,
                "beginningOffset": batch.offsets.beginning,
                "endOffset": batch.offsets.end,
            }),
        ),
        Err(e) => failure(&e),
    }
}

/// `POST /log/records?topic=T` with `{"records": [...]}`.
pub(crate) fn append(log: &dyn LogAccess, topic: Option<&str>, body: &[u8]) -> Response {
    let Some(topic) = topic else {
        return bad_request("topic is required (?topic=NAME)");
    };
    let records = match parse_records(body) {
        Ok(r) => r,
        Err(reason) => {
            return Response::json(400, &json!({ "error": format!("topic {topic}: {reason}") }));
        }
    };
    match log.append(topic, records) {
        Ok(n) => Response::json(200, &json!({ "topic": topic, "appended": n })),
        Err(e) => failure(&e),
    }
}

fn bad_request(reason: &str) -> Response {
    Response::json(400, &json!({ "error": reason }))
}

/// The status and body of a failed log route.
fn failure(e: &LogAccessError) -> Response {
    let status = match e {
        LogAccessError::NoTopic { .. } | LogAccessError::NoPartition { .. } => 404,
        LogAccessError::OffsetPastEnd { .. } | LogAccessError::BadRecord { .. } => 400,
        LogAccessError::Refused { .. } => 403,
        LogAccessError::Log { .. } => 503,
    };
    Response::json(status, &json!({ "error": e.to_string() }))
}

fn offsets_json(p: &PartitionOffsets) -> Value {
    json!({ "partition": p.partition, "beginningOffset": p.beginning, "endOffset": p.end })
}

/// Puts `bytes` under `name` as text, or under `name` + `Hex` when they
/// are not UTF-8; a null as `name: null`. The routes answer records this
/// way, and a client sending records writes them the same way.
pub fn put_bytes(o: &mut Map<String, Value>, name: &str, bytes: Option<&[u8]>) {
    match bytes.map(std::str::from_utf8) {
        None => {
            o.insert(name.into(), Value::Null);
        }
        Some(Ok(text)) => {
            o.insert(name.into(), text.into());
        }
        Some(Err(_)) => {
            let hex: String = bytes
                .unwrap_or_default()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            o.insert(format!("{name}Hex"), hex.into());
        }
    }
}

fn record_json(r: &StoredRecord) -> Value {
    let mut o = Map::new();
    o.insert("partition".into(), r.partition.into());
    o.insert("offset".into(), r.offset.into());
    o.insert("timestamp".into(), r.timestamp.into());
    put_bytes(&mut o, "key", r.key.as_deref());
    put_bytes(&mut o, "value", r.value.as_deref());
    let headers: Vec<Value> = r
        .headers
        .iter()
        .map(|(key, value)| {
            let mut h = Map::new();
            h.insert("key".into(), key.as_str().into());
            put_bytes(&mut h, "value", value.as_deref());
            Value::Object(h)
        })
        .collect();
    o.insert("headers".into(), headers.into());
    Value::Object(o)
}

/// The records of an append's body; the reason it cannot be read, naming
/// the record and field.
fn parse_records(body: &[u8]) -> Result<Vec<NewRecord>, String> {
    let doc: Value = serde_json::from_slice(body)
        .map_err(|e| format!("the body is not JSON ({e}); send {{\"records\": [...]}}"))?;
    let Some(items) = doc.get("records").and_then(Value::as_array) else {
        return Err("the body has no \"records\" array".into());
    };
    if items.len() > MAX_APPEND_RECORDS {
        return Err(format!(
            "{} records in one request; at most {MAX_APPEND_RECORDS}",
            items.len()
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_record(item).map_err(|reason| format!("record {i}: {reason}")))
        .collect()
}

fn parse_record(item: &Value) -> Result<NewRecord, String> {
    let Some(fields) = item.as_object() else {
        return Err("not an object".into());
    };
    let mut record = NewRecord::default();
    let (mut key_given, mut value_given) = (false, false);
    for (name, v) in fields {
        match name.as_str() {
            "partition" => {
                let p = v
                    .as_u64()
                    .and_then(|p| u32::try_from(p).ok())
                    .ok_or("partition must be a non-negative integer")?;
                record.partition = Some(p);
            }
            "timestamp" => {
                record.timestamp = Some(
                    v.as_i64()
                        .ok_or("timestamp must be an integer (ms since the epoch)")?,
                );
            }
            "key" | "keyHex" | "value" | "valueHex" => {
                let is_key = name.starts_with("key");
                let given = if is_key {
                    &mut key_given
                } else {
                    &mut value_given
                };
                if std::mem::replace(given, true) {
                    return Err(format!(
                        "both {0} and {0}Hex",
                        if is_key { "key" } else { "value" }
                    ));
                }
                let bytes = match (v, name.ends_with("Hex")) {
                    (Value::Null, _) => None,
                    (Value::String(s), false) => Some(s.as_bytes().to_vec()),
                    (Value::String(s), true) => Some(
                        from_hex(s)
                            .ok_or_else(|| format!("{name} is not an even number of hex digits"))?,
                    ),
                    _ => return Err(format!("{name} must be a string or null")),
                };
                if is_key {
                    record.key = bytes;
                } else {
                    record.value = bytes;
                }
            }
            other => {
                return Err(format!(
                    "unknown field {other} (fields: partition, key, keyHex, value, valueHex, timestamp)"
                ));
            }
        }
    }
    Ok(record)
}

fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use stoatflow_time::WatermarksSnapshot;

    use super::*;
    use crate::connection::{BodyProblem, Incoming};
    use crate::endpoints::Endpoints;
    use crate::history::WatermarkHistory;
    use crate::log_access::{ReadBatch, TopicInfo};
    use crate::metrics::RecordingLevel;
    use crate::routing::ServerState;

    struct Idle;

    impl Endpoints for Idle {
        fn watermarks(&self) -> Option<WatermarksSnapshot> {
            None
        }
        fn client_state(&self) -> (&'static str, u8) {
            ("RUNNING", 4)
        }
        fn application_id(&self) -> String {
            "app".into()
        }
    }

    /// One topic `clicks` of two partitions, in memory; every append is
    /// whole or refused.
    #[derive(Default)]
    struct Memory(Mutex<[Vec<StoredRecord>; 2]>);

    impl Memory {
        fn partition(&self, topic: &str, partition: u32) -> Result<usize, LogAccessError> {
            if topic != "clicks" {
                return Err(LogAccessError::NoTopic {
                    topic: topic.into(),
                });
            }
            if partition >= 2 {
                return Err(LogAccessError::NoPartition {
                    topic: topic.into(),
                    partition,
                    partitions: 2,
                });
            }
            Ok(partition as usize)
        }
    }

    impl LogAccess for Memory {
        fn topics(&self) -> Result<Vec<TopicInfo>, LogAccessError> {
            let parts = self.0.lock().unwrap();
            Ok(vec![TopicInfo {
                name: "clicks".into(),
                shape: "2 partitions".into(),
                partitions: (0..2)
                    .map(|p| PartitionOffsets {
                        partition: p,
                        beginning: 0,
                        end: parts[p as usize].len() as u64,
                    })
                    .collect(),
            }])
        }

        fn append(&self, topic: &str, records: Vec<NewRecord>) -> Result<usize, LogAccessError> {
            if topic.starts_with("app-") {
                return Err(LogAccessError::Refused {
                    reason: format!("topic {topic} is internal"),
                });
            }
            let targets = records
                .iter()
                .map(|r| self.partition(topic, r.partition.unwrap_or(0)))
                .collect::<Result<Vec<_>, _>>()?;
            let mut parts = self.0.lock().unwrap();
            for (r, p) in records.iter().zip(targets) {
                let offset = parts[p].len() as u64;
                parts[p].push(StoredRecord {
                    partition: p as u32,
                    offset,
                    timestamp: r.timestamp.unwrap_or(7),
                    key: r.key.clone(),
                    value: r.value.clone(),
                    headers: vec![("h".into(), Some(vec![0xff]))],
                });
            }
            Ok(records.len())
        }

        fn read(
            &self,
            topic: &str,
            partition: u32,
            offset: u64,
            max_records: usize,
            _max_bytes: usize,
        ) -> Result<ReadBatch, LogAccessError> {
            let p = self.partition(topic, partition)?;
            let parts = self.0.lock().unwrap();
            let end = parts[p].len() as u64;
            if offset > end {
                return Err(LogAccessError::OffsetPastEnd {
                    topic: topic.into(),
                    partition,
                    offset,
                    end,
                });
            }
            let records: Vec<StoredRecord> = parts[p][offset as usize..]
                .iter()
                .take(max_records)
                .cloned()
                .collect();
            Ok(ReadBatch {
                next_offset: offset + records.len() as u64,
                records,
                offsets: PartitionOffsets {
                    partition,
                    beginning: 0,
                    end,
                },
            })
        }
    }

    fn served(log: Option<Arc<dyn LogAccess>>) -> ServerState {
        let history = WatermarkHistory::new(Duration::from_secs(1), Duration::from_secs(60));
        ServerState::new(
            Arc::new(Idle),
            true,
            RecordingLevel::Info,
            history,
            Duration::ZERO,
        )
        .with_log(log)
    }

    fn with_memory() -> ServerState {
        served(Some(Arc::new(Memory::default())))
    }

    const LOOPBACK: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    /// `method target` with `body`, from `peer`: status and JSON body.
    fn ask(s: &mut ServerState, peer: IpAddr, line: &str, body: &str) -> (u16, Value) {
        let request = Incoming::Head {
            line: line.as_bytes(),
            fields: b"Host: test\r\n\r\n",
            body: body.as_bytes(),
        };
        let reply = s.answer(request, peer, Instant::now()).0;
        (reply.status(), reply.json_body())
    }

    fn get(s: &mut ServerState, target: &str) -> (u16, Value) {
        ask(s, LOOPBACK, &format!("GET {target} HTTP/1.1"), "")
    }

    fn post(s: &mut ServerState, target: &str, body: &str) -> (u16, Value) {
        ask(s, LOOPBACK, &format!("POST {target} HTTP/1.1"), body)
    }

    fn error(v: &Value) -> &str {
        v["error"].as_str().unwrap_or_default()
    }

    #[test]
    fn records_appended_in_one_request_are_read_back_with_their_offsets() {
        let mut s = with_memory();
        let (status, body) = post(
            &mut s,
            "/log/records?topic=clicks",
            r#"{"records": [
                {"key": "alice", "value": "1", "timestamp": 1000},
                {"partition": 1, "keyHex": "00ff", "value": null},
                {"key": null, "valueHex": "6869"}
            ]}"#,
        );
        assert_eq!((status, &body["appended"]), (200, &json!(3)), "{body}");
        let (status, read) = get(&mut s, "/log/records?topic=clicks&partition=0");
        assert_eq!(status, 200, "{read}");
        assert_eq!(read["nextOffset"], 2);
        assert_eq!(read["endOffset"], 2);
        let records = read["records"].as_array().unwrap();
        assert_eq!(records[0]["key"], "alice");
        assert_eq!(records[0]["value"], "1");
        assert_eq!(records[0]["timestamp"], 1000);
        assert_eq!(records[0]["headers"][0]["valueHex"], "ff");
        assert_eq!(records[1]["key"], Value::Null);
        assert_eq!(records[1]["value"], "hi", "hex in, text out when UTF-8");
        let (_, one) = get(
            &mut s,
            "/log/records?topic=clicks&partition=1&offset=0&max=1",
        );
        let binary = &one["records"][0];
        assert_eq!(binary["keyHex"], "00ff");
        assert!(binary.get("key").is_none(), "{binary}");
        assert_eq!(binary["value"], Value::Null);
        let (_, from) = get(&mut s, "/log/records?topic=clicks&partition=0&offset=1");
        assert_eq!(from["records"][0]["offset"], 1);
        let (_, at_end) = get(&mut s, "/log/records?topic=clicks&partition=0&offset=2");
        assert_eq!(at_end["records"], json!([]), "at the end: nothing yet");
        assert_eq!(at_end["nextOffset"], 2);
        let (status, topics) = get(&mut s, "/log/topics");
        assert_eq!(status, 200);
        assert_eq!(topics["topics"][0]["name"], "clicks");
        assert_eq!(topics["topics"][0]["partitions"][1]["endOffset"], 1);
    }

    #[test]
    fn a_bad_topic_partition_or_offset_is_named() {
        let mut s = with_memory();
        let (status, body) = get(&mut s, "/log/records?topic=nope&partition=0");
        assert_eq!(status, 404);
        assert!(error(&body).contains("topic nope does not exist"), "{body}");
        let (status, body) = get(&mut s, "/log/records?topic=clicks&partition=9");
        assert_eq!(status, 404);
        assert!(error(&body).contains("no partition 9"), "{body}");
        let (status, body) = get(&mut s, "/log/records?topic=clicks&partition=0&offset=5");
        assert_eq!(status, 400);
        assert!(
            error(&body).contains("offset 5 is past the committed end 0 of clicks-0"),
            "{body}"
        );
        for (target, want) in [
            (
                "/log/records?topic=clicks&partition=0&offset=-1",
                "offset must be",
            ),
            (
                "/log/records?topic=clicks&partition=0&offset=x",
                "offset must be",
            ),
            ("/log/records?topic=clicks", "partition is required"),
            ("/log/records?partition=0", "topic is required"),
            ("/log/records?topic=clicks&partition=0&max=0", "max must be"),
            (
                "/log/records?topic=clicks&partition=0&max=1001",
                "max must be",
            ),
        ] {
            let (status, body) = get(&mut s, target);
            assert_eq!(status, 400, "{target}");
            assert!(error(&body).contains(want), "{target}: {body}");
        }
        let (status, body) = post(&mut s, "/log/records?topic=nope", r#"{"records":[{}]}"#);
        assert_eq!(status, 404);
        assert!(error(&body).contains("topic nope"), "{body}");
        let (status, body) = post(
            &mut s,
            "/log/records?topic=app-x-changelog",
            r#"{"records":[]}"#,
        );
        assert_eq!(status, 403, "{body}");
    }

    #[test]
    fn a_malformed_or_oversize_append_is_refused_whole() {
        let mut s = with_memory();
        let too_many = format!(
            r#"{{"records": [{}]}}"#,
            vec![r#"{"value":"v"}"#; MAX_APPEND_RECORDS + 1].join(",")
        );
        for (body, want) in [
            ("not json", "not JSON"),
            (r#"{"rows": []}"#, "no \"records\" array"),
            (
                r#"{"records": [{"value": "a"}, {"valeu": "b"}]}"#,
                "record 1: unknown field valeu",
            ),
            (
                r#"{"records": [{"key": "a", "keyHex": "00"}]}"#,
                "both key and keyHex",
            ),
            (r#"{"records": [{"keyHex": "0g"}]}"#, "hex digits"),
            (r#"{"records": [{"keyHex": "+f"}]}"#, "hex digits"),
            (r#"{"records": [{"partition": -1}]}"#, "partition must be"),
            (
                r#"{"records": [{"timestamp": "soon"}]}"#,
                "timestamp must be",
            ),
            (r#"{"records": [{"value": 5}]}"#, "value must be a string"),
            (too_many.as_str(), "at most 10000"),
        ] {
            let (status, reply) = post(&mut s, "/log/records?topic=clicks", body);
            assert_eq!(status, 400, "{reply}");
            assert!(error(&reply).contains(want), "{want}: {reply}");
            assert!(error(&reply).starts_with("topic clicks: "), "{reply}");
        }
        let (_, topics) = get(&mut s, "/log/topics");
        assert_eq!(
            topics["topics"][0]["partitions"][0]["endOffset"], 0,
            "nothing appended"
        );
        let oversize = s
            .answer(
                Incoming::BadBody(BodyProblem::TooLarge),
                LOOPBACK,
                Instant::now(),
            )
            .0;
        assert_eq!(oversize.status(), 413);
        assert!(
            oversize
                .head()
                .starts_with("HTTP/1.1 413 Content Too Large\r\n")
        );
        assert!(
            oversize.json_body()["error"]
                .as_str()
                .unwrap()
                .contains("1048576 bytes")
        );
        let chunked = s
            .answer(
                Incoming::BadBody(BodyProblem::Length("a body in a Transfer-Encoding")),
                LOOPBACK,
                Instant::now(),
            )
            .0;
        assert_eq!(chunked.status(), 400);
    }

    #[test]
    fn the_log_routes_answer_loopback_only_and_only_with_a_log() {
        let mut s = with_memory();
        let remote = IpAddr::from([192, 0, 2, 7]);
        for line in [
            "GET /log/topics HTTP/1.1",
            "POST /log/records?topic=clicks HTTP/1.1",
        ] {
            let (status, body) = ask(&mut s, remote, line, r#"{"records":[{"value":"x"}]}"#);
            assert_eq!(status, 403, "{line}");
            assert!(error(&body).contains("loopback"), "{body}");
        }
        let (_, topics) = get(&mut s, "/log/topics");
        assert_eq!(topics["topics"][0]["partitions"][0]["endOffset"], 0);
        assert_eq!(
            ask(&mut s, remote, "GET /info HTTP/1.1", "").0,
            200,
            "others as before"
        );
        let mut without = served(None);
        let (status, body) = get(&mut without, "/log/topics");
        assert_eq!(status, 404);
        assert!(error(&body).contains("no log routes"), "{body}");
        let put = s.answer(
            Incoming::Head {
                line: b"PUT /log/records HTTP/1.1",
                fields: b"Host: test\r\n\r\n",
                body: b"",
            },
            LOOPBACK,
            Instant::now(),
        );
        assert_eq!(put.0.status(), 405);
        assert!(put.0.head().contains("\r\nAllow: GET, HEAD, POST\r\n"));
        assert_eq!(post(&mut s, "/log/topics", "").0, 405);
    }
}
