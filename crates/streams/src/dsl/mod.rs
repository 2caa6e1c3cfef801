//! The DSL a Kafka Streams user writes: [`StreamsBuilder`](builder), `KStream`,
//! `KTable`, grouped, windowed and cogrouped streams, suppress, joins, the
//! Processor API's entries, scheduled sources, and the settings objects
//! (`Consumed`, `Produced`, `Grouped`, `Materialized`, `Suppressed`,
//! `JoinWindows`).
//!
//! The top layer: each call adds nodes to the graph (`topology::graph`)
//! whose factories build the operators of `processors` and `processor`.
//! Nothing below imports it.

pub(crate) mod builder;
pub(crate) mod cogroup;
pub(crate) mod fk_join;
pub(crate) mod grouped;
pub(crate) mod grouped_table;
pub(crate) mod joins;
pub(crate) mod kstream;
pub(crate) mod kstream_join;
pub(crate) mod ktable;
pub(crate) mod ktable_join;
pub(crate) mod materialized;
pub(crate) mod process;
pub(crate) mod scheduled;
pub(crate) mod suppress;
pub(crate) mod windowed;
pub(crate) mod windowing;
