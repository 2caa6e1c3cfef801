//! What a run left behind: every output record rendered as text, per step
//! and topic; the metrics; the error that stopped it; and read access to the
//! stores and changelogs for tests that inspect state.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use stoatflow_state::ChangelogRecord;
use stoatflow_streams::Headers;
use stoatflow_testing::{DriverMetrics, TopologyTestDriver};

use super::cells::Cell;

/// An output record as text: key, value (`None`: a tombstone), timestamp.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Out {
    pub key: String,
    pub value: Option<String>,
    pub ts: i64,
}

/// `(key, value, ts)`.
pub fn out(key: impl Into<Cell>, value: impl Into<Cell>, ts: i64) -> Out {
    Out {
        key: key.into().render(),
        value: Some(value.into().render()),
        ts,
    }
}

/// `(key, null, ts)`.
pub fn tombstone(key: impl Into<Cell>, ts: i64) -> Out {
    Out {
        key: key.into().render(),
        value: None,
        ts,
    }
}

impl<K: Into<Cell>, V: Into<Cell>> From<(K, V, i64)> for Out {
    fn from((key, value, ts): (K, V, i64)) -> Self {
        out(key, value, ts)
    }
}

/// The records that became readable at one step, per topic.
pub(super) type Readable = BTreeMap<&'static str, Vec<(Out, Headers)>>;

/// What a run produced.
pub struct Outcome {
    pub(super) per_step: Vec<Readable>,
    /// Metrics at the end.
    pub metrics: DriverMetrics,
    /// The error that stopped the run, rendered, and the step it came at.
    pub error: Option<(usize, String)>,
    pub(super) driver: TopologyTestDriver,
    /// The persistent run's state directory, removed when the outcome goes.
    pub(super) _state_dir: Option<tempfile::TempDir>,
}

impl Outcome {
    /// Every record of `topic`, in order.
    pub fn all(&self, topic: &str) -> Vec<Out> {
        self.since(0, topic)
    }

    /// The records of `topic` that became readable at step `i` or later.
    pub fn since(&self, i: usize, topic: &str) -> Vec<Out> {
        self.per_step[i.min(self.per_step.len())..]
            .iter()
            .filter_map(|m| m.get(topic))
            .flatten()
            .map(|(o, _)| o.clone())
            .collect()
    }

    /// The records of `topic` that became readable at step `i`.
    pub fn at(&self, i: usize, topic: &str) -> Vec<Out> {
        self.per_step[i]
            .get(topic)
            .map(|v| v.iter().map(|(o, _)| o.clone()).collect())
            .unwrap_or_default()
    }

    /// Every record of `topic` with its headers.
    pub fn with_headers(&self, topic: &str) -> Vec<(Out, Headers)> {
        self.per_step
            .iter()
            .filter_map(|m| m.get(topic))
            .flatten()
            .cloned()
            .collect()
    }

    /// The store `name`, typed with its concrete type.
    ///
    /// # Panics
    /// If the topology has no such store of that type.
    pub fn store<S: 'static>(&self, name: &str) -> Rc<RefCell<S>> {
        self.driver
            .store::<S>(name)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Every store's name.
    pub fn store_names(&self) -> Vec<String> {
        self.driver.store_names()
    }

    /// The changelog records committed for `store`.
    pub fn changelog(&self, store: &str) -> Vec<ChangelogRecord> {
        self.driver.changelog(store)
    }
}
