//! Prometheus' own linter on what we ship: `promtool check metrics` on a
//! real application's `/metrics` (every family with samples, at DEBUG), and
//! `promtool check rules` on `monitoring/stoatflow-alerts.yml`.
//!
//! `promtool` comes with Debian's `prometheus` package (`.ci/run` installs
//! it). Under `STOATFLOW_HEAVY_TESTS` (CI) a missing `promtool` fails the
//! test; otherwise the test says on stderr that it did not run.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use stoatflow_server::{Metric, RecordingLevel};

use crate::prom_text::{Family, parse};
use crate::support::{START, Served, get};

/// `promtool` on PATH; `None` (with a note on stderr) when it is missing
/// outside CI, a panic when it is missing in CI.
fn promtool(check: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(found) = std::env::split_paths(&path)
        .map(|dir| dir.join("promtool"))
        .find(|p| p.is_file())
    {
        return Some(found);
    }
    if std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some() {
        panic!(
            "promtool is required for `promtool {check}` under STOATFLOW_HEAVY_TESTS and is not on PATH: \
             apt-get install -y prometheus (.ci/run installs it)"
        );
    }
    eprintln!(
        "NOT RUN: `promtool {check}`: promtool is not on PATH (apt-get install -y prometheus; \
         STOATFLOW_HEAVY_TESTS=1 makes its absence a failure)"
    );
    None
}

/// Runs `promtool` with `args`, `stdin` piped in; panics with its output
/// unless it exits 0.
fn run_promtool(promtool: &Path, args: &[&str], stdin: &str) {
    let mut child = Command::new(promtool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{} does not start: {e}", promtool.display()));
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes())
        .expect("promtool reads its stdin");
    let out = child.wait_with_output().expect("promtool finishes");
    assert!(
        out.status.success(),
        "promtool {args:?} failed ({}):\n{}{}\n--- input ---\n{stdin}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
}

/// A real application at DEBUG level with input on both partitions and a
/// late record: its `/metrics` text once every family of the catalogue has
/// at least one sample (the served application stays alive for more
/// scrapes).
pub fn a_full_scrape(id: &str) -> (Served, String, BTreeMap<String, Family>) {
    let mut served = Served::start(id, RecordingLevel::Debug);
    served.produce(&[
        (0, "a", START),
        (1, "b", START + 1_000),
        (0, "a", START + 30_000),
        (1, "b", START + 60_000),
        (0, "a", START + 60_000),
    ]);
    served.settle(START + 60_000);
    served.produce(&[(0, "late", START + 2_000)]);
    served.settle(START + 60_000);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = get(served.addr(), "/metrics").body;
        let families = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let empty: Vec<&str> = Metric::at(RecordingLevel::Debug)
            .map(|m| m.name())
            .filter(|n| families.get(*n).is_none_or(|f| f.samples.is_empty()))
            .collect();
        let late_dropped = families
            .get("stoatflow_dropped_records_total")
            .is_some_and(|f| {
                f.samples.iter().any(|s| {
                    s.labels.get("reason").is_some_and(|r| r == "late_window") && s.value >= 1.0
                })
            });
        if empty.is_empty() && late_dropped {
            return (served, text, families);
        }
        assert!(
            Instant::now() < deadline,
            "families without samples: {empty:?}, late drop counted: {late_dropped}\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn promtool_check_metrics_passes_on_a_real_applications_scrape() {
    let Some(promtool) = promtool("check metrics") else {
        return;
    };
    let (_served, text, _) = a_full_scrape("promtool-metrics");
    run_promtool(&promtool, &["check", "metrics"], &text);
}

#[test]
fn promtool_check_rules_passes_on_the_shipped_alerts() {
    let Some(promtool) = promtool("check rules") else {
        return;
    };
    let rules =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../monitoring/stoatflow-alerts.yml");
    let path = rules.to_str().expect("a UTF-8 path");
    run_promtool(&promtool, &["check", "rules", path], "");
}

/// Two RUNNING instances, one sample a minute for 40 minutes: for ten
/// minutes both take records and their watermarks advance; then `idle`
/// receives nothing (its watermark holds, its lag grows with the wall
/// clock) while `stuck` keeps receiving records and its watermark holds.
const ALERT_SCENARIO: &str = r#"
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'stoatflow_client_state{instance="idle:8080",job="stoatflow"}'
        values: '4x40'
      - series: 'stoatflow_records_in_total{instance="idle:8080",job="stoatflow"}'
        values: '0+100x10 1000x30'
      - series: 'stoatflow_watermark_present{instance="idle:8080",job="stoatflow"}'
        values: '1x40'
      - series: 'stoatflow_watermark_seconds{instance="idle:8080",job="stoatflow"}'
        values: '1000+60x10 1600x30'
      - series: 'stoatflow_watermark_lag_seconds{instance="idle:8080",job="stoatflow"}'
        values: '10x10 10+60x30'
      - series: 'stoatflow_client_state{instance="stuck:8080",job="stoatflow"}'
        values: '4x40'
      - series: 'stoatflow_records_in_total{instance="stuck:8080",job="stoatflow"}'
        values: '0+100x40'
      - series: 'stoatflow_watermark_present{instance="stuck:8080",job="stoatflow"}'
        values: '1x40'
      - series: 'stoatflow_watermark_seconds{instance="stuck:8080",job="stoatflow"}'
        values: '1000+60x10 1600x30'
      - series: 'stoatflow_watermark_lag_seconds{instance="stuck:8080",job="stoatflow"}'
        values: '10x10 10+60x30'
    promql_expr_test:
      # Stalled since minute 10: the 5-minute window sees no change from
      # minute 15, and the rules wait their `for: 5m`, so nothing fires yet.
      - expr: ALERTS{alertstate="firing"}
        eval_time: 18m
        exp_samples: []
      # Much later, the stuck instance pages and warns; the idle one never does.
      - expr: ALERTS{alertstate="firing"}
        eval_time: 40m
        exp_samples:
          - labels: 'ALERTS{alertname="StoatflowWatermarkStalled",alertstate="firing",instance="stuck:8080",job="stoatflow",severity="page"}'
            value: 1
          - labels: 'ALERTS{alertname="StoatflowWatermarkLagging",alertstate="firing",instance="stuck:8080",job="stoatflow",severity="warning"}'
            value: 1
"#;

#[test]
fn the_alerts_wait_their_for_and_page_for_a_stuck_app_but_not_an_idle_one() {
    let Some(promtool) = promtool("test rules") else {
        return;
    };
    let rules = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../monitoring/stoatflow-alerts.yml")
        .canonicalize()
        .expect("the shipped rules file exists");
    let dir = tempfile::tempdir().unwrap();
    let test = dir.path().join("alerts-test.yml");
    std::fs::write(
        &test,
        format!(
            "rule_files:\n  - {:?}\n{ALERT_SCENARIO}",
            rules.display().to_string()
        ),
    )
    .unwrap();
    run_promtool(
        &promtool,
        &["test", "rules", test.to_str().expect("a UTF-8 path")],
        "",
    );
}

/// Every `expr` under `v`.
fn exprs(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(o) => {
            if let Some(serde_json::Value::String(e)) = o.get("expr") {
                out.push(e.clone());
            }
            o.values().for_each(|v| exprs(v, out));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| exprs(v, out)),
        _ => {}
    }
}

#[test]
fn every_dashboard_query_is_promql_that_promtool_accepts() {
    let Some(promtool) = promtool("check rules") else {
        return;
    };
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../monitoring/stoatflow-dashboard.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut queries = Vec::new();
    exprs(&dashboard, &mut queries);
    assert!(!queries.is_empty(), "the dashboard has queries");
    // Each query as a recording rule, Grafana's variables as "any value".
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, q) in queries.iter().enumerate() {
        let q = q
            .replace("$job", ".*")
            .replace("$instance", ".*")
            .replace("$application_id", ".*");
        assert!(!q.contains('$'), "an unknown variable in {q}");
        rules.push_str(&format!(
            "      - record: stoatflow_dashboard_query_{i}\n        expr: {}\n",
            serde_json::Value::String(q)
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dashboard-queries.yml");
    std::fs::write(&file, rules).unwrap();
    run_promtool(
        &promtool,
        &["check", "rules", file.to_str().expect("a UTF-8 path")],
        "",
    );
}
