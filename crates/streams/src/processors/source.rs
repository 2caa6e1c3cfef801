//! The source processor: deserializes, assigns event time, pushes.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;

use stoatflow_time::WatermarkStrategy;

use crate::config::DeserializationHandler;
use crate::error::{ProcessError, position};
use crate::record::{Headers, Record};
use crate::serde::SerdeRef;
use crate::topology::context::{DropReason, TaskContext};
use crate::topology::graph::{Downstream, Port, Push, SourceInput};

pub(crate) struct Source<K, V> {
    pub(crate) topic: String,
    pub(crate) key_serde: SerdeRef<K>,
    pub(crate) value_serde: SerdeRef<V>,
    pub(crate) strategy: Option<WatermarkStrategy<K, V>>,
    pub(crate) handler: DeserializationHandler,
    pub(crate) down: Rc<Downstream<K, V>>,
    pub(crate) partition_time: Option<stoatflow_time::EventTime>,
}

/// The typed entry of a source: forwards to the source's children.
struct TypedEntry<K, V>(Rc<Downstream<K, V>>);

impl<K: Clone, V: Clone> Push<K, V> for TypedEntry<K, V> {
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        cx.metrics.records_in += 1;
        self.0.forward(cx, rec)
    }
}

impl<K: Clone + 'static, V: Clone + 'static> Source<K, V> {
    fn fail_or_skip(
        &self,
        cx: &mut TaskContext,
        part: &'static str,
        timestamp: i64,
        e: crate::serde::SerdeError,
    ) -> Result<Option<i64>, ProcessError> {
        let pos = position(cx.meta.partition, cx.meta.offset);
        match self.handler {
            DeserializationHandler::LogAndFail => Err(ProcessError::Deserialization {
                part,
                topic: self.topic.clone(),
                position: pos,
                source: Box::new(e),
            }),
            DeserializationHandler::LogAndContinue => {
                tracing::warn!(topic = %self.topic, position = %pos, error = %e, "skipping a record whose {part} does not deserialize");
                let node = format!("source of {}", self.topic);
                cx.drop_record::<()>(
                    &node,
                    None,
                    timestamp,
                    DropReason::DeserializationError,
                    None,
                    true,
                );
                Ok(None)
            }
        }
    }
}

impl<K: Clone + 'static, V: Clone + 'static> SourceInput for Source<K, V> {
    fn process_bytes(
        &mut self,
        cx: &mut TaskContext,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        timestamp: i64,
        headers: Headers,
    ) -> Result<Option<i64>, ProcessError> {
        let k = match self.key_serde.deserialize_nullable(&self.topic, key) {
            Ok(k) => k,
            Err(e) => return self.fail_or_skip(cx, "key", timestamp, e),
        };
        let v = match self.value_serde.deserialize_nullable(&self.topic, value) {
            Ok(v) => v,
            Err(e) => return self.fail_or_skip(cx, "value", timestamp, e),
        };
        let ts = match &self.strategy {
            Some(s) => s.assign(&k, &v, timestamp, self.partition_time),
            None => stoatflow_time::EventTime::new(timestamp),
        }
        .map_err(|source| ProcessError::InvalidTimestamp {
            topic: self.topic.clone(),
            position: position(cx.meta.partition, cx.meta.offset),
            source,
        })?;
        if self.partition_time.is_none_or(|p| ts > p) {
            self.partition_time = Some(ts);
        }
        cx.metrics.records_in += 1;
        let t = ts.as_millis();
        self.down.forward(
            cx,
            Record {
                key: k,
                value: v,
                timestamp: t,
                headers,
            },
        )?;
        Ok(Some(t))
    }

    fn typed_port(&self) -> Box<dyn Any> {
        let port: Port<K, V> = Rc::new(RefCell::new(TypedEntry(self.down.clone())));
        Box::new(port)
    }

    fn seed_partition_time(&mut self, partition_time: stoatflow_time::EventTime) {
        if self.partition_time.is_none_or(|p| partition_time > p) {
            self.partition_time = Some(partition_time);
        }
    }
}

pub(crate) struct SourceTimeReader<K, V> {
    pub(crate) topic: String,
    pub(crate) key_serde: SerdeRef<K>,
    pub(crate) value_serde: SerdeRef<V>,
    pub(crate) strategy: Option<WatermarkStrategy<K, V>>,
}

impl<K, V> std::fmt::Debug for SourceTimeReader<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceTimeReader")
            .field("topic", &self.topic)
            .finish_non_exhaustive()
    }
}

impl<K: 'static, V: 'static> crate::topology::EventTimeReader for SourceTimeReader<K, V> {
    fn event_time(
        &self,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        record_timestamp: i64,
        partition_time: Option<stoatflow_time::EventTime>,
    ) -> Result<stoatflow_time::EventTime, String> {
        let invalid = |e: stoatflow_time::TimeError| {
            format!(
                "record from topic {} has an invalid event time: {e}",
                self.topic
            )
        };
        let Some(strategy) = self
            .strategy
            .as_ref()
            .filter(|s| s.has_timestamp_assigner())
        else {
            return stoatflow_time::EventTime::new(record_timestamp).map_err(invalid);
        };
        let k = self
            .key_serde
            .deserialize_nullable(&self.topic, key)
            .map_err(|e| format!("cannot deserialize the key: {e}"))?;
        let v = self
            .value_serde
            .deserialize_nullable(&self.topic, value)
            .map_err(|e| format!("cannot deserialize the value: {e}"))?;
        strategy
            .assign(&k, &v, record_timestamp, partition_time)
            .map_err(invalid)
    }
}
