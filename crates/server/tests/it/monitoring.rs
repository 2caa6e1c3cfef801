//! `monitoring/`: the Prometheus rules file (the alerts of
//! docs/operating.md#alerts) and the Grafana dashboard parse, every
//! expression in them names only metrics the registry exports, and every
//! metric they read is in a real application's `/metrics` (so a rename
//! cannot break them silently). `promtool` checks the rules themselves
//! (`promtool.rs`).

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;
use stoatflow_server::Metric;
use yaml_rust2::{Yaml, YamlLoader};

use crate::promtool::a_full_scrape;

fn monitoring(file: &str) -> (PathBuf, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../monitoring")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    (path, text)
}

/// Every sample name the registry can export.
fn exported() -> BTreeSet<String> {
    Metric::ALL.iter().flat_map(|m| m.sample_names()).collect()
}

/// The metric names a PromQL expression reads: identifiers outside label
/// matchers, ranges and strings that are neither functions, aggregation
/// modifiers nor keywords.
fn metric_names(expr: &str) -> BTreeSet<String> {
    /// Label-list modifiers: `by (reason)` names labels, not metrics.
    const MODIFIERS: [&str; 6] = [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
    ];
    /// Binary operators and aggregation operators.
    const KEYWORDS: [&str; 17] = [
        "and",
        "or",
        "unless",
        "offset",
        "bool",
        "sum",
        "min",
        "max",
        "avg",
        "count",
        "stddev",
        "stdvar",
        "topk",
        "bottomk",
        "quantile",
        "count_values",
        "group",
    ];
    let mut plain = String::new();
    let mut depth_brace = 0;
    let mut depth_bracket = 0;
    let mut in_string = false;
    for c in expr.chars() {
        match c {
            '"' => in_string = !in_string,
            '{' if !in_string => depth_brace += 1,
            '}' if !in_string => depth_brace -= 1,
            '[' if !in_string => depth_bracket += 1,
            ']' if !in_string => depth_bracket -= 1,
            _ if in_string || depth_brace > 0 || depth_bracket > 0 => {}
            _ => {
                plain.push(c);
                continue;
            }
        }
        plain.push(' ');
    }
    let mut names = BTreeSet::new();
    let chars: Vec<char> = plain.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let next = chars[i..].iter().find(|c| !c.is_whitespace());
            if MODIFIERS.contains(&word.as_str()) {
                // Skip its label list.
                while i < chars.len() && chars[i] != ')' {
                    i += 1;
                }
            } else if next != Some(&'(') && !KEYWORDS.contains(&word.as_str()) {
                names.insert(word);
            }
        } else if c.is_ascii_digit() || c == '.' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    names
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_expression_scanner_finds_metrics_and_skips_functions_labels_and_ranges() {
    assert_eq!(
        metric_names(
            "sum by (reason) (rate(x_total{reason=\"late_window\"}[5m])) > 0.5 and on(instance) y == 4"
        ),
        BTreeSet::from(["x_total".to_owned(), "y".to_owned()])
    );
}

#[test]
fn the_alert_rules_are_stall_lag_and_no_watermark_on_exported_metrics() {
    let (path, text) = monitoring("stoatflow-alerts.yml");
    let docs = YamlLoader::load_from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()));
    let groups = docs[0]["groups"].as_vec().expect("a rules file has groups");
    let exported = exported();
    let mut exprs = Vec::new();
    for group in groups {
        assert!(group["name"].as_str().is_some());
        for rule in group["rules"].as_vec().expect("a group has rules") {
            let alert = rule["alert"].as_str().expect("alert name");
            let expr = rule["expr"].as_str().expect("expr");
            for name in metric_names(expr) {
                assert!(exported.contains(&name), "{alert}: {name} is not exported");
            }
            assert!(
                squash(expr).ends_with("and stoatflow_client_state == 4"),
                "{alert} is joined on RUNNING: {expr}"
            );
            assert!(
                rule["for"].as_str().is_some(),
                "{alert} holds for a while before it fires (for:)"
            );
            assert!(
                !matches!(rule["annotations"], Yaml::BadValue),
                "{alert} has annotations"
            );
            exprs.push(squash(expr));
        }
    }
    assert_eq!(
        exprs,
        [
            "changes(stoatflow_watermark_seconds[5m]) == 0 and rate(stoatflow_records_in_total[5m]) > 0 and stoatflow_client_state == 4",
            "stoatflow_watermark_lag_seconds > 300 and rate(stoatflow_records_in_total[5m]) > 0 and stoatflow_client_state == 4",
            "stoatflow_watermark_present == 0 and stoatflow_client_state == 4",
        ]
    );
}

fn targets(v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(o) => {
            if let (Some(Value::String(expr)), Some(title)) = (o.get("expr"), o.get("refId")) {
                out.push((title.to_string(), expr.clone()));
            }
            o.values().for_each(|v| targets(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| targets(v, out)),
        _ => {}
    }
}

#[test]
fn the_dashboard_charts_every_exported_metric_and_nothing_else() {
    let (path, text) = monitoring("stoatflow-dashboard.json");
    let dashboard: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    assert!(
        dashboard["panels"]
            .as_array()
            .is_some_and(|p| !p.is_empty())
    );
    let mut exprs = Vec::new();
    targets(&dashboard, &mut exprs);
    let exported = exported();
    let mut used = BTreeSet::new();
    for (_, expr) in &exprs {
        for name in metric_names(expr) {
            assert!(
                exported.contains(&name),
                "{name} in {expr:?} is not exported"
            );
            used.insert(name);
        }
    }
    for metric in Metric::ALL {
        assert!(
            metric.sample_names().iter().any(|n| used.contains(n)),
            "the dashboard does not chart {}",
            metric.name()
        );
    }
    let lag_panel = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["title"] == "Watermark lag behind wall clock")
        .expect("a lag panel");
    assert_eq!(
        lag_panel["fieldConfig"]["defaults"]["thresholds"]["steps"][1]["value"], 300,
        "the lag panel shows the alert's line, in seconds"
    );
}

/// The dashboard's template variables: `(name, query)`.
fn variables(dashboard: &Value) -> Vec<(String, String)> {
    dashboard["templating"]["list"]
        .as_array()
        .expect("a templating list")
        .iter()
        .map(|v| {
            let query = v["query"]["query"]
                .as_str()
                .or(v["query"].as_str())
                .expect("a variable has a query");
            (
                v["name"].as_str().expect("a name").to_owned(),
                query.to_owned(),
            )
        })
        .collect()
}

/// The series selector of a `label_values(selector, label)` query.
fn label_values_selector(query: &str) -> &str {
    let inner = query
        .strip_prefix("label_values(")
        .and_then(|q| q.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{query:?} is not label_values(selector, label)"));
    inner
        .rsplit_once(',')
        .map_or(inner, |(selector, _)| selector)
}

#[test]
fn the_dashboard_has_job_and_instance_variables_and_every_query_filters_on_them() {
    let (path, text) = monitoring("stoatflow-dashboard.json");
    let dashboard: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    let vars = variables(&dashboard);
    let names: Vec<&str> = vars.iter().map(|(n, _)| n.as_str()).collect();
    for required in ["job", "instance"] {
        assert!(
            names.contains(&required),
            "no ${required} variable: {names:?}"
        );
    }
    let exported = exported();
    for (name, query) in &vars {
        let metrics = metric_names(label_values_selector(query));
        assert!(!metrics.is_empty(), "${name} reads no metric: {query}");
        for m in metrics {
            assert!(exported.contains(&m), "${name}: {m} is not exported");
        }
    }
    let mut exprs = Vec::new();
    targets(&dashboard, &mut exprs);
    for (_, expr) in &exprs {
        let selectors = expr.matches("stoatflow_").count();
        for filter in ["job=~\"$job\"", "instance=~\"$instance\""] {
            assert_eq!(
                expr.matches(filter).count(),
                selectors,
                "every metric in {expr:?} is filtered by {filter}"
            );
        }
    }
}

#[test]
fn every_metric_the_dashboard_alerts_and_page_read_is_in_a_real_applications_scrape() {
    let (_served, text, _) = a_full_scrape("monitoring-references");
    let scraped: BTreeSet<String> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            l.split(['{', ' '])
                .next()
                .expect("a sample line starts with its name")
                .to_owned()
        })
        .collect();
    let mut read = Vec::new();
    let (_, alerts) = monitoring("stoatflow-alerts.yml");
    let docs = YamlLoader::load_from_str(&alerts).unwrap();
    for group in docs[0]["groups"].as_vec().unwrap() {
        for rule in group["rules"].as_vec().unwrap() {
            read.push(rule["expr"].as_str().unwrap().to_owned());
        }
    }
    let (_, dashboard) = monitoring("stoatflow-dashboard.json");
    let dashboard: Value = serde_json::from_str(&dashboard).unwrap();
    let mut exprs = Vec::new();
    targets(&dashboard, &mut exprs);
    read.extend(exprs.into_iter().map(|(_, e)| e));
    read.extend(
        variables(&dashboard)
            .iter()
            .map(|(_, q)| label_values_selector(q).to_owned()),
    );
    let mut checked = BTreeSet::new();
    for expr in &read {
        for name in metric_names(expr) {
            assert!(
                scraped.contains(&name),
                "{name} (read by {expr:?}) is not in a real application's /metrics:\n{text}"
            );
            checked.insert(name);
        }
    }
    let page = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/watermarks.html");
    let page = std::fs::read_to_string(&page).unwrap();
    for (at, _) in page.match_indices("stoatflow_") {
        let name: String = page[at..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        assert!(
            scraped.contains(&name),
            "the live page reads {name}, which is not in a real application's /metrics"
        );
    }
    for metric in Metric::ALL {
        assert!(
            metric.sample_names().iter().any(|n| checked.contains(n)),
            "{} is read by neither the dashboard nor the alerts",
            metric.name()
        );
    }
}
