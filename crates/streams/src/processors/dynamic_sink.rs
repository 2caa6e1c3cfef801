//! The dynamic sink: a sink whose topic a user function picks per record
//! (Kafka Streams' `to(TopicNameExtractor, Produced)`).
//!
//! The topic a record's extractor names is checked before the record is
//! written: one of the application's internal topics (a repartition topic
//! or a changelog) stops the task, whatever the handler; then, the first
//! time this task meets the topic, the runner's [`TopicCatalog`] is asked
//! whether it exists (and the answer kept). A record for a topic that does
//! not exist goes to the production handler: fail names the topic and the
//! record, continue drops and counts it. Without a catalog (the test
//! driver) every topic exists.
//!
//! Owns the check's order and the record's description in errors; knows
//! neither the log nor how a runner partitions the output.
//!
//! [`TopicCatalog`]: crate::TopicCatalog

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::ProductionHandler;
use crate::error::{ProcessError, position};
use crate::processors::sink::{append, serialize};
use crate::record::{Record, RecordContext};
use crate::serde::SerdeRef;
use crate::topology::context::{DropReason, TaskContext};
use crate::topology::graph::Push;
use crate::topology::topic_catalog::{InternalTopics, TopicLookup};

/// Picks a record's topic from its key, value and context.
pub(crate) type TopicExtractor<K, V> =
    Arc<dyn Fn(&K, &V, &RecordContext<'_>) -> String + Send + Sync>;

pub(crate) struct DynamicSink<K, V> {
    pub(crate) node: String,
    pub(crate) extractor: TopicExtractor<K, V>,
    pub(crate) key_serde: SerdeRef<K>,
    pub(crate) value_serde: SerdeRef<V>,
    pub(crate) handler: ProductionHandler,
    pub(crate) internal: InternalTopics,
    /// Topics found to exist, each under one shared name (so a runner
    /// routing a run of records to one topic compares pointers).
    pub(crate) known: HashMap<String, Arc<str>>,
}

impl<K, V> DynamicSink<K, V> {
    /// The record, as errors and logs name it: the key when it is text, its
    /// source position and its timestamp.
    fn describe(cx: &TaskContext, key: Option<&[u8]>, timestamp: i64) -> String {
        let key = match key.map(std::str::from_utf8) {
            Some(Ok(text)) => format!("key {text:?}"),
            Some(Err(_)) => format!("a key of {} bytes", key.map_or(0, <[u8]>::len)),
            None => "a null key".to_owned(),
        };
        let source = match &*cx.meta.topic {
            "" => String::new(),
            topic => format!(
                " from topic {topic}{}",
                position(cx.meta.partition, cx.meta.offset)
            ),
        };
        format!("the record with {key}{source} at timestamp {timestamp}")
    }

    /// Whether `topic` may be written: `Ok(Some(name))` if it exists,
    /// `Ok(None)` if it does not and the handler continues.
    fn check(
        &mut self,
        cx: &mut TaskContext,
        topic: String,
        key: Option<&[u8]>,
        timestamp: i64,
    ) -> Result<Option<Arc<str>>, ProcessError> {
        let lookup = match &cx.topics {
            None => TopicLookup::Exists { partitions: 1 },
            Some(catalog) => {
                catalog
                    .lookup(&topic)
                    .map_err(|reason| ProcessError::TopicLookup {
                        node: self.node.clone(),
                        topic: topic.clone(),
                        reason,
                    })?
            }
        };
        let reason = match lookup {
            TopicLookup::Exists { .. } => {
                let name: Arc<str> = topic.as_str().into();
                self.known.insert(topic, name.clone());
                return Ok(Some(name));
            }
            TopicLookup::Missing => "does not exist".to_owned(),
            TopicLookup::InvalidName(why) => format!("is not a valid topic name: {why}"),
        };
        let record = Self::describe(cx, key, timestamp);
        match self.handler {
            ProductionHandler::Fail => Err(ProcessError::MissingTopic {
                node: self.node.clone(),
                topic,
                record,
                reason,
            }),
            ProductionHandler::Continue => {
                tracing::warn!(node = %self.node, %topic, "skipping {record}: the topic {reason}");
                cx.drop_record::<()>(
                    &self.node,
                    None,
                    timestamp,
                    DropReason::MissingTopic,
                    None,
                    true,
                );
                Ok(None)
            }
        }
    }
}

impl<K, V> Push<K, V> for DynamicSink<K, V> {
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        let picked = (self.extractor)(
            &rec.key,
            &rec.value,
            &RecordContext {
                topic: &cx.meta.topic,
                partition: cx.meta.partition,
                offset: cx.meta.offset,
                timestamp: rec.timestamp,
                headers: &rec.headers,
            },
        );
        let bytes = serialize(&picked, &self.key_serde, &self.value_serde, &rec)?;
        let topic = match self.known.get(&picked) {
            Some(name) => name.clone(),
            None if self.internal.contains(&picked) => {
                return Err(ProcessError::InternalTopic {
                    node: self.node.clone(),
                    record: Self::describe(cx, bytes.0.as_deref(), rec.timestamp),
                    topic: picked,
                });
            }
            None => match self.check(cx, picked, bytes.0.as_deref(), rec.timestamp)? {
                Some(name) => name,
                None => return Ok(()),
            },
        };
        append(cx, topic, bytes, rec);
        Ok(())
    }
}
