//! Stores whose engine is chosen at run time: [`AnyKeyValueStore`], [`AnyWindowStore`] and
//! [`AnySessionStore`], each either the in-memory or the persistent engine.
//!
//! Owns nothing but the choice: every call goes to the engine inside, one `match` per call
//! (a predicted branch, so the in-memory hot path keeps its inlined engine code rather than
//! a virtual call). The DSL types its stores with these, so a topology built once runs on
//! either engine. Knows nothing of which engine a caller wants or where its files live.

use std::ops::{Bound, ControlFlow};

use crate::changelog::ChangelogEntry;
use crate::changelog_batch::ChangelogBatch;
use crate::error::StateError;
use crate::memory::{InMemoryKeyValueStore, InMemorySessionStore, InMemoryWindowStore};
use crate::persistent::{PersistentKeyValueStore, PersistentSessionStore, PersistentWindowStore};
use crate::store::{
    KeyValueStore, Segmented, SessionStore, SessionWindow, StateStore, WindowStore,
};

/// A key-value store on either engine.
#[non_exhaustive]
pub enum AnyKeyValueStore<K, V> {
    /// In memory, rebuilt from the changelog at every start.
    InMemory(InMemoryKeyValueStore<K, V>),
    /// On local disk.
    Persistent(PersistentKeyValueStore<K, V>),
}

/// A window store on either engine.
#[non_exhaustive]
pub enum AnyWindowStore<K, V> {
    /// In memory, rebuilt from the changelog at every start.
    InMemory(InMemoryWindowStore<K, V>),
    /// On local disk.
    Persistent(PersistentWindowStore<K, V>),
}

/// A session store on either engine.
#[non_exhaustive]
pub enum AnySessionStore<K, V> {
    /// In memory, rebuilt from the changelog at every start.
    InMemory(InMemorySessionStore<K, V>),
    /// On local disk.
    Persistent(PersistentSessionStore<K, V>),
}

/// `$body` with `$s` bound to the engine inside `$store`.
macro_rules! on_engine {
    ($store:expr, $s:ident => $body:expr) => {
        match $store {
            Self::InMemory($s) => $body,
            Self::Persistent($s) => $body,
        }
    };
}

/// Implements [`StateStore`] (and [`Segmented`] for the segmented ones) by handing each call
/// to the engine inside.
macro_rules! delegate_state_store {
    ($store:ident $(, $segmented:ident)?) => {
        impl<K: Ord + Clone, V: Clone> StateStore for $store<K, V> {
            fn name(&self) -> &str {
                on_engine!(self, s => s.name())
            }

            fn changelog_enabled(&self) -> bool {
                on_engine!(self, s => s.changelog_enabled())
            }

            fn flush_changelog(&mut self, out: &mut ChangelogBatch) -> Result<(), StateError> {
                on_engine!(self, s => s.flush_changelog(out))
            }

            fn dirty_keys(&self) -> usize {
                on_engine!(self, s => s.dirty_keys())
            }

            fn apply_changelog(&mut self, entry: &ChangelogEntry) -> Result<(), StateError> {
                on_engine!(self, s => s.apply_changelog(entry))
            }

            fn apply_changelog_batch(
                &mut self,
                batch: &crate::RestoreBatch,
            ) -> Result<(), StateError> {
                on_engine!(self, s => s.apply_changelog_batch(batch))
            }

            fn approximate_num_entries(&self) -> u64 {
                on_engine!(self, s => s.approximate_num_entries())
            }

            fn live_segments(&self) -> Option<usize> {
                on_engine!(self, s => s.live_segments())
            }
        }

        $(
        impl<K: Ord + Clone, V: Clone> $segmented for $store<K, V> {
            fn expire(&mut self, committed_frontier: i64) -> Result<usize, StateError> {
                on_engine!(self, s => s.expire(committed_frontier))
            }

            fn segments(&self) -> usize {
                on_engine!(self, s => s.segments())
            }

            fn expired_writes(&self) -> u64 {
                on_engine!(self, s => s.expired_writes())
            }

            fn first_live_time(&self) -> i64 {
                on_engine!(self, s => $segmented::first_live_time(s))
            }
        }
        )?

        impl<K, V> std::fmt::Debug for $store<K, V> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                on_engine!(self, s => s.fmt(f))
            }
        }

        impl<K, V> $store<K, V> {
            /// Whether the store keeps its entries on local disk.
            pub fn is_persistent(&self) -> bool {
                matches!(self, Self::Persistent(_))
            }
        }
    };
}

delegate_state_store!(AnyKeyValueStore);
delegate_state_store!(AnyWindowStore, Segmented);
delegate_state_store!(AnySessionStore, Segmented);

impl<K: Ord + Clone, V: Clone> KeyValueStore<K, V> for AnyKeyValueStore<K, V> {
    fn put(&mut self, key: K, value: V, timestamp: i64) -> Result<(), StateError> {
        on_engine!(self, s => s.put(key, value, timestamp))
    }

    fn get(&self, key: &K) -> Result<Option<V>, StateError> {
        on_engine!(self, s => s.get(key))
    }

    fn delete(&mut self, key: &K, timestamp: i64) -> Result<Option<V>, StateError> {
        on_engine!(self, s => s.delete(key, timestamp))
    }

    fn range(&self, from: Bound<&K>, to: Bound<&K>) -> Result<Vec<(K, V)>, StateError> {
        on_engine!(self, s => s.range(from, to))
    }

    fn all(&self) -> Result<Vec<(K, V)>, StateError> {
        on_engine!(self, s => s.all())
    }
}

impl<K: Ord + Clone, V: Clone> WindowStore<K, V> for AnyWindowStore<K, V> {
    fn put(
        &mut self,
        key: K,
        window_start: i64,
        value: V,
        timestamp: i64,
    ) -> Result<(), StateError> {
        on_engine!(self, s => s.put(key, window_start, value, timestamp))
    }

    fn update(
        &mut self,
        key: &K,
        window_start: i64,
        timestamp: i64,
        f: &mut dyn FnMut(Option<V>) -> V,
    ) -> Result<(), StateError> {
        on_engine!(self, s => s.update(key, window_start, timestamp, f))
    }

    fn update_key_range(
        &mut self,
        key: &K,
        time_from: i64,
        time_to: i64,
        timestamp: i64,
        f: &mut dyn FnMut(i64, V) -> V,
    ) -> Result<(), StateError> {
        on_engine!(self, s => s.update_key_range(key, time_from, time_to, timestamp, f))
    }

    fn update_windows(
        &mut self,
        key: &K,
        starts: &[i64],
        timestamp: i64,
        f: &mut dyn FnMut(i64, Option<V>) -> V,
    ) -> Result<(), StateError> {
        on_engine!(self, s => s.update_windows(key, starts, timestamp, f))
    }

    fn fetch(&self, key: &K, window_start: i64) -> Result<Option<V>, StateError> {
        on_engine!(self, s => s.fetch(key, window_start))
    }

    fn fetch_key_range(
        &self,
        key: &K,
        time_from: i64,
        time_to: i64,
    ) -> Result<Vec<(i64, V)>, StateError> {
        on_engine!(self, s => s.fetch_key_range(key, time_from, time_to))
    }

    fn for_each_in_key_range(
        &self,
        key: &K,
        time_from: i64,
        time_to: i64,
        f: &mut dyn FnMut(i64, &V),
    ) -> Result<(), StateError> {
        on_engine!(self, s => s.for_each_in_key_range(key, time_from, time_to, f))
    }

    fn for_each_in_key_range_backward(
        &self,
        key: &K,
        time_from: i64,
        time_to: i64,
        f: &mut dyn FnMut(i64, &V) -> ControlFlow<()>,
    ) -> Result<(), StateError> {
        on_engine!(self, s => s.for_each_in_key_range_backward(key, time_from, time_to, f))
    }

    fn fetch_all(&self, time_from: i64, time_to: i64) -> Result<Vec<(i64, K, V)>, StateError> {
        on_engine!(self, s => s.fetch_all(time_from, time_to))
    }

    fn delete(&mut self, key: &K, window_start: i64, timestamp: i64) -> Result<(), StateError> {
        on_engine!(self, s => s.delete(key, window_start, timestamp))
    }
}

impl<K: Ord + Clone, V: Clone> AnyWindowStore<K, V> {
    /// The earliest window start not expired at the frontier the store was last expired
    /// to (`i64::MIN` before that), on either engine.
    pub fn first_live_time(&self) -> i64 {
        on_engine!(self, s => s.first_live_time())
    }
}

impl<K: Ord + Clone, V: Clone> SessionStore<K, V> for AnySessionStore<K, V> {
    fn put(
        &mut self,
        key: K,
        window: SessionWindow,
        value: V,
        timestamp: i64,
    ) -> Result<(), StateError> {
        on_engine!(self, s => s.put(key, window, value, timestamp))
    }

    fn fetch(&self, key: &K, window: SessionWindow) -> Result<Option<V>, StateError> {
        on_engine!(self, s => s.fetch(key, window))
    }

    fn find_sessions(
        &self,
        key: &K,
        earliest_end: i64,
        latest_start: i64,
    ) -> Result<Vec<(SessionWindow, V)>, StateError> {
        on_engine!(self, s => s.find_sessions(key, earliest_end, latest_start))
    }

    fn fetch_all_by_end(
        &self,
        end_from: i64,
        end_to: i64,
    ) -> Result<Vec<(SessionWindow, K, V)>, StateError> {
        on_engine!(self, s => s.fetch_all_by_end(end_from, end_to))
    }

    fn remove(&mut self, key: &K, window: SessionWindow, timestamp: i64) -> Result<(), StateError> {
        on_engine!(self, s => s.remove(key, window, timestamp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{I64Codec, StringCodec};
    use crate::persistent::PersistentConfig;
    use crate::segments::SegmentedConfig;
    use crate::store::StoreConfig;

    #[test]
    fn both_engines_answer_the_same_through_the_choice() {
        let tmp = tempfile::tempdir().unwrap();
        let pc = PersistentConfig::new(tmp.path(), "app");
        let seg = SegmentedConfig::new(60_000);
        let mut stores = [
            AnyWindowStore::InMemory(InMemoryWindowStore::new(
                StoreConfig::new("w"),
                seg,
                StringCodec,
                I64Codec,
            )),
            AnyWindowStore::Persistent(
                PersistentWindowStore::open(&pc, StoreConfig::new("w"), seg, StringCodec, I64Codec)
                    .unwrap(),
            ),
        ];
        for s in &mut stores {
            s.update(&"k".to_string(), 0, 5, &mut |v| v.unwrap_or(0) + 2)
                .unwrap();
            s.update(&"k".to_string(), 0, 6, &mut |v| v.unwrap_or(0) + 3)
                .unwrap();
            assert_eq!(s.fetch(&"k".to_string(), 0).unwrap(), Some(5));
            let mut batch = ChangelogBatch::new();
            s.flush_changelog(&mut batch).unwrap();
            let out = batch.to_records();
            assert_eq!(out.len(), 1);
            assert_eq!(
                StateStore::live_segments(s),
                Some(1),
                "segments reach /metrics"
            );
        }
        assert!(!stores[0].is_persistent());
        assert!(stores[1].is_persistent());

        let mut kv = AnyKeyValueStore::Persistent(
            PersistentKeyValueStore::open(&pc, StoreConfig::new("kv"), StringCodec, I64Codec)
                .unwrap(),
        );
        kv.put("a".into(), 1, 1).unwrap();
        assert_eq!(kv.get(&"a".into()).unwrap(), Some(1));
        let mut sessions = AnySessionStore::InMemory(InMemorySessionStore::new(
            StoreConfig::new("s"),
            seg,
            StringCodec,
            I64Codec,
        ));
        sessions
            .put("a".into(), SessionWindow::new(1, 2), 7, 2)
            .unwrap();
        assert_eq!(sessions.fetch_all_by_end(0, 10).unwrap().len(), 1);
    }
}
