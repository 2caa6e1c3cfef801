//! [`LogTopics`]: the topics dynamic sinks pick, looked up on the log the
//! first time they are met and kept: the lanes ask it whether a topic
//! exists before a record is written to it, the committer how many
//! partitions it has to partition the record. One per engine, shared.
//!
//! A topic found is kept for the engine's life (its partition count does not
//! change under it); a missing one is looked up again at most once per
//! [`RECHECK_MISSING`], so a topic created while the application runs is
//! found without a look-up per record meanwhile. Owns the cache; knows
//! nothing of sinks, records or the production handler.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stoatflow_log::Log;
use stoatflow_streams::{TopicCatalog, TopicLookup};

/// How long a topic found missing is taken to stay missing.
pub(crate) const RECHECK_MISSING: Duration = Duration::from_secs(1);

/// What the log said of a topic, and when.
#[derive(Debug, Clone)]
enum Known {
    Found(TopicLookup),
    Missing(Instant),
}

/// The log's topics as dynamic sinks see them.
pub(crate) struct LogTopics<L: Log> {
    log: Arc<L>,
    known: Mutex<HashMap<String, Known>>,
}

impl<L: Log> std::fmt::Debug for LogTopics<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogTopics").finish_non_exhaustive()
    }
}

impl<L: Log> LogTopics<L> {
    pub(crate) fn new(log: Arc<L>) -> Self {
        LogTopics {
            log,
            known: Mutex::new(HashMap::new()),
        }
    }

    fn ask_log(&self, topic: &str) -> Result<TopicLookup, String> {
        if let Err(e) = stoatflow_log::check_topic_name(topic) {
            return Ok(TopicLookup::InvalidName(e.to_string()));
        }
        match self.log.describe_topic(topic) {
            Ok(Some(shape)) => Ok(TopicLookup::Exists {
                partitions: shape.partitions,
            }),
            Ok(None) => Ok(TopicLookup::Missing),
            Err(e) => Err(e.to_string()),
        }
    }
}

impl<L: Log> TopicCatalog for LogTopics<L> {
    fn lookup(&self, topic: &str) -> Result<TopicLookup, String> {
        let now = Instant::now();
        match self.known.lock().expect("topic cache lock").get(topic) {
            Some(Known::Found(found)) => return Ok(found.clone()),
            Some(Known::Missing(at)) if now.duration_since(*at) < RECHECK_MISSING => {
                return Ok(TopicLookup::Missing);
            }
            _ => {}
        }
        let answer = self.ask_log(topic)?;
        let keep = match &answer {
            TopicLookup::Missing => Known::Missing(now),
            found => Known::Found(found.clone()),
        };
        self.known
            .lock()
            .expect("topic cache lock")
            .insert(topic.to_owned(), keep);
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use stoatflow_log::{EmbeddedLog, TopicSpec};

    use super::*;

    #[test]
    fn a_found_topic_is_kept_and_a_missing_one_is_looked_up_again_later() {
        let log = Arc::new(EmbeddedLog::in_memory());
        log.create_topic(&TopicSpec::new("there", 3)).unwrap();
        let topics = LogTopics::new(log.clone());
        assert_eq!(
            topics.lookup("there"),
            Ok(TopicLookup::Exists { partitions: 3 })
        );
        assert_eq!(topics.lookup("later"), Ok(TopicLookup::Missing));
        log.create_topic(&TopicSpec::new("later", 2)).unwrap();
        // Within the recheck interval the cached answer stands.
        assert_eq!(topics.lookup("later"), Ok(TopicLookup::Missing));
        topics.known.lock().unwrap().insert(
            "later".into(),
            Known::Missing(Instant::now() - RECHECK_MISSING),
        );
        assert_eq!(
            topics.lookup("later"),
            Ok(TopicLookup::Exists { partitions: 2 })
        );
        assert!(matches!(
            topics.lookup("no spaces allowed"),
            Ok(TopicLookup::InvalidName(why)) if why.contains("no spaces allowed")
        ));
    }
}
