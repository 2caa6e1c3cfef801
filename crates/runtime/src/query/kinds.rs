//! The query kinds: [`KeyQuery`] and [`RangeQuery`] on a key-value store,
//! [`WindowQuery`] on a window store, [`SessionQuery`] on a session store,
//! each typed as the store is ([`StoreQuery`]: what one task's store answers,
//! and how the tasks' parts merge).
//!
//! Reads go through the store traits, so both engines answer alike. Knows
//! nothing of lanes, barriers or commits.

use std::ops::Bound;

use stoatflow_state::{KeyValueStore, SessionStore, ValueAndTimestamp, WindowStore};
use stoatflow_streams::{KeyValueStoreOf, SessionStoreOf, StreamTask, WindowStoreOf};

use crate::query::error::QueryError;
use crate::query::finality::{Finality, TaskClock};

/// A query one task's store answers; the application merges the tasks'
/// parts (a store has one instance per task of its sub-topology).
pub trait StoreQuery: Send + Sync + 'static {
    /// One task's part of the answer.
    type Part: Send + 'static;
    /// The whole answer.
    type Answer: Send + 'static;

    /// The part task `task`'s store `store` holds, read at `clock`; `None`
    /// if the task has no store of that name.
    ///
    /// # Errors
    /// The store is of another type, or refused the read.
    fn read(
        &self,
        task: &StreamTask,
        store: &str,
        clock: TaskClock,
    ) -> Result<Option<Self::Part>, QueryError>;

    /// The parts of every task, merged.
    fn merge(&self, parts: Vec<Self::Part>) -> Self::Answer;
}

/// The typed store `store` of `task`, if it has one.
fn typed<S: 'static>(
    task: &StreamTask,
    store: &str,
) -> Result<Option<std::rc::Rc<std::cell::RefCell<S>>>, QueryError> {
    match task.store::<S>(store) {
        Some(s) => Ok(Some(s)),
        None => match task.store_type_name(store) {
            Some(actual) => Err(QueryError::StoreType {
                store: store.to_owned(),
                expected: std::any::type_name::<S>(),
                actual,
            }),
            None => Ok(None),
        },
    }
}

fn refused(store: &str) -> impl FnOnce(stoatflow_state::StateError) -> QueryError + '_ {
    move |e| QueryError::Store {
        store: store.to_owned(),
        message: e.to_string(),
    }
}

/// The value of one key of a key-value store (a table, a non-windowed
/// aggregation): Kafka Streams' `KeyQuery`.
#[derive(Debug, Clone)]
pub struct KeyQuery<K, V> {
    key: K,
    _v: std::marker::PhantomData<fn() -> V>,
}

impl<K, V> KeyQuery<K, V> {
    /// The value of `key`.
    pub fn with_key(key: K) -> Self {
        KeyQuery {
            key,
            _v: std::marker::PhantomData,
        }
    }
}

impl<K, V> StoreQuery for KeyQuery<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
{
    type Part = Option<ValueAndTimestamp<V>>;
    type Answer = Option<ValueAndTimestamp<V>>;

    fn read(
        &self,
        task: &StreamTask,
        store: &str,
        _clock: TaskClock,
    ) -> Result<Option<Self::Part>, QueryError> {
        let Some(s) = typed::<KeyValueStoreOf<K, V>>(task, store)? else {
            return Ok(None);
        };
        let value = s.borrow().get(&self.key).map_err(refused(store))?;
        Ok(Some(value))
    }

    fn merge(&self, parts: Vec<Self::Part>) -> Self::Answer {
        parts.into_iter().flatten().next()
    }
}

/// The keys of a key-value store within bounds, in key order, at most
/// `limit` of them: Kafka Streams' `RangeQuery`.
#[derive(Debug, Clone)]
pub struct RangeQuery<K, V> {
    from: Bound<K>,
    to: Bound<K>,
    limit: usize,
    _v: std::marker::PhantomData<fn() -> V>,
}

/// A range's answer: its entries in key order, and whether the limit cut it.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeAnswer<K, V> {
    /// The entries, in key order.
    pub entries: Vec<(K, ValueAndTimestamp<V>)>,
    /// More keys lie within the bounds: ask again from after the last one.
    pub truncated: bool,
}

/// How many entries a range or window answer holds unless asked otherwise.
pub const DEFAULT_LIMIT: usize = 1_000;

impl<K, V> RangeQuery<K, V> {
    /// The keys between `from` and `to`, at most [`DEFAULT_LIMIT`].
    pub fn with_range(from: Bound<K>, to: Bound<K>) -> Self {
        RangeQuery {
            from,
            to,
            limit: DEFAULT_LIMIT,
            _v: std::marker::PhantomData,
        }
    }

    /// At most `limit` entries (the first in key order).
    #[must_use]
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }
}

impl<K, V> StoreQuery for RangeQuery<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    type Part = Vec<(K, ValueAndTimestamp<V>)>;
    type Answer = RangeAnswer<K, V>;

    fn read(
        &self,
        task: &StreamTask,
        store: &str,
        _clock: TaskClock,
    ) -> Result<Option<Self::Part>, QueryError> {
        let Some(s) = typed::<KeyValueStoreOf<K, V>>(task, store)? else {
            return Ok(None);
        };
        let mut entries = s
            .borrow()
            .range(self.from.as_ref(), self.to.as_ref())
            .map_err(refused(store))?;
        // One more than the limit says whether it cut the answer.
        entries.truncate(self.limit.saturating_add(1));
        Ok(Some(entries))
    }

    fn merge(&self, parts: Vec<Self::Part>) -> Self::Answer {
        let mut entries: Vec<_> = parts.into_iter().flatten().collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let truncated = entries.len() > self.limit;
        entries.truncate(self.limit);
        RangeAnswer { entries, truncated }
    }
}

/// One window of an answer, with how final it is.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowEntry<V> {
    /// The window's start (a session: its first record's time), ms.
    pub start: i64,
    /// Its end (a session: its last record's time), ms.
    pub end: i64,
    /// The aggregate.
    pub value: V,
    /// Whether it can still change.
    pub finality: Finality,
}

/// The windows of one key whose start is within `from..=to`, by start:
/// Kafka Streams' `WindowKeyQuery`.
#[derive(Debug, Clone)]
pub struct WindowQuery<K, V> {
    key: K,
    from: i64,
    to: i64,
    _v: std::marker::PhantomData<fn() -> V>,
}

impl<K, V> WindowQuery<K, V> {
    /// The windows of `key` starting within `from..=to` (ms).
    pub fn with_key_and_window_starts(key: K, from: i64, to: i64) -> Self {
        WindowQuery {
            key,
            from,
            to,
            _v: std::marker::PhantomData,
        }
    }
}

/// The shape of the windowed store `store`; an error if it holds no windows.
fn shape_of(task: &StreamTask, store: &str) -> Result<stoatflow_streams::WindowShape, QueryError> {
    task.store_window_shape(store)
        .ok_or_else(|| QueryError::NotWindowed {
            store: store.to_owned(),
        })
}

impl<K, V> StoreQuery for WindowQuery<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
{
    type Part = Vec<WindowEntry<ValueAndTimestamp<V>>>;
    type Answer = Vec<WindowEntry<ValueAndTimestamp<V>>>;

    fn read(
        &self,
        task: &StreamTask,
        store: &str,
        clock: TaskClock,
    ) -> Result<Option<Self::Part>, QueryError> {
        let Some(s) = typed::<WindowStoreOf<K, V>>(task, store)? else {
            return Ok(None);
        };
        let shape = shape_of(task, store)?;
        let windows = s
            .borrow()
            .fetch_key_range(&self.key, self.from, self.to)
            .map_err(refused(store))?;
        let entries = windows
            .into_iter()
            .map(|(start, value)| {
                let end = shape.end_of(start, start);
                WindowEntry {
                    start,
                    end,
                    value,
                    finality: Finality::of(&shape, start, end, clock),
                }
            })
            .collect();
        Ok(Some(entries))
    }

    fn merge(&self, parts: Vec<Self::Part>) -> Self::Answer {
        let mut entries: Vec<_> = parts.into_iter().flatten().collect();
        entries.sort_by_key(|e| e.start);
        entries
    }
}

/// The sessions of one key, by end then start: Kafka Streams'
/// `WindowKeyQuery` on a session store (`ReadOnlySessionStore::fetch`).
#[derive(Debug, Clone)]
pub struct SessionQuery<K, V> {
    key: K,
    _v: std::marker::PhantomData<fn() -> V>,
}

impl<K, V> SessionQuery<K, V> {
    /// Every session of `key` the store holds.
    pub fn with_key(key: K) -> Self {
        SessionQuery {
            key,
            _v: std::marker::PhantomData,
        }
    }
}

impl<K, V> StoreQuery for SessionQuery<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
{
    type Part = Vec<WindowEntry<V>>;
    type Answer = Vec<WindowEntry<V>>;

    fn read(
        &self,
        task: &StreamTask,
        store: &str,
        clock: TaskClock,
    ) -> Result<Option<Self::Part>, QueryError> {
        let Some(s) = typed::<SessionStoreOf<K, V>>(task, store)? else {
            return Ok(None);
        };
        let shape = shape_of(task, store)?;
        let sessions = s
            .borrow()
            .find_sessions(&self.key, i64::MIN, i64::MAX)
            .map_err(refused(store))?;
        let entries = sessions
            .into_iter()
            .map(|(w, value)| WindowEntry {
                start: w.start,
                end: w.end,
                value,
                finality: Finality::of(&shape, w.start, w.end, clock),
            })
            .collect();
        Ok(Some(entries))
    }

    fn merge(&self, parts: Vec<Self::Part>) -> Self::Answer {
        let mut entries: Vec<_> = parts.into_iter().flatten().collect();
        entries.sort_by_key(|e| (e.end, e.start));
        entries
    }
}
