//! The sink processor: serializes and appends to the epoch's output.

use std::sync::Arc;

use crate::error::ProcessError;
use crate::record::Record;
use crate::serde::SerdeRef;
use crate::topology::context::{OutputRecord, TaskContext};
use crate::topology::graph::Push;

pub(crate) struct Sink<K, V> {
    pub(crate) topic: Arc<str>,
    pub(crate) key_serde: SerdeRef<K>,
    pub(crate) value_serde: SerdeRef<V>,
}

impl<K, V> Push<K, V> for Sink<K, V> {
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        let err = |source| ProcessError::Serialization {
            topic: self.topic.to_string(),
            source: Box::new(source),
        };
        let key = self
            .key_serde
            .serialize_nullable(&self.topic, &rec.key)
            .map_err(err)?;
        let value = self
            .value_serde
            .serialize_nullable(&self.topic, &rec.value)
            .map_err(err)?;
        cx.metrics.records_out += 1;
        cx.outputs.push(OutputRecord {
            topic: self.topic.clone(),
            key,
            value,
            timestamp: rec.timestamp,
            headers: rec.headers,
            emitted: cx.emitting,
        });
        Ok(())
    }
}
