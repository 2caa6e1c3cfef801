//! The scenario harness: the one caller of the `TopologyTestDriver` API for
//! the topology tests of this crate (windows, sliding, sessions, suppress,
//! joins, cogroup, stream-table, Processor API, restarts, the DSL).
//!
//! A [`Scenario`] is a topology, its typed input and output topics, the
//! driver settings, and a table of [`Step`]s: pipe a record into a topic at a
//! time, advance the watermark or the wall clock, commit a barrier, restart
//! gracefully or after a crash, and, on the way, check the output a topic
//! gained since its last check or a drop counter. Keys and values are
//! written in the tables as text or numbers ([`Cell`]) and read back as text
//! ([`Out`]), so one table syntax serves every topic type. Running a scenario
//! checks what the table says and returns an [`Outcome`] for checks that are
//! computed rather than listed (models, reorderings, stores).
//!
//! Every scenario runs twice, on each store engine ([`Engine`]): first with
//! every store in memory, then with the stores on disk (the persistent
//! engine, in a temporary state directory). Each run checks the table, and
//! the two runs must leave the same output at every step, the same error and
//! the same metrics; the in-memory run's [`Outcome`] is returned. The engines
//! order keys differently (by `Ord` in memory, by encoded bytes on disk), so
//! an operator that scans a store must not depend on the engine's order.
//!
//! Beside the scenario: `cells` (table literals and the typed topics'
//! [`Data`]), `step` (the step vocabulary), `outcome` (what a run left),
//! `text` (the `String` topics most topologies read and write), `sides`
//! (the `left`/`right`/`out` tables of joins, stream-table joins and the
//! Processor API) and `scratch` (the persistent runs' state directories, on
//! tmpfs when there is one).
//!
//! Tests that test the driver API itself call it directly and are not
//! scenarios: `refusals` and `validation` (what `TopologyTestDriver::new`
//! refuses), `deserialization` (`pipe_raw` and the driver's error values),
//! `store_access` (the driver's typed store accessors and their errors),
//! `restart_handles` (what a restart retires, carries over and commits),
//! `drop_counts` (the drop events and the one-per-record metric).
//! `worked_examples` also drives a bare `StreamTask` to show the engine's
//! clock beside the driver's; that is the engine's API, not the driver's.
//!
//! The harness never knows what a topology computes: topologies and their
//! expected outputs belong to the test files.

mod cells;
mod outcome;
mod scratch;
mod sides;
mod step;
mod text;

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::time::Duration;

use stoatflow_streams::{DropReason, Headers, StoreType, StreamsBuilder, StreamsConfig, Topology};
use stoatflow_testing::{DriverConfig, DriverError, TestRecord, TopologyTestDriver};

pub use cells::{Cell, Data};
pub use outcome::{Out, Outcome, out, tombstone};
pub use scratch::scratch_dir;
pub use sides::{
    LEFT, OUT, RIGHT, delete, expect_out, expect_rows, left, none, right, sides, table_sides,
};
pub use step::{INPUT, Step, dropped, expect, expect_key_values, nothing, pipe, pipe_to};
pub use text::{grouped_ints, grouped_text, to_topic, to_topic_windowed};

use outcome::Readable;

type PipeFn =
    Rc<dyn Fn(&TopologyTestDriver, &Cell, &Cell, i64, Headers) -> Result<(), DriverError>>;
type ReadFn = Rc<dyn Fn(&TopologyTestDriver) -> Vec<(Out, Headers)>>;

/// The store engine a run keeps the topology's stores on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// Every store in memory (the driver's default).
    InMemory,
    /// Stores on the persistent engine, in a temporary state directory, unless the
    /// scenario's config or a store's supplier says in memory.
    Persistent,
}

/// A topology, its typed topics, the driver settings and a table of steps.
#[derive(Clone)]
pub struct Scenario {
    name: String,
    /// The engine of the run under way (messages name it).
    engine: Engine,
    topology: Topology,
    config: StreamsConfig,
    commit_per_pipe: bool,
    inputs: BTreeMap<&'static str, PipeFn>,
    outputs: BTreeMap<&'static str, ReadFn>,
    steps: Vec<Step>,
}

impl Scenario {
    /// A scenario over a built topology, application id `app`, committing
    /// after every pipe, with no topics declared yet.
    pub fn new(topology: Topology) -> Self {
        Scenario {
            name: String::new(),
            engine: Engine::InMemory,
            topology,
            config: StreamsConfig::new("app"),
            commit_per_pipe: true,
            inputs: BTreeMap::new(),
            outputs: BTreeMap::new(),
            steps: Vec::new(),
        }
    }

    /// A scenario over the topology `build` adds to a fresh builder.
    ///
    /// # Panics
    /// If the topology does not build.
    pub fn build(build: impl FnOnce(&mut StreamsBuilder)) -> Self {
        let mut builder = StreamsBuilder::new();
        build(&mut builder);
        Self::new(builder.build().expect("the scenario's topology builds"))
    }

    /// The name failure messages carry.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The application's settings.
    pub fn config(mut self, config: StreamsConfig) -> Self {
        self.config = config;
        self
    }

    /// `test.driver.commit-per-pipe = false`: output waits for [`Step::Commit`].
    pub fn manual_commit(mut self) -> Self {
        self.commit_per_pipe = false;
        self
    }

    /// Declares an input topic with `K` keys and `V` values.
    pub fn input<K: Data, V: Data>(mut self, topic: &'static str) -> Self {
        let pipe: PipeFn = Rc::new(move |driver, key, value, ts, headers| {
            driver
                .create_input_topic(topic, K::serde(), V::serde())
                .pipe_record(TestRecord {
                    key: K::from_cell(key),
                    value: V::from_cell(value),
                    timestamp: ts,
                    headers,
                })
        });
        self.inputs.insert(topic, pipe);
        self
    }

    /// Declares an output topic with `K` keys and `V` values; it is read
    /// after every step.
    pub fn output<K: Data, V: Data>(mut self, topic: &'static str) -> Self {
        let read: ReadFn = Rc::new(move |driver| {
            driver
                .create_output_topic(topic, K::serde(), V::serde())
                .read_records_to_list()
                .unwrap_or_else(|e| panic!("output topic {topic} does not read back: {e}"))
                .into_iter()
                .map(|r| {
                    let key = r
                        .key
                        .render()
                        .unwrap_or_else(|| panic!("a null key on output topic {topic}"));
                    let value = r.value.render();
                    (
                        Out {
                            key,
                            value,
                            ts: r.timestamp,
                        },
                        r.headers,
                    )
                })
                .collect()
        });
        self.outputs.insert(topic, read);
        self
    }

    /// Declares input topics with `String` keys and values.
    pub fn text_inputs(self, topics: &[&'static str]) -> Self {
        topics
            .iter()
            .fold(self, |s, topic| s.input::<String, String>(topic))
    }

    /// Declares output topics with `String` keys and nullable `String`
    /// values, as [`to_topic`] and [`to_topic_windowed`] write them.
    pub fn text_outputs(self, topics: &[&'static str]) -> Self {
        topics
            .iter()
            .fold(self, |s, topic| s.output::<String, Option<String>>(topic))
    }

    /// Appends a step.
    pub fn step(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    /// Appends steps.
    pub fn steps(mut self, steps: impl IntoIterator<Item = Step>) -> Self {
        self.steps.extend(steps);
        self
    }

    /// Appends [`expect`]`(topic, rows)`.
    pub fn expect<R: Into<Out>>(
        self,
        topic: &'static str,
        rows: impl IntoIterator<Item = R>,
    ) -> Self {
        self.step(expect(topic, rows))
    }

    /// Appends [`dropped`]`(reason, n)`.
    pub fn dropped(self, reason: DropReason, n: u64) -> Self {
        self.step(dropped(reason, n))
    }

    /// Runs the steps on each engine and checks the table's expectations, and that
    /// both engines gave the same outputs, error and metrics.
    ///
    /// # Panics
    /// If a check fails, a step returns an error or the engines differ.
    pub fn run(&self) -> Outcome {
        let outcome = self.run_until_error();
        if let Some((i, e)) = &outcome.error {
            panic!("{} ({:?}) failed: {e}", self.at(*i), self.steps[*i]);
        }
        outcome
    }

    /// As [`Scenario::run`], but a step's error stops each run and is
    /// returned in [`Outcome::error`] instead of failing the test.
    ///
    /// # Panics
    /// If a check fails or the engines differ.
    pub fn run_until_error(&self) -> Outcome {
        let memory = self.run_on(Engine::InMemory);
        let disk = self.run_on(Engine::Persistent);
        let label = Scenario {
            engine: Engine::Persistent,
            ..self.clone()
        }
        .label();
        for (i, (m, d)) in memory.per_step.iter().zip(&disk.per_step).enumerate() {
            assert_eq!(
                d, m,
                "{label}step {i} ({:?}) output differs from the in-memory run's",
                self.steps[i]
            );
        }
        assert_eq!(
            disk.per_step.len(),
            memory.per_step.len(),
            "{label}the run stopped at another step than the in-memory run"
        );
        assert_eq!(
            disk.error, memory.error,
            "{label}error differs from the in-memory run's"
        );
        assert_eq!(
            disk.metrics, memory.metrics,
            "{label}metrics differ from the in-memory run's"
        );
        memory
    }

    /// One run on `engine`: the steps until the first error, each table check made.
    ///
    /// # Panics
    /// If a check fails.
    pub fn run_on(&self, engine: Engine) -> Outcome {
        let this = Scenario {
            engine,
            ..self.clone()
        };
        this.run_here()
    }

    fn run_here(&self) -> Outcome {
        let state_dir =
            match self.engine {
                Engine::InMemory => None,
                Engine::Persistent => Some(scratch_dir().unwrap_or_else(|e| {
                    panic!("{}no temporary state directory: {e}", self.label())
                })),
            };
        let mut config = self.config.clone();
        if state_dir.is_some() && config.default_dsl_store.is_none() {
            config = config.with_default_dsl_store(StoreType::Persistent);
        }
        let mut driver = TopologyTestDriver::with_driver_config(
            self.topology.clone(),
            config,
            DriverConfig {
                commit_per_pipe: self.commit_per_pipe,
                state_dir: state_dir.as_ref().map(|d| d.path().to_owned()),
                ..DriverConfig::default()
            },
        )
        .unwrap_or_else(|e| panic!("{}the driver refuses the topology: {e}", self.label()));
        let mut per_step: Vec<Readable> = Vec::new();
        // Per topic, the first step whose records the next check covers.
        let mut unchecked: HashMap<&'static str, usize> = HashMap::new();
        let mut error = None;
        for (i, step) in self.steps.iter().enumerate() {
            let mut readable = Readable::new();
            let result = match step {
                Step::Pipe {
                    topic,
                    key,
                    value,
                    ts,
                    headers,
                } => self.pipe(topic)(&driver, key, value, *ts, headers.clone()),
                Step::Advance(w) => driver.advance_watermark(*w),
                Step::AdvanceUnlessPast(w) => {
                    driver.advance_watermark((*w).max(driver.watermark().as_millis()))
                }
                Step::Wall(ms) => driver.advance_wall_clock_time(Duration::from_millis(*ms)),
                Step::Commit => driver.commit_barrier(),
                // Committed output not read yet (the final barrier's
                // included) stays readable on the fresh driver.
                Step::Restart => driver.clone().restart().map(|fresh| driver = fresh),
                Step::Crash => driver.clone().crash_restart().map(|fresh| driver = fresh),
                Step::Expect { .. } | Step::ExpectKeyValues { .. } | Step::Dropped(..) => Ok(()),
            };
            self.read(&driver, &mut readable);
            per_step.push(readable);
            if let Err(e) = result {
                error = Some((i, e.to_string()));
                break;
            }
            self.check(i, step, &driver, &per_step, &mut unchecked);
        }
        Outcome {
            metrics: driver.metrics(),
            per_step,
            error,
            driver,
            _state_dir: state_dir,
        }
    }

    /// `scenario <name>: ` for messages (` on persistent stores` added on that engine),
    /// empty for an unnamed in-memory run.
    fn label(&self) -> String {
        let engine = match self.engine {
            Engine::InMemory => "",
            Engine::Persistent => " on persistent stores",
        };
        match (self.name.is_empty(), engine.is_empty()) {
            (true, true) => String::new(),
            (true, false) => format!("scenario{engine}: "),
            (false, _) => format!("scenario {}{engine}: ", self.name),
        }
    }

    /// Where step `i` is, for messages.
    fn at(&self, i: usize) -> String {
        format!("{}step {i}", self.label())
    }

    fn pipe(&self, topic: &str) -> &PipeFn {
        self.inputs.get(topic).unwrap_or_else(|| {
            panic!(
                "{}{topic} is not a declared input (inputs: {:?})",
                self.label(),
                self.inputs.keys().collect::<Vec<_>>()
            )
        })
    }

    fn read(&self, driver: &TopologyTestDriver, into: &mut Readable) {
        for (topic, read) in &self.outputs {
            let records = read(driver);
            if !records.is_empty() {
                into.entry(topic).or_default().extend(records);
            }
        }
    }

    /// Runs step `i` if it is a check.
    fn check(
        &self,
        i: usize,
        step: &Step,
        driver: &TopologyTestDriver,
        per_step: &[Readable],
        unchecked: &mut HashMap<&'static str, usize>,
    ) {
        let mut since = |topic: &'static str| -> Vec<Out> {
            assert!(
                self.outputs.contains_key(topic),
                "{}{topic} is not a declared output",
                self.label()
            );
            let from = unchecked.insert(topic, i + 1).unwrap_or(0);
            per_step[from..]
                .iter()
                .filter_map(|m| m.get(topic))
                .flatten()
                .map(|(o, _)| o.clone())
                .collect()
        };
        match step {
            Step::Expect { topic, records } => {
                assert_eq!(&since(topic), records, "{}: {step:?}", self.at(i));
            }
            Step::ExpectKeyValues { topic, pairs } => {
                let got: Vec<(String, Option<String>)> =
                    since(topic).into_iter().map(|o| (o.key, o.value)).collect();
                assert_eq!(&got, pairs, "{}: {step:?}", self.at(i));
            }
            Step::Dropped(reason, n) => {
                assert_eq!(
                    driver.metrics().dropped(*reason),
                    *n,
                    "{}: {step:?}",
                    self.at(i)
                );
            }
            _ => {}
        }
    }
}
