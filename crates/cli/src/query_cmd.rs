//! `stoatflow query --dir D STORE [KEY]`: asks a running application's
//! store routes (docs/operating.md#store-routes), found through the address
//! file its endpoints write into the directory it holds, as `stoatflow log`
//! finds it. Prints one line per entry (tab-separated: key, window, value,
//! finality) and, on stderr, what state the answer reflects. A key another
//! instance owns (421) fails naming that instance's `application.server`
//! and the route to ask there.
//!
//! Owns the command's paths and its printing; what an answer means (which
//! windows are final, what committed is) is the application's.

use std::path::Path;

use serde_json::Value;

use crate::log_remote::Running;
use crate::out::{noteln, outln};

/// What to ask.
#[derive(Debug, Clone, Default)]
pub struct Ask {
    /// The key; `None`: a range of keys.
    pub key: Option<String>,
    /// The key's windows (a window or session store).
    pub windows: bool,
    /// The earliest window start (with `windows`) or lowest key (a range).
    pub from: Option<String>,
    /// The latest window start, or highest key.
    pub to: Option<String>,
    /// The most entries of a range.
    pub limit: Option<u32>,
    /// Read what is processed rather than what is committed.
    pub latest: bool,
    /// Read standby copies and tasks still restoring too.
    pub stale: bool,
}

/// Asks `store` of the application that holds `dir`.
pub fn run(dir: &Path, store: &str, ask: &Ask) -> anyhow::Result<()> {
    let app = Running::find(dir)?;
    let path = path_of(store, ask)?;
    let (status, answer) = app.get_or(&format!("store {store}"), &path, MISDIRECTED)?;
    if status == MISDIRECTED {
        anyhow::bail!("{}", elsewhere(&answer, &path));
    }
    let empty = Vec::new();
    for e in answer["entries"].as_array().unwrap_or(&empty) {
        outln!("{}", entry_line(e))?;
    }
    noteln!("{}", reflects(&answer));
    for copy in answer["stale"].as_array().unwrap_or(&empty) {
        noteln!("{}", stale_line(copy));
    }
    Ok(())
}

/// `read from task 0_1 (standby), behind: <topic>[1] 5 offsets, ...`.
fn stale_line(copy: &Value) -> String {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let empty = Vec::new();
    let behind: Vec<String> = copy["changelogs"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .map(|c| {
            let lag = match c["behind"].as_u64() {
                Some(n) => format!("{n} offsets"),
                None => "unknown".into(),
            };
            format!("{}[{}] {lag}", text(&c["topic"]), c["partition"])
        })
        .collect();
    format!(
        "read from task {} ({}), no window final; behind: {}",
        text(&copy["task"]),
        text(&copy["source"]),
        behind.join(", ")
    )
}

/// The status of a key another instance owns.
const MISDIRECTED: u16 = 421;

/// Where to ask for a key owned elsewhere, from the 421 answer to `path`.
fn elsewhere(answer: &Value, path: &str) -> String {
    let member = answer["member"].as_str().unwrap_or("another instance");
    let partition = answer["partition"].as_u64().unwrap_or_default();
    match answer["owner"].as_str() {
        Some(owner) => {
            format!("owned by {member} (partition {partition}): ask it at http://{owner}{path}")
        }
        None => format!(
            "owned by {member} (partition {partition}), which advertises no application.server"
        ),
    }
}

/// The route and query of `ask`.
fn path_of(store: &str, ask: &Ask) -> anyhow::Result<String> {
    let mut params = Vec::new();
    let mut path = format!("/stores/{}/keys", encode(store));
    match (&ask.key, ask.windows) {
        (Some(key), true) => {
            path.push_str(&format!("/{}/windows", encode(key)));
            for (name, v) in [("from", &ask.from), ("to", &ask.to)] {
                if let Some(v) = v {
                    let ms: i64 = v.parse().map_err(|_| {
                        anyhow::anyhow!("--{name} {v:?}: a window start is event-time milliseconds")
                    })?;
                    params.push(format!("{name}={ms}"));
                }
            }
        }
        (Some(key), false) => path.push_str(&format!("/{}", encode(key))),
        (None, true) => anyhow::bail!("--windows needs a KEY: a key's windows are asked"),
        (None, false) => {
            for (name, v) in [("from", &ask.from), ("to", &ask.to)] {
                if let Some(v) = v {
                    params.push(format!("{name}={}", encode(v)));
                }
            }
            if let Some(limit) = ask.limit {
                params.push(format!("limit={limit}"));
            }
        }
    }
    if ask.latest {
        params.push("latest=true".into());
    }
    if ask.stale {
        params.push("stale=true".into());
    }
    if !params.is_empty() {
        path.push('?');
        path.push_str(&params.join("&"));
    }
    Ok(path)
}

/// `text` percent-encoded for a path segment or query value: everything
/// but unreserved characters.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `key\tvalue`, or for a window `key\tstart..end\tvalue\tfinality`.
fn entry_line(e: &Value) -> String {
    let text = |name: &str| e[name].as_str().unwrap_or_default().to_owned();
    let (key, value) = (text("key"), text("value"));
    match (e["start"].as_i64(), e["end"].as_i64()) {
        (Some(start), Some(end)) => {
            let finality = match e["watermarkToCloseMs"].as_i64() {
                Some(d) => format!("{} (closes {d} ms past the watermark)", text("finality")),
                None => text("finality"),
            };
            format!("{key}\t{start}..{end}\t{value}\t{finality}")
        }
        _ => format!("{key}\t{value}"),
    }
}

/// What state the answer reflects, in words.
fn reflects(answer: &Value) -> String {
    let watermark = answer["watermark"].as_i64().unwrap_or(i64::MIN);
    let floor = answer["floor"].as_i64().unwrap_or(i64::MIN);
    let more = if answer["truncated"].as_bool() == Some(true) {
        "; more entries lie within the bounds (ask again from after the last key)"
    } else {
        ""
    };
    match answer["barrier"].as_u64() {
        Some(b) => {
            format!("committed at barrier {b} (watermark {watermark}, final through {floor}){more}")
        }
        None => format!(
            "latest processed, not committed (watermark {watermark}, final through {floor}){more}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_percent_encoded_and_the_forms_have_their_routes() {
        let windows = Ask {
            key: Some("u 1/é".into()),
            windows: true,
            from: Some("10".into()),
            latest: true,
            ..Ask::default()
        };
        assert_eq!(
            path_of("counts", &windows).unwrap(),
            "/stores/counts/keys/u%201%2F%C3%A9/windows?from=10&latest=true"
        );
        let stale = Ask {
            key: Some("k".into()),
            stale: true,
            ..Ask::default()
        };
        assert_eq!(
            path_of("totals", &stale).unwrap(),
            "/stores/totals/keys/k?stale=true"
        );
        let range = Ask {
            from: Some("a".into()),
            limit: Some(5),
            ..Ask::default()
        };
        assert_eq!(
            path_of("t", &range).unwrap(),
            "/stores/t/keys?from=a&limit=5"
        );
        let bad = Ask {
            key: Some("k".into()),
            windows: true,
            to: Some("soon".into()),
            ..Ask::default()
        };
        assert!(path_of("t", &bad).unwrap_err().to_string().contains("--to"));
    }

    #[test]
    fn a_key_owned_elsewhere_names_where_to_ask() {
        let answer = serde_json::json!({
            "error": "owned elsewhere",
            "owner": "10.0.0.2:8080",
            "member": "app-b",
            "partition": 1,
        });
        assert_eq!(
            elsewhere(&answer, "/stores/totals/keys/k"),
            "owned by app-b (partition 1): ask it at http://10.0.0.2:8080/stores/totals/keys/k"
        );
        let silent = serde_json::json!({ "owner": null, "member": "app-b", "partition": 0 });
        assert!(
            elsewhere(&silent, "/x").contains("advertises no application.server"),
            "{}",
            elsewhere(&silent, "/x")
        );
    }
}
