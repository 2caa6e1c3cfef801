//! docs/validation.md#refusals: every watermark-driven node is refused beside a
//! `no_watermarks()` source, under DISABLED coordination, with no source
//! topic, and under DIRECT dispatch; each error names the node and source.

use std::time::Duration;

use stoatflow_streams::{
    Consumed, CoordinationMode, DispatchMode, JoinWindows, KStream, ProcessError, Processor,
    ProcessorContext, Record, Schedule, Serdes, StreamJoined, StreamsBuilder, StreamsConfig,
    TimeWindows,
};
use stoatflow_testing::TopologyTestDriver;
use stoatflow_time::WatermarkStrategy;

struct Timers;

impl Processor<i32, String, i32, String> for Timers {
    const EVENT_TIME_TIMERS: bool = true;
    fn process(
        &mut self,
        ctx: &mut ProcessorContext<'_, i32, String>,
        r: Record<i32, String>,
    ) -> Result<(), ProcessError> {
        ctx.register_event_time_timer("k", r.timestamp)
    }
}

/// Adds the watermark-driven node under test to `s` (or to the builder).
type AddNode = fn(&mut StreamsBuilder, Option<&KStream<i32, String>>);

fn nodes() -> Vec<(&'static str, AddNode)> {
    vec![
        ("windowed aggregation", |_, s| {
            let _ = s
                .expect("needs a stream")
                .group_by_key()
                .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_millis(
                    10,
                )))
                .count();
        }),
        ("stream-stream join", |b, s| {
            let s = s.expect("needs a stream");
            let other = b.stream("other", Consumed::with(Serdes::i32(), Serdes::string()));
            let _ = s.join(
                &other,
                |a: &String, b: &String| format!("{a}{b}"),
                JoinWindows::of_time_difference_with_no_grace(Duration::from_millis(10)),
                StreamJoined::with(Serdes::i32(), Serdes::string(), Serdes::string()),
            );
        }),
        ("event-time timer", |_, s| {
            let _: KStream<i32, String> = s.expect("needs a stream").process(|| Timers, &[]);
        }),
        ("STREAM_TIME scheduled source", |b, _| {
            let _ = b.scheduled_source(
                "st-source",
                Schedule::stream_time(Duration::from_millis(10)),
                |_| Vec::<(i32, String)>::new(),
            );
        }),
    ]
}

fn refuse(
    build: impl Fn(&mut StreamsBuilder),
    config: StreamsConfig,
    what: &str,
    source: Option<&str>,
) {
    let mut b = StreamsBuilder::new();
    build(&mut b);
    let topology = b.build().expect("builds; refused at validation");
    let err = TopologyTestDriver::new(topology, config)
        .expect_err(what)
        .to_string();
    assert!(err.contains(what), "{err} should name {what}");
    if let Some(source) = source {
        assert!(err.contains(source), "{err} should name source {source}");
    }
}

fn stream(b: &mut StreamsBuilder, no_watermarks: bool) -> KStream<i32, String> {
    let mut c = Consumed::with(Serdes::i32(), Serdes::string()).with_name("in-source");
    if no_watermarks {
        c = c.with_watermark_strategy(WatermarkStrategy::no_watermarks());
    }
    b.stream("in", c)
}

#[test]
fn watermark_driven_nodes_beside_a_no_watermarks_source_are_refused() {
    for (what, add) in nodes() {
        refuse(
            |b| {
                let s = stream(b, true);
                add(b, Some(&s));
            },
            StreamsConfig::new("it"),
            what,
            Some("in-source"),
        );
    }
}

#[test]
fn watermark_driven_nodes_under_disabled_coordination_are_refused() {
    for (what, add) in nodes() {
        refuse(
            |b| {
                let s = stream(b, false);
                add(b, Some(&s));
            },
            StreamsConfig::new("it").with_coordination(CoordinationMode::Disabled),
            what,
            Some("in-source"),
        );
    }
}

#[test]
fn watermark_driven_nodes_under_direct_dispatch_are_refused() {
    for (what, add) in nodes() {
        refuse(
            |b| {
                let s = stream(b, false);
                add(b, Some(&s));
            },
            StreamsConfig::new("it").with_dispatch(DispatchMode::Direct),
            what,
            Some("in-source"),
        );
    }
}

#[test]
fn a_stream_time_scheduled_source_with_no_source_topic_is_refused() {
    refuse(
        |b| {
            let _ = b.scheduled_source(
                "st-source",
                Schedule::stream_time(Duration::from_millis(10)),
                |_| Vec::<(i32, String)>::new(),
            );
        },
        StreamsConfig::new("it"),
        "st-source",
        None,
    );
}

#[test]
fn wall_clock_scheduled_sources_need_no_watermark() {
    let mut b = StreamsBuilder::new();
    let _ = stream(&mut b, true);
    let _ = b.scheduled_source("wall", Schedule::wall_clock(Duration::from_secs(1)), |_| {
        Vec::<(i32, String)>::new()
    });
    TopologyTestDriver::new(b.build().expect("topology"), StreamsConfig::new("it"))
        .expect("a wall-clock schedule is not watermark-driven");
}
