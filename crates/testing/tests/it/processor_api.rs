//! The Processor API through the driver: timers that survive a restart,
//! punctuators on the watermark and on the wall clock, context metadata,
//! and scheduled sources.

use std::time::Duration;

use stoatflow_streams::{
    Consumed, ProcessError, Processor, ProcessorContext, Produced, PunctuationType, Record,
    Schedule, Serdes, StreamsBuilder, Topology,
};

use crate::harness::Step::{Advance, Restart, Wall};
use crate::harness::{LEFT, OUT, expect_out, left, none, sides};

type Ctx<'a> = ProcessorContext<'a, i32, String>;

/// Arms a timer per key at `t + 10`; a firing forwards `timer@<time>`.
struct TimerProcessor;

impl Processor<i32, String, i32, String> for TimerProcessor {
    const EVENT_TIME_TIMERS: bool = true;

    fn process(&mut self, ctx: &mut Ctx<'_>, r: Record<i32, String>) -> Result<(), ProcessError> {
        ctx.register_event_time_timer(&r.key.to_string(), r.timestamp + 10)
    }

    fn on_timer(&mut self, ctx: &mut Ctx<'_>, key: &str, ts: i64) -> Result<(), ProcessError> {
        let k = key.parse().expect("numeric timer key");
        ctx.forward(Record::new(k, format!("timer@{ts}"), ts))
    }
}

fn with_processor<P: Processor<i32, String, i32, String> + 'static>(
    supplier: impl Fn() -> P + Send + Sync + 'static,
) -> Topology {
    let mut b = StreamsBuilder::new();
    b.stream(LEFT, Consumed::with(Serdes::i32(), Serdes::string()))
        .process(supplier, &[])
        .to(OUT, Produced::with(Serdes::i32(), Serdes::string()));
    b.build().expect("topology")
}

#[test]
fn a_timer_registered_before_a_restart_fires_exactly_once_after_the_watermark_passes_it() {
    sides(with_processor(|| TimerProcessor))
        .steps([
            left(0, "x", 100),
            left(1, "y", 100),
            Advance(105),
            none(),
            Restart,
            Advance(109),
            none(),
            Advance(110),
            expect_out(&[(0, "timer@110", 110), (1, "timer@110", 110)]),
            Restart,
            Advance(1000),
            none(),
        ])
        .run();
}

#[test]
fn re_registering_moves_a_timer_and_it_fires_once() {
    sides(with_processor(|| TimerProcessor))
        .steps([
            left(0, "x", 100),
            left(0, "x", 105),
            Advance(111),
            none(),
            Advance(200),
            expect_out(&[(0, "timer@115", 115)]),
        ])
        .run();
}

/// Schedules a STREAM_TIME punctuator every 100 ms and a wall-clock one
/// every second; each forwards where and when it fired.
struct Punctuating;

impl Processor<i32, String, i32, String> for Punctuating {
    fn init(&mut self, ctx: &mut Ctx<'_>) -> Result<(), ProcessError> {
        ctx.schedule(
            Duration::from_millis(100),
            PunctuationType::StreamTime,
            |c, t| c.forward(Record::new(-1, format!("stream@{t}"), t)),
        );
        ctx.schedule(
            Duration::from_secs(1),
            PunctuationType::WallClockTime,
            |c, t| c.forward(Record::new(-2, format!("wall@{t}"), t)),
        );
        Ok(())
    }

    fn process(&mut self, ctx: &mut Ctx<'_>, r: Record<i32, String>) -> Result<(), ProcessError> {
        let meta = ctx.record_metadata().clone();
        let v = format!(
            "wm={} late={} topic={} offset={:?}",
            ctx.current_stream_time_ms(),
            ctx.is_late(),
            meta.topic,
            meta.offset
        );
        ctx.forward(Record::new(r.key, v, r.timestamp))
    }
}

#[test]
fn punctuators_fire_on_the_watermark_and_the_wall_clock() {
    sides(with_processor(|| Punctuating))
        .steps([
            left(0, "a", 50),
            expect_out(&[
                (
                    0,
                    "wm=-9223372036854775808 late=false topic=left offset=Some(0)",
                    50,
                ),
                (-1, "stream@50", 50),
            ]),
            left(1, "b", 40),
            expect_out(&[(1, "wm=50 late=true topic=left offset=Some(1)", 40)]),
            Advance(250),
            expect_out(&[(-1, "stream@250", 250)]),
            Advance(299),
            none(),
            // The wall clock never moves event time.
            Wall(999),
            none(),
            Wall(1),
            expect_out(&[(-2, "wall@1000", 1000)]),
            Wall(5000),
            expect_out(&[(-2, "wall@6000", 6000)]),
        ])
        .run();
}

#[test]
fn scheduled_sources_fire_on_wall_clock_cron_and_stream_time() {
    let mut b = StreamsBuilder::new();
    let out = || Produced::with(Serdes::i32(), Serdes::string());
    b.stream(LEFT, Consumed::with(Serdes::i32(), Serdes::string()))
        .to(OUT, out());
    b.scheduled_source(
        "every-second",
        Schedule::wall_clock(Duration::from_secs(1)),
        |t| vec![(1, format!("tick@{t}"))],
    )
    .to(OUT, out());
    b.scheduled_source("cron", Schedule::cron("*/2 * * * *").expect("cron"), |t| {
        vec![(2, format!("cron@{t}"))]
    })
    .to(OUT, out());
    b.scheduled_source(
        "stream",
        Schedule::stream_time(Duration::from_millis(100)),
        |t| vec![(3, format!("wm@{t}"))],
    )
    .to(OUT, out());
    sides(b.build().expect("topology"))
        .steps([
            Wall(999),
            none(),
            Wall(1),
            expect_out(&[(1, "tick@1000", 1000)]),
            Wall(119_000),
            expect_out(&[(1, "tick@120000", 120_000), (2, "cron@120000", 120_000)]),
            left(0, "x", 30),
            expect_out(&[(0, "x", 30), (3, "wm@30", 30)]),
            Advance(99),
            none(),
            Advance(100),
            expect_out(&[(3, "wm@100", 100)]),
        ])
        .run();
}

/// Arms a processing-time timer per key one wall-clock second from now;
/// the value `cancel` deletes it instead. A firing forwards `wall-timer@<time>`.
struct WallTimerProcessor;

impl Processor<i32, String, i32, String> for WallTimerProcessor {
    const PROCESSING_TIME_TIMERS: bool = true;

    fn process(&mut self, ctx: &mut Ctx<'_>, r: Record<i32, String>) -> Result<(), ProcessError> {
        let key = r.key.to_string();
        if r.value == "cancel" {
            ctx.delete_processing_time_timer(&key).map(|_| ())
        } else {
            let at = ctx.current_system_time_ms() + 1000;
            ctx.register_processing_time_timer(&key, at)
        }
    }

    fn on_processing_time_timer(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &str,
        ts: i64,
    ) -> Result<(), ProcessError> {
        let k = key.parse().expect("numeric timer key");
        ctx.forward(Record::new(k, format!("wall-timer@{ts}"), ts))
    }
}

/// docs/test-driver.md#advance-watermark: `advance_wall_clock_time` fires processing-time timers; event
/// time never does. A timer fires once, on the first tick at or past it; a
/// cancelled one never.
#[test]
fn a_processing_time_timer_fires_once_on_the_wall_clock_and_never_on_event_time() {
    sides(with_processor(|| WallTimerProcessor))
        .steps([
            left(0, "x", 100),
            left(1, "y", 100),
            left(1, "cancel", 101),
            // Event time far past the timer's wall-clock time: nothing fires.
            Advance(1_000_000),
            none(),
            Wall(999),
            none(),
            Wall(1),
            expect_out(&[(0, "wall-timer@1000", 1000)]),
            Wall(5000),
            none(),
            Advance(2_000_000),
            none(),
        ])
        .run();
}

/// Processing-time timers persist in `<processor>-wall-timers`: one armed
/// before a restart fires exactly once after it, when the wall clock reaches it.
#[test]
fn a_processing_time_timer_survives_a_restart_and_fires_once() {
    sides(with_processor(|| WallTimerProcessor))
        .steps([
            Wall(6000),
            left(3, "z", 100),
            Restart,
            Wall(999),
            none(),
            Wall(1),
            expect_out(&[(3, "wall-timer@7000", 7000)]),
            Restart,
            Wall(10_000),
            none(),
        ])
        .run();
}

/// A processor that did not declare `PROCESSING_TIME_TIMERS` gets an error
/// naming it.
#[test]
fn processing_time_timers_must_be_declared() {
    struct Undeclared;
    impl Processor<i32, String, i32, String> for Undeclared {
        fn process(
            &mut self,
            ctx: &mut Ctx<'_>,
            _: Record<i32, String>,
        ) -> Result<(), ProcessError> {
            ctx.register_processing_time_timer("k", 5)
        }
    }
    let o = sides(with_processor(|| Undeclared))
        .step(left(0, "x", 0))
        .run_until_error();
    let (step, msg) = o.error.expect("undeclared processing-time timers");
    assert_eq!(step, 0);
    assert!(msg.contains("PROCESSING_TIME_TIMERS"), "{msg}");
    assert!(msg.contains("KSTREAM-PROCESSOR"), "{msg}");
}
