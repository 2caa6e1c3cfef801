//! # stoatflow-streams
//!
//! The DSL a Kafka Streams user writes, the topology it builds, the
//! processors, and the single-threaded task that runs one sub-topology.
//!
//! A short tour:
//! - [`StreamsBuilder`] → [`KStream`] / [`KTable`] → [`KGroupedStream`] →
//!   [`TimeWindowedKStream`]: the DSL, with [`Consumed`], [`Produced`],
//!   [`Grouped`] and [`Materialized`] as in Kafka Streams.
//! - [`TimeWindows`] and [`EmitStrategy`]: windows close at `end + grace`
//!   (docs/late.md#closes); a record is dropped when its window's close is at or
//!   before the floor of the lane processing it.
//! - [`Topology`]: sub-topologies, `describe()`, and validation (docs/validation.md).
//! - [`StreamTask`]: applies records, watermark events and barriers. The test
//!   driver and the runtime both call it: there is one implementation of the
//!   late rule and of the emission pass.
//! - [`BarrierSchedule`]: the order of a commit barrier's steps on the tasks
//!   (stamp, cross, flush on the frontier), on the engine's clock and on the
//!   test driver's; the runtime, the driver and the benchmarks all cross
//!   barriers through it.
//! - [`Serde`] and [`Serdes`]: bytes appear only at sources, sinks,
//!   repartition topics and changelogs.
//!
//! ```
//! use std::time::Duration;
//! use stoatflow_streams::*;
//! use stoatflow_time::Watermark;
//!
//! let mut builder = StreamsBuilder::new();
//! builder
//!     .stream("orders", Consumed::with(Serdes::string(), Serdes::i64()))
//!     .group_by_key()
//!     .windowed_by(TimeWindows::of_size_and_grace(Duration::from_millis(10), Duration::ZERO))
//!     .emit_strategy(EmitStrategy::on_window_close())
//!     .count()
//!     .to_stream()
//!     .to("counts", Produced::with(Serdes::time_windowed(Serdes::string(), 10), Serdes::i64()));
//! let topology = builder.build()?;
//! let config = std::sync::Arc::new(StreamsConfig::new("app"));
//! topology.validate(&config)?;
//! let mut task = topology.instantiate(0, &config);
//! for ts in [1, 5, 12] {
//!     task.set_floor(Watermark::from_millis(ts));
//!     task.process("orders", Some(0), None, Some(b"k"), Some(&7i64.to_be_bytes()), ts, Headers::empty())?;
//! }
//! task.advance_frontier(Watermark::from_millis(12))?;
//! let commit = task.commit()?;
//! assert_eq!(commit.outputs.len(), 1); // window [0, 10) closed at 10: count 2
//! assert_eq!(commit.outputs[0].value.as_deref(), Some(&2i64.to_be_bytes()[..]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod config;
mod cron;
mod dsl;
mod error;
mod processor;
mod processors;
mod record;
mod serde;
mod topology;
mod windows;

pub use config::{
    CoordinationMode, DeserializationHandler, DispatchMode, ProductionHandler, StreamsConfig,
};
pub use cron::CronSchedule;
pub use dsl::builder::StreamsBuilder;
pub use dsl::cogroup::{
    CogroupValue, CogroupedKStream, SessionWindowedCogroupedKStream,
    SlidingWindowedCogroupedKStream, TimeWindowedCogroupedKStream, WindowedCogroupedKStream,
};
pub use dsl::global_table::GlobalKTable;
pub use dsl::grouped::KGroupedStream;
pub use dsl::grouped_table::KGroupedTable;
pub use dsl::joins::{JoinWindows, Joined, StreamJoined};
pub use dsl::kstream::{BranchedKStream, KStream};
pub use dsl::ktable::KTable;
pub use dsl::materialized::{Consumed, Grouped, Materialized, Produced, StoreSpec};
pub use dsl::repartitioned::Repartitioned;
pub use dsl::suppress::Suppressed;
pub use dsl::windowed::{
    SessionWindowedKStream, SlidingWindowedKStream, TimeWindowedKStream, WindowedKStream,
};
pub use dsl::windowing::Windowing;
pub use error::{ProcessError, TopologyError};
pub use processor::global_update::GlobalStoreWriter;
pub use processor::{
    Cancellable, Processor, ProcessorContext, PunctuationType, Punctuator, StoreBuilder, Stores,
};
pub use processors::scheduled_source::Schedule;
pub use processors::suppress_time::{BufferConfig, BufferFullStrategy};
pub use record::{Change, Headers, Record, RecordContext, Window, Windowed};
pub use serde::{
    BytesSerde, ChangeSerde, F64Serde, I32Serde, I64Serde, JsonSerde, NullableSerde, Serde,
    SerdeError, SerdeRef, Serdes, SessionWindowedSerde, SortableForm, StringSerde,
    TimeWindowedSerde, UnitSerde,
};
pub use topology::barrier::{BarrierKind, BarrierSchedule, TopologyTasks};
pub use topology::context::{
    DropEvent, DropReason, Emitted, OutputRecord, RecordMetadata, TaskContext, TaskMetrics,
};
pub use topology::task::{EpochCommit, RawRecord, StreamTask, TypedInput};
pub use topology::{
    BytesStoreSupplier, EventTimeReader, GlobalKeyValueStore, GlobalRecord, GlobalStores,
    PersistentStore, SourceDescription, StoreShape, StoreType, TaskStores, TopicCatalog,
    TopicLookup, Topology, WindowShape,
};
pub use windows::{EmitStrategy, SessionWindows, SlidingWindows, TimeWindows};

/// The store traits, to read a store a test or the Processor API holds.
pub use stoatflow_state::{
    KeyValueStore, SessionStore, SessionWindow, StateStore, ValueAndTimestamp, WindowStore,
};

/// The persistent stores' memory bounds' defaults and floor
/// ([`StreamsConfig::store_cache_max_bytes`], [`StreamsConfig::store_block_cache_bytes`]).
pub use stoatflow_state::{
    DEFAULT_BLOCK_CACHE_BYTES, DEFAULT_CACHE_MAX_BYTES, MIN_CACHE_MAX_BYTES,
};

/// The window store behind a windowed aggregation named `store`, on whichever engine it
/// runs (for typed inspection: `task.store::<WindowStoreOf<K, A>>(name)`).
pub type WindowStoreOf<K, A> =
    stoatflow_state::AnyWindowStore<K, stoatflow_state::ValueAndTimestamp<A>>;
/// The store behind a non-windowed aggregation or table, on whichever engine it runs.
pub type KeyValueStoreOf<K, A> =
    stoatflow_state::AnyKeyValueStore<K, stoatflow_state::ValueAndTimestamp<A>>;
/// The session store behind a session aggregation named `store`, on whichever engine it runs.
pub type SessionStoreOf<K, A> = stoatflow_state::AnySessionStore<K, A>;
/// The emit-frontier companion store `<store>-emitfrontier`.
pub type EmitFrontierStore = stoatflow_state::InMemoryKeyValueStore<String, i64>;
