//! What flows between processors: [`Record`], its [`Headers`], the
//! windowed key types [`Window`] and [`Windowed`], and a table update with
//! its old value, [`Change`], and what a topic-name extractor sees of a
//! record besides key and value, [`RecordContext`].
//!
//! Records are typed; nothing here serializes.

use std::fmt;
use std::sync::Arc;

/// Record headers: an ordered list of (key, optional value), shared cheaply.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Headers(Option<Arc<Vec<(String, Option<Vec<u8>>)>>>);

impl Headers {
    /// No headers.
    pub const fn empty() -> Self {
        Headers(None)
    }

    /// Headers from pairs.
    pub fn from_pairs(pairs: Vec<(String, Option<Vec<u8>>)>) -> Self {
        if pairs.is_empty() {
            Headers(None)
        } else {
            Headers(Some(Arc::new(pairs)))
        }
    }

    /// Adds a header (copy-on-write).
    pub fn add(&mut self, key: impl Into<String>, value: Option<Vec<u8>>) {
        let v = self.0.get_or_insert_with(|| Arc::new(Vec::new()));
        Arc::make_mut(v).push((key.into(), value));
    }

    /// The headers, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<&[u8]>)> {
        self.0
            .iter()
            .flat_map(|v| v.iter().map(|(k, v)| (k.as_str(), v.as_deref())))
    }

    /// The last value of `key`.
    pub fn last(&self, key: &str) -> Option<Option<&[u8]>> {
        self.iter()
            .filter(|(k, _)| *k == key)
            .map(|(_, v)| v)
            .last()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|v| v.is_empty())
    }
}

impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|(k, v)| (k, v.map(<[u8]>::len))))
            .finish()
    }
}

/// A typed record between processors: key, value, event time (ms) and headers.
#[derive(Debug, Clone, PartialEq)]
pub struct Record<K, V> {
    /// The key.
    pub key: K,
    /// The value.
    pub value: V,
    /// Event time in ms since the epoch.
    pub timestamp: i64,
    /// Headers, carried along.
    pub headers: Headers,
}

impl<K, V> Record<K, V> {
    /// A record without headers.
    pub fn new(key: K, value: V, timestamp: i64) -> Self {
        Record {
            key,
            value,
            timestamp,
            headers: Headers::empty(),
        }
    }

    /// Same metadata, new key and value.
    pub fn with<K2, V2>(self, key: K2, value: V2) -> Record<K2, V2> {
        Record {
            key,
            value,
            timestamp: self.timestamp,
            headers: self.headers,
        }
    }
}

/// A table update with the value it replaces, as Kafka Streams' `Change<V>`:
/// `new` is `None` for a delete, `old` is `None` when the key had no value.
///
/// It flows where a table is regrouped (`KTable::group_by`): the subtractor
/// of a `KGroupedTable` aggregation is applied to `old`, the adder to `new`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change<V> {
    /// The value after the update.
    pub new: Option<V>,
    /// The value before it.
    pub old: Option<V>,
}

impl<V> Change<V> {
    /// An update from `old` to `new`.
    pub fn new(new: Option<V>, old: Option<V>) -> Self {
        Change { new, old }
    }
}

/// A window: `[start, end)` for time and session windows' bounds as Kafka
/// Streams reports them (session windows and sliding windows are inclusive
/// at both ends; see their modules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Window {
    /// Start, ms.
    pub start: i64,
    /// End, ms.
    pub end: i64,
}

impl Window {
    /// A window from its bounds.
    pub const fn new(start: i64, end: i64) -> Self {
        Window { start, end }
    }
}

/// A key qualified by its window, as produced by windowed aggregations.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Windowed<K> {
    /// The record key.
    pub key: K,
    /// Its window.
    pub window: Window,
}

impl<K> Windowed<K> {
    /// Key `key` in `window`.
    pub fn new(key: K, window: Window) -> Self {
        Windowed { key, window }
    }
}

impl<K: fmt::Display> fmt::Display for Windowed<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}@{}/{}]",
            self.key, self.window.start, self.window.end
        )
    }
}

/// What a dynamic sink's topic-name extractor sees of a record besides its
/// key and value (Kafka Streams' `RecordContext`): where the record being
/// processed came from, its timestamp and its headers.
#[derive(Debug, Clone, Copy)]
pub struct RecordContext<'a> {
    /// The source topic of the record being processed (empty for records a
    /// punctuator or an emission pass created).
    pub topic: &'a str,
    /// Its source partition, if it came from one.
    pub partition: Option<i32>,
    /// Its source offset, if it came from one.
    pub offset: Option<i64>,
    /// The record's timestamp, ms.
    pub timestamp: i64,
    /// The record's headers.
    pub headers: &'a Headers,
}
