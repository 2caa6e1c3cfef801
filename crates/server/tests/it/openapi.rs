//! `openapi.json` against real responses: every JSON endpoint's body, in
//! each status a running application gives it, matches the schema the
//! description declares for that status (every field declared, with its
//! type), and every declared path is served.

use serde_json::Value;
use stoatflow_server::{OPENAPI, RecordingLevel};

use crate::support::{START, Served, get, get_json, wait_for_refresh};

/// Checks `value` against `schema` (the subset of JSON Schema the
/// description uses: `$ref`, `type` (one or a list), `enum`, `properties`,
/// `required`, `additionalProperties`, `items`); the first mismatch, by path.
fn check(root: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r
            .strip_prefix("#/components/schemas/")
            .ok_or_else(|| format!("{at}: unsupported $ref {r}"))?;
        let target = &root["components"]["schemas"][name];
        if target.is_null() {
            return Err(format!("{at}: $ref {r} names no schema"));
        }
        return check(root, target, value, at);
    }
    if let Some(types) = schema.get("type") {
        let types: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => return Err(format!("{at}: bad type in the schema")),
        };
        let ok = types.iter().any(|t| match *t {
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            "object" => value.is_object(),
            "array" => value.is_array(),
            _ => false,
        });
        if !ok {
            return Err(format!("{at}: {value} is not of type {types:?}"));
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        return Err(format!("{at}: {value} is not one of {allowed:?}"));
    }
    if let Value::Object(fields) = value {
        let properties = schema.get("properties").and_then(Value::as_object);
        for required in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = required.as_str().unwrap_or_default();
            if !fields.contains_key(name) {
                return Err(format!("{at}: required field {name} missing"));
            }
        }
        for (name, v) in fields {
            let field_at = format!("{at}.{name}");
            match properties.and_then(|p| p.get(name)) {
                Some(s) => check(root, s, v, &field_at)?,
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        return Err(format!("{field_at}: field not declared"));
                    }
                    Some(s @ Value::Object(_)) => check(root, s, v, &field_at)?,
                    _ => {}
                },
            }
        }
    }
    if let (Value::Array(items), Some(s)) = (value, schema.get("items")) {
        for (i, v) in items.iter().enumerate() {
            check(root, s, v, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

/// The schema of `path`'s `status` response in `content_type`.
fn schema<'a>(api: &'a Value, path: &str, status: u16, content_type: &str) -> &'a Value {
    let s = &api["paths"][path]["get"]["responses"][status.to_string()]["content"][content_type]["schema"];
    assert!(!s.is_null(), "no {status} response for GET {path}");
    s
}

fn conforms(api: &Value, served: &Served, path: &str) -> u16 {
    let (status, body) = get_json(served.addr(), path);
    let s = schema(api, path, status, "application/json");
    if let Err(e) = check(api, s, &body, path) {
        panic!("GET {path} ({status}) does not match openapi.json: {e}\n{body}");
    }
    status
}

const JSON_PATHS: [&str; 8] = [
    "/watermarks",
    "/watermarks/history",
    "/info",
    "/health",
    "/health/liveness",
    "/ready",
    "/health/readiness",
    "/openapi.json",
];

#[test]
fn real_responses_match_the_openapi_description() {
    let api: Value = serde_json::from_str(OPENAPI).expect("openapi.json is JSON");
    assert_eq!(api["openapi"], "3.1.0");
    let declared: Vec<&String> = api["paths"].as_object().unwrap().keys().collect();
    let mut served = Served::start("openapi", RecordingLevel::Info);
    for path in &declared {
        let r = get(served.addr(), path);
        assert!(
            !api["paths"][path.as_str()]["get"]["responses"][r.status.to_string()].is_null(),
            "GET {path} answered {} which is not declared",
            r.status
        );
    }
    let mut statuses = Vec::new();
    for path in JSON_PATHS {
        statuses.push(conforms(&api, &served, path));
    }
    // A partition with a watermark, one with a preview-free idle timeout,
    // and a late record: every field of a partition row shows up.
    served.produce(&[(0, "a", START), (1, "b", START + 5_000)]);
    served.settle(START);
    for path in JSON_PATHS {
        statuses.push(conforms(&api, &served, path));
    }
    served.app.close(std::time::Duration::from_secs(10));
    wait_for_refresh();
    for path in JSON_PATHS {
        statuses.push(conforms(&api, &served, path));
    }
    assert!(statuses.contains(&503), "a 503 body was checked too");
    for other in ["/metrics", "/"] {
        let r = get(served.addr(), other);
        let declared = api["paths"][other]["get"]["responses"]["200"]["content"]
            .as_object()
            .unwrap();
        let content_type = r.header("content-type").unwrap();
        assert!(
            declared
                .keys()
                .any(|d| content_type.starts_with(d.as_str())),
            "{other}: {content_type} not declared"
        );
    }
}

#[test]
fn the_checker_refuses_an_undeclared_field_a_wrong_type_and_a_missing_field() {
    let api: Value = serde_json::from_str(OPENAPI).unwrap();
    let health = schema(&api, "/health", 200, "application/json");
    let ok = serde_json::json!({"status": "UP", "state": "RUNNING"});
    assert_eq!(check(&api, health, &ok, "h"), Ok(()));
    for bad in [
        serde_json::json!({"status": "UP", "state": "RUNNING", "extra": 1}),
        serde_json::json!({"status": 1, "state": "RUNNING"}),
        serde_json::json!({"status": "UP"}),
        serde_json::json!({"status": "SIDEWAYS", "state": "RUNNING"}),
    ] {
        assert!(check(&api, health, &bad, "h").is_err(), "accepted {bad}");
    }
}
