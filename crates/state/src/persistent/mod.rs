//! The persistent engine: encoded entries in an LSM tree on local disk (fjall).
//!
//! Owns [`PersistentKeyValueStore`], [`PersistentWindowStore`] and
//! [`PersistentSessionStore`], the store directory with its metadata file
//! ([`StoreDirectory`]), the checkpoint with its manifest of local files, the open rule
//! ([`StoreDirectory::recover`]), and the on-disk key layouts. Each store has its own
//! directory `<state dir>/<store name>/` holding a metadata file that names the format and
//! the application id (a directory left by another application id, or by a newer format, is
//! refused) and one fjall database under `data/`; a segmented store keeps each segment in
//! one of a pool of keyspaces it reuses ([`SegmentSet`]), so dropping a segment empties a
//! keyspace.
//!
//! On-disk layouts (times are sign-flipped big-endian so that byte order is time order; a
//! key is its stored form, see `key_order`: its encoding, or for a codec with a sortable
//! form that form): key-value `[0x01][key]` (the engine refuses empty keys; the prefix keeps
//! byte order); window `[key][start]`; session `[key][end][start]` (never empty). Per-key scans filter
//! out longer keys that share the prefix, as Kafka Streams' key schemas do. The changelog
//! uses Kafka Streams' layouts instead (see [`crate::encode_window_key`]).
//!
//! Durability comes from the changelog, not from this engine: the journal is not synced on
//! every write, and writes reach the engine only from each store's write-back cache
//! ([`write_cache`]), once per key per barrier, in one batch. A clean close writes a checkpoint with a manifest of every file; the next
//! open ([`StoreDirectory::recover`]) trusts the files only if they match it, and otherwise
//! deletes them for a rebuild from the changelog. The engine itself is never shown files it
//! could misread: it reads its own files as if whole.
//!
//! This module never knows about Kafka, threads beyond the engine's own background worker,
//! or the DSL.

mod bulk_load;
mod checkpoint;
mod dir;
mod file_crc;
mod key_order;
mod kv;
mod recover;
mod sealed;
mod segment_set;
mod segmented;
mod session;
mod window;
mod write_cache;

pub use checkpoint::STORE_CHECKPOINT_FILE;
pub use dir::{
    DEFAULT_BLOCK_CACHE_BYTES, PersistentConfig, STORE_FORMAT, STORE_METADATA_FILE, StoreDirectory,
};
pub use kv::PersistentKeyValueStore;
pub use recover::{LocalCopy, RebuildReason, Recovery};
pub use session::PersistentSessionStore;
pub use window::PersistentWindowStore;
pub use write_cache::{DEFAULT_CACHE_MAX_BYTES, MIN_CACHE_MAX_BYTES};

use crate::changelog::ChangelogEntry;
use crate::codec::Codec;
use crate::error::{StateError, hex};
use crate::restore_batch::RestoreRecord;
use bulk_load::SortedLoad;
use key_order::ShownKey;
pub(crate) use segment_set::SegmentSet;

/// Maps an engine error to a [`StateError`] naming the store.
pub(crate) fn engine_err(store: &str) -> impl Fn(fjall::Error) -> StateError + '_ {
    move |e| StateError::Engine {
        store: store.to_string(),
        detail: e.to_string(),
    }
}

/// Writes `entries` (ascending, unique keys; `None` deletes) into `ks` as one sorted table
/// through the engine's ingestion, bypassing its journal and memtable: the write-back of a
/// store's cache, a bulk load. A newer write of a key the keyspace already holds wins, as any
/// later write does. Nothing goes through the journal, so no journal grows with the writes
/// (a journal whose segments' keyspaces were dropped before any memtable filled was never
/// reclaimed).
pub(crate) fn write_sorted<'a>(
    ks: &fjall::Keyspace,
    entries: impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)>,
    store: &str,
) -> Result<(), StateError> {
    let mut ingestion = ks.start_ingestion().map_err(engine_err(store))?;
    for (key, value) in entries {
        match value {
            Some(v) => ingestion.write(key, v),
            None => ingestion.write_tombstone(key),
        }
        .map_err(engine_err(store))?;
    }
    ingestion.finish().map_err(engine_err(store))
}

/// What a store's drop does with its last write-back: a close must leave every write in
/// the files a checkpoint written after it vouches for; if it could not, the directory is
/// marked so that no checkpoint is written and the next open rebuilds from the changelog.
pub(crate) fn closed(dir: &StoreDirectory, written_back: Result<(), StateError>) {
    if let Err(e) = written_back {
        let store = dir.store();
        tracing::warn!(store, error = %e, "cache not written back on close; the store will be rebuilt from its changelog");
        if let Err(e) = dir.mark_unclean() {
            tracing::error!(store, error = %e, "cannot mark the store unclean");
        }
    }
}

/// The most table files one store's engine keeps open (fjall's cache of open files, 900 by
/// default, at least 10). A table is opened again when read past it. The bound also closes
/// the tables of a dropped segment, which the cache otherwise kept open, deleted, with
/// their blocks, until it was full.
pub(crate) const MAX_OPEN_TABLE_FILES: usize = 16;

/// Opens the fjall database of a store directory. A checkpoint still in place (the caller
/// skipped [`StoreDirectory::recover`]) is checked against the files first and consumed, so
/// the engine never reads files a clean close vouched for once they differ.
pub(crate) fn open_database(dir: &StoreDirectory) -> Result<fjall::Database, StateError> {
    dir.consume_checkpoint()?;
    fjall::Database::builder(dir.data_path())
        .worker_threads(1)
        .manual_journal_persist(true)
        .max_cached_files(Some(MAX_OPEN_TABLE_FILES))
        .cache_size(dir.block_cache_bytes())
        .open()
        .map_err(engine_err(dir.store()))
}

/// A time as 8 bytes whose byte order is numeric order.
pub(crate) fn time_bytes(t: i64) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

/// The inverse of [`time_bytes`].
pub(crate) fn time_from(bytes: &[u8]) -> i64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[..8]);
    (u64::from_be_bytes(b) ^ (1 << 63)) as i64
}

/// Encodes a key passed to the operation `op`, naming the store on failure.
pub(crate) fn encode_key<T>(
    codec: &dyn Codec<T>,
    key: &T,
    store: &str,
    op: &str,
) -> Result<Vec<u8>, StateError> {
    codec
        .to_bytes(key)
        .map_err(|e| StateError::encode_key(store, format_args!("passed to {op}"), e))
}

/// Encodes a value to be written under the encoded `key`, naming the store and key on
/// failure.
pub(crate) fn encode_value<T>(
    codec: &dyn Codec<T>,
    value: &T,
    store: &str,
    key: ShownKey<'_>,
) -> Result<Vec<u8>, StateError> {
    codec
        .to_bytes(value)
        .map_err(|e| StateError::encode_value(store, &key.encoding(), e))
}

/// Decodes a stored key or value, naming the store and key on failure.
pub(crate) fn decode_stored<T>(
    codec: &dyn Codec<T>,
    bytes: &[u8],
    what: &'static str,
    store: &str,
    key: ShownKey<'_>,
) -> Result<T, StateError> {
    codec.decode(bytes).map_err(|source| StateError::Decode {
        store: store.to_string(),
        what,
        key: hex(&key.encoding()),
        source,
    })
}

/// Checks a restored key or value decodes, mapping failure to a corrupt-record error.
pub(crate) fn validate_entry<T>(
    codec: &dyn Codec<T>,
    bytes: &[u8],
    what: &str,
    store: &str,
    entry: &ChangelogEntry,
) -> Result<(), StateError> {
    codec
        .decode(bytes)
        .map(|_| ())
        .map_err(|e| entry.corrupt(store, format!("{what} does not decode: {e}")))
}

/// Checks a restored key or value of a batch record decodes, as [`validate_entry`] does.
pub(crate) fn validate_record<T>(
    codec: &dyn Codec<T>,
    bytes: &[u8],
    what: &str,
    store: &str,
    record: &RestoreRecord<'_>,
) -> Result<(), StateError> {
    codec
        .decode(bytes)
        .map(|_| ())
        .map_err(|e| record.corrupt(store, format!("{what} does not decode: {e}")))
}

/// A restore batch smaller than this goes through the write-back cache as single records
/// (a standby tailing its changelog hands over a few records per fetch, and a sorted table
/// per fetch would leave the engine many tiny tables to compact): a bulk load is never
/// smaller than a cache spill.
pub(crate) const BULK_LOAD_MIN_BYTES: usize = MIN_CACHE_MAX_BYTES;

/// A segment's run of a load at least this long is written as two tables at once, on two
/// threads, each half of the keys (building a table costs the engine far more per entry than
/// anything else a restore does).
const SPLIT_INGESTION_AT: usize = 1 << 16;

/// Writes a sorted load into the keyspaces `keyspace` gives per segment (creating one only
/// for a segment the load holds a value of; `None`: the segment has no keyspace and gets
/// only deletions, which are then skipped). A long run is written as two sorted tables of
/// disjoint key ranges, built side by side.
pub(crate) fn ingest<S: Ord + Copy + Sync>(
    load: &SortedLoad<'_, S>,
    store: &str,
    mut keyspace: impl FnMut(S, bool) -> Result<Option<fjall::Keyspace>, StateError>,
) -> Result<(), StateError> {
    let two_cores = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
    for (segment, range) in load.segments() {
        let Some(ks) = keyspace(segment, load.has_value(range.clone()))? else {
            continue;
        };
        if !two_cores || range.len() < SPLIT_INGESTION_AT {
            write_sorted(&ks, load.entries(range), store)?;
            continue;
        }
        let middle = range.start + range.len() / 2;
        let (low, high) = (range.start..middle, middle..range.end);
        let ks = &ks;
        std::thread::scope(|scope| {
            let upper = high.clone();
            let other = std::thread::Builder::new()
                .name("stoatflow-ingest".into())
                .spawn_scoped(scope, move || write_sorted(ks, load.entries(upper), store));
            let here = write_sorted(ks, load.entries(low), store);
            let there = match other {
                Ok(handle) => handle.join().unwrap_or_else(|_| {
                    Err(StateError::Engine {
                        store: store.to_string(),
                        detail: "the ingestion thread panicked".into(),
                    })
                }),
                // No thread: this one writes the other half too.
                Err(_) => write_sorted(ks, load.entries(high), store),
            };
            here.and(there)
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_block_cache_is_the_configured_size() {
        let tmp = tempfile::tempdir().unwrap();
        let default = PersistentConfig::new(tmp.path(), "app");
        for (store, config, size) in [
            ("default", default.clone(), DEFAULT_BLOCK_CACHE_BYTES),
            (
                "small",
                default.clone().with_block_cache_bytes(3 << 20),
                3 << 20,
            ),
            ("none", default.with_block_cache_bytes(0), 0),
        ] {
            let dir = StoreDirectory::open(&config, store).unwrap();
            let db = open_database(&dir).unwrap();
            assert_eq!(db.cache_capacity(), size, "{store}");
            let ks = db
                .keyspace("k", fjall::KeyspaceCreateOptions::default)
                .unwrap();
            ks.insert(b"a", b"1").unwrap();
            assert_eq!(ks.get(b"a").unwrap().as_deref(), Some(&b"1"[..]), "{store}");
        }
    }

    #[test]
    fn time_bytes_preserve_order() {
        let times = [i64::MIN, -1000, -1, 0, 1, 1000, i64::MAX];
        for w in times.windows(2) {
            assert!(time_bytes(w[0]) < time_bytes(w[1]));
        }
        for t in times {
            assert_eq!(time_from(&time_bytes(t)), t);
        }
    }
}
