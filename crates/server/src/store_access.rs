//! [`StoreAccess`]: what the store routes (`/stores...`) ask of the
//! application's queryable stores, in plain types: keys parsed from text,
//! values rendered as text, each window's finality by name. A leaf beside
//! [`crate::Endpoints`]: `store_routes` renders and parses HTTP and JSON
//! around it; the application implements it over its typed queries. Knows
//! no HTTP and no store.

/// A queryable store: its name and kind (`keyValue`, `window`, `session`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreInfo {
    /// The store's name.
    pub name: String,
    /// `keyValue`, `window` or `session`.
    pub kind: &'static str,
}

/// A window's finality: `final`, `open` (with the watermark's distance to
/// its close) or `expired`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowFinality {
    /// `final`, `open` or `expired`.
    pub name: &'static str,
    /// For an open window, its close minus the watermark (ms).
    pub watermark_to_close_ms: Option<i64>,
}

/// One entry of an answer, as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreEntry {
    /// The key, as the store's key type writes itself.
    pub key: String,
    /// The value, as the store's value type writes itself.
    pub value: String,
    /// A key-value entry's timestamp; `None` for a session.
    pub timestamp: Option<i64>,
    /// A window's `(start, end)`, ms.
    pub window: Option<(i64, i64)>,
    /// A window's finality.
    pub finality: Option<WindowFinality>,
}

/// An answer and the state it reflects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreAnswer {
    /// The entries, in the store's order.
    pub entries: Vec<StoreEntry>,
    /// More entries lie within the bounds (a range cut by its limit).
    pub truncated: bool,
    /// The committed barrier it reflects; `None` for a latest read.
    pub barrier: Option<u64>,
    /// The watermark it reflects, ms.
    pub watermark: i64,
    /// The floor: every window closing at or before it is final, ms.
    pub floor: i64,
    /// The committed source offsets: (topic, partition, offset).
    pub position: Vec<(String, i32, u64)>,
    /// The tasks read that may be behind (a read allowing stale answers).
    pub stale: Vec<StaleCopy>,
}

/// A task read that may be behind: a standby copy or a task restoring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleCopy {
    /// The task, `<sub-topology>_<partition>`.
    pub task: String,
    /// `standby` or `restoring`.
    pub source: &'static str,
    /// Where it is in each changelog partition of the store.
    pub changelogs: Vec<StaleChangelog>,
}

/// Where a stale copy is in one changelog partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleChangelog {
    /// The changelog topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset after the last record applied.
    pub position: u64,
    /// The partition's end as the copy last saw it.
    pub end: Option<u64>,
    /// Offsets still to read.
    pub behind: Option<u64>,
}

/// How a store route reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreRead {
    /// What is processed, committed or not (`latest=true`); else committed
    /// state.
    pub latest: bool,
    /// Standby copies and tasks restoring too (`stale=true`).
    pub stale: bool,
}

/// What a store route asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreRequest {
    /// The value of one key.
    Key {
        /// The key, as text.
        key: String,
    },
    /// The keys from `from` (inclusive) to `to` (inclusive), at most `limit`.
    Range {
        /// The lowest key, if bounded.
        from: Option<String>,
        /// The highest key, if bounded.
        to: Option<String>,
        /// The most entries.
        limit: usize,
    },
    /// The windows (sessions) of one key starting within `from..=to`.
    Windows {
        /// The key, as text.
        key: String,
        /// The earliest start, ms.
        from: i64,
        /// The latest start, ms.
        to: i64,
    },
}

/// Why a store route could not be answered. Each names what it is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreAccessError {
    /// No queryable store of that name.
    #[error("no queryable store {store} (stores: {known})")]
    NoStore {
        /// The store.
        store: String,
        /// The queryable stores.
        known: String,
    },
    /// The key does not parse as the store's key type.
    #[error("store {store}: key {key:?} is not a {expected}: {reason}")]
    BadKey {
        /// The store.
        store: String,
        /// The key as given.
        key: String,
        /// The key type.
        expected: &'static str,
        /// The parser's words.
        reason: String,
    },
    /// The request does not fit the store's kind.
    #[error("store {store} is a {kind} store: {reason}")]
    WrongKind {
        /// The store.
        store: String,
        /// Its kind.
        kind: &'static str,
        /// What does not fit.
        reason: String,
    },
    /// Another instance owns the key's task: ask it (its
    /// `application.server`, when it advertises one).
    #[error("store {store}: key {key:?} is owned by {member} ({}); ask there", owner.as_deref().unwrap_or("no application.server advertised"))]
    Elsewhere {
        /// The store.
        store: String,
        /// The key as given.
        key: String,
        /// The owner's `application.server`, `host:port`.
        owner: Option<String>,
        /// The owner's member name in the group.
        member: String,
        /// The key's partition.
        partition: u32,
    },
    /// The application could not answer now (not running, timed out).
    #[error("store {store}: {reason}")]
    Unavailable {
        /// The store.
        store: String,
        /// Why.
        reason: String,
    },
}

/// One instance holding a key's state, as key metadata names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyHolder {
    /// Its member name in the group.
    pub member: String,
    /// Its `application.server`, `host:port`, if it advertises one.
    pub server: Option<String>,
    /// It is the instance answering.
    pub local: bool,
}

/// Where a key's state is: the instance owning its task and those keeping
/// standby copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMetadata {
    /// The key's partition of the store's source topic.
    pub partition: u32,
    /// The owner: ask it.
    pub active: KeyHolder,
    /// The standby holders.
    pub standbys: Vec<KeyHolder>,
}

/// The application's queryable stores.
pub trait StoreAccess: Send + Sync {
    /// The stores the routes can query.
    fn stores(&self) -> Vec<StoreInfo>;

    /// Answers `request` on `store` as `read` says: committed state, or
    /// the latest processed; from the tasks that run only, or from standby
    /// copies and tasks restoring too.
    ///
    /// # Errors
    /// [`StoreAccessError`], naming the store (and key).
    fn query(
        &self,
        store: &str,
        request: StoreRequest,
        read: StoreRead,
    ) -> Result<StoreAnswer, StoreAccessError>;

    /// Which instance owns `key` of `store` and which keep standby copies
    /// of it. By default: unavailable (the stores cannot place keys).
    ///
    /// # Errors
    /// [`StoreAccessError`], naming the store (and key).
    fn metadata(&self, store: &str, key: &str) -> Result<KeyMetadata, StoreAccessError> {
        let _ = key;
        Err(StoreAccessError::Unavailable {
            store: store.to_owned(),
            reason: "these stores cannot say which instance owns a key".into(),
        })
    }
}
