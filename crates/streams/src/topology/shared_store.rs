//! [`Shared`]: a store owned by a task and used by one of its operators.
//!
//! Stores are registered with the task (for changelog flushes, restore and
//! inspection) and used by an operator at the same time, so both hold an
//! `Rc<RefCell<S>>`. `Shared` lets such a handle stand where the state crate
//! expects a store, so the state crate's engine-store wrappers (the emit
//! frontier) are used as they are rather than re-implemented here.

use std::cell::RefCell;
use std::ops::Bound;
use std::rc::Rc;

use stoatflow_state::{
    ChangelogBatch, ChangelogEntry, KeyValueStore, RestoreBatch, StateError, StateStore,
};

/// A task-owned store handle that is itself a store.
#[derive(Debug)]
pub(crate) struct Shared<S> {
    name: String,
    store: Rc<RefCell<S>>,
}

impl<S: StateStore> Shared<S> {
    pub(crate) fn new(store: Rc<RefCell<S>>) -> Self {
        let name = store.borrow().name().to_owned();
        Shared { name, store }
    }
}

impl<S: StateStore> StateStore for Shared<S> {
    fn name(&self) -> &str {
        &self.name
    }
    fn changelog_enabled(&self) -> bool {
        self.store.borrow().changelog_enabled()
    }
    fn flush_changelog(&mut self, out: &mut ChangelogBatch) -> Result<(), StateError> {
        self.store.borrow_mut().flush_changelog(out)
    }
    fn dirty_keys(&self) -> usize {
        self.store.borrow().dirty_keys()
    }
    fn apply_changelog(&mut self, entry: &ChangelogEntry) -> Result<(), StateError> {
        self.store.borrow_mut().apply_changelog(entry)
    }
    fn apply_changelog_batch(&mut self, batch: &RestoreBatch) -> Result<(), StateError> {
        self.store.borrow_mut().apply_changelog_batch(batch)
    }
    fn approximate_num_entries(&self) -> u64 {
        self.store.borrow().approximate_num_entries()
    }
    fn live_segments(&self) -> Option<usize> {
        self.store.borrow().live_segments()
    }
}

impl<K, V, S: KeyValueStore<K, V>> KeyValueStore<K, V> for Shared<S> {
    fn put(&mut self, key: K, value: V, timestamp: i64) -> Result<(), StateError> {
        self.store.borrow_mut().put(key, value, timestamp)
    }
    fn get(&self, key: &K) -> Result<Option<V>, StateError> {
        self.store.borrow().get(key)
    }
    fn delete(&mut self, key: &K, timestamp: i64) -> Result<Option<V>, StateError> {
        self.store.borrow_mut().delete(key, timestamp)
    }
    fn range(&self, from: Bound<&K>, to: Bound<&K>) -> Result<Vec<(K, V)>, StateError> {
        self.store.borrow().range(from, to)
    }
}
