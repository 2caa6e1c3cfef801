//! [`Repartitioned`]: the settings of `KStream::repartition` (Kafka Streams'
//! `Repartitioned`): serdes, the repartition topic's name and its partition
//! count. A [`Grouped`] converts into one (serdes and name, the count left to
//! the runner), so `repartition(Grouped)` reads as before.
//!
//! Only settings: what the count does to the topic and the tasks is the
//! runner's (the runtime creates the topic with it, and the sub-topology that
//! reads it runs that many tasks).

use std::sync::Arc;

use crate::dsl::materialized::Grouped;
use crate::serde::{Serde, SerdeRef};

/// Serdes, name and partition count of a repartition topic.
pub struct Repartitioned<K, V> {
    pub(crate) key_serde: Option<SerdeRef<K>>,
    pub(crate) value_serde: Option<SerdeRef<V>>,
    pub(crate) name: Option<String>,
    pub(crate) partitions: Option<u32>,
}

impl<K, V> std::fmt::Debug for Repartitioned<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repartitioned")
            .field("name", &self.name)
            .field("partitions", &self.partitions)
            .finish_non_exhaustive()
    }
}

impl<K, V> Default for Repartitioned<K, V> {
    fn default() -> Self {
        Repartitioned {
            key_serde: None,
            value_serde: None,
            name: None,
            partitions: None,
        }
    }
}

impl<K: 'static, V: 'static> Repartitioned<K, V> {
    /// Serdes for key and value.
    pub fn with(key_serde: impl Serde<K> + 'static, value_serde: impl Serde<V> + 'static) -> Self {
        Repartitioned {
            key_serde: Some(Arc::new(key_serde)),
            value_serde: Some(Arc::new(value_serde)),
            ..Self::default()
        }
    }

    /// Names the repartition topic: `<application.id>-<name>-repartition`.
    pub fn as_(name: impl Into<String>) -> Self {
        Self::default().with_name(name)
    }

    /// A repartition topic of `partitions` partitions (Kafka Streams'
    /// `Repartitioned.numberOfPartitions`).
    pub fn number_of_partitions(partitions: u32) -> Self {
        Self::default().with_number_of_partitions(partitions)
    }

    /// Names the repartition topic.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Gives the repartition topic `partitions` partitions (at least one);
    /// without it the topic has as many as the sub-topology writing it.
    #[must_use]
    pub fn with_number_of_partitions(mut self, partitions: u32) -> Self {
        self.partitions = Some(partitions);
        self
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
}

impl<K, V> From<Grouped<K, V>> for Repartitioned<K, V> {
    fn from(g: Grouped<K, V>) -> Self {
        Repartitioned {
            key_serde: g.key_serde,
            value_serde: g.value_serde,
            name: g.name,
            partitions: None,
        }
    }
}
