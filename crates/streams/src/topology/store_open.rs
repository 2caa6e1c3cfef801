//! Opening the store a DSL operator asks for while a sub-topology is instantiated: the
//! one helper every operator creates its key-value, window and session stores through.
//!
//! Resolves the engine (the supplier's, else the task's default), opens a persistent
//! store's directory through [`StoreDirectory::recover`] (so a damaged or unclean local
//! copy is deleted before the engine reads it), and registers the store with the
//! [`Instantiation`]. The vocabulary it opens with ([`StoreRequest`], `TaskStores`,
//! [`PersistentStore`]) is `store_choice`'s, below it. Knows nothing of the DSL's
//! operators, of threads or of the log.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

use stoatflow_state::{
    AnyKeyValueStore, AnySessionStore, AnyWindowStore, Codec, InMemoryKeyValueStore,
    InMemorySessionStore, InMemoryWindowStore, LocalCopy, PersistentConfig,
    PersistentKeyValueStore, PersistentSessionStore, PersistentWindowStore, SegmentedConfig,
    StateError, StateStore, StoreConfig, StoreDirectory,
};

use crate::config::StreamsConfig;
use crate::error::ProcessError;
use crate::serde::{BoxedCodec, MissingCodec};
use crate::topology::graph::Instantiation;
use crate::topology::store_choice::{PersistentStore, StoreRequest, StoreType};

impl Instantiation {
    /// The store named by `request`, created on its engine and registered unless an earlier
    /// node of this sub-topology registered it already. A persistent store that cannot be
    /// opened is recorded as the instantiation's error (the task is refused) and an
    /// in-memory stand-in that refuses every write takes its place, so instantiation itself
    /// never fails half-way.
    pub(crate) fn key_value_store<K, V>(
        &mut self,
        request: &StoreRequest,
        key: impl Codec<K> + 'static,
        value: impl Codec<V> + 'static,
    ) -> Rc<RefCell<AnyKeyValueStore<K, V>>>
    where
        K: Ord + Clone + 'static,
        V: Clone + 'static,
    {
        self.store(
            request,
            (key, value),
            |config, k, v| AnyKeyValueStore::InMemory(InMemoryKeyValueStore::new(config, k, v)),
            |pc, config, k, v| {
                PersistentKeyValueStore::open(pc, config, k, v).map(AnyKeyValueStore::Persistent)
            },
        )
    }

    /// As [`Instantiation::key_value_store`], for a window store.
    pub(crate) fn window_store<K, V>(
        &mut self,
        request: &StoreRequest,
        segmented: SegmentedConfig,
        key: impl Codec<K> + 'static,
        value: impl Codec<V> + 'static,
    ) -> Rc<RefCell<AnyWindowStore<K, V>>>
    where
        K: Ord + Clone + 'static,
        V: Clone + 'static,
    {
        let store = self.store(
            request,
            (key, value),
            |config, k, v| {
                AnyWindowStore::InMemory(InMemoryWindowStore::new(config, segmented, k, v))
            },
            |pc, config, k, v| {
                PersistentWindowStore::open(pc, config, segmented, k, v)
                    .map(AnyWindowStore::Persistent)
            },
        );
        self.note_retention(&request.name, &segmented);
        store
    }

    /// As [`Instantiation::key_value_store`], for a session store.
    pub(crate) fn session_store<K, V>(
        &mut self,
        request: &StoreRequest,
        segmented: SegmentedConfig,
        key: impl Codec<K> + 'static,
        value: impl Codec<V> + 'static,
    ) -> Rc<RefCell<AnySessionStore<K, V>>>
    where
        K: Ord + Clone + 'static,
        V: Clone + 'static,
    {
        let store = self.store(
            request,
            (key, value),
            |config, k, v| {
                AnySessionStore::InMemory(InMemorySessionStore::new(config, segmented, k, v))
            },
            |pc, config, k, v| {
                PersistentSessionStore::open(pc, config, segmented, k, v)
                    .map(AnySessionStore::Persistent)
            },
        );
        self.note_retention(&request.name, &segmented);
        store
    }

    /// Records the windows a windowed aggregation's store holds (what a
    /// query's answer says of each window's finality).
    pub(crate) fn note_window_shape(
        &mut self,
        name: &str,
        size_ms: Option<i64>,
        close_offset_ms: i64,
    ) {
        if let Some(handle) = self.stores.get_mut(name) {
            handle.window = Some(crate::topology::graph::WindowShape {
                size_ms,
                close_offset_ms,
                retention_ms: handle.retention_ms.unwrap_or(i64::MAX),
            });
        }
    }

    /// Records a window or session store's retention with its handle (what
    /// its changelog's retention is sized from).
    fn note_retention(&mut self, name: &str, segmented: &SegmentedConfig) {
        if let Some(handle) = self.stores.get_mut(name) {
            handle.retention_ms = Some(segmented.retention_ms());
        }
    }

    /// The one path of the three above: an existing store, else one on the engine
    /// `request` resolves to (`in_memory` or `on_disk` builds it from its codecs).
    fn store<K: 'static, V: 'static, S: StateStore + 'static>(
        &mut self,
        request: &StoreRequest,
        (key, value): (impl Codec<K> + 'static, impl Codec<V> + 'static),
        in_memory: impl FnOnce(StoreConfig, BoxedCodec<K>, BoxedCodec<V>) -> S,
        on_disk: impl FnOnce(
            &PersistentConfig,
            StoreConfig,
            BoxedCodec<K>,
            BoxedCodec<V>,
        ) -> Result<S, StateError>,
    ) -> Rc<RefCell<S>> {
        if let Some(s) = self.typed_store(&request.name) {
            return s;
        }
        let config = self.store_config(request);
        let value_layout = value.changelog_value_layout();
        let (key, value) = (BoxedCodec(Box::new(key)), BoxedCodec(Box::new(value)));
        let store = match self.placement_of(request) {
            Placement::InMemory => in_memory(config, key, value),
            placement => {
                let opened = match placement {
                    Placement::Disk(pc) => on_disk(&pc, config.clone(), key, value).map_err(Some),
                    _ => Err(None),
                };
                match opened {
                    Ok(store) => store,
                    Err(error) => {
                        if let Some(e) = error {
                            self.refuse(&request.name, e);
                        }
                        let name = &request.name;
                        in_memory(
                            config,
                            BoxedCodec(Box::new(MissingCodec(name.clone()))),
                            BoxedCodec(Box::new(MissingCodec(name.clone()))),
                        )
                    }
                }
            }
        };
        let store = Rc::new(RefCell::new(store));
        self.add_store(&request.name, store.clone());
        if let Some(handle) = self.stores.get_mut(&request.name) {
            handle.value_layout = value_layout;
        }
        store
    }

    fn store_config(&self, request: &StoreRequest) -> StoreConfig {
        StoreConfig::new(request.name.clone())
            .with_changelog_enabled(request.logging && self.config.changelog_enabled)
    }

    fn refuse(&mut self, store: &str, source: StateError) {
        self.errors.push(ProcessError::State {
            store: store.to_owned(),
            source: Box::new(source),
        });
    }

    /// Where the store `request` names goes. A persistent one has its directory opened
    /// through [`StoreDirectory::recover`] first: a local copy that is not exactly what the
    /// last clean close left is deleted (and restored from the changelog's start), and
    /// what was found is recorded for the restore.
    fn placement_of(&mut self, request: &StoreRequest) -> Placement {
        let Some(stores) = &self.placement else {
            return Placement::InMemory;
        };
        if request.store_type.unwrap_or(stores.default) == StoreType::InMemory {
            return Placement::InMemory;
        }
        if let Some(what) = request.missing_serde {
            self.refuse(
                &request.name,
                StateError::InvalidConfig {
                    store: request.name.clone(),
                    detail: format!(
                        "the store is persistent and has no {what} serde: a persistent store \
                         encodes every entry (give one with Materialized::with_{what}_serde or \
                         the operator's serdes, or choose an in-memory store: \
                         default.dsl.store = in_memory or an in-memory store supplier)"
                    ),
                },
            );
            return Placement::Refused;
        }
        let Some(dir) = stores.dir.clone() else {
            self.refuse(
                &request.name,
                StateError::InvalidConfig {
                    store: request.name.clone(),
                    detail: "the store is persistent but no state directory is configured \
                             (state.dir, or default.dsl.store = in_memory)"
                        .into(),
                },
            );
            return Placement::Refused;
        };
        let pc = persistent_config(&self.config, dir);
        match StoreDirectory::recover(&pc, &request.name, LocalCopy::VerifyOrRebuild) {
            Ok((directory, recovery)) => {
                self.persistent.push(PersistentStore {
                    name: request.name.clone(),
                    directory,
                    recovery,
                });
                Placement::Disk(pc)
            }
            Err(e) => {
                self.refuse(&request.name, e);
                Placement::Refused
            }
        }
    }
}

/// Where one store goes.
enum Placement {
    InMemory,
    Disk(PersistentConfig),
    /// It could not be opened (the error is recorded): an in-memory stand-in.
    Refused,
}

/// Where and how the task's persistent stores are opened: under `dir`, owned by the
/// application, with the memory bounds the settings give each store.
fn persistent_config(config: &StreamsConfig, dir: PathBuf) -> PersistentConfig {
    PersistentConfig::new(dir, config.application_id.clone())
        .with_cache_max_bytes(config.store_cache_max_bytes)
        .with_block_cache_bytes(config.store_block_cache_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persistent_stores_get_the_memory_bounds_of_the_settings() {
        let defaults = persistent_config(&StreamsConfig::new("app"), "/s".into());
        assert_eq!(
            defaults.cache_max_bytes(),
            stoatflow_state::DEFAULT_CACHE_MAX_BYTES
        );
        assert_eq!(
            defaults.block_cache_bytes(),
            stoatflow_state::DEFAULT_BLOCK_CACHE_BYTES
        );
        let set = StreamsConfig::new("app")
            .with_store_cache_max_bytes(5 << 20)
            .with_store_block_cache_bytes(7 << 20);
        let pc = persistent_config(&set, "/s".into());
        assert_eq!(
            (pc.cache_max_bytes(), pc.block_cache_bytes()),
            (5 << 20, 7 << 20)
        );
        assert_eq!(pc.application_id(), "app");
        assert_eq!(pc.state_dir(), std::path::Path::new("/s"));
    }
}
