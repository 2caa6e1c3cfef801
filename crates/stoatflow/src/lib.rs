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
//! A service runs it as `KafkaStreams#start` plus a shutdown hook would:
//! `app.run()` starts, blocks until SIGINT or SIGTERM, then closes
//! gracefully. `set_state_listener` and `set_uncaught_error_handler` are
//! Kafka Streams' (the handler's `StreamThreadExceptionResponse` can
//! replace the engine in place, resuming from the last commit), and
//! `error()` returns the `RuntimeError` that stopped the application, to
//! match on.
//!
//! **What changes for a ported application** (docs/README.md#ported-applications):
//! windows close on the one application-wide watermark, not on each task's
//! stream time; a record is late when its window's close is at or before
//! the watermark stamped on the last barrier its lane crossed (inclusive);
//! final results trail the watermark by up to two commit intervals; and the
//! test driver's clock is simpler than the engine's (the driver can drop an
//! out-of-order record that the engine still counts), so assert in driver
//! tests *what* is emitted, not *when*.
//!
//! **Scaling out on Kafka** (docs/scale-out.md), as with Kafka Streams: start more
//! instances of the same application (same `application.id`, each its own
//! `stoatflow.processing.instance-id`). They share the input partitions
//! through the consumer group named by the application id; a task (one
//! sub-topology on one partition number of its sources) moves with its
//! changelog partitions, and each instance's watermark covers its own
//! partitions (a window's keys live on one task). `num.standby.replicas`
//! above 0, with `state.dir` set, keeps warm copies of the other instances'
//! tasks so that a task moved here restores only the changelog tail: each
//! task has `num.standby.replicas` copies whatever the instance count, placed
//! from the group's description; unlike Kafka Streams' own assignor, the
//! consumer group cannot be told where the copies are, so a moved task lands
//! on its copy only by chance. Members are static (`group.instance.id`), and
//! as in Kafka Streams a closed instance does not leave the group: restarted
//! within the session timeout, it gets its tasks back and nothing moves.
//! Rebalancing is eager by default; with the client property
//! `partition.assignment.strategy: cooperative-sticky` it is incremental, as
//! Kafka Streams' is: the instances whose tasks do not move go on processing
//! and committing, and only those gaining or losing tasks pause.
//! `stoatflow.migration.from-kafka-streams: true` takes over an existing
//! Kafka Streams application's stores, offsets and emitted windows on the
//! first start.
//!
//! ## Kafka Streams call → stoatflow call
//!
//! Every DSL method of Kafka Streams (3.x/4.x), by class. Overloads become
//! `_with` variants (Rust has no overloading); `null` becomes `Option`.
//!
//! | Kafka Streams | stoatflow |
//! |---|---|
//! | **StreamsBuilder** `stream(topic, Consumed)` | `stream(topic, Consumed)` |
//! | `stream(Collection<String>)`, `stream(Pattern)` | not supported: one topic per source (a pattern needs topic discovery the embedded log does not do) |
//! | `table(topic, Consumed, Materialized)` | `table(topic, Consumed, store_name)`; a null value deletes |
//! | `globalTable(topic, Consumed, Materialized)` | `global_table(topic, Consumed, Materialized)` → `GlobalKTable`: restored in full from its topic on every instance before processing starts, kept current by a global thread, never changelogged, in memory on both engines; not time-synchronised (a watermark strategy on its `Consumed` is refused); the test driver applies a piped record at once and reads the store with `global_store` (docs/global-tables.md) |
//! | `addGlobalStore(StoreBuilder, topic, Consumed, ProcessorSupplier)` | `add_global_store(store_name, topic, Consumed, update)`: `update` gets a `GlobalStoreWriter` (`put`, `delete`, `get`) and each record (a null value as `None`) in place of a processor and a store builder; processors read global stores with `ProcessorContext::global_store`; restored and kept current as a `global_table`'s store (docs/global-tables.md#user-stores) |
//! | `addStateStore(StoreBuilder)` | `add_state_store(StoreBuilder)` |
//! | `build()` | `build()` (returns `Result`: bad arguments are reported here) |
//! | **KStream** `filter`, `filterNot` | `filter`, `filter_not` |
//! | `selectKey`, `map`, `mapValues` | `select_key`, `map`, `map_values` (`map_values` gets the key too, as `ValueMapperWithKey`) |
//! | `flatMap`, `flatMapValues` | `flat_map`, `flat_map_values` (return a `Vec`) |
//! | `peek`, `foreach` | `peek`, `foreach` |
//! | `print(Printed)` | not supported: use `foreach` with `println!`/`tracing` |
//! | `split(Named)` → `BranchedKStream.branch/defaultBranch/noDefaultBranch` | `split()` → `named`, `branch`, `default_branch`, `no_default_branch` |
//! | `branch(..)` (deprecated) | not supported: use `split` |
//! | `merge` | `merge` |
//! | `repartition()`, `repartition(Repartitioned)` | `repartition(Repartitioned)` (serdes, `with_name`, `with_number_of_partitions`: the runtime creates the topic with that count, refuses an existing one of another, and the sub-topology reading it runs that many tasks; a repartition topic co-read with it takes its count; a `Grouped` converts, the count then the writer's) |
//! | `to(topic, Produced)` | `to(topic, Produced)` |
//! | `to(TopicNameExtractor, Produced)` | `to_dynamic(extractor, Produced)`: the extractor gets key, value and a `RecordContext`; each topic must exist (looked up on the log the first time it is met; a missing one goes to the production handler, `StreamsConfig::with_production_handler`, FAIL by default); internal topics are refused; the test driver takes any topic, as Kafka Streams' |
//! | `toTable()`, `toTable(Materialized)` | `to_table()`, `to_table_with(Materialized)`; where a null value deletes, `to_table_deleting()`, `to_table_deleting_with(Materialized)` on a `KStream<K, Option<V>>`: `None` deletes the key's row and downstream sees the delete. The source's value serde decides what a null is: `Serdes::nullable(..)` reads it as `None`, a plain serde refuses it (a deserialization error) |
//! | `groupByKey()`, `groupByKey(Grouped)` | `group_by_key()`, `group_by_key_with(Grouped)` |
//! | `groupBy(selector, Grouped)` | `group_by(selector, Grouped)`; a selector that may return null (the record is skipped): `group_by_opt(selector, Grouped)`, `None` skips |
//! | `join/leftJoin/outerJoin(KStream, joiner, JoinWindows, StreamJoined)` | `join`, `left_join`, `outer_join` (same arguments) |
//! | `join/leftJoin(KTable, joiner, Joined)` | `join_table`, `left_join_table` |
//! | `join/leftJoin(GlobalKTable, keySelector, joiner)` | `join_global`, `left_join_global` (the key mapper returns `Option`: `None` is Kafka Streams' null, no match); the row as the global store is when the record is processed; no co-partitioning, no repartition; driver and runtime |
//! | `process(ProcessorSupplier, stores..)`, `processValues(..)` | `process`, `process_values` |
//! | `transform`, `transformValues`, `flatTransform` (removed in 4.0) | not supported: use `process` / `process_values` |
//! | **KTable** `filter`, `filterNot` | `filter`, `filter_not` |
//! | `mapValues(mapper)`, `mapValues(mapper, Materialized)` | `map_values`, `map_values_with` |
//! | `toStream()` | `to_stream()`, a `KStream<K, Option<V>>`: a tombstone is `None` (Kafka Streams forwards a null); a sink takes `Produced<K, V>` and writes a null; `skip_tombstones()` where no delete is expected |
//! | `toStream(KeyValueMapper)` | `to_stream().map(..)` |
//! | `suppress(Suppressed)` | `suppress(Suppressed)` (plus `Suppressed::until_barrier`) |
//! | `groupBy(selector, Grouped)` | `group_by(selector, Grouped)` → `KGroupedTable`; a selector that may return null or a null key (the row is skipped): `group_by_opt`, `None` skips the row, and a row whose new value selects `None` is subtracted from its old group |
//! | `join`, `leftJoin`, `outerJoin(KTable, joiner)` | `join`, `left_join`, `outer_join` (the joiner sees `Option` for a side that may be absent) |
//! | `join`, `leftJoin`, `outerJoin(KTable, joiner, Materialized)` | `join_with`, `left_join_with`, `outer_join_with`: the joined rows in the named store (readable through the test driver's store access), the store's serdes from `Materialized` or inferred for the standard types |
//! | `join`, `leftJoin(KTable, foreignKeyExtractor, joiner)` | `join_on_foreign_key`, `left_join_on_foreign_key` (the extractor takes the value and returns the foreign key, never null; same subscription and response topics) |
//! | `join`, `leftJoin(KTable, foreignKeyExtractor, joiner, Materialized)` | `join_on_foreign_key_with`, `left_join_on_foreign_key_with`, as `join_with` |
//! | `transformValues(..)` | not supported: use `map_values` or `to_stream().process_values(..)` |
//! | `queryableStoreName()` | `queryable_store_name()` |
//! | **KGroupedStream** `count`, `reduce`, `aggregate` | `count`/`count_with`, `reduce`, `aggregate` (store value serdes inferred for `String`, `i64`, ...) |
//! | `windowedBy(TimeWindows / SlidingWindows / SessionWindows)` | `windowed_by(..)` with the same windows |
//! | `cogroup(aggregator)` | `cogroup(aggregator)` → `CogroupedKStream` (`cogroup`, `aggregate`, `windowed_by`) |
//! | **KGroupedTable** `count`, `reduce(adder, subtractor)`, `aggregate(init, adder, subtractor)` | `count`/`count_with`, `reduce(adder, subtractor, Materialized)`, `aggregate(init, adder, subtractor, Materialized)` |
//! | **Time/Sliding/SessionWindowedKStream** `count`, `reduce`, `aggregate`, `emitStrategy` | `count`/`count_with`, `reduce`, `aggregate` (sessions: with a merger), `emit_strategy` |
//! | **Windows** `TimeWindows.ofSizeAndGrace/ofSizeWithNoGrace/advanceBy`, `SlidingWindows.ofTimeDifferenceAndGrace`, `SessionWindows.ofInactivityGapAndGrace`, `JoinWindows.ofTimeDifferenceAndGrace` | same names in snake case |
//! | `WindowedSerdes.timeWindowedSerdeFrom(..)`, `sessionWindowedSerdeFrom(..)` | `TimeWindows::windowed_serde`, `SlidingWindows::windowed_serde`, `Serdes::session_windowed` |
//! | **Settings** `Consumed`, `Produced`, `Grouped`, `Materialized`, `Joined`, `StreamJoined`, `Suppressed` | same names; `Consumed::with_timestamp_extractor` or a `WatermarkStrategy` |
//! | `Named`, `Branched`, `Printed`, `TableJoined` | `Consumed::with_name`/`Grouped::as_`/`split().named(..)` where a name matters; the rest not supported (`Repartitioned`: above, without a `StreamPartitioner`) |
//! | Interactive queries v2 `KafkaStreams.query(StateQueryRequest)` with `KeyQuery`, `RangeQuery`, `WindowKeyQuery` (IQv1's `store(StoreQueryParameters)` is not ported) | `StreamsApp::query(StateQueryRequest::in_store(name, q))` with `KeyQuery`, `RangeQuery`, `WindowQuery`, `SessionQuery`: committed state by default (`latest_processed()` to read what is processed), each window `final`, `open` or `expired`, the answer's barrier, watermark and position (docs/queries.md); `queryMetadataForKey(store, key, keySerializer)` and `application.server`: `query_metadata_for_key(store, &key, &serde)` (a `KeyQueryMetadata`: the owner and standby holders with their `application.server`, learnt through the endpoints topic; docs/queries.md#metadata); stale answers from standby copies and restoring tasks (`StoreQueryParameters.enableStaleStores()`): `enable_stale()`, each task read saying how far behind it is, no window of it final (docs/queries.md#stale). The test driver reads stores directly (`key_value_store`, `window_store`, `session_store`) |

#![warn(missing_docs)]

mod configured;
mod log_routes;
mod queryable;

pub use configured::{App, AppError};
pub use log_routes::ENDPOINT_FILE;
pub use queryable::{QueryableStores, TextKey, TextValue};
pub use stoatflow_runtime::{
    AppState, Backend, BarrierCadence, CommitBarrierConfig, HandlerOutcome, ProcessingGuarantee,
    RunSummary, RuntimeConfig, RuntimeError, StreamThreadExceptionResponse, StreamsApp, TaskId,
    partition_for_key, stop_on_signals,
};
pub use stoatflow_runtime::{ChangelogLag, StaleRead, StaleSource};
pub use stoatflow_runtime::{
    Finality, HostInfo, InstanceInfo, KeyQuery, KeyQueryMetadata, MetadataError, QueryAnswer,
    QueryError, RangeAnswer, RangeQuery, ReadMode, SessionQuery, SourcePosition, StateQueryRequest,
    StoreQuery, WindowEntry, WindowQuery,
};
pub use stoatflow_streams::*;
pub use stoatflow_time::{
    Clock, EventTime, HoldReason, ManualClock, SystemClock, TrackerConfig, WallTime, Watermark,
    WatermarkGenerator, WatermarkHolder, WatermarkOutput, WatermarkStrategy, WatermarksSnapshot,
};

/// The test driver: the real processors and late/emission rules on the
/// driver's one-number clock (docs/test-driver.md).
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

/// Configuration: YAML, string maps and environment overrides into one
/// typed [`config::AppConfig`]; [`App::from_config`] runs it.
pub mod config {
    pub use stoatflow_config::*;
}

/// The operating surface's read models (`/watermarks`, `/info`).
pub mod server {
    pub use stoatflow_server::*;
}
