//! [`QueryableStores`]: the stores an application offers to the store
//! routes (`/stores...`, docs/operating.md#store-routes), each with its key
//! and value types, and the server's [`StoreAccess`] over them.
//!
//! Owns how text meets a store's types: a key from a URL is parsed by the
//! key type's `FromStr` (a `String` key is the text itself, an `i64` its
//! decimal digits), and keys and values are written back with `Display`.
//! A user key type offers its own text form by implementing both. Knows no
//! HTTP and no JSON (the server's); the queries are the runtime's.

use std::fmt::Display;
use std::ops::Bound;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use stoatflow_runtime::{
    AppHandle, Finality, KeyQuery, QueryAnswer, QueryError, RangeQuery, SessionQuery,
    StateQueryRequest, StoreQuery, WindowEntry, WindowQuery,
};
use stoatflow_server::{
    StoreAccess, StoreAccessError, StoreAnswer, StoreEntry, StoreInfo, StoreRequest, WindowFinality,
};

/// How long a store route waits for a committed answer: the listener
/// answers one request at a time.
const HTTP_QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// A key type a URL can name: parsed from text, written as text.
pub trait TextKey: FromStr<Err: Display> + Display + Ord + Clone + Send + Sync + 'static {}
impl<K: FromStr<Err: Display> + Display + Ord + Clone + Send + Sync + 'static> TextKey for K {}

/// A value type written as text.
pub trait TextValue: Display + Clone + Send + Sync + 'static {}
impl<V: Display + Clone + Send + Sync + 'static> TextValue for V {}

/// The stores the store routes may query, by name, typed.
#[derive(Default, Clone)]
pub struct QueryableStores {
    stores: Vec<Arc<dyn Queryable>>,
}

impl std::fmt::Debug for QueryableStores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.stores.iter().map(|s| s.info().name))
            .finish()
    }
}

impl QueryableStores {
    /// No store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The key-value store `name` (a table, `count`, `aggregate`), keys of
    /// type `K`, values of type `V`.
    #[must_use]
    pub fn key_value<K: TextKey, V: TextValue>(self, name: &str) -> Self {
        self.with(Typed::<K, V>::new(name, "keyValue"))
    }

    /// The window store `name` (a time or sliding windowed aggregation).
    #[must_use]
    pub fn window<K: TextKey, V: TextValue>(self, name: &str) -> Self {
        self.with(Typed::<K, V>::new(name, "window"))
    }

    /// The session store `name` (a session windowed aggregation).
    #[must_use]
    pub fn session<K: TextKey, V: TextValue>(self, name: &str) -> Self {
        self.with(Typed::<K, V>::new(name, "session"))
    }

    fn with(mut self, store: impl Queryable) -> Self {
        self.stores.push(Arc::new(store));
        self
    }

    /// The server's view of these stores on the application `app`.
    pub fn access(&self, app: AppHandle) -> Arc<dyn StoreAccess> {
        Arc::new(Access {
            app,
            stores: self.stores.clone(),
        })
    }
}

/// One registered store.
trait Queryable: Send + Sync + 'static {
    fn info(&self) -> StoreInfo;
    fn query(
        &self,
        app: &AppHandle,
        request: StoreRequest,
        latest: bool,
    ) -> Result<StoreAnswer, StoreAccessError>;
}

struct Typed<K, V> {
    name: String,
    kind: &'static str,
    _types: std::marker::PhantomData<fn() -> (K, V)>,
}

impl<K, V> Typed<K, V> {
    fn new(name: &str, kind: &'static str) -> Self {
        Typed {
            name: name.to_owned(),
            kind,
            _types: std::marker::PhantomData,
        }
    }
}

impl<K: TextKey, V: TextValue> Typed<K, V> {
    fn key(&self, text: &str) -> Result<K, StoreAccessError> {
        text.parse::<K>().map_err(|e| StoreAccessError::BadKey {
            store: self.name.clone(),
            key: text.to_owned(),
            expected: std::any::type_name::<K>(),
            reason: e.to_string(),
        })
    }

    fn ask<Q: StoreQuery>(
        &self,
        app: &AppHandle,
        query: Q,
        latest: bool,
    ) -> Result<QueryAnswer<Q::Answer>, StoreAccessError> {
        let mut request =
            StateQueryRequest::in_store(&self.name, query).with_timeout(HTTP_QUERY_TIMEOUT);
        if latest {
            request = request.latest_processed();
        }
        app.query(request).map_err(|e| self.refused(e))
    }

    fn refused(&self, e: QueryError) -> StoreAccessError {
        let store = self.name.clone();
        match e {
            QueryError::NoStore { .. } => StoreAccessError::NoStore {
                store,
                known: String::new(),
            },
            QueryError::StoreType { .. } | QueryError::NotWindowed { .. } => {
                StoreAccessError::WrongKind {
                    store,
                    kind: self.kind,
                    reason: e.to_string(),
                }
            }
            other => StoreAccessError::Unavailable {
                store,
                reason: other.to_string(),
            },
        }
    }

    fn wrong_kind(&self, asked: &str) -> StoreAccessError {
        StoreAccessError::WrongKind {
            store: self.name.clone(),
            kind: self.kind,
            reason: format!("it answers no {asked}"),
        }
    }
}

impl<K: TextKey, V: TextValue> Queryable for Typed<K, V> {
    fn info(&self) -> StoreInfo {
        StoreInfo {
            name: self.name.clone(),
            kind: self.kind,
        }
    }

    fn query(
        &self,
        app: &AppHandle,
        request: StoreRequest,
        latest: bool,
    ) -> Result<StoreAnswer, StoreAccessError> {
        match (self.kind, request) {
            ("keyValue", StoreRequest::Key { key }) => {
                let k = self.key(&key)?;
                let a = self.ask(app, KeyQuery::<K, V>::with_key(k.clone()), latest)?;
                let entries = a.answer.iter().map(|v| StoreEntry {
                    key: k.to_string(),
                    value: v.value.to_string(),
                    timestamp: Some(v.timestamp),
                    window: None,
                    finality: None,
                });
                Ok(answer(&a, entries.collect(), false))
            }
            ("keyValue", StoreRequest::Range { from, to, limit }) => {
                let bound = |b: Option<String>| match b {
                    None => Ok(Bound::Unbounded),
                    Some(text) => self.key(&text).map(Bound::Included),
                };
                let q = RangeQuery::<K, V>::with_range(bound(from)?, bound(to)?).with_limit(limit);
                let a = self.ask(app, q, latest)?;
                let entries = a.answer.entries.iter().map(|(k, v)| StoreEntry {
                    key: k.to_string(),
                    value: v.value.to_string(),
                    timestamp: Some(v.timestamp),
                    window: None,
                    finality: None,
                });
                Ok(answer(&a, entries.collect(), a.answer.truncated))
            }
            ("window", StoreRequest::Windows { key, from, to }) => {
                let k = self.key(&key)?;
                let q = WindowQuery::<K, V>::with_key_and_window_starts(k.clone(), from, to);
                let a = self.ask(app, q, latest)?;
                let entries = a.answer.iter().map(|w| {
                    window_entry(&k, w, w.value.value.to_string(), Some(w.value.timestamp))
                });
                Ok(answer(&a, entries.collect(), false))
            }
            ("session", StoreRequest::Windows { key, from, to }) => {
                let k = self.key(&key)?;
                let a = self.ask(app, SessionQuery::<K, V>::with_key(k.clone()), latest)?;
                let entries = a
                    .answer
                    .iter()
                    .filter(|s| (from..=to).contains(&s.start))
                    .map(|s| window_entry(&k, s, s.value.to_string(), None));
                Ok(answer(&a, entries.collect(), false))
            }
            (_, StoreRequest::Key { .. }) => Err(self.wrong_kind("single key (ask .../windows)")),
            (_, StoreRequest::Range { .. }) => Err(self.wrong_kind("key range")),
            (_, StoreRequest::Windows { .. }) => Err(self.wrong_kind("windows")),
        }
    }
}

fn window_entry<K: Display, X>(
    key: &K,
    w: &WindowEntry<X>,
    value: String,
    timestamp: Option<i64>,
) -> StoreEntry {
    StoreEntry {
        key: key.to_string(),
        value,
        timestamp,
        window: Some((w.start, w.end)),
        finality: Some(WindowFinality {
            name: w.finality.name(),
            watermark_to_close_ms: match w.finality {
                Finality::Open {
                    watermark_to_close_ms,
                } => Some(watermark_to_close_ms),
                _ => None,
            },
        }),
    }
}

fn answer<A>(a: &QueryAnswer<A>, entries: Vec<StoreEntry>, truncated: bool) -> StoreAnswer {
    StoreAnswer {
        entries,
        truncated,
        barrier: a.barrier,
        watermark: a.watermark.as_millis(),
        floor: a.floor.as_millis(),
        position: a
            .position
            .iter()
            .map(|p| (p.topic.clone(), p.partition, p.offset))
            .collect(),
    }
}

struct Access {
    app: AppHandle,
    stores: Vec<Arc<dyn Queryable>>,
}

impl StoreAccess for Access {
    fn stores(&self) -> Vec<StoreInfo> {
        self.stores.iter().map(|s| s.info()).collect()
    }

    fn query(
        &self,
        store: &str,
        request: StoreRequest,
        latest: bool,
    ) -> Result<StoreAnswer, StoreAccessError> {
        let Some(s) = self.stores.iter().find(|s| s.info().name == store) else {
            let known: Vec<String> = self.stores.iter().map(|s| s.info().name).collect();
            return Err(StoreAccessError::NoStore {
                store: store.to_owned(),
                known: known.join(", "),
            });
        };
        s.query(&self.app, request, latest)
    }
}
