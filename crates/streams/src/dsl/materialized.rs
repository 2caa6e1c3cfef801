//! [`Materialized`], [`Grouped`], [`Consumed`] and [`Produced`]: the
//! per-operator settings of the DSL, named as in Kafka Streams.

use std::sync::Arc;
use std::time::Duration;

use stoatflow_time::{TimestampExtractor, WatermarkStrategy, duration_ms};

use crate::error::TopologyError;
use crate::serde::{Serde, SerdeRef};
use crate::topology::{BytesStoreSupplier, StoreShape, StoreType};

/// How a source reads its topic: serdes and time.
pub struct Consumed<K, V> {
    pub(crate) key_serde: SerdeRef<K>,
    pub(crate) value_serde: SerdeRef<V>,
    pub(crate) strategy: Option<WatermarkStrategy<K, V>>,
    pub(crate) name: Option<String>,
}

impl<K: 'static, V: 'static> Consumed<K, V> {
    /// Serdes for key and value.
    pub fn with(key_serde: impl Serde<K> + 'static, value_serde: impl Serde<V> + 'static) -> Self {
        Consumed {
            key_serde: Arc::new(key_serde),
            value_serde: Arc::new(value_serde),
            strategy: None,
            name: None,
        }
    }

    /// The source's watermark strategy (assigner, generator, idleness, alignment).
    #[must_use]
    pub fn with_watermark_strategy(mut self, strategy: WatermarkStrategy<K, V>) -> Self {
        self.strategy = Some(strategy);
        self
    }

    /// A Kafka Streams `TimestampExtractor`, adapted onto a monotonous
    /// strategy. It takes the one strategy slot: a later
    /// `with_watermark_strategy` replaces it, and it replaces an earlier one.
    #[must_use]
    pub fn with_timestamp_extractor(
        mut self,
        extractor: impl TimestampExtractor<K, V> + 'static,
    ) -> Self {
        self.strategy = Some(WatermarkStrategy::from_timestamp_extractor(extractor));
        self
    }

    /// Names the source node.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// How a sink writes its topic.
pub struct Produced<K, V> {
    pub(crate) key_serde: SerdeRef<K>,
    pub(crate) value_serde: SerdeRef<V>,
}

impl<K: 'static, V: 'static> Produced<K, V> {
    /// Serdes for key and value.
    pub fn with(key_serde: impl Serde<K> + 'static, value_serde: impl Serde<V> + 'static) -> Self {
        Produced {
            key_serde: Arc::new(key_serde),
            value_serde: Arc::new(value_serde),
        }
    }
}

/// A sink of a table's updates (`Option<V>`) writes with the value's serde,
/// `None` as a null.
impl<K: 'static, V: 'static> From<Produced<K, V>> for Produced<K, Option<V>> {
    fn from(p: Produced<K, V>) -> Self {
        Produced {
            key_serde: p.key_serde,
            value_serde: crate::serde::nullable_ref(p.value_serde),
        }
    }
}

/// Serdes (and a name) for grouping and repartitioning.
pub struct Grouped<K, V> {
    pub(crate) key_serde: Option<SerdeRef<K>>,
    pub(crate) value_serde: Option<SerdeRef<V>>,
    pub(crate) name: Option<String>,
}

impl<K: 'static, V: 'static> Grouped<K, V> {
    /// Serdes for key and value.
    pub fn with(key_serde: impl Serde<K> + 'static, value_serde: impl Serde<V> + 'static) -> Self {
        Grouped {
            key_serde: Some(Arc::new(key_serde)),
            value_serde: Some(Arc::new(value_serde)),
            name: None,
        }
    }

    /// Names the repartition topic / grouping.
    pub fn as_(name: impl Into<String>) -> Self {
        Grouped {
            key_serde: None,
            value_serde: None,
            name: Some(name.into()),
        }
    }

    /// Names the repartition topic / grouping, keeping the serdes (Kafka
    /// Streams' `withName`).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

impl<K, V> Default for Grouped<K, V> {
    fn default() -> Self {
        Grouped {
            key_serde: None,
            value_serde: None,
            name: None,
        }
    }
}

/// Store settings of an aggregation: name, serdes, retention, logging.
///
/// Caching is always off in stoatflow: every update is forwarded, as in
/// Kafka Streams with `withCachingDisabled()`.
pub struct Materialized<K, V> {
    pub(crate) name: Option<String>,
    pub(crate) key_serde: Option<SerdeRef<K>>,
    pub(crate) value_serde: Option<SerdeRef<V>>,
    pub(crate) retention_ms: Option<i64>,
    pub(crate) logging: bool,
    /// The supplier's engine and shape, if a supplier named the store.
    pub(crate) supplied: Option<(StoreType, StoreShape)>,
}

impl<K, V> Default for Materialized<K, V> {
    fn default() -> Self {
        Materialized {
            name: None,
            key_serde: None,
            value_serde: None,
            retention_ms: None,
            logging: true,
            supplied: None,
        }
    }
}

/// What [`Materialized::as_`] takes: a store name (the engine is the configured
/// `default.dsl.store`) or a store supplier from [`Stores`](crate::Stores), which also
/// chooses the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSpec {
    name: String,
    supplied: Option<(StoreType, StoreShape)>,
}

impl From<&str> for StoreSpec {
    fn from(name: &str) -> Self {
        StoreSpec {
            name: name.to_owned(),
            supplied: None,
        }
    }
}

impl From<String> for StoreSpec {
    fn from(name: String) -> Self {
        StoreSpec {
            name,
            supplied: None,
        }
    }
}

impl From<&String> for StoreSpec {
    fn from(name: &String) -> Self {
        StoreSpec::from(name.as_str())
    }
}

impl From<BytesStoreSupplier> for StoreSpec {
    fn from(supplier: BytesStoreSupplier) -> Self {
        StoreSpec {
            supplied: Some((supplier.store_type(), supplier.shape())),
            name: supplier.name,
        }
    }
}

impl<K: 'static, V: 'static> Materialized<K, V> {
    /// A store with this name, or the store a supplier describes
    /// (`Materialized::as_(Stores::persistent_window_store("counts"))`).
    pub fn as_(store: impl Into<StoreSpec>) -> Self {
        let spec = store.into();
        Materialized {
            name: Some(spec.name),
            supplied: spec.supplied,
            ..Self::default()
        }
    }

    /// Serdes for the store's changelog.
    pub fn with(key_serde: impl Serde<K> + 'static, value_serde: impl Serde<V> + 'static) -> Self {
        Materialized {
            key_serde: Some(Arc::new(key_serde)),
            value_serde: Some(Arc::new(value_serde)),
            ..Self::default()
        }
    }

    /// The key serde.
    #[must_use]
    pub fn with_key_serde(mut self, serde: impl Serde<K> + 'static) -> Self {
        self.key_serde = Some(Arc::new(serde));
        self
    }

    /// The value serde.
    #[must_use]
    pub fn with_value_serde(mut self, serde: impl Serde<V> + 'static) -> Self {
        self.value_serde = Some(Arc::new(serde));
        self
    }

    /// How long windows are kept (at least size + grace).
    #[must_use]
    pub fn with_retention(mut self, retention: Duration) -> Self {
        self.retention_ms = Some(duration_ms(retention));
        self
    }

    /// Caching is always off; kept so ported code compiles.
    #[must_use]
    pub fn with_caching_disabled(self) -> Self {
        self
    }

    /// Uses `serde` for values unless one was given.
    pub(crate) fn or_value_serde(mut self, serde: Option<SerdeRef<V>>) -> Self {
        if self.value_serde.is_none() {
            self.value_serde = serde;
        }
        self
    }

    /// Uses the standard serde of `V` unless one was given (an aggregation
    /// of a `String`, `i64`, ... infers it, as `count` does).
    pub(crate) fn or_default_value_serde(self) -> Self {
        let serde = crate::serde::default_serde();
        self.or_value_serde(serde)
    }

    /// No changelog for this store.
    #[must_use]
    pub fn with_logging_disabled(mut self) -> Self {
        self.logging = false;
        self
    }
}

impl<K, V> Materialized<K, V> {
    /// The engine the store asks for, checking a supplier's shape against `shape` (the
    /// store's use): a mismatch is an error naming the store.
    pub(crate) fn store_type(
        &self,
        store: &str,
        shape: StoreShape,
    ) -> Result<Option<StoreType>, TopologyError> {
        match self.supplied {
            Some((_, given)) if given != shape => Err(TopologyError::InvalidArgument {
                node: store.to_owned(),
                reason: format!("a {given} store supplier cannot back a {shape} store"),
            }),
            Some((store_type, _)) => Ok(Some(store_type)),
            None => Ok(None),
        }
    }
}

impl<K, V> std::fmt::Debug for Consumed<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Consumed")
    }
}

impl<K, V> std::fmt::Debug for Produced<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Produced")
    }
}

impl<K, V> std::fmt::Debug for Grouped<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Grouped")
    }
}

impl<K, V> std::fmt::Debug for Materialized<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Materialized")
    }
}
