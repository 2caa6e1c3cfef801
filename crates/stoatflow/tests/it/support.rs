//! A windowed count, its input and its committed output on any log.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use stoatflow::config::AppConfig;
use stoatflow::log::{
    Consumer, EmbeddedLog, Log, Record, SeekTo, Timestamp, TopicPartition, TopicSpec,
    TransactionalProducer,
};
use stoatflow::*;

pub const INPUT: &str = "clicks";
pub const OUTPUT: &str = "click-counts";
pub const WINDOW_MS: i64 = 10_000;
const START: i64 = 1_790_000_000_000;

pub fn topology() -> Topology {
    let mut b = StreamsBuilder::new();
    b.stream(
        INPUT,
        Consumed::with(Serdes::string(), Serdes::string()).with_watermark_strategy(
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(1)),
        ),
    )
    .group_by_key()
    .windowed_by(TimeWindows::of_size_and_grace(
        Duration::from_millis(WINDOW_MS as u64),
        Duration::ZERO,
    ))
    .emit_strategy(EmitStrategy::on_window_close())
    .count()
    .to_stream()
    .to(
        OUTPUT,
        Produced::with(
            Serdes::time_windowed(Serdes::string(), WINDOW_MS),
            Serdes::i64(),
        ),
    );
    b.build().expect("a valid topology")
}

pub fn topics(app: &App) {
    for t in [INPUT, OUTPUT] {
        app.ensure_topic(&TopicSpec::new(t, 1)).expect("topic");
    }
}

/// 30 clicks on two keys over three windows, then one far ahead that
/// closes them.
pub fn produce<L: Log>(log: &L) {
    let mut p = log.transactional_producer("test-input").expect("producer");
    p.begin().expect("begin");
    let tp = TopicPartition::new(INPUT, 0);
    for i in 0..31i64 {
        let (key, t) = if i == 30 {
            ("end".to_string(), START + 3_600_000)
        } else {
            (format!("k{}", i % 2), START + i * 1_000)
        };
        let r = Record::new(Some(key.as_bytes()), Some(b"x".as_slice()), Timestamp(t));
        p.send(&tp, &r).expect("send");
    }
    p.commit().expect("commit");
}

/// What `produce` must give: per (key, window start), one count.
pub fn expected() -> BTreeMap<(String, i64), Vec<i64>> {
    let mut out = BTreeMap::new();
    for w in 0..3 {
        for k in 0..2 {
            out.insert((format!("k{k}"), START + w * WINDOW_MS), vec![5]);
        }
    }
    out
}

/// The committed output, every value per (key, window start).
pub fn read_output<L: Log>(log: &L) -> BTreeMap<(String, i64), Vec<i64>> {
    let mut c = log.consumer("test-reader").expect("consumer");
    let tp = TopicPartition::new(OUTPUT, 0);
    c.assign(std::slice::from_ref(&tp)).expect("assign");
    c.seek(&tp, SeekTo::Beginning).expect("seek");
    let end = c.end_offset(&tp).expect("end");
    let serde = Serdes::time_windowed(Serdes::string(), WINDOW_MS);
    let mut out: BTreeMap<(String, i64), Vec<i64>> = BTreeMap::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while c.position(&tp).expect("position") < end && std::time::Instant::now() < deadline {
        for r in c.fetch(Duration::from_millis(100)).expect("fetch") {
            let key: Windowed<String> = serde
                .deserialize(OUTPUT, r.record.key.as_deref().expect("key"))
                .expect("windowed key");
            let count = i64::from_be_bytes(
                r.record
                    .value
                    .as_deref()
                    .expect("value")
                    .try_into()
                    .expect("8 bytes"),
            );
            out.entry((key.key, key.window.start))
                .or_default()
                .push(count);
        }
    }
    out
}

/// The app `config` builds over [`topology`], which must be on the
/// embedded log, and that log.
pub fn embedded_app(config: &AppConfig) -> (App, Arc<EmbeddedLog>) {
    let app = App::from_config(topology(), config).expect("the app builds");
    let App::Embedded(inner) = &app else {
        panic!("not the embedded log: {app:?}")
    };
    let log = inner.log().clone();
    (app, log)
}

/// Creates the topics, writes the input to `log` (the app's), starts,
/// waits until the input is consumed, closes.
pub fn produce_and_run<L: Log>(app: &mut App, log: &L) {
    topics(app);
    produce(log);
    app.start().expect("start");
    assert!(
        app.wait_until_caught_up(Duration::from_secs(60))
            .expect("caught up"),
        "did not consume its input: {:?}",
        app.error()
    );
    assert!(
        app.close(Duration::from_secs(30)),
        "close: {:?}",
        app.error()
    );
}

/// The input and output topics with two partitions each: what the
/// scripted group's log holds (`scripted_group::scripted_log`).
pub fn create_topics<L: Log>(log: &L) {
    for t in [INPUT, OUTPUT] {
        log.create_topic(&TopicSpec::new(t, 2)).expect("topic");
    }
}
