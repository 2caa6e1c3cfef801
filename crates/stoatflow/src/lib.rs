//! # stoatflow
//!
//! Stateful, event-time stream processing on Kafka for Rust services: the
//! DSL and Processor API of Kafka Streams, Flink's per-source
//! `WatermarkStrategy`, **one application-wide watermark**, and final window
//! results emitted at commit barriers, so each is committed exactly once.
//! This is the one crate an application depends on; it re-exports the DSL
//! ([`StreamsBuilder`] and friends), the application ([`StreamsApp`],
//! [`RuntimeConfig`]), the clock types ([`WatermarkStrategy`]), the test
//! driver ([`testing::TopologyTestDriver`]) and the log ([`log`]).
//!
//! ## Porting a Kafka Streams application, step by step
//!
//! Take the Kafka Streams application that counts orders per shop in
//! five-minute windows and emits only final counts:
//!
//! ```java
//! builder.stream("orders", Consumed.with(Serdes.String(), orderSerde)
//!                .withTimestampExtractor(new PlacedAtExtractor()))
//!        .groupByKey()
//!        .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(5), Duration.ofMinutes(1)))
//!        .emitStrategy(EmitStrategy.onWindowClose())
//!        .count()
//!        .toStream()
//!        .to("order-counts", Produced.with(windowedSerde, Serdes.Long()));
//! ```
//!
//! **1. The topology reads the same.** Names are Kafka Streams' in Rust
//! case. The timestamp extractor becomes the source's `WatermarkStrategy`:
//! its assigner gives the event time, its generator says how far behind the
//! newest record the watermark stays (30 s here), and idleness keeps a quiet
//! partition from holding everyone back.
//!
//! ```
//! use std::time::Duration;
//! use stoatflow::*;
//!
//! #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
//! struct Order { shop: String, cents: i64, placed_at: i64 }
//!
//! fn topology() -> Result<Topology, TopologyError> {
//!     let mut builder = StreamsBuilder::new();
//!     builder
//!         .stream("orders", Consumed::with(Serdes::string(), Serdes::json::<Order>())
//!             .with_watermark_strategy(
//!                 WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(30))
//!                     .with_timestamp_assigner(|_k: &String, o: &Order, _ts| o.placed_at)
//!                     .with_idleness(Duration::from_secs(120))))
//!         .group_by_key()
//!         .windowed_by(TimeWindows::of_size_and_grace(Duration::from_secs(300), Duration::from_secs(60)))
//!         .emit_strategy(EmitStrategy::on_window_close())
//!         .count()
//!         .to_stream()
//!         .to("order-counts", Produced::with(Serdes::time_windowed(Serdes::string(), 300_000), Serdes::i64()));
//!     builder.build()
//! }
//!
//! // 2. Test it without a broker, as with Kafka Streams' TopologyTestDriver.
//! //    The driver's clock is one number: the largest timestamp piped.
//! let driver = testing::TopologyTestDriver::new(topology()?, StreamsConfig::new("orders-app"))?;
//! let orders = driver.create_input_topic("orders", Serdes::string(), Serdes::json::<Order>());
//! let counts = driver.create_output_topic(
//!     "order-counts", Serdes::time_windowed(Serdes::string(), 300_000), Serdes::i64());
//! let t0 = 1_790_071_200_000; // 2026-09-22T10:00:00Z
//! for (i, shop) in ["lisbon", "porto", "lisbon"].into_iter().enumerate() {
//!     let o = Order { shop: shop.into(), cents: 500, placed_at: t0 + i as i64 * 1_000 };
//!     orders.pipe_input(shop.to_string(), o)?;
//! }
//! assert!(counts.is_empty()); // final results only: the window is open
//! // The watermark passing end + grace closes the window.
//! let late = Order { shop: "faro".into(), cents: 1, placed_at: t0 + 360_000 };
//! orders.pipe_input("faro".to_string(), late)?;
//! let finals = counts.read_key_values_to_sorted_map()?;
//! assert_eq!(finals.len(), 2); // lisbon: 2, porto: 1, each once
//!
//! // 3. Run it on a log. The embedded log (a directory, or memory as here)
//! //    is the default backend; nothing else to install.
//! let config = RuntimeConfig::new("orders-app", Backend::InMemory);
//! let mut app = StreamsApp::new(topology()?, config)?;
//! use stoatflow::log::Log;
//! app.log().create_topic(&log::TopicSpec::new("orders", 3))?;
//! app.log().create_topic(&log::TopicSpec::new("order-counts", 3))?;
//! app.start()?;
//! assert_eq!(app.wait_for_state(AppState::Running, Duration::from_secs(10)), AppState::Running);
//! // 4. Close it: a final barrier emits every window the watermark has
//! //    closed and commits it; a restart resumes from the committed state.
//! assert!(app.close(Duration::from_secs(10)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **What changes for a ported application** (DESIGN 3, spec part 1):
//! windows close on the one application-wide watermark, not on each task's
//! stream time; a record is late when its window's close is at or before
//! the watermark stamped on the last barrier its lane crossed (inclusive);
//! final results trail the watermark by up to two commit intervals; and the
//! test driver's clock is simpler than the engine's (the driver can drop an
//! out-of-order record that the engine still counts), so assert in driver
//! tests *what* is emitted, not *when*.

pub use stoatflow_runtime::{
    AppState, Backend, BarrierCadence, CommitBarrierConfig, HandlerOutcome, ProcessingGuarantee,
    RuntimeConfig, RuntimeError, StreamThreadExceptionResponse, StreamsApp, TaskId,
};
pub use stoatflow_streams::*;
pub use stoatflow_time::{
    Clock, EventTime, ManualClock, SystemClock, TrackerConfig, WallTime, Watermark,
    WatermarkGenerator, WatermarkOutput, WatermarkStrategy, WatermarksSnapshot,
};

/// The test driver: the real processors and late/emission rules on the
/// driver's one-number clock (DESIGN 3.8).
pub mod testing {
    pub use stoatflow_testing::*;
}

/// The log: topics, the read-committed consumer, the transactional producer,
/// and the embedded log.
pub mod log {
    pub use stoatflow_log::*;
}

/// State stores and changelogs, for the Processor API.
pub mod state {
    pub use stoatflow_state::*;
}

/// The operating surface's read models (`/watermarks`, `/info`).
pub mod server {
    pub use stoatflow_server::*;
}
