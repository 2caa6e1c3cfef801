//! Suppress: the outcomes of Kafka Streams' `SuppressScenarioTest`, the
//! barrier buffer, full buffers, release order and what a release carries,
//! and where docs/late.md#closes makes us differ (release at the window's close, one tick
//! after Kafka Streams for sliding and session windows).

use std::fmt::Debug;
use std::time::Duration;

use stoatflow_streams::{
    BufferConfig, Consumed, Grouped, Headers, KGroupedStream, KStream, KTable, Materialized,
    Serdes, SessionWindows, SlidingWindows, StreamsBuilder, Suppressed, TimeWindows, Windowed,
};

use crate::harness::{
    INPUT, Out, Scenario, Step, grouped_text, out, pipe, to_topic, to_topic_windowed, tombstone,
};

/// A windowed count of `input` made by `count`: its updates on `raw`, its
/// final results (`until_window_closes`, unbounded) on `suppressed`.
fn final_results(
    count: impl FnOnce(KGroupedStream<String, String>) -> KTable<Windowed<String>, i64>,
) -> Scenario {
    Scenario::build(|b| {
        let t = count(grouped_text(b, INPUT));
        let suppressed = Suppressed::until_window_closes(BufferConfig::unbounded());
        raw_and_suppressed(t, suppressed, to_topic_windowed);
    })
    .text_inputs(&[INPUT])
    .text_outputs(&["raw", "suppressed"])
}

/// Writes `table`'s updates with `sink` to `raw`, and what `suppressed`
/// lets through to `suppressed`.
fn raw_and_suppressed<K: Ord + Clone + Debug + Send + Sync + 'static>(
    table: KTable<K, i64>,
    suppressed: Suppressed<K>,
    sink: fn(KStream<K, Option<i64>>, &str),
) {
    sink(table.suppress(suppressed).to_stream(), "suppressed");
    sink(table.to_stream(), "raw");
}

/// A count of `input` by key, `counts`, handed to `sinks`.
fn counts_by_key(sinks: impl FnOnce(KTable<String, i64>)) -> Scenario {
    Scenario::build(|b| sinks(grouped_text(b, INPUT).count_with(Materialized::as_("counts"))))
        .text_inputs(&[INPUT])
}

fn steps(input: &[(&str, i64)]) -> Vec<Step> {
    input.iter().map(|(k, t)| pipe(k, "v1", *t)).collect()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn should_support_final_results_for_time_windows() {
    final_results(|g| {
        g.windowed_by(TimeWindows::of_size_and_grace(ms(2), ms(1)))
            .count_with(Materialized::as_("counts"))
    })
    .steps(steps(&[
        ("k1", 0),
        ("k1", 1),
        ("k1", 2),
        ("k1", 1),
        ("k1", 0),
        ("k1", 5),
        ("k1", 0),
    ]))
    .expect(
        "raw",
        [
            out("[k1@0/2]", "1", 0),
            out("[k1@0/2]", "2", 1),
            out("[k1@2/4]", "1", 2),
            out("[k1@0/2]", "3", 1),
            out("[k1@0/2]", "4", 1),
            out("[k1@4/6]", "1", 5),
        ],
    )
    .expect(
        "suppressed",
        [out("[k1@0/2]", "4", 1), out("[k1@2/4]", "1", 2)],
    )
    .run();
}

#[test]
fn should_support_final_results_for_time_windows_with_large_jump() {
    final_results(|g| {
        g.windowed_by(TimeWindows::of_size_and_grace(ms(2), ms(2)))
            .count_with(Materialized::as_("counts"))
    })
    .steps(steps(&[
        ("k1", 0),
        ("k1", 1),
        ("k1", 2),
        ("k1", 0),
        ("k1", 3),
        ("k1", 0),
        ("k1", 4),
        ("k1", 0),
        ("k1", 30),
    ]))
    .expect(
        "raw",
        [
            out("[k1@0/2]", "1", 0),
            out("[k1@0/2]", "2", 1),
            out("[k1@2/4]", "1", 2),
            out("[k1@0/2]", "3", 1),
            out("[k1@2/4]", "2", 3),
            out("[k1@0/2]", "4", 1),
            out("[k1@4/6]", "1", 4),
            out("[k1@30/32]", "1", 30),
        ],
    )
    .expect(
        "suppressed",
        [
            out("[k1@0/2]", "4", 1),
            out("[k1@2/4]", "2", 3),
            out("[k1@4/6]", "1", 4),
        ],
    )
    .run();
}

#[test]
fn should_support_final_results_for_sliding_windows() {
    let o = final_results(|g| {
        g.windowed_by(SlidingWindows::of_time_difference_and_grace(ms(5), ms(15)))
            .count_with(Materialized::as_("counts"))
    })
    .steps(steps(&[
        ("k1", 10),
        ("k1", 11),
        ("k1", 10),
        ("k1", 13),
        ("k1", 10),
        ("k1", 24),
        ("k1", 5),
        ("k1", 7),
        ("k1", 90),
    ]))
    .run();
    let mut raw = o.all("raw");
    raw.sort_by(|a, b| (&a.key, a.ts).cmp(&(&b.key, b.ts)));
    let mut expected = vec![
        out("[k1@11/16]", "1", 11),
        out("[k1@11/16]", "2", 13),
        out("[k1@12/17]", "1", 13),
        out("[k1@19/24]", "1", 24),
        out("[k1@5/10]", "1", 10),
        out("[k1@5/10]", "2", 10),
        out("[k1@5/10]", "3", 10),
        out("[k1@5/10]", "4", 10),
        out("[k1@5/10]", "5", 10),
        out("[k1@6/11]", "2", 11),
        out("[k1@6/11]", "3", 11),
        out("[k1@6/11]", "4", 11),
        out("[k1@6/11]", "5", 11),
        out("[k1@8/13]", "4", 13),
        out("[k1@8/13]", "5", 13),
        out("[k1@85/90]", "1", 90),
    ];
    // Kafka Streams' comparator is key then timestamp; equal pairs keep arrival order.
    expected.sort_by(|a, b| (&a.key, a.ts).cmp(&(&b.key, b.ts)));
    assert_eq!(raw, expected);
    assert_eq!(
        o.all("suppressed"),
        vec![
            out("[k1@5/10]", "5", 10),
            out("[k1@6/11]", "5", 11),
            out("[k1@8/13]", "5", 13),
            out("[k1@11/16]", "2", 13),
            out("[k1@12/17]", "1", 13),
            out("[k1@19/24]", "1", 24),
        ]
    );
}

#[test]
fn should_support_final_results_for_session_windows() {
    final_results(|g| {
        g.windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(ms(5)))
            .count_with(Materialized::as_("counts"))
    })
    .steps(steps(&[
        ("k1", 0),
        ("k1", 5),
        ("k1", 1),
        ("k2", 11),
        ("k1", 5),
        ("k1", 30),
    ]))
    .expect(
        "raw",
        [
            out("[k1@0/0]", "1", 0),
            tombstone("[k1@0/0]", 0),
            out("[k1@0/5]", "2", 5),
            tombstone("[k1@0/5]", 5),
            out("[k1@0/5]", "3", 5),
            out("[k2@11/11]", "1", 11),
            out("[k1@30/30]", "1", 30),
        ],
    )
    .expect(
        "suppressed",
        [out("[k1@0/5]", "3", 5), out("[k2@11/11]", "1", 11)],
    )
    .run();
}

/// Counts keyed by value, as the scenarios' `groupBy((k, v) -> v)`: updates
/// on `raw`, `suppressed` on `suppressed`. (The scenarios count a table,
/// whose regrouping also forwards subtractions; a stream count forwards the
/// additions only.)
fn counts_by_value(suppressed: Suppressed<String>) -> Scenario {
    Scenario::build(|b| {
        let t = b
            .stream("input", Consumed::with(Serdes::string(), Serdes::string()))
            .group_by(
                |_, v: &String| v.clone(),
                Grouped::with(Serdes::string(), Serdes::string()),
            )
            .count_with(Materialized::as_("counts").with_key_serde(Serdes::string()));
        raw_and_suppressed(t, suppressed, to_topic);
    })
    .text_inputs(&[INPUT])
    .text_outputs(&["raw", "suppressed"])
}

fn by_value(input: &[(&str, &str, i64)]) -> Vec<Step> {
    input.iter().map(|(k, v, t)| pipe(k, v, *t)).collect()
}

#[test]
fn should_suppress_intermediate_events_with_time_limit() {
    let o = counts_by_value(Suppressed::until_time_limit(
        ms(2),
        BufferConfig::unbounded(),
    ))
    .steps(by_value(&[
        ("k1", "v1", 0),
        ("k1", "v2", 1),
        ("k2", "v1", 2),
        ("tick", "tick", 3),
        ("tick", "tock", 4),
    ]))
    .run();
    // Stream time 2: v1, first buffered at 0, is due (0 + 2 <= 2) with its latest update.
    assert_eq!(o.at(2, "suppressed"), vec![out("v1", "2", 2)]);
    // Stream time 3: v2, buffered at 1.
    assert_eq!(o.at(3, "suppressed"), vec![out("v2", "1", 1)]);
    // tick was first buffered at 3: still held at 4.
    assert!(o.at(4, "suppressed").is_empty());
    assert_eq!(o.metrics.tasks.suppress_early_emits, 0);
}

#[test]
fn should_immediately_emit_events_with_zero_emit_after() {
    let o = counts_by_value(Suppressed::until_time_limit(
        Duration::ZERO,
        BufferConfig::unbounded(),
    ))
    .steps(by_value(&[
        ("k1", "v1", 0),
        ("k1", "v2", 1),
        ("k2", "v1", 2),
        ("x", "x", 3),
    ]))
    .run();
    assert_eq!(o.all("suppressed"), o.all("raw"));
    assert_eq!(o.all("suppressed").len(), 4);
}

fn eager_scenario(config: BufferConfig) {
    let o = counts_by_value(Suppressed::until_time_limit(
        Duration::from_secs(1 << 40),
        config,
    ))
    .steps(by_value(&[
        ("k1", "v1", 0),
        ("k1", "v2", 1),
        ("k2", "v1", 2),
        ("x", "x", 3),
    ]))
    .run();
    // Each new key pushes the oldest out early; the last update waits.
    assert_eq!(
        o.all("suppressed"),
        vec![out("v1", "1", 0), out("v2", "1", 1), out("v1", "2", 2)]
    );
    assert_eq!(o.metrics.tasks.suppress_early_emits, 3);
}

#[test]
fn should_suppress_intermediate_events_with_record_limit() {
    eager_scenario(BufferConfig::max_records(1).emit_early_when_full());
}

#[test]
fn should_suppress_intermediate_events_with_bytes_limit() {
    // One entry (key, times, value, header count) is 35 bytes here.
    eager_scenario(BufferConfig::max_bytes(40).emit_early_when_full());
}

#[test]
fn strict_buffer_full_stops_with_an_error_naming_store_and_bound() {
    let o = counts_by_value(
        Suppressed::until_time_limit(ms(100), BufferConfig::max_records(1).shut_down_when_full())
            .with_name("held"),
    )
    .steps(by_value(&[
        ("k1", "v1", 0),
        ("k1", "v2", 1),
        ("k1", "v3", 2),
    ]))
    .run_until_error();
    let (step, error) = o
        .error
        .clone()
        .expect("the second key overflows the buffer");
    assert_eq!(step, 1);
    assert!(error.contains("held-store"), "{error}");
    assert!(error.contains("max_records = 1"), "{error}");
    assert!(o.all("suppressed").is_empty());
    assert_eq!(o.metrics.tasks.suppress_early_emits, 0);
}

#[test]
fn until_window_closes_refuses_an_eager_buffer() {
    let mut b = StreamsBuilder::new();
    let t = grouped_text(&mut b, INPUT)
        .windowed_by(TimeWindows::of_size_with_no_grace(ms(2)))
        .count_with(Materialized::as_("counts"));
    let _ = t.suppress(Suppressed::until_window_closes(BufferConfig::max_records(
        3,
    )));
    let err = b.build().map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("strict buffer"), "{err}");
}

#[test]
fn until_barrier_releases_one_record_per_key_at_the_barrier_and_never_evicts() {
    let keys = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let mut steps = Vec::new();
    for round in 0..25 {
        for k in keys {
            steps.push(pipe(k, "x", round));
        }
    }
    let updates = steps.len();
    steps.push(Step::Commit);
    let o = counts_by_key(|t| {
        // An eager buffer of one record upstream would evict; until_barrier never does.
        raw_and_suppressed(t, Suppressed::until_barrier(), to_topic);
    })
    .text_outputs(&["raw", "suppressed"])
    .manual_commit()
    .steps(steps)
    .run();
    for i in 0..updates {
        assert!(
            o.at(i, "suppressed").is_empty(),
            "nothing before the barrier (step {i})"
        );
        assert!(
            o.at(i, "raw").is_empty(),
            "output is epoch-gated (step {i})"
        );
    }
    // Exactly one record per key: the latest update, with its timestamp; in
    // buffer-time (all 0), then key, order.
    assert_eq!(
        o.at(updates, "suppressed"),
        keys.iter().map(|k| out(k, "25", 24)).collect::<Vec<Out>>()
    );
    assert_eq!(o.at(updates, "raw").len(), updates);
    assert_eq!(o.metrics.tasks.suppress_early_emits, 0);
}

#[test]
fn releases_keep_the_latest_headers_and_leave_in_buffer_time_then_key_order() {
    let with_header = |k: &str, ts: i64, h: &str| {
        let mut headers = Headers::empty();
        headers.add("h", Some(h.as_bytes().to_vec()));
        Step::Pipe {
            topic: "input",
            key: k.into(),
            value: "x".into(),
            ts,
            headers,
        }
    };
    let o = counts_by_key(|t| {
        to_topic(
            t.suppress(Suppressed::until_time_limit(
                ms(10),
                BufferConfig::unbounded(),
            ))
            .to_stream(),
            "suppressed",
        );
    })
    .text_outputs(&["suppressed"])
    .steps([
        with_header("b", 0, "b0"),
        with_header("a", 0, "a0"),
        with_header("c", 1, "c1"),
        with_header("b", 5, "b5"),
        Step::Advance(20),
    ])
    .run();
    let released = o.with_headers("suppressed");
    let got: Vec<(String, String, i64, Option<Vec<u8>>)> = released
        .into_iter()
        .map(|(o, h)| {
            (
                o.key,
                o.value.unwrap(),
                o.ts,
                h.last("h").flatten().map(<[u8]>::to_vec),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("a".into(), "1".into(), 0, Some(b"a0".to_vec())),
            ("b".into(), "2".into(), 5, Some(b"b5".to_vec())),
            ("c".into(), "1".into(), 1, Some(b"c1".to_vec())),
        ]
    );
}

/// docs/late.md#suppress (`suppress(until_window_closes)` uses the late rule's close):
/// a sliding window `[5, 10]` with no grace closes at 10 + 1 = 11, one tick
/// after Kafka Streams' suppress, which releases it at stream time 10.
#[test]
fn suppress_releases_sliding_windows_at_their_close_one_tick_after_kafka_streams() {
    let o = final_results(|g| {
        g.windowed_by(SlidingWindows::of_time_difference_with_no_grace(ms(5)))
            .count_with(Materialized::as_("counts"))
    })
    .steps([pipe("k", "v", 10), pipe("other", "v", 11)])
    .run();
    // At stream time 10 Kafka Streams releases [k@5/10], though its
    // aggregation would still add a record at 5 to it.
    assert!(
        o.at(0, "suppressed").is_empty(),
        "Kafka Streams would release [k@5/10] here"
    );
    assert_eq!(o.at(1, "suppressed"), vec![out("[k@5/10]", "1", 10)]);
}

/// docs/late.md#closes: a session closes at `end + gap + 1 + grace`; Kafka Streams'
/// suppress releases it at `end + gap + grace`, while its aggregation would
/// still merge a record there.
#[test]
fn suppress_releases_sessions_at_their_close_one_tick_after_kafka_streams() {
    let o = final_results(|g| {
        g.windowed_by(SessionWindows::of_inactivity_gap_with_no_grace(ms(5)))
            .count_with(Materialized::as_("counts"))
    })
    .steps([
        pipe("k", "v", 0),
        pipe("other", "v", 5),
        pipe("other", "v", 6),
    ])
    .run();
    assert!(
        o.at(1, "suppressed").is_empty(),
        "Kafka Streams would release [k@0/0] here"
    );
    assert_eq!(o.at(2, "suppressed"), vec![out("[k@0/0]", "1", 0)]);
}

#[test]
fn suppress_buffer_is_changelogged_and_until_barrier_has_no_store() {
    let o = counts_by_key(|t| {
        to_topic(
            t.suppress(
                Suppressed::until_time_limit(ms(10), BufferConfig::unbounded()).with_name("s"),
            )
            .to_stream(),
            "a",
        );
        to_topic(t.suppress(Suppressed::until_barrier()).to_stream(), "b");
    })
    .text_outputs(&["a", "b"])
    .steps([pipe("k", "x", 0), pipe("k", "x", 20)])
    .run();
    let mut stores = o.store_names();
    stores.sort();
    assert_eq!(stores, vec!["counts".to_string(), "s-store".to_string()]);
    // Buffered at the first pipe, deleted (tombstone) when released at the second.
    let changelog = o.changelog("s-store");
    assert_eq!(changelog.len(), 2);
    assert!(changelog[0].value.is_some());
    assert!(changelog[1].value.is_none());
}
