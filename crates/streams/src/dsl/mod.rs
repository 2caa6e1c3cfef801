//! The DSL a Kafka Streams user writes: [`StreamsBuilder`](builder), `KStream`,
//! `KTable`, grouped, windowed and cogrouped streams, suppress, joins, the
//! Processor API's entries, scheduled sources, and the settings objects
//! (`Consumed`, `Produced`, `Grouped`, `Repartitioned`, `Materialized`,
//! `Suppressed`, `JoinWindows`).
//!
//! The top layer: each call adds nodes to the graph (`topology::graph`)
//! whose factories build the operators of `processors` and `processor`.
//! Nothing below imports it.
//!
//! The builder, `KStream`, `KTable` and the grouped, windowed, windowing and cogrouped
//! types are one vocabulary: as in Kafka Streams, each is reached from another and turns
//! into another (a stream groups into a grouped stream that aggregates into a table that
//! turns back into a stream; the builder makes streams and tables, a stream holds its
//! builder), so their modules name each other by design. The rest of the folder (the join
//! builders, the global table, suppress, materialized, repartitioned, process, scheduled)
//! takes part in no loop.

pub(crate) mod builder;
pub(crate) mod cogroup;
pub(crate) mod fk_join;
pub(crate) mod global_table;
pub(crate) mod grouped;
pub(crate) mod grouped_table;
pub(crate) mod joins;
pub(crate) mod kstream;
pub(crate) mod kstream_join;
pub(crate) mod ktable;
pub(crate) mod ktable_join;
pub(crate) mod materialized;
pub(crate) mod process;
pub(crate) mod repartitioned;
pub(crate) mod scheduled;
pub(crate) mod suppress;
pub(crate) mod windowed;
pub(crate) mod windowing;
