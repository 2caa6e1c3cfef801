//! The live watermark page in a real browser: headless Chromium loads `/`
//! from a running application, and the numbers the page shows must be the
//! ones `/watermarks` and `/metrics` answer. Saves a screenshot under the
//! test's output directory (and, with `STOATFLOW_UPDATE_SCREENSHOT=1`, over
//! `docs/watermark-page.png`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use stoatflow_server::RecordingLevel;

use crate::support::{Served, get, get_json};

/// Headless Chromium from the system packages; the test fails loudly
/// without it (CI installs it).
fn chromium() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "headless Chromium is required by the page test and is not on PATH \
         (looked for chromium and chromium-browser): apt-get install -y chromium (.ci/run installs it)"
    );
}

/// Runs Chromium headless on `url` with `args`, at most 120 s; its stdout.
pub(crate) fn run_chromium(url: &str, args: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
            "--virtual-time-budget=2500",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "chromium failed: {:?}", out.status);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The opening tag containing `marker`, and the text right after it.
pub(crate) fn element<'a>(dom: &'a str, marker: &str) -> (&'a str, &'a str) {
    let at = dom
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} not on the page"));
    let open = dom[..at].rfind('<').expect("inside a tag");
    let close = at + dom[at..].find('>').expect("tag closes");
    let text_end = close + dom[close..].find('<').unwrap_or(dom.len() - close);
    (&dom[open..=close], &dom[close + 1..text_end])
}

pub(crate) fn attr<'a>(tag: &'a str, name: &str) -> &'a str {
    let key = format!("{name}=\"");
    let at = tag
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {tag}"))
        + key.len();
    &tag[at..at + tag[at..].find('"').expect("attribute closes")]
}

/// The text of the first `cell` after `row` in the DOM.
pub(crate) fn cell<'a>(dom: &'a str, row: &str, cell: &str) -> &'a str {
    let from = dom
        .find(row)
        .unwrap_or_else(|| panic!("{row} not on the page"));
    element(&dom[from..], cell).1
}

#[test]
fn the_live_page_in_chromium_shows_what_the_endpoints_answer() {
    let mut served = Served::start("page", RecordingLevel::Info);
    // Event time a couple of minutes behind the wall clock, as in production.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let start = (now_ms - 150_000) / 10_000 * 10_000;
    // Two partitions advancing at different rates for a couple of seconds,
    // so the timeline has a shape; then a record for a closed window.
    for i in 0..14 {
        served.produce(&[
            (0, "north", start + i * 10_000),
            (1, "south", start + i * 6_000),
            (1, "east", start + i * 6_000 + 500),
        ]);
        std::thread::sleep(Duration::from_millis(180));
    }
    let global = start + 13 * 6_000 + 500;
    served.settle(global);
    served.produce(&[(0, "late", start + 1_000)]);
    let watermarks = served.settle(global);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !get(served.addr(), "/metrics")
        .body
        .contains("stoatflow_dropped_records_total{reason=\"late_window\"} 1")
    {
        assert!(Instant::now() < deadline, "the late drop was never counted");
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = format!("http://{}/", served.addr());

    let dom = run_chromium(&url, &["--dump-dom"]);
    let (body, _) = element(&dom, "<body");
    assert_eq!(
        attr(body, "data-loaded"),
        "true",
        "the page never refreshed:\n{dom}"
    );
    let (global_tag, global_text) = element(&dom, "id=\"global-ms\"");
    assert_eq!(attr(global_tag, "data-ms"), global.to_string());
    assert_eq!(global_text, format!("{global} ms"));
    assert_eq!(
        element(&dom, "id=\"global-iso\"").1,
        watermarks["globalIso"]
    );
    for (name, p) in watermarks["partitions"].as_object().unwrap() {
        let row = format!("data-partition=\"{name}\"");
        assert_eq!(
            cell(&dom, &row, "data-field=\"watermarkMs\""),
            p["watermarkMs"].to_string(),
            "{name}"
        );
        let (tr, _) = element(&dom, &row);
        assert_eq!(attr(tr, "data-idle"), p["idle"].to_string());
        assert_eq!(attr(tr, "data-held"), p["alignmentHeld"].to_string());
        assert_eq!(attr(tr, "data-preview"), "");
    }
    assert!(
        element(&dom, "data-partition=\"clicks:1\"")
            .0
            .contains("binding"),
        "the slower partition is the minimum"
    );
    assert_eq!(
        cell(&dom, "data-reason=\"late_window\"", "class=\"num count\""),
        "1"
    );
    assert_eq!(
        cell(&dom, "data-reason=\"null_key\"", "class=\"num count\""),
        "0"
    );
    let (_, info) = get_json(served.addr(), "/info");
    assert_eq!(element(&dom, "id=\"app-id\"").1, info["applicationId"]);
    assert_eq!(attr(element(&dom, "id=\"state\"").0, "data-code"), "4");
    assert_eq!(attr(element(&dom, "id=\"tracking\"").0, "data-value"), "1");
    assert_eq!(
        attr(element(&dom, "id=\"alignment-binding\"").0, "data-value"),
        ""
    );
    let lag: i64 = attr(element(&dom, "id=\"lag\"").0, "data-ms")
        .parse()
        .unwrap();
    assert!(lag > 0, "event time is in the past of the wall clock");
    assert!(
        dom.contains("data-series=\"global\""),
        "the timeline drew the global watermark"
    );
    assert!(dom.contains("data-series=\"clicks:0\"") && dom.contains("data-series=\"clicks:1\""));

    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("watermark-page");
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("watermark-page.png");
    let _ = std::fs::remove_file(&png);
    run_chromium(
        &url,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1400,1000",
        ],
    );
    let bytes = std::fs::read(&png).expect("chromium wrote the screenshot");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 20_000);
    println!("screenshot: {}", png.display());
    if std::env::var_os("STOATFLOW_UPDATE_SCREENSHOT").is_some() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::copy(&png, docs.join("watermark-page.png")).unwrap();
    }
    served.app.close(Duration::from_secs(10));
}

/// A fixed application: one idle partition, one held by alignment with a
/// preview, the alignment binding set.
struct Flagged;

impl stoatflow_server::Endpoints for Flagged {
    fn watermarks(&self) -> Option<stoatflow_time::WatermarksSnapshot> {
        use stoatflow_time::{
            EventTime, HoldReason, PartitionSnapshot, SourcePartition, WallTime, Watermark,
            WatermarkHolder, WatermarksSnapshot,
        };
        let row = |p: i32, w: i64| PartitionSnapshot {
            partition: SourcePartition::new("orders", p),
            watermark: Watermark::from_millis(w),
            idle: false,
            last_event_time: Some(EventTime::new(w + 10_000).unwrap()),
            alignment_group: Some("g".into()),
            alignment_held: false,
            drift_from_group_min_ms: 0,
            idleness_timeout_ms: 120_000,
            preview_watermark: None,
            head_held_since: None,
        };
        let idle = PartitionSnapshot {
            idle: true,
            ..row(0, 1_790_071_000_000)
        };
        let held = PartitionSnapshot {
            alignment_held: true,
            drift_from_group_min_ms: 90_000,
            preview_watermark: Some(Watermark::from_millis(1_790_071_650_000)),
            head_held_since: Some(WallTime::from_millis(1_790_071_700_000)),
            ..row(1, 1_790_071_650_000)
        };
        let minimum = row(2, 1_790_071_560_000);
        Some(WatermarksSnapshot {
            global: Watermark::from_millis(1_790_071_560_000),
            alignment_group_mins: [("g".to_owned(), Watermark::from_millis(1_790_071_560_000))]
                .into(),
            alignment_binding: Some("orders:2".into()),
            partitions: [
                ("orders:0".to_owned(), idle),
                ("orders:1".to_owned(), held),
                ("orders:2".to_owned(), minimum),
            ]
            .into(),
            holder: Some(WatermarkHolder {
                partition: SourcePartition::new("orders", 2),
                reason: HoldReason::AlignmentHold { group: "g".into() },
            }),
            registered: true,
        })
    }
    fn client_state(&self) -> (&'static str, u8) {
        ("REBALANCING", 3)
    }
    fn application_id(&self) -> String {
        "flagged".into()
    }
}

#[test]
fn the_page_shows_idle_held_and_preview_flags_and_the_alignment_binding() {
    let server = stoatflow_server::HttpServer::builder()
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .start(std::sync::Arc::new(Flagged))
        .unwrap();
    let dom = run_chromium(&format!("http://{}/", server.local_addr()), &["--dump-dom"]);
    assert_eq!(attr(element(&dom, "<body").0, "data-loaded"), "true");
    let row = |p: &str| element(&dom, &format!("data-partition=\"{p}\"")).0;
    assert_eq!(attr(row("orders:0"), "data-idle"), "true");
    assert!(cell(&dom, "data-partition=\"orders:0\"", "data-flag=\"idle\"") == "idle");
    assert_eq!(attr(row("orders:1"), "data-held"), "true");
    assert_eq!(attr(row("orders:1"), "data-preview"), "1790071650000");
    assert!(
        cell(&dom, "data-partition=\"orders:1\"", "data-flag=\"preview\"")
            .starts_with("preview 2026-09-22T10:07:30Z")
    );
    assert_eq!(
        cell(&dom, "data-partition=\"orders:1\"", "data-flag=\"held\""),
        "held"
    );
    assert!(
        row("orders:2").contains("binding"),
        "orders:2 is the minimum"
    );
    let (card, _) = element(&dom, "id=\"holder\"");
    assert_eq!(
        (attr(card, "data-holder"), attr(card, "data-reason")),
        ("orders:2", "alignment_hold")
    );
    assert!(
        element(&dom, "id=\"holder-why\"")
            .1
            .starts_with("alignment hold: group g holds"),
        "{dom}"
    );
    let (tag, text) = element(&dom, "id=\"alignment-binding\"");
    assert_eq!((attr(tag, "data-value"), text), ("orders:2", "orders:2"));
    assert_eq!(attr(element(&dom, "id=\"state\"").0, "data-code"), "3");
    assert_eq!(element(&dom, "id=\"global-iso\"").1, "2026-09-22T10:06:00Z");
}
