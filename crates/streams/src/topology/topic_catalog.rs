//! What a sink that picks its topic per record may ask of whoever runs the
//! task: whether a topic exists and how many partitions it has
//! ([`TopicCatalog`]), and which topics are the application's own and never
//! written through such a sink ([`InternalTopics`]).
//!
//! The runtime answers from the log (looked up once, then cached); the test
//! driver installs no catalog, so every topic exists there, as in Kafka
//! Streams' test driver. Knows no log and no thread: the answer is data.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

/// What a [`TopicCatalog`] knows of a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicLookup {
    /// It exists with this many partitions.
    Exists {
        /// Its partition count, for the partitioner.
        partitions: u32,
    },
    /// There is no such topic.
    Missing,
    /// The log would refuse the name (why, in words).
    InvalidName(String),
}

/// The topics a task's dynamic sinks may write, as its runner sees them.
pub trait TopicCatalog: Send + Sync + fmt::Debug {
    /// Looks `topic` up (its name as on the log).
    ///
    /// # Errors
    /// The lookup itself failed (the log is unreachable): the task stops
    /// with this text, since nothing is known of the topic.
    fn lookup(&self, topic: &str) -> Result<TopicLookup, String>;
}

/// The application's internal topics, which a dynamic sink must not write:
/// the topology's repartition and subscription topics by their topology
/// names, and on the log every `<application.id>-…-repartition`,
/// `<application.id>-…-changelog` and `<application.id>-<internal topic>`.
#[derive(Debug, Clone, Default)]
pub(crate) struct InternalTopics {
    pub(crate) application_id: String,
    /// The internal sources' topics, as the topology names them.
    pub(crate) topology: Arc<BTreeSet<String>>,
}

impl InternalTopics {
    /// Whether `topic` is one of them.
    pub(crate) fn contains(&self, topic: &str) -> bool {
        if self.topology.contains(topic) {
            return true;
        }
        let Some(rest) = topic
            .strip_prefix(self.application_id.as_str())
            .and_then(|r| r.strip_prefix('-'))
        else {
            return false;
        };
        rest.ends_with("-repartition")
            || rest.ends_with("-changelog")
            || self.topology.contains(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_topics_are_the_topologys_and_the_applications_prefixed_ones() {
        let internal = InternalTopics {
            application_id: "app".into(),
            topology: Arc::new(["by-user-repartition".to_owned(), "fk-subscription".into()].into()),
        };
        for topic in [
            "by-user-repartition",
            "fk-subscription",
            "app-by-user-repartition",
            "app-fk-subscription",
            "app-counts-changelog",
            "app-other-repartition",
            "app-stoatflow-watermark-changelog",
        ] {
            assert!(internal.contains(topic), "{topic}");
        }
        for topic in [
            "orders",
            "other-app-x-changelog",
            "app-orders",
            "my-repartition",
            "app-changelog",
        ] {
            assert!(!internal.contains(topic), "{topic}");
        }
    }
}
