//! [`TestInputTopic`], [`TestOutputTopic`] and [`TestRecord`], as in Kafka
//! Streams' test utilities.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::sync::Arc;

use stoatflow_streams::{Headers, Serde, SerdeRef};

use crate::driver::{DriverError, TopologyTestDriver};

/// A record to pipe in or read out.
#[derive(Debug, Clone, PartialEq)]
pub struct TestRecord<K, V> {
    /// The key.
    pub key: K,
    /// The value.
    pub value: V,
    /// The timestamp, ms.
    pub timestamp: i64,
    /// Headers.
    pub headers: Headers,
}

impl<K, V> TestRecord<K, V> {
    /// A record without headers.
    pub fn new(key: K, value: V, timestamp: i64) -> Self {
        TestRecord {
            key,
            value,
            timestamp,
            headers: Headers::empty(),
        }
    }
}

/// Writes serialized records into one topic of the driver.
pub struct TestInputTopic<K, V> {
    driver: TopologyTestDriver,
    topic: String,
    key_serde: SerdeRef<K>,
    value_serde: SerdeRef<V>,
}

impl<K, V> std::fmt::Debug for TestInputTopic<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestInputTopic")
            .field("topic", &self.topic)
            .finish()
    }
}

impl<K, V> TestInputTopic<K, V> {
    pub(crate) fn new(
        driver: TopologyTestDriver,
        topic: &str,
        key_serde: SerdeRef<K>,
        value_serde: SerdeRef<V>,
    ) -> Self {
        TestInputTopic {
            driver,
            topic: topic.to_owned(),
            key_serde,
            value_serde,
        }
    }

    /// Pipes a record stamped with the driver's wall clock.
    pub fn pipe_input(&self, key: K, value: V) -> Result<(), DriverError> {
        let ts = self.driver.wall_clock().as_millis();
        self.pipe_input_with_timestamp(key, value, ts)
    }

    /// Pipes a record with an explicit timestamp.
    pub fn pipe_input_with_timestamp(
        &self,
        key: K,
        value: V,
        timestamp: i64,
    ) -> Result<(), DriverError> {
        self.pipe_record(TestRecord::new(key, value, timestamp))
    }

    /// Pipes one record.
    pub fn pipe_record(&self, r: TestRecord<K, V>) -> Result<(), DriverError> {
        let err = |source| DriverError::Input {
            topic: self.topic.clone(),
            source,
        };
        let k = self
            .key_serde
            .serialize_nullable(&self.topic, &r.key)
            .map_err(err)?;
        let v = self
            .value_serde
            .serialize_nullable(&self.topic, &r.value)
            .map_err(err)?;
        self.driver.pipe(&self.topic, k, v, r.timestamp, r.headers)
    }

    /// Pipes raw bytes (for deserialization-error tests).
    pub fn pipe_raw(
        &self,
        key: Option<Vec<u8>>,
        value: Option<Vec<u8>>,
        timestamp: i64,
    ) -> Result<(), DriverError> {
        self.driver
            .pipe(&self.topic, key, value, timestamp, Headers::empty())
    }

    /// Pipes records in order, each a pipe of its own.
    pub fn pipe_record_list(
        &self,
        records: impl IntoIterator<Item = TestRecord<K, V>>,
    ) -> Result<(), DriverError> {
        records.into_iter().try_for_each(|r| self.pipe_record(r))
    }
}

/// Reads committed records of one output topic.
pub struct TestOutputTopic<K, V> {
    driver: TopologyTestDriver,
    topic: String,
    key_serde: SerdeRef<K>,
    value_serde: SerdeRef<V>,
}

impl<K, V> std::fmt::Debug for TestOutputTopic<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestOutputTopic")
            .field("topic", &self.topic)
            .finish()
    }
}

impl<K, V> TestOutputTopic<K, V> {
    pub(crate) fn new(
        driver: TopologyTestDriver,
        topic: &str,
        key_serde: SerdeRef<K>,
        value_serde: SerdeRef<V>,
    ) -> Self {
        TestOutputTopic {
            driver,
            topic: topic.to_owned(),
            key_serde,
            value_serde,
        }
    }

    /// Reads the next record.
    pub fn read_record(&self) -> Result<TestRecord<K, V>, DriverError> {
        self.driver.live()?;
        let r = self
            .driver
            .inner
            .borrow_mut()
            .outputs
            .get_mut(&self.topic)
            .and_then(|q| q.pop_front())
            .ok_or_else(|| DriverError::NoRecord {
                topic: self.topic.clone(),
            })?;
        let err = |source| DriverError::Output {
            topic: self.topic.clone(),
            source,
        };
        let key = self
            .key_serde
            .deserialize_nullable(&self.topic, r.key.as_deref())
            .map_err(err)?;
        let value = self
            .value_serde
            .deserialize_nullable(&self.topic, r.value.as_deref())
            .map_err(err)?;
        Ok(TestRecord {
            key,
            value,
            timestamp: r.timestamp,
            headers: r.headers,
        })
    }

    /// Reads the next value.
    pub fn read_value(&self) -> Result<V, DriverError> {
        self.read_record().map(|r| r.value)
    }

    /// Reads the next key and value.
    pub fn read_key_value(&self) -> Result<(K, V), DriverError> {
        self.read_record().map(|r| (r.key, r.value))
    }

    /// Reads every record.
    pub fn read_records_to_list(&self) -> Result<Vec<TestRecord<K, V>>, DriverError> {
        let mut out = Vec::new();
        while !self.is_empty() {
            out.push(self.read_record()?);
        }
        Ok(out)
    }

    /// Reads every key and value.
    pub fn read_key_values_to_list(&self) -> Result<Vec<(K, V)>, DriverError> {
        Ok(self
            .read_records_to_list()?
            .into_iter()
            .map(|r| (r.key, r.value))
            .collect())
    }

    /// Reads every value.
    pub fn read_values_to_list(&self) -> Result<Vec<V>, DriverError> {
        Ok(self
            .read_records_to_list()?
            .into_iter()
            .map(|r| r.value)
            .collect())
    }

    /// Reads everything into a map: the last value per key.
    pub fn read_key_values_to_map(&self) -> Result<HashMap<K, V>, DriverError>
    where
        K: Eq + Hash,
    {
        Ok(self.read_key_values_to_list()?.into_iter().collect())
    }

    /// Like [`TestOutputTopic::read_key_values_to_map`], ordered.
    pub fn read_key_values_to_sorted_map(&self) -> Result<BTreeMap<K, V>, DriverError>
    where
        K: Ord,
    {
        Ok(self.read_key_values_to_list()?.into_iter().collect())
    }

    /// No committed record is waiting.
    pub fn is_empty(&self) -> bool {
        self.queue_size() == 0
    }

    /// Committed records waiting.
    pub fn queue_size(&self) -> usize {
        self.driver
            .inner
            .borrow()
            .outputs
            .get(&self.topic)
            .map_or(0, |q| q.len())
    }
}

/// Topics are made by the driver, as in Kafka Streams; the methods live here,
/// beside the topics, so that the driver does not import this module.
impl TopologyTestDriver {
    /// An input topic writing with these serdes.
    pub fn create_input_topic<K, V>(
        &self,
        topic: &str,
        key_serde: impl Serde<K> + 'static,
        value_serde: impl Serde<V> + 'static,
    ) -> TestInputTopic<K, V> {
        TestInputTopic::new(
            self.clone(),
            topic,
            Arc::new(key_serde),
            Arc::new(value_serde),
        )
    }

    /// An output topic reading with these serdes.
    pub fn create_output_topic<K, V>(
        &self,
        topic: &str,
        key_serde: impl Serde<K> + 'static,
        value_serde: impl Serde<V> + 'static,
    ) -> TestOutputTopic<K, V> {
        TestOutputTopic::new(
            self.clone(),
            topic,
            Arc::new(key_serde),
            Arc::new(value_serde),
        )
    }
}
