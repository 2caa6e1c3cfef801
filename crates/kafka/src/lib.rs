//! stoatflow-kafka: the stoatflow-log broker interface over Apache Kafka,
//! through rdkafka (bundled librdkafka). The only crate that names rdkafka.
//!
//! A tour:
//!
//! - [`KafkaLog`]: implements [`stoatflow_log::Log`]; creates and checks
//!   topics, hands out consumers and producers, reads committed offsets.
//! - [`KafkaConsumer`]: read-committed, never auto-commits.
//! - [`KafkaProducer`]: one Kafka transaction per epoch, with source
//!   offsets (and their metadata) added to it as the log's group member,
//!   so a zombie of an older generation is fenced (KIP-447).
//! - [`KafkaPlainProducer`]: at-least-once, idempotent, `acks=all`; its
//!   flush reports the first failed delivery. Offsets are then committed
//!   with [`stoatflow_log::Log::commit_offsets`], as the log's group
//!   member where it has one.
//! - [`KafkaMember`]: a consumer-group member ([`stoatflow_log::Log::join_group`]):
//!   librdkafka's group protocol, eager by default, incremental with
//!   `cooperative-sticky`; a revocation released only once the caller
//!   committed its work.
//! - [`KafkaConfig`]: typed configuration; the properties stoatflow's
//!   semantics depend on cannot be overridden, and pass-through
//!   [`ClientProperties`] never show their values.
//!
//! Knows nothing of streams, windows or watermarks. The contract it
//! fulfils is `stoatflow_log::contract`, run against a real broker in this
//! crate's tests.
//!
//! ```no_run
//! use stoatflow_kafka::{KafkaConfig, KafkaLog};
//! use stoatflow_log::{Log, TopicSpec};
//! let log = KafkaLog::connect(KafkaConfig::new("127.0.0.1:9092"))?;
//! log.ensure_topic(&TopicSpec::new("orders", 4))?;
//! # Ok::<(), stoatflow_log::LogError>(())
//! ```

mod block_on;
mod committed;
mod config;
mod consumer;
mod errors;
mod generation;
mod group_description;
mod log;
mod member;
mod offset_reset;
mod plain_producer;
mod producer;
mod reaper;
mod send;

pub use config::{ClientProperties, KafkaConfig, PROTECTED_KEYS};
pub use consumer::KafkaConsumer;
pub use log::KafkaLog;
pub use member::KafkaMember;
pub use plain_producer::KafkaPlainProducer;
pub use producer::KafkaProducer;
