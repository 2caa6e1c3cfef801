//! The single caller of the driver API for these tests: a case is a
//! topology plus a list of steps; the outcome is what every output topic
//! held after each step, the metrics, and the error that stopped the run.
//!
//! Every topology reads `String` keys and values from `input` (and
//! `input2`) and writes `String` keys and nullable `String` values to the
//! topics it names, so one helper serves every case.

use std::collections::BTreeMap;

use stoatflow_streams::{
    Headers, KStream, Produced, Serdes, StreamsBuilder, StreamsConfig, Topology, Windowed,
};
use stoatflow_testing::{DriverConfig, DriverMetrics, TestRecord, TopologyTestDriver};

/// One step of a case.
#[derive(Debug, Clone)]
pub enum Step {
    /// Pipes `(key, value)` at `ts` into `topic`, with optional headers.
    Pipe {
        topic: &'static str,
        key: String,
        value: String,
        ts: i64,
        headers: Headers,
    },
    /// `advance_watermark`.
    Advance(i64),
    /// `commit_barrier`.
    Commit,
}

/// `(key, value, ts)` on `input`.
pub fn pipe(key: &str, value: &str, ts: i64) -> Step {
    Step::Pipe {
        topic: "input",
        key: key.into(),
        value: value.into(),
        ts,
        headers: Headers::empty(),
    }
}

/// `(key, value, ts)` on `topic`.
pub fn pipe_to(topic: &'static str, key: &str, value: &str, ts: i64) -> Step {
    Step::Pipe {
        topic,
        key: key.into(),
        value: value.into(),
        ts,
        headers: Headers::empty(),
    }
}

/// An output record: key, value (`None` = tombstone), timestamp, headers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Out {
    pub key: String,
    pub value: Option<String>,
    pub ts: i64,
}

/// `(key, Some(value), ts)`.
pub fn out(key: &str, value: &str, ts: i64) -> Out {
    Out {
        key: key.into(),
        value: Some(value.into()),
        ts,
    }
}

/// `(key, None, ts)`.
pub fn tombstone(key: &str, ts: i64) -> Out {
    Out {
        key: key.into(),
        value: None,
        ts,
    }
}

/// What a run produced.
#[derive(Debug)]
pub struct Outcome {
    /// Per step, per topic, the records that became readable at that step.
    pub per_step: Vec<BTreeMap<String, Vec<(Out, Headers)>>>,
    /// Metrics at the end.
    pub metrics: DriverMetrics,
    /// The error that stopped the run, rendered, and the step it came at.
    pub error: Option<(usize, String)>,
    /// The driver, for store inspection.
    pub driver: TopologyTestDriver,
}

impl Outcome {
    /// Every record of `topic`, in order.
    pub fn all(&self, topic: &str) -> Vec<Out> {
        self.with_headers(topic)
            .into_iter()
            .map(|(o, _)| o)
            .collect()
    }

    /// Every record of `topic` with its headers.
    pub fn with_headers(&self, topic: &str) -> Vec<(Out, Headers)> {
        self.per_step
            .iter()
            .filter_map(|m| m.get(topic))
            .flatten()
            .cloned()
            .collect()
    }

    /// Records of `topic` readable after step `i`.
    pub fn at(&self, i: usize, topic: &str) -> Vec<Out> {
        self.per_step[i]
            .get(topic)
            .map(|v| v.iter().map(|(o, _)| o.clone()).collect())
            .unwrap_or_default()
    }
}

/// Builds a topology with `build`, runs `steps`, and reads `topics` after each step.
pub fn run(
    build: impl FnOnce(&mut StreamsBuilder),
    commit_per_pipe: bool,
    topics: &[&str],
    steps: &[Step],
) -> Outcome {
    let mut builder = StreamsBuilder::new();
    build(&mut builder);
    run_topology(
        builder.build().expect("topology builds"),
        commit_per_pipe,
        topics,
        steps,
    )
}

/// As [`run`], for a built topology.
pub fn run_topology(
    topology: Topology,
    commit_per_pipe: bool,
    topics: &[&str],
    steps: &[Step],
) -> Outcome {
    let driver = TopologyTestDriver::with_driver_config(
        topology,
        StreamsConfig::new("app"),
        DriverConfig {
            commit_per_pipe,
            ..DriverConfig::default()
        },
    )
    .expect("driver accepts the topology");
    let outputs: Vec<_> = topics
        .iter()
        .map(|t| {
            (
                t.to_string(),
                driver.create_output_topic(t, Serdes::string(), Serdes::nullable(Serdes::string())),
            )
        })
        .collect();
    let mut per_step = Vec::new();
    let mut error = None;
    for (i, step) in steps.iter().enumerate() {
        let result = match step {
            Step::Pipe {
                topic,
                key,
                value,
                ts,
                headers,
            } => driver
                .create_input_topic(topic, Serdes::string(), Serdes::string())
                .pipe_record(TestRecord {
                    key: key.clone(),
                    value: value.clone(),
                    timestamp: *ts,
                    headers: headers.clone(),
                }),
            Step::Advance(w) => driver.advance_watermark(*w),
            Step::Commit => driver.commit_barrier(),
        };
        let mut seen = BTreeMap::new();
        for (name, topic) in &outputs {
            let records = topic.read_records_to_list().expect("outputs deserialize");
            let records: Vec<_> = records
                .into_iter()
                .map(|r| {
                    (
                        Out {
                            key: r.key,
                            value: r.value,
                            ts: r.timestamp,
                        },
                        r.headers,
                    )
                })
                .collect();
            if !records.is_empty() {
                seen.insert(name.clone(), records);
            }
        }
        per_step.push(seen);
        if let Err(e) = result {
            error = Some((i, e.to_string()));
            break;
        }
    }
    Outcome {
        metrics: driver.metrics(),
        per_step,
        error,
        driver,
    }
}

/// `[key@start/end]`, as Kafka Streams' `Windowed::toString`.
pub fn render(k: &Windowed<String>) -> String {
    format!("[{}@{}/{}]", k.key, k.window.start, k.window.end)
}

/// Writes a windowed table's updates (tombstones included) to `topic`.
pub fn to_topic_windowed<V: Clone + ToString + Send + Sync + 'static>(
    s: KStream<Windowed<String>, Option<V>>,
    topic: &str,
) {
    s.map(|k, v: Option<V>| (render(&k), v.map(|v| v.to_string())))
        .to(
            topic,
            Produced::with(Serdes::string(), Serdes::nullable(Serdes::string())),
        );
}

/// Writes a table's updates keyed by string to `topic`.
pub fn to_topic<V: Clone + ToString + Send + Sync + 'static>(
    s: KStream<String, Option<V>>,
    topic: &str,
) {
    s.map(|k, v: Option<V>| (k, v.map(|v| v.to_string()))).to(
        topic,
        Produced::with(Serdes::string(), Serdes::nullable(Serdes::string())),
    );
}
