//! State stores for stoatflow.
//!
//! A tour of the principal types:
//!
//! - [`StateStore`], [`KeyValueStore`], [`TimestampedKeyValueStore`], [`WindowStore`] and
//!   [`SessionStore`]: the store traits the processors use. Stores are typed; the in-memory
//!   engine ([`InMemoryKeyValueStore`], [`InMemoryWindowStore`], [`InMemorySessionStore`])
//!   holds values as they are; the persistent engine ([`PersistentKeyValueStore`],
//!   [`PersistentWindowStore`], [`PersistentSessionStore`]) keeps encoded entries on local
//!   disk (fjall), one [`StoreDirectory`] per store, owned by one application id;
//!   [`StoreDirectory::recover`] decides at open whether the local files can be trusted
//!   ([`Recovery`]) or must be rebuilt from the changelog. [`AnyKeyValueStore`],
//!   [`AnyWindowStore`] and [`AnySessionStore`] hold either engine, chosen at run time.
//! - [`Codec`]: how keys and values become bytes, for the changelog and the persistent
//!   engine. The streams crate adapts its serdes to it.
//! - [`ChangelogBatch`], [`ChangelogEntry`], [`restore`]: every write marks its key dirty;
//!   at the barrier [`StateStore::flush_changelog`] serializes each dirty key once (compacted
//!   semantics) for `<application.id>-<store>-changelog`, into one batch whose records
//!   ([`ChangelogRecordRef`]) share a byte buffer; restoration replays committed records
//!   idempotently. [`ChangelogRecord`] is one record, owned.
//! - [`SegmentedConfig`] and [`Segmented`]: retention segments of window and session stores,
//!   dropped when the committed frontier passes them.
//! - [`EmitFrontier`] (`<store>-emitfrontier`) and [`WatermarkStore`] (`stoatflow-watermark`):
//!   the engine's own stores; [`WatermarkStore::seed`] applies the restart rule
//!   (docs/state.md#restart).
//!
//! # Architecture invariants
//!
//! This crate knows nothing of Kafka, threads, the DSL or how watermarks are generated. The
//! only time it is given is the committed frontier, as a plain `i64` of epoch milliseconds,
//! and the timestamp of each write.
//!
//! # Example
//!
//! ```
//! use stoatflow_state::{
//!     ChangelogBatch, ChangelogEntry, ChangelogOffset, ChangelogPartition, I64Codec, InMemoryKeyValueStore,
//!     KeyValueStore, StateStore, StoreConfig, StringCodec, restore,
//! };
//!
//! # fn main() -> Result<(), stoatflow_state::StateError> {
//! let mut counts = InMemoryKeyValueStore::new(StoreConfig::new("counts"), StringCodec, I64Codec);
//! counts.put("a".to_string(), 1, 1_000)?;
//! counts.put("a".to_string(), 2, 1_001)?;
//!
//! // At the barrier: one changelog record per dirty key.
//! let mut records = ChangelogBatch::new();
//! counts.flush_changelog(&mut records)?;
//! assert_eq!(records.len(), 1);
//!
//! // After a restart: rebuild from the committed changelog.
//! let mut rebuilt = InMemoryKeyValueStore::new(StoreConfig::new("counts"), StringCodec, I64Codec);
//! let entries = records.iter().enumerate().map(|(i, r)| {
//!     ChangelogEntry::from_record(r.to_record(), ChangelogPartition(0), ChangelogOffset(i as u64))
//! });
//! restore(&mut rebuilt, entries, 1, &mut |_progress| {})?;
//! assert_eq!(rebuilt.get(&"a".to_string())?, Some(2));
//! # Ok(())
//! # }
//! ```

mod any;
mod changelog;
mod changelog_batch;
mod codec;
mod engine_stores;
mod error;
mod memory;
mod persistent;
mod restore;
mod restore_batch;
mod segments;
mod store;
mod value_layout;
mod windowed;

pub use any::{AnyKeyValueStore, AnySessionStore, AnyWindowStore};
pub use changelog::{
    ChangelogEntry, ChangelogOffset, ChangelogPartition, ChangelogRecord, changelog_topic,
    decode_session_key, decode_window_key, encode_session_key, encode_window_key,
};
pub use changelog_batch::{ChangelogBatch, ChangelogRecordRef};
pub use codec::{
    BytesCodec, Codec, CodecError, I32Codec, I64Codec, SortableForm, StringCodec, U64Codec,
    ValueAndTimestamp, ValueAndTimestampCodec,
};
pub use engine_stores::{
    BarrierStamp, EmitFrontier, RETAINED_STAMPS, WATERMARK_STORE_NAME, WatermarkKey,
    WatermarkKeyCodec, WatermarkSeed, WatermarkStore, emit_frontier_store_name,
    in_memory_emit_frontier, in_memory_watermark_store,
};
pub use error::StateError;
pub use memory::{InMemoryKeyValueStore, InMemorySessionStore, InMemoryWindowStore};
pub use persistent::{
    DEFAULT_BLOCK_CACHE_BYTES, DEFAULT_CACHE_MAX_BYTES, LocalCopy, MIN_CACHE_MAX_BYTES,
    PersistentConfig, PersistentKeyValueStore, PersistentSessionStore, PersistentWindowStore,
    RebuildReason, Recovery, STORE_CHECKPOINT_FILE, STORE_FORMAT, STORE_METADATA_FILE,
    StoreDirectory,
};
pub use restore::{RestoreProgress, restore};
pub use restore_batch::{RESTORE_BATCH_BYTES, RestoreBatch, RestoreRecord};
pub use segments::{CHANGELOG_ADDITIONAL_RETENTION_MS, SegmentedConfig};
pub use store::{
    KeyValueStore, Segmented, SessionStore, SessionWindow, StateStore, StoreConfig,
    TimestampedKeyValueStore, WindowStore,
};
pub use value_layout::ChangelogValueLayout;
