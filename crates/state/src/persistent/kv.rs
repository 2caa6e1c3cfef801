//! Persistent key-value store: one fjall keyspace behind a write-back cache.
//!
//! Owns [`PersistentKeyValueStore`]: how a put, get, delete and range go through the cache
//! ([`WriteCache`], which holds the task's typed values in engine-key order) and the
//! engine, and when values are encoded: a key once per operation; a value when first cached
//! (its weight, and the refusal at the write of a value that does not encode, naming the
//! key), at the barrier's changelog flush and at a write-back, never on a rewrite of a
//! cached key. Past its bound the cache writes back and lets go of its least recently
//! written entries, down to [`SPILL_TO_PERCENT`] of the bound; the keys still being written
//! stay cached and are never read back from the engine.
//!
//! This module never knows the DSL, threads or Kafka.

use std::fmt;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use super::bulk_load::SortedLoad;
use super::key_order::StoredKeys;
use super::write_cache::{Cut, SPILL_TO_PERCENT, Seen, WriteCache, merge};
use super::{
    BULK_LOAD_MIN_BYTES, PersistentConfig, StoreDirectory, closed, decode_stored, engine_err,
    ingest, open_database, validate_entry, validate_record, write_sorted,
};
use crate::changelog::ChangelogEntry;
use crate::changelog_batch::ChangelogBatch;
use crate::codec::{Codec, CodecError};
use crate::error::{StateError, hex};
use crate::restore_batch::RestoreBatch;
use crate::store::{KeyValueStore, StateStore, StoreConfig, bounds_empty};

/// Every stored key starts with this byte: the engine refuses an empty key, and a constant
/// prefix keeps the byte order of the encoded keys.
const KEY_PREFIX: u8 = 0x01;

/// The engine key of a stored key.
fn engine_key(stored: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(stored.len() + 1);
    k.push(KEY_PREFIX);
    k.extend_from_slice(stored);
    k
}

/// What `value` weighs against the cache's bound: its encoded size (and not less than its
/// own), encoded into `buf`.
fn weigh<V>(codec: &dyn Codec<V>, value: &V, buf: &mut Vec<u8>) -> Result<usize, CodecError> {
    buf.clear();
    codec.encode(value, buf)?;
    Ok(buf.len().max(size_of::<V>()))
}

/// A value under engine key `k` of `store` that does not encode, naming the store and the
/// key by its encoding.
fn encode_err<K>(store: &str, keys: &StoredKeys<K>, k: &[u8], e: CodecError) -> StateError {
    let encoded = k.get(1..).unwrap_or_default();
    StateError::encode_value(store, &keys.shown(encoded).encoding(), e)
}

/// What a key's encoding is first given room for, so that a codec writing it in pieces
/// does not grow it piece by piece.
const KEY_CAPACITY: usize = 64;

/// A value read through the cache: the cache's typed value, or the engine's bytes.
enum Found<'a, V> {
    Cached(&'a V),
    Engine(fjall::UserValue),
}

/// A key-value store on disk: encoded keys (behind `KEY_PREFIX`) and values in one fjall
/// keyspace, written through a write-back cache of typed values (see the module docs).
pub struct PersistentKeyValueStore<K, V> {
    config: StoreConfig,
    dir: StoreDirectory,
    /// Kept open for as long as the store is.
    _db: fjall::Database,
    ks: fjall::Keyspace,
    /// Writes not yet in the engine (and the last ones that are), with the keys written
    /// since the last flush.
    cache: WriteCache<V>,
    /// The keys as the engine and the cache keep them (docs/state.md#key-order).
    keys: StoredKeys<K>,
    value_codec: Arc<dyn Codec<V>>,
    /// Reused for the engine key of a write.
    key_buf: Vec<u8>,
    /// Reused to weigh a value by its encoding.
    value_buf: Vec<u8>,
}

impl<K, V> fmt::Debug for PersistentKeyValueStore<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PersistentKeyValueStore")
            .field("name", &self.config.name())
            .field("dir", &self.dir.path())
            .field("cached", &self.cache.len())
            .field("dirty", &self.cache.logged_len())
            .finish()
    }
}

impl<K, V> PersistentKeyValueStore<K, V> {
    /// Opens the store in `<state dir>/<name>/`, creating it if needed.
    ///
    /// # Errors
    /// As [`StoreDirectory::open`], or [`StateError::Engine`] if the engine cannot open.
    pub fn open(
        persistent: &PersistentConfig,
        config: StoreConfig,
        key_codec: impl Codec<K> + 'static,
        value_codec: impl Codec<V> + 'static,
    ) -> Result<Self, StateError> {
        let dir = StoreDirectory::open(persistent, config.name())?;
        let db = open_database(&dir)?;
        let ks = db
            .keyspace("kv", fjall::KeyspaceCreateOptions::default)
            .map_err(engine_err(config.name()))?;
        Ok(Self {
            config,
            dir,
            _db: db,
            ks,
            cache: WriteCache::new(persistent.cache_max_bytes()),
            keys: StoredKeys::new(key_codec),
            value_codec: Arc::new(value_codec),
            key_buf: Vec::new(),
            value_buf: Vec::new(),
        })
    }

    /// What a live write at `timestamp` owes the changelog.
    fn logged(&self, timestamp: i64) -> Option<i64> {
        self.config.changelog_enabled().then_some(timestamp)
    }

    /// The value under engine key `key`, from the cache or the engine.
    fn get_raw(&self, key: &[u8]) -> Result<Option<Found<'_, V>>, StateError> {
        if let Some(cached) = self.cache.get(key) {
            return Ok(cached.map(Found::Cached));
        }
        Ok(self
            .ks
            .get(key)
            .map_err(engine_err(self.config.name()))?
            .map(Found::Engine))
    }

    /// The engine's value under engine key `key`, decoded (the cache is not asked).
    fn get_engine(&self, key: &[u8]) -> Result<Option<V>, StateError> {
        self.ks
            .get(key)
            .map_err(engine_err(self.config.name()))?
            .map(|b| self.decode_value(key, &b))
            .transpose()
    }

    /// A value under engine key `k` that does not encode, naming the store and the key.
    fn encode_err(&self, k: &[u8], e: CodecError) -> StateError {
        encode_err(self.config.name(), &self.keys, k, e)
    }

    /// Runs `write` with the engine key of `key` in the reused key buffer (encoded once);
    /// a key the codec refuses is an error naming the store and `op`.
    fn with_key<R>(
        &mut self,
        key: &K,
        op: &str,
        write: impl FnOnce(&mut Self, &[u8]) -> Result<R, StateError>,
    ) -> Result<R, StateError> {
        let mut k = std::mem::take(&mut self.key_buf);
        k.clear();
        k.push(KEY_PREFIX);
        let result = match self.keys.encode(key, &mut k) {
            Ok(()) => write(self, &k),
            Err(e) => Err(StateError::encode_key(
                self.config.name(),
                format_args!("passed to {op}"),
                e,
            )),
        };
        self.key_buf = k;
        result
    }

    /// Past its bound, the cache lets go of its least recently written entries (see
    /// [`WriteCache::cut_to`]) down to [`SPILL_TO_PERCENT`] of it, writing their dirty
    /// entries to the engine first.
    fn spill_if_over(&mut self) -> Result<(), StateError> {
        if self.cache.is_over() {
            let cut = self
                .cache
                .cut_to(self.cache.max_bytes() / 100 * SPILL_TO_PERCENT);
            self.write_back_where(cut)?;
            self.cache.evict(cut);
        }
        Ok(())
    }

    /// Writes the cache's dirty entries to the engine as sorted tables and marks them clean.
    /// All or nothing: on an error they stay dirty in the cache.
    fn write_back(&mut self) -> Result<(), StateError> {
        if self.cache.dirty_len() == 0 {
            return Ok(());
        }
        self.write_back_where(Cut::ALL)?;
        self.cache.mark_clean();
        Ok(())
    }

    /// Writes the dirty entries `cut` takes to the engine as one sorted table, their values
    /// encoded here; the entries stay in the cache as they are. Nothing reaches the engine
    /// if a value does not encode.
    fn write_back_where(&self, cut: Cut) -> Result<(), StateError> {
        let rows: Vec<(&[u8], Option<Vec<u8>>)> = self
            .cache
            .dirty_in(cut)
            .map(|(k, v)| {
                let value = v
                    .map(|v| {
                        let mut out = Vec::new();
                        self.value_codec
                            .encode(v, &mut out)
                            .map_err(|e| self.encode_err(k, e))?;
                        Ok(out)
                    })
                    .transpose()?;
                Ok((k, value))
            })
            .collect::<Result<_, StateError>>()?;
        if rows.is_empty() {
            return Ok(());
        }
        let sorted = rows.iter().map(|(k, v)| (*k, v.as_deref()));
        write_sorted(&self.ks, sorted, self.config.name())
    }

    /// Decodes the value stored under engine key `key`.
    fn decode_value(&self, key: &[u8], bytes: &[u8]) -> Result<V, StateError> {
        let encoded = key.get(1..).unwrap_or_default();
        decode_stored(
            &*self.value_codec,
            bytes,
            "value",
            self.config.name(),
            self.keys.shown(encoded),
        )
    }

    /// The value `seen` under engine key `k`, owned: the cache's cloned, the engine's
    /// decoded.
    fn owned(&self, k: &[u8], seen: Seen<'_, &V>) -> Result<V, StateError>
    where
        V: Clone,
    {
        match seen {
            Seen::Cached(v) => Ok(v.clone()),
            Seen::Engine(b) => self.decode_value(k, b),
        }
    }

    /// Visits the entries with engine keys within the bounds, in byte order: each decoded
    /// key with its engine key and value, the cache merged over the engine.
    fn scan(
        &self,
        from: Bound<Vec<u8>>,
        to: Bound<Vec<u8>>,
        mut f: impl FnMut(K, &[u8], Seen<'_, &V>) -> Result<(), StateError>,
    ) -> Result<(), StateError> {
        let name = self.config.name();
        let engine = self
            .ks
            .range::<Vec<u8>, _>((from.clone(), to.clone()))
            .map(|g| g.into_inner().map_err(engine_err(name)));
        let cached = self.cache.range(
            from.as_ref().map(Vec::as_slice),
            to.as_ref().map(Vec::as_slice),
        );
        merge(engine, cached, |k, v| {
            let Some((&KEY_PREFIX, encoded)) = k.split_first() else {
                return Err(StateError::Engine {
                    store: name.to_string(),
                    detail: format!("stored key {} lacks the key prefix", hex(k)),
                });
            };
            let key = decode_stored(&self.keys, encoded, "key", name, self.keys.shown(encoded))?;
            f(key, k, v)
        })
    }

    /// The engine key of `key` (the prefix byte, then the stored key), for the operation
    /// `op`; a key the codec refuses is an error naming the store.
    fn key_bytes(&self, key: &K, op: &str) -> Result<Vec<u8>, StateError> {
        let mut k = Vec::with_capacity(KEY_CAPACITY);
        k.push(KEY_PREFIX);
        self.keys.encode(key, &mut k).map_err(|e| {
            StateError::encode_key(self.config.name(), format_args!("passed to {op}"), e)
        })?;
        Ok(k)
    }

    /// Appends a record per (engine key, timestamp), with the key's encoding (the
    /// changelog's bytes) and its value (a cached one encoded here) or a tombstone.
    fn write_flushed<'k>(
        &self,
        records: impl Iterator<Item = (&'k [u8], i64)>,
        out: &mut ChangelogBatch,
    ) -> Result<(), StateError> {
        let mut record_key = Vec::new();
        let mut encoded = Vec::new();
        for (key, timestamp) in records {
            record_key.clear();
            self.keys.push_encoded(&key[1..], &mut record_key);
            match self.get_raw(key)? {
                None => out.push(&record_key, None, timestamp),
                Some(Found::Engine(b)) => out.push(&record_key, Some(&b), timestamp),
                Some(Found::Cached(v)) => {
                    encoded.clear();
                    self.value_codec
                        .encode(v, &mut encoded)
                        .map_err(|e| self.encode_err(key, e))?;
                    out.push(&record_key, Some(&encoded), timestamp);
                }
            }
        }
        Ok(())
    }
}

impl<K: Ord, V> StateStore for PersistentKeyValueStore<K, V> {
    fn name(&self) -> &str {
        self.config.name()
    }

    fn changelog_enabled(&self) -> bool {
        self.config.changelog_enabled()
    }

    /// One record per dirty key, its stored value or a tombstone, in key order: the order of
    /// the stored keys' bytes where it is the key order, otherwise by the keys, each decoded
    /// once here. All or nothing: on an error `out` is left as it was and the keys stay
    /// dirty.
    fn flush_changelog(&mut self, out: &mut ChangelogBatch) -> Result<(), StateError> {
        // The cache lists them in engine-key order.
        let logged = self.cache.logged_keys();
        out.reserve(logged.len());
        let first = out.len();
        let written = if self.keys.by_bytes() {
            self.write_flushed(logged.iter().copied(), out)
        } else {
            let name = self.config.name();
            let decoded: Result<Vec<(K, &[u8], i64)>, StateError> = logged
                .iter()
                .map(|&(k, t)| {
                    let stored = &k[1..];
                    let key =
                        decode_stored(&self.keys, stored, "key", name, self.keys.shown(stored))?;
                    Ok((key, k, t))
                })
                .collect();
            decoded.and_then(|mut keys| {
                keys.sort_by(|a, b| a.0.cmp(&b.0));
                self.write_flushed(keys.iter().map(|(_, k, t)| (*k, *t)), out)
            })
        };
        drop(logged);
        if let Err(e) = written {
            out.truncate(first);
            return Err(e);
        }
        self.cache.clear_logged();
        Ok(())
    }

    fn dirty_keys(&self) -> usize {
        self.cache.logged_len()
    }

    fn apply_changelog(&mut self, entry: &ChangelogEntry) -> Result<(), StateError> {
        let name = self.config.name();
        validate_entry(self.keys.changelog_codec(), &entry.key, "key", name, entry)?;
        let mut key = vec![KEY_PREFIX];
        self.keys.push_stored(&entry.key, &mut key);
        let value = match &entry.value {
            None => None,
            Some(v) => {
                let value = self
                    .value_codec
                    .decode(v)
                    .map_err(|e| entry.corrupt(name, format!("value does not decode: {e}")))?;
                Some((value, v.len().max(size_of::<V>())))
            }
        };
        self.cache.write(&key, value, None);
        self.spill_if_over()
    }

    /// In bulk: the cache is written back and emptied, then the batch goes to the engine as
    /// one sorted table (see the segmented store's).
    fn apply_changelog_batch(&mut self, batch: &RestoreBatch) -> Result<(), StateError> {
        if batch.bytes() < BULK_LOAD_MIN_BYTES {
            return batch
                .iter()
                .try_for_each(|record| self.apply_changelog(&record.to_entry()));
        }
        if self.cache.len() > 0 {
            self.write_back()?;
            self.cache.clear();
        }
        let name = self.config.name();
        let mut load = SortedLoad::with_capacity(batch.len());
        let mut failed = None;
        for record in batch.iter() {
            let valid = validate_record(
                self.keys.changelog_codec(),
                record.key,
                "key",
                name,
                &record,
            )
            .and_then(|()| match record.value {
                Some(v) => validate_record(&*self.value_codec, v, "value", name, &record),
                None => Ok(()),
            });
            if let Err(e) = valid {
                failed = Some(e);
                break;
            }
            load.push(
                (),
                |out| {
                    out.push(KEY_PREFIX);
                    self.keys.push_stored(record.key, out);
                },
                record.value,
            );
        }
        load.sort();
        let ks = &self.ks;
        ingest(&load, name, |(), _| Ok(Some(ks.clone())))?;
        failed.map_or(Ok(()), Err)
    }

    fn approximate_num_entries(&self) -> u64 {
        self.ks.approximate_len() as u64 + self.cache.len() as u64
    }
}

impl<K: Ord, V: Clone> KeyValueStore<K, V> for PersistentKeyValueStore<K, V> {
    /// In place if the cache holds the key (keeping its weight, nothing encoded), otherwise
    /// weighed by its encoding (a value that does not encode is refused here, naming the
    /// key); then the cache spills if it is over its bound.
    fn put(&mut self, key: K, value: V, timestamp: i64) -> Result<(), StateError> {
        let logged = self.logged(timestamp);
        self.with_key(&key, "put", |store, k| {
            let Self {
                cache,
                value_codec,
                value_buf,
                keys,
                config,
                ..
            } = store;
            cache.put(k, value, logged, |v| {
                weigh(&**value_codec, v, value_buf)
                    .map_err(|e| encode_err(config.name(), keys, k, e))
            })?;
            store.spill_if_over()
        })
    }

    fn get(&self, key: &K) -> Result<Option<V>, StateError> {
        let k = self.key_bytes(key, "get")?;
        match self.get_raw(&k)? {
            None => Ok(None),
            Some(Found::Cached(v)) => Ok(Some(v.clone())),
            Some(Found::Engine(b)) => self.decode_value(&k, &b).map(Some),
        }
    }

    /// The old value is taken from the cache (no decode) or read from the engine.
    fn delete(&mut self, key: &K, timestamp: i64) -> Result<Option<V>, StateError> {
        let logged = self.logged(timestamp);
        self.with_key(key, "delete", |store, k| {
            let mut old = None;
            let cached = store.cache.rewrite(k, logged, 0, |slot| {
                old = slot.take();
                true
            });
            if cached.is_none() {
                old = store.get_engine(k)?;
                store.cache.write(k, None, logged);
            }
            store.spill_if_over()?;
            Ok(old)
        })
    }

    /// By the stored keys' bytes where they sort as the keys; otherwise the entries the codec's
    /// [`Codec::covering_range`] names (every entry by default) are read, and their decoded
    /// keys bounded and sorted by `K: Ord` (docs/state.md#key-order).
    fn range(&self, from: Bound<&K>, to: Bound<&K>) -> Result<Vec<(K, V)>, StateError> {
        let enc = |b: Bound<&K>| match b {
            Bound::Included(k) => self.key_bytes(k, "range").map(Bound::Included),
            Bound::Excluded(k) => self.key_bytes(k, "range").map(Bound::Excluded),
            Bound::Unbounded => Ok(Bound::Unbounded),
        };
        // Encoded on both paths: a bound the codec refuses is an error either way.
        let (from_bytes, to_bytes) = (enc(from)?, enc(to)?);
        let mut out = Vec::new();
        if !self.keys.by_bytes() {
            if bounds_empty(from, to) {
                return Ok(out);
            }
            let prefixed = |b: Bound<Vec<u8>>| b.map(|k| engine_key(&k));
            let (lo, hi) = self.keys.changelog_codec().covering_range(from, to);
            let (lo, hi) = (prefixed(lo), prefixed(hi));
            if bounds_empty(
                lo.as_ref().map(Vec::as_slice),
                hi.as_ref().map(Vec::as_slice),
            ) {
                return Ok(out);
            }
            self.scan(lo, hi, |key, ek, v| {
                if (from, to).contains(&key) {
                    out.push((key, self.owned(ek, v)?));
                }
                Ok(())
            })?;
            out.sort_by(|a, b| a.0.cmp(&b.0));
            return Ok(out);
        }
        if bounds_empty(
            from_bytes.as_ref().map(Vec::as_slice),
            to_bytes.as_ref().map(Vec::as_slice),
        ) {
            return Ok(out);
        }
        self.scan(from_bytes, to_bytes, |key, ek, v| {
            out.push((key, self.owned(ek, v)?));
            Ok(())
        })?;
        Ok(out)
    }
}

impl<K, V> Drop for PersistentKeyValueStore<K, V> {
    /// A close writes the cache to the engine (see `closed`).
    fn drop(&mut self) {
        let written_back = self.write_back();
        closed(&self.dir, written_back);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{I64Codec, StringCodec};

    #[test]
    fn survives_reopen_and_flushes_one_record_per_key() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        {
            let mut s =
                PersistentKeyValueStore::open(&cfg, StoreConfig::new("kv"), StringCodec, I64Codec)
                    .unwrap();
            for i in 0..5 {
                s.put("a".to_string(), i, i).unwrap();
            }
            assert_eq!(s.delete(&"zz".to_string(), 9).unwrap(), None);
            let mut batch = ChangelogBatch::new();
            s.flush_changelog(&mut batch).unwrap();
            let out = batch.to_records();
            assert_eq!(out.len(), 2);
            assert_eq!(out[0].value, Some(4i64.to_be_bytes().to_vec()));
            assert_eq!(out[1].value, None);
        }
        // A clean close vouches for the files the next open serves.
        crate::StoreDirectory::open(&cfg, "kv")
            .unwrap()
            .write_checkpoint(&[])
            .unwrap();
        let s = PersistentKeyValueStore::open(&cfg, StoreConfig::new("kv"), StringCodec, I64Codec)
            .unwrap();
        assert_eq!(s.get(&"a".to_string()).unwrap(), Some(4));
    }

    #[test]
    fn the_key_prefix_keeps_byte_order_and_bounds_with_the_empty_key() {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let mut s =
            PersistentKeyValueStore::open(&cfg, StoreConfig::new("kv"), StringCodec, I64Codec)
                .unwrap();
        let keys = ["b", "", "a\u{0}", "a", "\u{0}", "\u{7f}", "é"];
        for (i, k) in keys.iter().enumerate() {
            s.put(k.to_string(), i as i64, 0).unwrap();
        }
        let mut sorted: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        sorted.sort();
        let all: Vec<String> = s.all().unwrap().into_iter().map(|(k, _)| k).collect();
        assert_eq!(all, sorted);
        let empty = String::new();
        let a = "a".to_string();
        let range = |from, to| -> Vec<String> {
            s.range(from, to)
                .unwrap()
                .into_iter()
                .map(|(k, _)| k)
                .collect()
        };
        assert_eq!(range(Included(&empty), Included(&empty)), vec![""]);
        assert_eq!(range(Excluded(&empty), Excluded(&a)), vec!["\u{0}"]);
        assert_eq!(range(Unbounded, Excluded(&a)), vec!["", "\u{0}"]);
        assert_eq!(range(Excluded(&a), Unbounded), sorted[3..].to_vec());
    }

    /// Kafka's `i64` keys are kept in their sortable form behind the prefix, so a range
    /// reads them straight in key order, while a flush and a restore carry Kafka's bytes.
    #[test]
    fn i64_keys_are_kept_sortable_and_the_changelog_keeps_kafkas_bytes() {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let keys = [1i64, -1, i64::MAX, 0, i64::MIN, 300, -300];
        let mut sorted = keys;
        sorted.sort();
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app").with_cache_max_bytes_unfloored(0);
        let open = |name: &str| {
            PersistentKeyValueStore::open(&cfg, StoreConfig::new(name), I64Codec, I64Codec).unwrap()
        };
        let mut s = open("kv");
        for k in keys {
            s.put(k, k, 3).unwrap();
        }
        let engine: Vec<Vec<u8>> = s.ks.iter().map(|g| g.key().unwrap().to_vec()).collect();
        let sortable = |k: i64| {
            let mut b = vec![KEY_PREFIX];
            b.extend_from_slice(&((k as u64) ^ (1 << 63)).to_be_bytes());
            b
        };
        assert_eq!(engine, sorted.map(sortable).to_vec(), "in key order");
        let got = |from, to| -> Vec<i64> {
            s.range(from, to)
                .unwrap()
                .into_iter()
                .map(|(k, _)| k)
                .collect()
        };
        assert_eq!(got(Unbounded, Unbounded), sorted.to_vec());
        assert_eq!(got(Included(&-300), Excluded(&1)), vec![-300, -1, 0]);
        assert_eq!(got(Excluded(&i64::MIN), Included(&-1)), vec![-300, -1]);
        let mut batch = ChangelogBatch::new();
        s.flush_changelog(&mut batch).unwrap();
        let records = batch.to_records();
        let flushed: Vec<Vec<u8>> = records.iter().map(|r| r.key.clone()).collect();
        let kafka: Vec<Vec<u8>> = sorted.iter().map(|k| k.to_be_bytes().to_vec()).collect();
        assert_eq!(flushed, kafka, "Kafka's bytes, in key order");

        let mut restored = open("restored");
        for (offset, r) in records.into_iter().enumerate() {
            let entry = ChangelogEntry {
                partition: crate::ChangelogPartition(0),
                offset: crate::ChangelogOffset(offset as u64),
                key: r.key,
                value: r.value,
                timestamp: r.timestamp,
            };
            restored.apply_changelog(&entry).unwrap();
        }
        let engine: Vec<Vec<u8>> = restored
            .ks
            .iter()
            .map(|g| g.key().unwrap().to_vec())
            .collect();
        assert_eq!(engine, sorted.map(sortable).to_vec(), "restored sortable");
        assert_eq!(restored.get(&i64::MIN).unwrap(), Some(i64::MIN));
    }

    /// `i64` as [`I64Codec`] encodes it, counting encodes and decodes, refusing negatives.
    #[derive(Debug, Clone, Default)]
    struct Counted {
        encodes: Arc<std::sync::atomic::AtomicUsize>,
        decodes: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Counted {
        fn counts(&self) -> (usize, usize) {
            use std::sync::atomic::Ordering::Relaxed;
            (self.encodes.load(Relaxed), self.decodes.load(Relaxed))
        }
    }

    impl Codec<i64> for Counted {
        fn encode(&self, value: &i64, out: &mut Vec<u8>) -> Result<(), crate::CodecError> {
            self.encodes
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if *value < 0 {
                return Err(crate::CodecError::new(format!("refused {value}")));
            }
            I64Codec.encode(value, out)
        }
        fn decode(&self, bytes: &[u8]) -> Result<i64, crate::CodecError> {
            self.decodes
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            I64Codec.decode(bytes)
        }
    }

    fn flushed(s: &mut PersistentKeyValueStore<String, i64>) -> Vec<(String, Option<i64>)> {
        let mut batch = ChangelogBatch::new();
        s.flush_changelog(&mut batch).unwrap();
        batch
            .to_records()
            .into_iter()
            .map(|r| {
                let value = r.value.map(|v| I64Codec.decode(&v).unwrap());
                (String::from_utf8(r.key).unwrap(), value)
            })
            .collect()
    }

    #[test]
    fn a_cached_value_is_encoded_when_first_cached_and_at_the_flush_only_and_never_decoded() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let codec = Counted::default();
        let mut s =
            PersistentKeyValueStore::open(&cfg, StoreConfig::new("kv"), StringCodec, codec.clone())
                .unwrap();
        for i in 0..100 {
            let current = s.get(&"a".to_string()).unwrap().unwrap_or(0);
            s.put("a".to_string(), current + i, i).unwrap();
        }
        assert_eq!(s.get(&"a".to_string()).unwrap(), Some(4950));
        assert_eq!(codec.counts(), (1, 0), "weighed once, read from the cache");
        assert_eq!(s.delete(&"a".to_string(), 100).unwrap(), Some(4950));
        assert_eq!(flushed(&mut s), vec![("a".to_string(), None)]);
        s.put("b".to_string(), 7, 101).unwrap();
        assert_eq!(flushed(&mut s), vec![("b".to_string(), Some(7))]);
        assert_eq!(codec.counts(), (3, 0), "and once more at the flush");
    }

    /// A value rewritten in place is not encoded until the flush: one that does not encode
    /// fails the flush naming the key, and the flush loses nothing.
    #[test]
    fn a_rewrite_that_does_not_encode_fails_the_flush_naming_the_key_and_loses_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let mut s = PersistentKeyValueStore::open(
            &cfg,
            StoreConfig::new("kv"),
            StringCodec,
            Counted::default(),
        )
        .unwrap();
        let err = s.put("a".to_string(), -1, 1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "store kv: cannot encode the value of key \"a\": refused -1",
            "refused at the write when first cached"
        );
        s.put("a".to_string(), 1, 1).unwrap();
        s.put("b".to_string(), 2, 1).unwrap();
        s.put("a".to_string(), -1, 2).unwrap();
        let mut batch = ChangelogBatch::new();
        let err = s.flush_changelog(&mut batch).unwrap_err();
        assert_eq!(
            err.to_string(),
            "store kv: cannot encode the value of key \"a\": refused -1"
        );
        assert_eq!((batch.len(), s.dirty_keys()), (0, 2));
        s.put("a".to_string(), 3, 3).unwrap();
        assert_eq!(
            flushed(&mut s),
            vec![("a".to_string(), Some(3)), ("b".to_string(), Some(2))]
        );
    }

    #[test]
    fn a_spill_keeps_the_last_written_keys_cached_and_never_reads_them_from_the_engine() {
        let tmp = tempfile::tempdir().unwrap();
        // Ten entries of a 3-byte key (4 with the prefix) and an 8-byte value.
        let one = 4 + 8 + super::super::write_cache::ENTRY_OVERHEAD;
        let cfg = PersistentConfig::new(tmp.path(), "app").with_cache_max_bytes_unfloored(10 * one);
        let mut s =
            PersistentKeyValueStore::open(&cfg, StoreConfig::new("kv"), StringCodec, I64Codec)
                .unwrap();
        let key = |i: i64| format!("k{i:02}");
        for i in 0..11 {
            s.put(key(i), i, i).unwrap();
        }
        // The 11th write spilled the least recently written, down to 75% of the bound.
        let kept = (10 * one / 100 * SPILL_TO_PERCENT / one) as i64;
        assert_eq!(s.cache.len() as i64, kept);
        let engine = |i: i64| engine_key(key(i).as_bytes());
        for i in 0..11 - kept {
            assert!(s.cache.get(&engine(i)).is_none(), "{} let go", key(i));
            assert_eq!(s.get(&key(i)).unwrap(), Some(i), "written back");
        }
        // A key still cached is answered by the cache: the engine's bytes are never read.
        for i in 11 - kept..11 {
            s.ks.insert(engine(i), [0xff_u8]).unwrap();
            assert_eq!(
                s.get(&key(i)).unwrap(),
                Some(i),
                "{} from the cache",
                key(i)
            );
        }
        // What the changelog owes survives the spill: every key, with its value.
        let want: Vec<_> = (0..11).map(|i| (key(i), Some(i))).collect();
        assert_eq!(flushed(&mut s), want);
    }

    #[test]
    fn undecodable_stored_value_names_the_key() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = PersistentConfig::new(tmp.path(), "app");
        let s = PersistentKeyValueStore::<String, i64>::open(
            &cfg,
            StoreConfig::new("kv"),
            StringCodec,
            I64Codec,
        )
        .unwrap();
        s.ks.insert("\u{1}k", [1u8, 2]).unwrap();
        let err = s.get(&"k".to_string()).unwrap_err().to_string();
        assert_eq!(
            err,
            "store kv: cannot decode stored value for key 6b: i64 needs exactly 8 bytes, got 2"
        );
    }
}
