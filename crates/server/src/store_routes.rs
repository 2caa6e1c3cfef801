//! The store routes of docs/operating.md#store-routes: `GET /stores`,
//! `GET /stores/{name}/keys/{key}`, `GET /stores/{name}/keys?from&to&limit`
//! (a key range) and `GET /stores/{name}/keys/{key}/windows?from&to` (a key's
//! windows or sessions), each with `latest=true` to read what is processed
//! rather than what is committed and `stale=true` to read standby copies
//! and tasks restoring too (each listed with how far behind it is); `GET /stores/{name}/metadata/{key}` (which
//! instance owns the key, which keep standby copies). A key owned by
//! another instance is answered 421 with that instance's
//! `application.server` as `owner`.
//!
//! Owns the paths, the percent-decoding of a key's path segment, the query
//! parameters and their bounds, the JSON (with each window's finality) and
//! which status each [`StoreAccessError`] gets. Knows the stores only
//! through [`StoreAccess`]; knows nothing of sockets.

use serde_json::{Value, json};

use crate::response::Response;
use crate::store_access::{
    KeyHolder, StaleCopy, StoreAccess, StoreAccessError, StoreAnswer, StoreEntry, StoreRead,
    StoreRequest,
};

/// The most entries one answer holds (`limit`'s bound, and a key's windows).
pub const MAX_STORE_ENTRIES: usize = 1_000;
/// Entries per range without `limit`.
const DEFAULT_RANGE_ENTRIES: usize = 100;

/// The response to `GET path` (below `/stores`) with the query `param`.
pub(crate) fn respond<'a>(
    stores: &dyn StoreAccess,
    rest: &str,
    param: impl Fn(&str) -> Option<&'a str>,
) -> Response {
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let flag = |name: &str| match param(name) {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(_) => Err(bad_request(&format!("{name} must be true or false"))),
    };
    let read = match (flag("latest"), flag("stale")) {
        (Ok(latest), Ok(stale)) => StoreRead { latest, stale },
        (Err(bad), _) | (_, Err(bad)) => return bad,
    };
    let request = match segments[..] {
        [] => return list(stores),
        [store, "keys"] => range(&param).map(|r| (store, r)),
        [store, "keys", key] => decode(key).map(|key| (store, StoreRequest::Key { key })),
        [store, "keys", key, "windows"] => windows(key, &param).map(|r| (store, r)),
        [store, "metadata", key] => return metadata(stores, store, key),
        _ => {
            return Response::json(
                404,
                &json!({ "error": format!("no endpoint /stores{rest}") }),
            );
        }
    };
    let (store, request) = match request {
        Ok(r) => r,
        Err(reason) => return bad_request(&reason),
    };
    let Ok(store) = decode(store) else {
        return bad_request("the store name is not valid percent-encoded UTF-8");
    };
    match stores.query(&store, request, read) {
        Ok(answer) => Response::json(200, &answer_json(&store, &answer)),
        Err(e) => failure(&e),
    }
}

/// `GET /stores/{name}/metadata/{key}`: which instance owns the key.
fn metadata(stores: &dyn StoreAccess, store: &str, key: &str) -> Response {
    let (Ok(store), Ok(key)) = (decode(store), decode(key)) else {
        return bad_request("the store name or key is not valid percent-encoded UTF-8");
    };
    match stores.metadata(&store, &key) {
        Ok(m) => {
            let holder =
                |h: &KeyHolder| json!({ "member": h.member, "server": h.server, "local": h.local });
            Response::json(
                200,
                &json!({
                    "store": store,
                    "key": key,
                    "partition": m.partition,
                    "active": holder(&m.active),
                    "standbys": m.standbys.iter().map(holder).collect::<Vec<_>>(),
                }),
            )
        }
        Err(e) => failure(&e),
    }
}

fn list(stores: &dyn StoreAccess) -> Response {
    let stores: Vec<Value> = stores
        .stores()
        .iter()
        .map(|s| json!({ "name": s.name, "kind": s.kind }))
        .collect();
    Response::json(200, &json!({ "stores": stores }))
}

fn range<'a>(param: &impl Fn(&str) -> Option<&'a str>) -> Result<StoreRequest, String> {
    let bound = |name| param(name).map(decode).transpose();
    let limit = match param("limit").map(str::parse::<usize>) {
        None => DEFAULT_RANGE_ENTRIES,
        Some(Ok(n)) if (1..=MAX_STORE_ENTRIES).contains(&n) => n,
        Some(_) => {
            return Err(format!(
                "limit must be an integer from 1 to {MAX_STORE_ENTRIES}"
            ));
        }
    };
    Ok(StoreRequest::Range {
        from: bound("from")?,
        to: bound("to")?,
        limit,
    })
}

fn windows<'a>(
    key: &str,
    param: &impl Fn(&str) -> Option<&'a str>,
) -> Result<StoreRequest, String> {
    let time = |name: &str, default| match param(name).map(str::parse::<i64>) {
        None => Ok(default),
        Some(Ok(t)) => Ok(t),
        Some(Err(_)) => Err(format!(
            "{name} must be event-time milliseconds (an integer)"
        )),
    };
    Ok(StoreRequest::Windows {
        key: decode(key)?,
        from: time("from", i64::MIN)?,
        to: time("to", i64::MAX)?,
    })
}

/// A path segment or query value, percent-decoded (`+` stays a plus).
fn decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("{text:?}: a % must be followed by two hex digits"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{text:?} does not decode to UTF-8"))
}

fn answer_json(store: &str, answer: &StoreAnswer) -> Value {
    let position: Vec<Value> = answer
        .position
        .iter()
        .map(|(topic, partition, offset)| {
            json!({ "topic": topic, "partition": partition, "offset": offset })
        })
        .collect();
    let mut entries = answer.entries.iter();
    let shown: Vec<Value> = entries
        .by_ref()
        .take(MAX_STORE_ENTRIES)
        .map(entry_json)
        .collect();
    json!({
        "store": store,
        "entries": shown,
        "truncated": answer.truncated || entries.next().is_some(),
        "committed": answer.barrier.is_some(),
        "barrier": answer.barrier,
        "watermark": answer.watermark,
        "floor": answer.floor,
        "position": position,
        "stale": answer.stale.iter().map(stale_json).collect::<Vec<_>>(),
    })
}

fn stale_json(s: &StaleCopy) -> Value {
    let changelogs: Vec<Value> = s
        .changelogs
        .iter()
        .map(|c| {
            json!({
                "topic": c.topic,
                "partition": c.partition,
                "position": c.position,
                "end": c.end,
                "behind": c.behind,
            })
        })
        .collect();
    json!({ "task": s.task, "source": s.source, "changelogs": changelogs })
}

fn entry_json(e: &StoreEntry) -> Value {
    let mut v = json!({ "key": e.key, "value": e.value });
    if let Some(ts) = e.timestamp {
        v["timestamp"] = json!(ts);
    }
    if let Some((start, end)) = e.window {
        v["start"] = json!(start);
        v["end"] = json!(end);
    }
    if let Some(f) = e.finality {
        v["finality"] = json!(f.name);
        if let Some(d) = f.watermark_to_close_ms {
            v["watermarkToCloseMs"] = json!(d);
        }
    }
    v
}

fn bad_request(reason: &str) -> Response {
    Response::json(400, &json!({ "error": reason }))
}

/// The status and body of a failed store route.
fn failure(e: &StoreAccessError) -> Response {
    let status = match e {
        StoreAccessError::NoStore { .. } => 404,
        StoreAccessError::BadKey { .. } | StoreAccessError::WrongKind { .. } => 400,
        StoreAccessError::Unavailable { .. } => 503,
        StoreAccessError::Elsewhere {
            owner,
            member,
            partition,
            ..
        } => {
            let body = json!({
                "error": e.to_string(),
                "owner": owner,
                "member": member,
                "partition": partition,
            });
            return Response::json(421, &body);
        }
    };
    Response::json(status, &json!({ "error": e.to_string() }))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::store_access::{KeyMetadata, StaleChangelog, StoreInfo, WindowFinality};

    /// One key-value store `totals` of `i64` keys, one window store `counts`.
    #[derive(Default)]
    struct Fake {
        asked: Mutex<Vec<(String, StoreRequest, StoreRead)>>,
    }

    impl StoreAccess for Fake {
        fn stores(&self) -> Vec<StoreInfo> {
            vec![
                StoreInfo {
                    name: "totals".into(),
                    kind: "keyValue",
                },
                StoreInfo {
                    name: "counts".into(),
                    kind: "window",
                },
            ]
        }

        fn query(
            &self,
            store: &str,
            request: StoreRequest,
            read: StoreRead,
        ) -> Result<StoreAnswer, StoreAccessError> {
            self.asked
                .lock()
                .unwrap()
                .push((store.to_owned(), request.clone(), read));
            if store != "totals" && store != "counts" {
                return Err(StoreAccessError::NoStore {
                    store: store.into(),
                    known: "totals, counts".into(),
                });
            }
            if let StoreRequest::Key { key } = &request
                && key == "7"
            {
                return Err(StoreAccessError::Elsewhere {
                    store: store.into(),
                    key: key.clone(),
                    owner: Some("10.0.0.2:8080".into()),
                    member: "app-b".into(),
                    partition: 1,
                });
            }
            if let StoreRequest::Key { key } = &request
                && key.parse::<i64>().is_err()
            {
                return Err(StoreAccessError::BadKey {
                    store: store.into(),
                    key: key.clone(),
                    expected: "i64",
                    reason: "invalid digit".into(),
                });
            }
            let open = WindowFinality {
                name: "open",
                watermark_to_close_ms: Some(7),
            };
            Ok(StoreAnswer {
                entries: vec![StoreEntry {
                    key: "k 1".into(),
                    value: "3".into(),
                    timestamp: None,
                    window: Some((0, 10)),
                    finality: Some(open),
                }],
                truncated: false,
                barrier: (!read.latest).then_some(9),
                watermark: 3,
                floor: 2,
                position: vec![("in".into(), 0, 42)],
                stale: if read.stale {
                    vec![StaleCopy {
                        task: "0_1".into(),
                        source: "standby",
                        changelogs: vec![StaleChangelog {
                            topic: "app-totals-changelog".into(),
                            partition: 1,
                            position: 40,
                            end: Some(45),
                            behind: Some(5),
                        }],
                    }]
                } else {
                    Vec::new()
                },
            })
        }

        fn metadata(&self, store: &str, key: &str) -> Result<KeyMetadata, StoreAccessError> {
            let holder = |member: &str, server: Option<&str>, local| KeyHolder {
                member: member.into(),
                server: server.map(str::to_owned),
                local,
            };
            match store {
                "totals" => Ok(KeyMetadata {
                    partition: key.len() as u32,
                    active: holder("app-b", Some("10.0.0.2:8080"), false),
                    standbys: vec![holder("app-a", None, true)],
                }),
                _ => Err(StoreAccessError::NoStore {
                    store: store.into(),
                    known: "totals".into(),
                }),
            }
        }
    }

    fn get(fake: &Fake, rest: &str, query: &str) -> (u16, Value) {
        let param = |name: &str| {
            query
                .split('&')
                .filter_map(|p| p.split_once('='))
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v)
        };
        let r = respond(fake, rest, param);
        (r.status, serde_json::from_str(&r.body).unwrap())
    }

    #[test]
    fn the_store_list_names_each_store_and_its_kind() {
        let (status, body) = get(&Fake::default(), "", "");
        assert_eq!(status, 200);
        assert_eq!(
            body["stores"][1],
            json!({ "name": "counts", "kind": "window" })
        );
    }

    #[test]
    fn a_key_is_percent_decoded_and_an_answer_carries_its_finality() {
        let fake = Fake::default();
        let (status, body) = get(&fake, "/counts/keys/k%201/windows", "from=0&to=20");
        assert_eq!(status, 200);
        let asked = fake.asked.lock().unwrap()[0].clone();
        let windows = StoreRequest::Windows {
            key: "k 1".into(),
            from: 0,
            to: 20,
        };
        assert_eq!(asked, ("counts".into(), windows, StoreRead::default()));
        let entry = &body["entries"][0];
        assert_eq!(entry["finality"], "open");
        assert_eq!(entry["watermarkToCloseMs"], 7);
        assert_eq!(
            (entry["start"].clone(), entry["end"].clone()),
            (json!(0), json!(10))
        );
        assert_eq!(body["barrier"], 9);
        assert_eq!(body["committed"], true);
        assert_eq!(body["position"][0]["offset"], 42);
    }

    #[test]
    fn latest_reads_say_so_and_name_no_barrier() {
        let fake = Fake::default();
        let (status, body) = get(&fake, "/totals/keys/5", "latest=true");
        assert_eq!(status, 200);
        assert_eq!(body["committed"], false);
        assert_eq!(body["barrier"], Value::Null);
        assert!(fake.asked.lock().unwrap()[0].2.latest);
    }

    #[test]
    fn stale_reads_say_so_and_list_each_copy_with_how_far_behind() {
        let fake = Fake::default();
        let (status, body) = get(&fake, "/totals/keys/5", "stale=true");
        assert_eq!(status, 200);
        let read = fake.asked.lock().unwrap()[0].2;
        assert_eq!(
            read,
            StoreRead {
                latest: false,
                stale: true
            }
        );
        let copy = &body["stale"][0];
        assert_eq!(copy["task"], "0_1");
        assert_eq!(copy["source"], "standby");
        assert_eq!(copy["changelogs"][0]["position"], 40);
        assert_eq!(copy["changelogs"][0]["end"], 45);
        assert_eq!(copy["changelogs"][0]["behind"], 5);
        let (_, body) = get(&fake, "/totals/keys/5", "");
        assert_eq!(body["stale"], json!([]), "a read of running tasks only");
    }

    #[test]
    fn bad_requests_name_what_is_wrong() {
        let fake = Fake::default();
        let cases = [
            ("/totals/keys/x", "", 400, "key \"x\" is not a i64"),
            ("/nope/keys/1", "", 404, "no queryable store nope"),
            ("/totals/keys", "limit=0", 400, "limit must be"),
            ("/totals/keys", "limit=1001", 400, "limit must be"),
            ("/counts/keys/1/windows", "from=soon", 400, "from must be"),
            ("/totals/keys/%zz", "", 400, "two hex digits"),
            ("/totals/keys/1", "latest=yes", 400, "latest must be"),
            ("/totals/keys/1", "stale=1", 400, "stale must be"),
            ("/totals/other", "", 404, "no endpoint /stores/totals/other"),
        ];
        for (rest, query, status, words) in cases {
            let (got, body) = get(&fake, rest, query);
            assert_eq!(got, status, "{rest}?{query}: {body}");
            let error = body["error"].as_str().unwrap();
            assert!(error.contains(words), "{rest}?{query}: {error}");
        }
    }

    #[test]
    fn a_range_is_bounded_by_its_limit() {
        let fake = Fake::default();
        let (status, _) = get(&fake, "/totals/keys", "from=a&to=m%2Fz&limit=10");
        assert_eq!(status, 200);
        let range = StoreRequest::Range {
            from: Some("a".into()),
            to: Some("m/z".into()),
            limit: 10,
        };
        assert_eq!(fake.asked.lock().unwrap()[0].1, range);
        let (_, _) = get(&fake, "/totals/keys", "");
        let default = StoreRequest::Range {
            from: None,
            to: None,
            limit: DEFAULT_RANGE_ENTRIES,
        };
        assert_eq!(fake.asked.lock().unwrap()[1].1, default);
    }

    #[test]
    fn a_key_owned_elsewhere_answers_421_naming_the_owner() {
        let (status, body) = get(&Fake::default(), "/totals/keys/7", "");
        assert_eq!(status, 421, "{body}");
        assert_eq!(body["owner"], "10.0.0.2:8080");
        assert_eq!(body["member"], "app-b");
        assert_eq!(body["partition"], 1);
        let error = body["error"].as_str().unwrap();
        assert!(
            error.contains("totals") && error.contains("\"7\""),
            "{error}"
        );
    }

    #[test]
    fn the_metadata_route_names_the_owner_and_the_standbys() {
        let (status, body) = get(&Fake::default(), "/totals/metadata/k%201", "");
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body,
            json!({
                "store": "totals",
                "key": "k 1",
                "partition": 3,
                "active": { "member": "app-b", "server": "10.0.0.2:8080", "local": false },
                "standbys": [{ "member": "app-a", "server": null, "local": true }],
            })
        );
        let (status, body) = get(&Fake::default(), "/nope/metadata/k", "");
        assert_eq!(status, 404, "{body}");
    }
}
