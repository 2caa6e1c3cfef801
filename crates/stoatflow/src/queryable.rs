//! [`QueryableStores`]: the stores an application offers to the store
//! routes (`/stores...`, docs/operating.md#store-routes), each with its key
//! and value types, and the server's [`StoreAccess`] over them.
//!
//! Owns how text meets a store's types: a key from a URL is parsed by the
//! key type's `FromStr` (a `String` key is the text itself, an `i64` its
//! decimal digits), and keys and values are written back with `Display`.
//! A user key type offers its own text form by implementing both. Knows no
//! HTTP and no JSON (the server's); the queries are the runtime's.
//!
//! Owns, too, which instance a key route is for: a key is placed by the
//! store's key serde (`Serdes::string()` for `String` keys and
//! `Serdes::i64()` for `i64` ones unless [`QueryableStores::with_key_serde`]
//! names another), and a key another instance owns is refused naming that
//! instance's `application.server` (docs/queries.md#over-http), unless the
//! read allows stale answers and this instance keeps a standby copy of it.

use std::any::Any;
use std::fmt::Display;
use std::ops::Bound;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use stoatflow_runtime::{
    AppHandle, Finality, InstanceInfo, KeyQuery, KeyQueryMetadata, MetadataError, QueryAnswer,
    QueryError, RangeQuery, SessionQuery, StaleRead, StateQueryRequest, StoreQuery, WindowEntry,
    WindowQuery,
};
use stoatflow_server::{
    KeyHolder, KeyMetadata, StaleChangelog, StaleCopy, StoreAccess, StoreAccessError, StoreAnswer,
    StoreEntry, StoreInfo, StoreRead, StoreRequest, WindowFinality,
};
use stoatflow_streams::{Serde, SerdeRef, Serdes};

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

    /// Places the keys of the store `name` (registered before, with keys of
    /// type `K`) by `serde`: the serde its source topic's keys are written
    /// with, so that a key route knows which instance owns a key
    /// (docs/queries.md#over-http). A store of another key type, or none
    /// of that name, is left as it is.
    #[must_use]
    pub fn with_key_serde<K: TextKey>(
        mut self,
        name: &str,
        serde: impl Serde<K> + 'static,
    ) -> Self {
        let serde: SerdeRef<K> = Arc::new(serde);
        for store in &mut self.stores {
            if store.info().name == name
                && let Some(keyed) = store.keyed(&serde)
            {
                *store = keyed;
            }
        }
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
    /// This store placing keys by `serde` (a `SerdeRef<K>`), if `K` is
    /// its key type.
    fn keyed(&self, serde: &dyn Any) -> Option<Arc<dyn Queryable>>;
    /// Where `key` lives.
    fn metadata(&self, app: &AppHandle, key: &str) -> Result<KeyMetadata, StoreAccessError>;
    fn query(
        &self,
        app: &AppHandle,
        request: StoreRequest,
        read: StoreRead,
    ) -> Result<StoreAnswer, StoreAccessError>;
}

struct Typed<K, V> {
    name: String,
    kind: &'static str,
    /// What places a key on its partition; `None`: every key is answered
    /// here.
    key_serde: Option<SerdeRef<K>>,
    _types: std::marker::PhantomData<fn() -> V>,
}

impl<K: 'static, V> Typed<K, V> {
    fn new(name: &str, kind: &'static str) -> Self {
        Typed {
            name: name.to_owned(),
            kind,
            key_serde: default_key_serde::<K>(),
            _types: std::marker::PhantomData,
        }
    }
}

/// The serde a key type is written with unless told otherwise: the
/// string serde for `String`, the 64-bit integer one for `i64`.
fn default_key_serde<K: 'static>() -> Option<SerdeRef<K>> {
    let string: SerdeRef<String> = Arc::new(Serdes::string());
    let long: SerdeRef<i64> = Arc::new(Serdes::i64());
    let known: [&dyn Any; 2] = [&string, &long];
    known
        .into_iter()
        .find_map(|s| s.downcast_ref::<SerdeRef<K>>())
        .cloned()
}

fn holder(i: &InstanceInfo) -> KeyHolder {
    KeyHolder {
        member: i.member.clone(),
        server: i.server.as_ref().map(ToString::to_string),
        local: i.local,
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

    /// Where `k` lives, `None` when no serde places it.
    fn locate(&self, app: &AppHandle, k: &K) -> Option<Result<KeyQueryMetadata, StoreAccessError>> {
        let serde = self.key_serde.as_ref()?;
        Some(
            app.query_metadata_for_key(&self.name, k, &**serde)
                .map_err(|e| match e {
                    MetadataError::UnknownStore { .. } => StoreAccessError::NoStore {
                        store: self.name.clone(),
                        known: String::new(),
                    },
                    other => StoreAccessError::Unavailable {
                        store: self.name.clone(),
                        reason: other.to_string(),
                    },
                }),
        )
    }

    /// `Err` naming the owner when another instance owns `k`.
    /// Whether `k` is answered here: its owner is this instance, or, with
    /// stale answers allowed (`stale`), it keeps a standby copy of it.
    fn here(
        &self,
        app: &AppHandle,
        text: &str,
        k: &K,
        stale: bool,
    ) -> Result<(), StoreAccessError> {
        match self.locate(app, k).transpose()? {
            Some(m) if stale && m.standbys.iter().any(|s| s.local) => Ok(()),
            Some(m) if !m.active.local => Err(StoreAccessError::Elsewhere {
                store: self.name.clone(),
                key: text.to_owned(),
                owner: m.active_host().map(ToString::to_string),
                member: m.active.member,
                partition: m.partition,
            }),
            _ => Ok(()),
        }
    }

    fn ask<Q: StoreQuery>(
        &self,
        app: &AppHandle,
        query: Q,
        read: StoreRead,
    ) -> Result<QueryAnswer<Q::Answer>, StoreAccessError> {
        let mut request =
            StateQueryRequest::in_store(&self.name, query).with_timeout(HTTP_QUERY_TIMEOUT);
        if read.latest {
            request = request.latest_processed();
        }
        if read.stale {
            request = request.enable_stale();
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

    fn keyed(&self, serde: &dyn Any) -> Option<Arc<dyn Queryable>> {
        let serde = serde.downcast_ref::<SerdeRef<K>>()?;
        Some(Arc::new(Typed::<K, V> {
            name: self.name.clone(),
            kind: self.kind,
            key_serde: Some(serde.clone()),
            _types: std::marker::PhantomData,
        }))
    }

    fn metadata(&self, app: &AppHandle, key: &str) -> Result<KeyMetadata, StoreAccessError> {
        let k = self.key(key)?;
        let Some(m) = self.locate(app, &k).transpose()? else {
            return Err(StoreAccessError::Unavailable {
                store: self.name.clone(),
                reason: format!(
                    "no key serde places its {} keys (QueryableStores::with_key_serde)",
                    std::any::type_name::<K>()
                ),
            });
        };
        Ok(KeyMetadata {
            partition: m.partition,
            active: holder(&m.active),
            standbys: m.standbys.iter().map(holder).collect(),
        })
    }

    fn query(
        &self,
        app: &AppHandle,
        request: StoreRequest,
        read: StoreRead,
    ) -> Result<StoreAnswer, StoreAccessError> {
        match (self.kind, request) {
            ("keyValue", StoreRequest::Key { key }) => {
                let k = self.key(&key)?;
                self.here(app, &key, &k, read.stale)?;
                let a = self.ask(app, KeyQuery::<K, V>::with_key(k.clone()), read)?;
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
                let a = self.ask(app, q, read)?;
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
                self.here(app, &key, &k, read.stale)?;
                let q = WindowQuery::<K, V>::with_key_and_window_starts(k.clone(), from, to);
                let a = self.ask(app, q, read)?;
                let entries = a.answer.iter().map(|w| {
                    window_entry(&k, w, w.value.value.to_string(), Some(w.value.timestamp))
                });
                Ok(answer(&a, entries.collect(), false))
            }
            ("session", StoreRequest::Windows { key, from, to }) => {
                let k = self.key(&key)?;
                self.here(app, &key, &k, read.stale)?;
                let a = self.ask(app, SessionQuery::<K, V>::with_key(k.clone()), read)?;
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
        stale: a.stale.iter().map(stale_copy).collect(),
    }
}

fn stale_copy(s: &StaleRead) -> StaleCopy {
    StaleCopy {
        task: s.task.to_string(),
        source: s.source.name(),
        changelogs: s
            .changelogs
            .iter()
            .map(|c| StaleChangelog {
                topic: c.topic.clone(),
                partition: c.partition,
                position: c.position,
                end: c.end,
                behind: c.behind,
            })
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
        read: StoreRead,
    ) -> Result<StoreAnswer, StoreAccessError> {
        let Some(s) = self.stores.iter().find(|s| s.info().name == store) else {
            let known: Vec<String> = self.stores.iter().map(|s| s.info().name).collect();
            return Err(StoreAccessError::NoStore {
                store: store.to_owned(),
                known: known.join(", "),
            });
        };
        s.query(&self.app, request, read)
    }

    fn metadata(&self, store: &str, key: &str) -> Result<KeyMetadata, StoreAccessError> {
        let Some(s) = self.stores.iter().find(|s| s.info().name == store) else {
            let known: Vec<String> = self.stores.iter().map(|s| s.info().name).collect();
            return Err(StoreAccessError::NoStore {
                store: store.to_owned(),
                known: known.join(", "),
            });
        };
        s.metadata(&self.app, key)
    }
}
