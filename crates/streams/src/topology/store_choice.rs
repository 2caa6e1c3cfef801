//! Which engine a DSL store runs on, and the one helper every operator creates its
//! key-value, window and session stores through.
//!
//! Owns [`StoreType`] (`default.dsl.store`), [`BytesStoreSupplier`] (Kafka Streams'
//! `Stores.persistentWindowStore(..)` and friends: a name, an engine, a store shape),
//! [`TaskStores`] (where one task's persistent stores live) and [`PersistentStore`] (a
//! persistent store a task opened, with what its local copy was found to be), and what an
//! operator asks for ([`StoreRequest`]). Opening the store a request names is
//! `store_open`'s, above this module. Knows nothing of the graph, of the DSL's operators,
//! of threads or of the log.

use std::path::PathBuf;

use stoatflow_state::{Recovery, StoreDirectory};

pub use crate::config::StoreType;

/// What a store holds: what a supplier is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreShape {
    /// Keys and values (tables, non-windowed aggregations).
    KeyValue,
    /// Time windows (tumbling, hopping and sliding aggregations, stream-stream joins).
    Window,
    /// Sessions (session aggregations).
    Session,
}

impl std::fmt::Display for StoreShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StoreShape::KeyValue => "key-value",
            StoreShape::Window => "window",
            StoreShape::Session => "session",
        })
    }
}

/// A named store on a chosen engine, as Kafka Streams' store suppliers: made by
/// [`Stores`](crate::Stores) (`persistent_window_store("counts")`,
/// `in_memory_key_value_store(..)`, ...), passed to `Materialized::as_` or
/// `StreamJoined::with_store_suppliers`. Retention and serdes come from where it is used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BytesStoreSupplier {
    pub(crate) name: String,
    pub(crate) store_type: StoreType,
    pub(crate) shape: StoreShape,
}

impl BytesStoreSupplier {
    pub(crate) fn new(name: impl Into<String>, store_type: StoreType, shape: StoreShape) -> Self {
        BytesStoreSupplier {
            name: name.into(),
            store_type,
            shape,
        }
    }

    /// The store's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its engine.
    pub fn store_type(&self) -> StoreType {
        self.store_type
    }

    /// What it holds.
    pub fn shape(&self) -> StoreShape {
        self.shape
    }
}

/// Where one task's persistent stores live, and the engine of stores whose supplier names
/// none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStores {
    /// The task's state directory (the runtime's is `<state dir>/<task>`); each persistent
    /// store gets its own directory below it. `None`: a persistent store is an error naming
    /// it.
    pub dir: Option<PathBuf>,
    /// The engine of stores whose supplier names none.
    pub default: StoreType,
}

/// A persistent store a task opened: its directory (for the checkpoint of a clean close)
/// and what its local copy was found to be (where its changelog restore starts).
#[derive(Debug, Clone)]
pub struct PersistentStore {
    /// The store's name (its changelog is `<application.id>-<name>-changelog`).
    pub name: String,
    /// Its directory.
    pub directory: StoreDirectory,
    /// Trusted from a checkpoint, or rebuilt (restore from the start).
    pub recovery: Recovery,
}

/// One store a DSL operator asks for: its name, the engine its supplier chose (if any),
/// whether it is changelogged, and which serde it was not given (a persistent store encodes
/// every entry, so it is refused when it opens without one, before any record is read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoreRequest {
    pub(crate) name: String,
    pub(crate) store_type: Option<StoreType>,
    pub(crate) logging: bool,
    pub(crate) missing_serde: Option<&'static str>,
}

impl StoreRequest {
    pub(crate) fn new(
        name: impl Into<String>,
        store_type: Option<StoreType>,
        logging: bool,
    ) -> Self {
        StoreRequest {
            name: name.into(),
            store_type,
            logging,
            missing_serde: None,
        }
    }

    /// The request, noting the serde it lacks: `"key"` if `has_key` is false, else
    /// `"value"` if `has_value` is.
    pub(crate) fn with_serdes(mut self, has_key: bool, has_value: bool) -> Self {
        self.missing_serde = if !has_key {
            Some("key")
        } else if !has_value {
            Some("value")
        } else {
            None
        };
        self
    }
}

/// Where an instantiation puts its stores: `None` in memory whatever they ask (the test
/// driver, whose clock and restarts are its own), or a task's [`TaskStores`].
pub(crate) type StorePlacement = Option<TaskStores>;

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::error::ProcessError;
    use crate::{
        Consumed, JoinWindows, Materialized, Serdes, Stores, StreamJoined, StreamsBuilder,
        StreamsConfig, TimeWindows, Topology, TopologyError,
    };

    /// A windowed count into `store`, and a stream-stream join with explicit suppliers.
    fn topology(store: Materialized<String, i64>) -> Result<Topology, TopologyError> {
        let mut b = StreamsBuilder::new();
        let left = b.stream("l", Consumed::with(Serdes::string(), Serdes::i64()));
        let right = b.stream("r", Consumed::with(Serdes::string(), Serdes::i64()));
        let _counts = left
            .clone()
            .group_by_key()
            .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_secs(10)))
            .count_with(store);
        let _joined = left.join(
            &right,
            |a: &i64, b: &i64| a + b,
            JoinWindows::of_time_difference_with_no_grace(Duration::from_secs(1)),
            StreamJoined::with(Serdes::string(), Serdes::i64(), Serdes::i64())
                .with_store_suppliers(
                    Stores::persistent_window_store("left-arrivals"),
                    Stores::in_memory_window_store("right-arrivals"),
                ),
        );
        b.build()
    }

    fn stores(dir: &std::path::Path, default: StoreType) -> TaskStores {
        TaskStores {
            dir: Some(dir.to_owned()),
            default,
        }
    }

    #[test]
    fn window_stores_carry_their_retention_and_other_stores_none() {
        let topology =
            topology(Materialized::as_(Stores::in_memory_window_store("counts"))).unwrap();
        let config = Arc::new(StreamsConfig::new("app"));
        let task = topology.instantiate(0, &config);
        // Size + grace for the count; twice the difference plus grace for
        // a join's arrivals (Kafka Streams' join store retention).
        assert_eq!(task.store_retention_ms("counts"), Some(10_000));
        assert_eq!(task.store_retention_ms("left-arrivals"), Some(2_000));
        assert_eq!(task.store_retention_ms("no-such-store"), None);
        // A key-value store has none.
        let mut b = StreamsBuilder::new();
        let _totals = b
            .stream("l", Consumed::with(Serdes::string(), Serdes::i64()))
            .group_by_key()
            .count_with(Materialized::as_(Stores::in_memory_key_value_store(
                "totals",
            )));
        let task = b.build().unwrap().instantiate(0, &config);
        assert!(task.store_names().any(|s| s == "totals"));
        assert_eq!(task.store_retention_ms("totals"), None);
    }

    #[test]
    fn explicit_suppliers_choose_each_stores_engine_and_the_default_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let topology =
            topology(Materialized::as_(Stores::in_memory_window_store("counts"))).unwrap();
        let config = Arc::new(StreamsConfig::new("app"));
        let task = topology
            .instantiate_in(0, &config, stores(tmp.path(), StoreType::Persistent))
            .unwrap();
        let mut persistent: Vec<&str> = task
            .persistent_stores()
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        persistent.sort();
        assert_eq!(persistent, ["left-arrivals"]);
        assert!(tmp.path().join("left-arrivals").is_dir());
        let counts = task
            .store::<crate::WindowStoreOf<String, i64>>("counts")
            .unwrap();
        assert!(!counts.borrow().is_persistent());
        drop(task);

        // A store named without a supplier takes the default: on disk here.
        let topology = topology_named("totals");
        let task = topology
            .instantiate_in(0, &config, stores(tmp.path(), StoreType::Persistent))
            .unwrap();
        let totals = task
            .store::<crate::WindowStoreOf<String, i64>>("totals")
            .unwrap();
        assert!(totals.borrow().is_persistent());
        assert_eq!(
            task.persistent_stores()[0].recovery,
            Recovery::Rebuilt {
                reason: stoatflow_state::RebuildReason::Empty
            }
        );
        drop(task);

        // Without a placement (the test driver) every store is in memory.
        let task = topology_named("totals").instantiate(0, &config);
        assert!(task.persistent_stores().is_empty());
        let totals = task
            .store::<crate::WindowStoreOf<String, i64>>("totals")
            .unwrap();
        assert!(!totals.borrow().is_persistent());
    }

    fn topology_named(name: &str) -> Topology {
        let mut b = StreamsBuilder::new();
        let _counts = b
            .stream("l", Consumed::with(Serdes::string(), Serdes::i64()))
            .group_by_key()
            .windowed_by(TimeWindows::of_size_with_no_grace(Duration::from_secs(10)))
            .count_with(Materialized::as_(name));
        b.build().unwrap()
    }

    #[test]
    fn a_supplier_of_the_wrong_shape_is_refused_naming_the_store() {
        let err = topology(Materialized::as_(Stores::persistent_key_value_store(
            "counts",
        )))
        .unwrap_err()
        .to_string();
        assert!(err.contains("counts"), "{err}");
        assert!(
            err.contains("a key-value store supplier cannot back a window store"),
            "{err}"
        );
    }

    #[test]
    fn a_persistent_store_without_a_directory_or_owned_by_another_app_is_refused() {
        let topology = topology_named("totals");
        let config = Arc::new(StreamsConfig::new("app"));
        let no_dir = TaskStores {
            dir: None,
            default: StoreType::Persistent,
        };
        let err = topology.instantiate_in(0, &config, no_dir).unwrap_err();
        assert!(err.to_string().contains("store totals"), "{err}");
        assert!(err.to_string().contains("state.dir"), "{err}");

        let tmp = tempfile::tempdir().unwrap();
        let other = Arc::new(StreamsConfig::new("other-app"));
        drop(
            topology
                .instantiate_in(0, &other, stores(tmp.path(), StoreType::Persistent))
                .unwrap(),
        );
        let err = topology
            .instantiate_in(0, &config, stores(tmp.path(), StoreType::Persistent))
            .unwrap_err()
            .to_string();
        assert!(err.contains("totals"), "{err}");
        assert!(err.contains("other-app"), "{err}");
    }

    /// A store without a serde is refused when it would be persistent, as the task is
    /// instantiated (before any record), naming the store and the serde; in memory it
    /// needs none.
    #[test]
    fn a_persistent_store_without_a_serde_is_refused_when_it_opens_not_at_its_first_write() {
        /// A type with no default serde.
        #[derive(Debug, Clone, Default)]
        struct Digits(Vec<i64>);
        let mut b = StreamsBuilder::new();
        let _digits = b
            .stream("l", Consumed::with(Serdes::string(), Serdes::i64()))
            .group_by_key()
            .aggregate(
                Digits::default,
                |_, v: &i64, mut acc: Digits| {
                    acc.0.push(*v);
                    acc
                },
                Materialized::as_("joined-digits").with_logging_disabled(),
            );
        let topology = b.build().unwrap();
        let config = Arc::new(StreamsConfig::new("app"));
        let tmp = tempfile::tempdir().unwrap();
        let err = topology
            .instantiate_in(0, &config, stores(tmp.path(), StoreType::Persistent))
            .unwrap_err()
            .to_string();
        assert!(err.contains("joined-digits"), "{err}");
        assert!(err.contains("no value serde"), "{err}");
        assert!(
            topology
                .instantiate_in(0, &config, stores(tmp.path(), StoreType::InMemory))
                .is_ok()
        );
    }

    /// Keeps the last value per key in the user store "seen".
    struct Remember;

    impl crate::Processor<String, i64, String, i64> for Remember {
        fn process(
            &mut self,
            ctx: &mut crate::ProcessorContext<'_, String, i64>,
            record: crate::Record<String, i64>,
        ) -> Result<(), ProcessError> {
            use stoatflow_state::KeyValueStore;
            let seen = ctx
                .key_value_store::<String, i64>("seen")
                .expect("connected");
            seen.borrow_mut()
                .put(record.key, record.value, record.timestamp)
                .map_err(|e| ProcessError::State {
                    store: "seen".into(),
                    source: Box::new(e),
                })
        }
    }

    fn with_user_store(supplier: BytesStoreSupplier) -> Result<Topology, TopologyError> {
        let mut b = StreamsBuilder::new();
        b.add_state_store(Stores::key_value_store_builder_with(
            supplier,
            Serdes::string(),
            Serdes::i64(),
        ));
        let _out = b
            .stream("l", Consumed::with(Serdes::string(), Serdes::i64()))
            .process::<String, i64, _>(|| Remember, &["seen"]);
        b.build()
    }

    #[test]
    fn a_processor_api_store_takes_its_suppliers_engine() {
        let tmp = tempfile::tempdir().unwrap();
        let config = Arc::new(StreamsConfig::new("app"));
        let topology = with_user_store(Stores::persistent_key_value_store("seen")).unwrap();
        let mut task = topology
            .instantiate_in(0, &config, stores(tmp.path(), StoreType::InMemory))
            .unwrap();
        assert_eq!(task.persistent_stores()[0].name, "seen");
        task.process(
            "l",
            Some(0),
            Some(0),
            Some(b"k"),
            Some(&7i64.to_be_bytes()),
            5,
            crate::Headers::empty(),
        )
        .unwrap();
        let seen = task
            .store::<stoatflow_state::AnyKeyValueStore<String, i64>>("seen")
            .unwrap();
        assert!(seen.borrow().is_persistent());
        let err = with_user_store(Stores::persistent_window_store("seen"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("seen")
                && err.contains("a window store supplier cannot back a key-value store"),
            "{err}"
        );
    }
}
