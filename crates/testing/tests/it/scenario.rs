//! The one helper that drives the test driver for data-driven windowed
//! aggregation scenarios. Every scenario test goes through [`run`].

use std::time::Duration;

use stoatflow_streams::{
    Consumed, DropReason, EmitStrategy, Grouped, Materialized, Produced, Serdes, StreamsBuilder,
    StreamsConfig, TimeWindows, Windowed,
};
use stoatflow_testing::{DriverConfig, TopologyTestDriver};

/// Which aggregation a scenario builds over `input` (String keys and values).
#[derive(Debug, Clone, Copy)]
pub enum Agg {
    /// `count()`, values rendered as decimal.
    Count,
    /// `reduce(a + "+" + v)`.
    Reduce,
    /// `aggregate(|| "0", |_, v, a| a + "+" + v)` (Kafka Streams' MockAggregator.TOSTRING_ADDER).
    Aggregate,
    /// `aggregate(|| "", |_, v, a| a + "+" + v)`.
    AggregateEmptyInit,
}

/// One step of a scenario.
#[derive(Debug, Clone)]
pub enum Step {
    /// Pipe (key, value, timestamp).
    Pipe(&'static str, &'static str, i64),
    /// `advance_watermark(ts)`.
    Advance(i64),
    /// `commit_barrier()` (meaningful with commit-per-pipe off).
    Commit,
}

/// A windowed aggregation scenario and what it must produce.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: &'static str,
    pub windows: TimeWindows,
    pub emit: EmitStrategy,
    pub agg: Agg,
    pub commit_per_pipe: bool,
    pub steps: Vec<Step>,
    /// Outputs as (`[key@start/end]`, value, timestamp), in order.
    pub expected: Vec<(&'static str, &'static str, i64)>,
    pub expected_late_drops: u64,
}

impl Scenario {
    pub fn new(name: &'static str, windows: TimeWindows, agg: Agg) -> Self {
        Scenario {
            name,
            windows,
            emit: EmitStrategy::on_window_update(),
            agg,
            commit_per_pipe: true,
            steps: Vec::new(),
            expected: Vec::new(),
            expected_late_drops: 0,
        }
    }
    pub fn emit(mut self, emit: EmitStrategy) -> Self {
        self.emit = emit;
        self
    }
    pub fn pipes(mut self, records: &[(&'static str, &'static str, i64)]) -> Self {
        self.steps
            .extend(records.iter().map(|&(k, v, t)| Step::Pipe(k, v, t)));
        self
    }
    pub fn step(mut self, s: Step) -> Self {
        self.steps.push(s);
        self
    }
    pub fn expect(mut self, out: &[(&'static str, &'static str, i64)]) -> Self {
        self.expected = out.to_vec();
        self
    }
    pub fn manual_commit(mut self) -> Self {
        self.commit_per_pipe = false;
        self
    }
    pub fn drops(mut self, n: u64) -> Self {
        self.expected_late_drops = n;
        self
    }
}

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Builds the scenario's topology, drives it, and checks outputs and drops.
pub fn run(s: &Scenario) {
    let mut builder = StreamsBuilder::new();
    let grouped = builder
        .stream("input", Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key_with(Grouped::with(Serdes::string(), Serdes::string()))
        .windowed_by(s.windows)
        .emit_strategy(s.emit);
    let table = match s.agg {
        Agg::Count => grouped.count().map_values(|_, c| c.to_string()),
        Agg::Reduce => grouped.reduce(|a, v| format!("{a}+{v}"), Materialized::as_("store")),
        Agg::Aggregate => grouped.aggregate(
            || "0".to_string(),
            |_, v: &String, a: String| format!("{a}+{v}"),
            Materialized::as_("store").with_value_serde(Serdes::string()),
        ),
        Agg::AggregateEmptyInit => grouped.aggregate(
            String::new,
            |_, v: &String, a: String| format!("{a}+{v}"),
            Materialized::as_("store").with_value_serde(Serdes::string()),
        ),
    };
    table
        .to_stream()
        .map(|k: Windowed<String>, v| {
            (
                format!("[{}@{}/{}]", k.key, k.window.start, k.window.end),
                v,
            )
        })
        .to("output", Produced::with(Serdes::string(), Serdes::string()));
    let driver = TopologyTestDriver::with_driver_config(
        builder.build().expect("scenario topology builds"),
        StreamsConfig::new("scenario"),
        DriverConfig {
            commit_per_pipe: s.commit_per_pipe,
            ..DriverConfig::default()
        },
    )
    .expect("the driver accepts the scenario topology");
    let input = driver.create_input_topic("input", Serdes::string(), Serdes::string());
    let output = driver.create_output_topic("output", Serdes::string(), Serdes::string());
    for step in &s.steps {
        match *step {
            Step::Pipe(k, v, t) => input
                .pipe_input_with_timestamp(k.into(), v.into(), t)
                .expect("pipe"),
            Step::Advance(t) => driver.advance_watermark(t).expect("advance"),
            Step::Commit => driver.commit_barrier().expect("commit"),
        }
    }
    let got: Vec<(String, String, i64)> = output
        .read_records_to_list()
        .expect("read")
        .into_iter()
        .map(|r| (r.key, r.value, r.timestamp))
        .collect();
    let want: Vec<(String, String, i64)> = s
        .expected
        .iter()
        .map(|&(k, v, t)| (k.to_owned(), v.to_owned(), t))
        .collect();
    assert_eq!(got, want, "scenario {}: outputs", s.name);
    assert_eq!(
        driver.metrics().dropped(DropReason::LateWindow),
        s.expected_late_drops,
        "scenario {}: late_window drops",
        s.name
    );
}
