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

/// A record's key and value bytes for `topic`.
pub(crate) type Serialized = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Serializes `rec`'s key and value for `topic`, naming the topic on failure.
pub(crate) fn serialize<K, V>(
    topic: &str,
    key_serde: &SerdeRef<K>,
    value_serde: &SerdeRef<V>,
    rec: &Record<K, V>,
) -> Result<Serialized, ProcessError> {
    let err = |source| ProcessError::Serialization {
        topic: topic.to_owned(),
        source: Box::new(source),
    };
    let key = key_serde.serialize_nullable(topic, &rec.key).map_err(err)?;
    let value = value_serde
        .serialize_nullable(topic, &rec.value)
        .map_err(err)?;
    Ok((key, value))
}

/// Appends a serialized record for `topic` to the epoch's output.
pub(crate) fn append<K, V>(
    cx: &mut TaskContext,
    topic: Arc<str>,
    (key, value): Serialized,
    rec: Record<K, V>,
) {
    cx.metrics.records_out += 1;
    cx.outputs.push(OutputRecord {
        topic,
        key,
        value,
        timestamp: rec.timestamp,
        headers: rec.headers,
        emitted: cx.emitting,
    });
}

impl<K, V> Push<K, V> for Sink<K, V> {
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        let bytes = serialize(&self.topic, &self.key_serde, &self.value_serde, &rec)?;
        append(cx, self.topic.clone(), bytes, rec);
        Ok(())
    }
}
