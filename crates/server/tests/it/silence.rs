//! Silence explained: an application with a partition that never receives a
//! record has no watermark, and every surface says which partition holds it
//! and why (docs/time.md#holder): `/watermarks`' `holder`, the live page in
//! headless Chromium (screenshot under the test's output directory), and
//! `/metrics`' `stoatflow_watermark_present`, on which the shipped
//! `StoatflowNoWatermark` alert is evaluated: by its own comparison on the
//! scraped values, and by `promtool test rules` where promtool is installed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use stoatflow_server::RecordingLevel;
use yaml_rust2::{Yaml, YamlLoader};

use crate::page::{attr, cell, element, run_chromium};
use crate::prom_text::parse;
use crate::support::{START, Served, get, get_json};

const ALERT: &str = "StoatflowNoWatermark";

/// `/watermarks` once `pred` holds of it (20 s at most).
fn watermarks_when(served: &Served, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = get_json(served.addr(), "/watermarks");
        if status == 200 && pred(&body) {
            return body;
        }
        assert!(Instant::now() < deadline, "{what} never: {status} {body}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every unlabelled gauge of a scrape, by name.
fn gauges(served: &Served) -> BTreeMap<String, f64> {
    let r = get(served.addr(), "/metrics");
    let families = parse(&r.body).unwrap_or_else(|e| panic!("{e}\n{}", r.body));
    families
        .into_iter()
        .filter(|(_, f)| f.kind == "gauge")
        .filter_map(|(name, f)| {
            let s = f.samples.first()?;
            s.labels.is_empty().then_some((name, s.value))
        })
        .collect()
}

/// The shipped rule `name` of monitoring/stoatflow-alerts.yml.
fn rule(name: &str) -> (PathBuf, Yaml) {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../monitoring/stoatflow-alerts.yml");
    let text = std::fs::read_to_string(&path).unwrap();
    let docs = YamlLoader::load_from_str(&text).unwrap();
    let found = docs[0]["groups"]
        .as_vec()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_vec().unwrap().iter())
        .find(|r| r["alert"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no rule {name} in {}", path.display()))
        .clone();
    (path, found)
}

/// The rule's expression, which must be comparisons joined by `and`
/// (`metric == value and ...`), evaluated on a scrape's gauges: true when
/// every gauge it names is present and compares as it says.
fn expression_holds(expr: &str, gauges: &BTreeMap<String, f64>) -> bool {
    expr.split(" and ").all(|clause| {
        let parts: Vec<&str> = clause.split_whitespace().collect();
        let [metric, "==", value] = parts[..] else {
            panic!("{ALERT}'s expression is not `metric == value and ...`: {expr}");
        };
        let value: f64 = value.parse().unwrap();
        gauges.get(metric).is_some_and(|v| *v == value)
    })
}

/// `promtool`, if installed (Debian's `prometheus` package); required under
/// STOATFLOW_HEAVY_TESTS, as in CI.
fn promtool() -> Option<PathBuf> {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("promtool"))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("STOATFLOW_HEAVY_TESTS").is_none(),
            "promtool is required under STOATFLOW_HEAVY_TESTS: apt-get install -y prometheus"
        );
        eprintln!("NOT RUN: promtool test rules for {ALERT}: promtool is not on PATH");
    }
    found
}

/// `promtool test rules`: the scraped gauges the rule reads held for 15
/// minutes; the alert is pending at 9 minutes (its `for:` is 10) and
/// firing, with the rule's labels and annotations, at 11.
fn promtool_fires(promtool: &Path, rules: &Path, rule: &Yaml, gauges: &BTreeMap<String, f64>) {
    let instance = "silence";
    let expr = rule["expr"].as_str().unwrap();
    let series: String = expr
        .split(" and ")
        .map(|c| c.split_whitespace().next().unwrap())
        .map(|m| {
            format!(
                "      - series: '{m}{{instance=\"{instance}\"}}'\n        values: '{}x15'\n",
                gauges[m]
            )
        })
        .collect();
    let render = |v: &Yaml| {
        v.as_str()
            .unwrap()
            .replace("{{ $labels.instance }}", instance)
            .replace('\'', "''")
    };
    let labels: String = rule["labels"]
        .as_hash()
        .unwrap()
        .iter()
        .map(|(k, v)| format!("              {}: '{}'\n", k.as_str().unwrap(), render(v)))
        .collect();
    let annotations: String = rule["annotations"]
        .as_hash()
        .unwrap()
        .iter()
        .map(|(k, v)| format!("              {}: '{}'\n", k.as_str().unwrap(), render(v)))
        .collect();
    let test = format!(
        "rule_files:\n  - {rules}\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n{series}    alert_rule_test:\n      - eval_time: 9m\n        alertname: {ALERT}\n        exp_alerts: []\n      - eval_time: 11m\n        alertname: {ALERT}\n        exp_alerts:\n          - exp_labels:\n              instance: '{instance}'\n{labels}            exp_annotations:\n{annotations}",
        rules = rules.canonicalize().unwrap().display()
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("no-watermark-test.yml");
    std::fs::write(&file, &test).unwrap();
    let out = Command::new(promtool)
        .args(["test", "rules"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool test rules failed:\n{}{}\n{test}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_never_written_partition_is_named_with_why_on_every_surface_and_the_alert_holds() {
    let mut served = Served::start("silence", RecordingLevel::Info);
    // Only clicks:0 is written; clicks:1 never receives a record.
    served.produce(&[(0, "a", START), (0, "a", START + 20_000)]);
    assert!(
        served
            .app
            .wait_until_caught_up(Duration::from_secs(30))
            .unwrap()
    );
    let body = watermarks_when(&served, "clicks:0 had a watermark", |b| {
        b["partitions"]["clicks:0"]["watermarkMs"] == START + 20_000
    });
    assert_eq!(body["globalMs"], i64::MIN, "{body}");
    let holder = &body["holder"];
    assert_eq!(holder["partition"], "clicks:1", "{body}");
    assert_eq!(holder["reason"], "never_received", "{body}");
    let why = holder["why"].as_str().unwrap();
    assert!(
        why.starts_with("never received a record; counts as idle in "),
        "{why}"
    );
    let idle_in = holder["idleInMs"].as_i64().unwrap();
    assert!(idle_in > 0 && idle_in <= 300_000, "{body}");

    // The alert: RUNNING without a watermark.
    let scraped = gauges(&served);
    assert_eq!(scraped.get("stoatflow_watermark_present"), Some(&0.0));
    assert_eq!(scraped.get("stoatflow_client_state"), Some(&4.0));
    let (rules, rule) = rule(ALERT);
    let expr = rule["expr"].as_str().unwrap();
    assert!(expression_holds(expr, &scraped), "{expr} on {scraped:?}");
    assert_eq!(rule["for"].as_str(), Some("10m"));
    if let Some(promtool) = promtool() {
        promtool_fires(&promtool, &rules, &rule, &scraped);
    }

    // The page names it, highlights its row and says why.
    let url = format!("http://{}/", served.addr());
    let dom = run_chromium(&url, &["--dump-dom"]);
    assert_eq!(attr(element(&dom, "<body").0, "data-loaded"), "true");
    let (card, _) = element(&dom, "id=\"holder\"");
    assert_eq!(attr(card, "data-holder"), "clicks:1", "{dom}");
    assert_eq!(attr(card, "data-reason"), "never_received");
    assert!(card.contains("none-yet"), "{card}");
    assert!(
        element(&dom, "id=\"holder-why\"")
            .1
            .starts_with("never received a record; counts as idle in "),
        "{dom}"
    );
    assert!(
        element(&dom, "data-partition=\"clicks:1\"")
            .0
            .contains("binding")
    );
    assert_eq!(
        cell(&dom, "data-partition=\"clicks:1\"", "data-flag=\"min\""),
        "holds the watermark"
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("silence");
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("silence.png");
    let _ = std::fs::remove_file(&png);
    run_chromium(
        &url,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1400,1000",
        ],
    );
    assert!(
        std::fs::read(&png)
            .unwrap()
            .starts_with(b"\x89PNG\r\n\x1a\n")
    );
    println!("screenshot: {}", png.display());

    // A record on clicks:1 makes a watermark: the gauge reads 1, the alert's
    // expression no longer holds, and the holder is the lowest partition.
    served.produce(&[(1, "b", START + 10_000)]);
    let body = watermarks_when(&served, "a global watermark", |b| {
        b["globalMs"] == START + 10_000
    });
    assert_eq!(body["holder"]["partition"], "clicks:1");
    assert_eq!(body["holder"]["reason"], "lowest");
    let deadline = Instant::now() + Duration::from_secs(20);
    let scraped = loop {
        let g = gauges(&served);
        if g.get("stoatflow_watermark_present") == Some(&1.0) {
            break g;
        }
        assert!(Instant::now() < deadline, "present never read 1: {g:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!expression_holds(expr, &scraped));
    served.app.close(Duration::from_secs(10));
}
