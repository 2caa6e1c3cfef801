//! # stoatflow-testing
//!
//! [`TopologyTestDriver`]: the topology's real processors, late rule and
//! emission pass, in one thread, on a simpler clock (docs/test-driver.md):
//!
//! - event time is one number, the largest timestamp piped on any topic
//!   (after timestamp assigners; watermark generators never run);
//! - a piped record is judged against the watermark before it;
//! - the final emission runs synchronously on the pipe that carries the
//!   watermark to or past a close, after that record's own outputs;
//! - by default a barrier commits after every pipe; with
//!   `test.driver.commit-per-pipe = false` call [`TopologyTestDriver::commit_barrier`].
//!
//! Output is epoch-gated: records appear on output topics when their barrier
//! commits. Repartition topics are fed synchronously within the pipe. A record
//! piped into a global table's topic updates its store at once and nothing else.
//!
//! ```
//! use std::time::Duration;
//! use stoatflow_streams::*;
//! use stoatflow_testing::TopologyTestDriver;
//!
//! let mut builder = StreamsBuilder::new();
//! builder
//!     .stream("orders", Consumed::with(Serdes::string(), Serdes::i64()))
//!     .group_by_key()
//!     .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_millis(10)))
//!     .emit_strategy(EmitStrategy::on_window_close())
//!     .count()
//!     .to_stream()
//!     .map(|k: Windowed<String>, v| (k.key, v))
//!     .to("counts", Produced::with(Serdes::string(), Serdes::i64()));
//! let driver = TopologyTestDriver::new(builder.build()?, StreamsConfig::new("app"))?;
//! let orders = driver.create_input_topic("orders", Serdes::string(), Serdes::i64());
//! let counts = driver.create_output_topic("counts", Serdes::string(), Serdes::i64());
//! orders.pipe_input_with_timestamp("a".into(), 1, 3)?;
//! orders.pipe_input_with_timestamp("a".into(), 1, 7)?;
//! assert!(counts.is_empty());
//! driver.advance_watermark(10)?;                 // the window [0, 10) closes at 10
//! assert_eq!(counts.read_key_value()?, ("a".to_string(), 2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod driver;
mod global;
mod topics;

pub use driver::{DriverConfig, DriverError, DriverMetrics, TopologyTestDriver};
pub use topics::{TestInputTopic, TestOutputTopic, TestRecord};
