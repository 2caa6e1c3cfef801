//! Event-time timers held in a changelogged store.
//!
//! Owns [`InMemoryTimerStore`]: at most one timer per (key, time), fired in time-then-key
//! order once the caller says event time has reached them, and restored from its changelog
//! like any store, so timers survive a restart (Flink's keyed timer service, persisted).
//!
//! Changelog layout: key `[time i64 big-endian][key bytes]`, value empty (scheduled) or a
//! tombstone (fired or cancelled).
//!
//! This module never decides when event time advances: the caller passes the time up to
//! which timers are due.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use crate::changelog::{ChangelogEntry, ChangelogRecord};
use crate::codec::Codec;
use crate::error::StateError;
use crate::memory::decode_entry;
use crate::store::{StateStore, StoreConfig};

/// Event-time timers, one per (key, time), in memory and changelogged.
pub struct InMemoryTimerStore<K> {
    config: StoreConfig,
    timers: BTreeSet<(i64, K)>,
    dirty: BTreeMap<(i64, K), i64>,
    key_codec: Arc<dyn Codec<K>>,
}

impl<K> fmt::Debug for InMemoryTimerStore<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryTimerStore")
            .field("name", &self.config.name())
            .field("timers", &self.timers.len())
            .field("dirty", &self.dirty.len())
            .finish()
    }
}

impl<K: Ord + Clone> InMemoryTimerStore<K> {
    /// An empty timer store; the codec is used only for the changelog.
    pub fn new(config: StoreConfig, key_codec: impl Codec<K> + 'static) -> Self {
        Self {
            config,
            timers: BTreeSet::new(),
            dirty: BTreeMap::new(),
            key_codec: Arc::new(key_codec),
        }
    }

    fn mark_dirty(&mut self, time: i64, key: &K, timestamp: i64) {
        if self.config.changelog_enabled() {
            self.dirty.insert((time, key.clone()), timestamp);
        }
    }

    /// Schedules a timer for `key` at event time `time`; returns false if that exact timer
    /// was already scheduled. `timestamp` is the scheduling record's time.
    pub fn schedule(&mut self, key: K, time: i64, timestamp: i64) -> bool {
        self.mark_dirty(time, &key, timestamp);
        self.timers.insert((time, key))
    }

    /// Cancels the timer for `key` at `time`; returns whether there was one.
    pub fn cancel(&mut self, key: &K, time: i64, timestamp: i64) -> bool {
        self.mark_dirty(time, key, timestamp);
        self.timers.remove(&(time, key.clone()))
    }

    /// Whether a timer for `key` at `time` is scheduled.
    pub fn is_scheduled(&self, key: &K, time: i64) -> bool {
        self.timers.contains(&(time, key.clone()))
    }

    /// The earliest scheduled timer.
    pub fn next(&self) -> Option<(i64, &K)> {
        self.timers.first().map(|(t, k)| (*t, k))
    }

    /// Removes and returns every timer with time at or below `up_to`, in time-then-key
    /// order. Firing is a removal: it is changelogged, so a fired timer does not come back
    /// after a restore of a later epoch.
    pub fn pop_due(&mut self, up_to: i64) -> Vec<(i64, K)> {
        let mut due = Vec::new();
        while let Some((t, _)) = self.timers.first() {
            if *t > up_to {
                break;
            }
            let Some((time, key)) = self.timers.pop_first() else {
                break;
            };
            self.mark_dirty(time, &key, time);
            due.push((time, key));
        }
        due
    }

    /// Every scheduled timer, in time-then-key order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &K)> {
        self.timers.iter().map(|(t, k)| (*t, k))
    }

    /// Number of scheduled timers.
    pub fn len(&self) -> usize {
        self.timers.len()
    }

    /// Whether no timer is scheduled.
    pub fn is_empty(&self) -> bool {
        self.timers.is_empty()
    }
}

impl<K: Ord + Clone> StateStore for InMemoryTimerStore<K> {
    fn name(&self) -> &str {
        self.config.name()
    }

    fn changelog_enabled(&self) -> bool {
        self.config.changelog_enabled()
    }

    fn flush_changelog(&mut self, out: &mut Vec<ChangelogRecord>) -> Result<(), StateError> {
        let dirty = std::mem::take(&mut self.dirty);
        out.reserve(dirty.len());
        for ((time, key), timestamp) in dirty {
            let mut record_key = time.to_be_bytes().to_vec();
            self.key_codec.encode(&key, &mut record_key);
            let value = self.timers.contains(&(time, key)).then(Vec::new);
            out.push(ChangelogRecord {
                key: record_key,
                value,
                timestamp,
            });
        }
        Ok(())
    }

    fn dirty_keys(&self) -> usize {
        self.dirty.len()
    }

    fn apply_changelog(&mut self, entry: &ChangelogEntry) -> Result<(), StateError> {
        let name = self.config.name();
        if entry.key.len() < 8 {
            return Err(entry.corrupt(
                name,
                format!(
                    "truncated timer key: {} bytes, need at least 8",
                    entry.key.len()
                ),
            ));
        }
        let (time, key) = entry.key.split_at(8);
        let mut t = [0u8; 8];
        t.copy_from_slice(time);
        let time = i64::from_be_bytes(t);
        let key = decode_entry(&*self.key_codec, key, "key", name, entry)?;
        match &entry.value {
            Some(v) if !v.is_empty() => {
                return Err(entry.corrupt(
                    name,
                    format!("timer value must be empty, got {} bytes", v.len()),
                ));
            }
            Some(_) => {
                self.timers.insert((time, key));
            }
            None => {
                self.timers.remove(&(time, key));
            }
        }
        Ok(())
    }

    fn approximate_num_entries(&self) -> u64 {
        self.timers.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changelog::{ChangelogOffset, ChangelogPartition, restore};
    use crate::codec::StringCodec;

    fn store() -> InMemoryTimerStore<String> {
        InMemoryTimerStore::new(StoreConfig::new("timers"), StringCodec)
    }

    fn entries(records: Vec<ChangelogRecord>) -> Vec<ChangelogEntry> {
        records
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                ChangelogEntry::from_record(r, ChangelogPartition(0), ChangelogOffset(i as u64))
            })
            .collect()
    }

    #[test]
    fn fires_due_timers_in_time_then_key_order_once() {
        let mut s = store();
        assert!(s.schedule("b".into(), 10, 0));
        assert!(s.schedule("a".into(), 10, 0));
        assert!(!s.schedule("a".into(), 10, 1));
        s.schedule("c".into(), 5, 0);
        s.schedule("d".into(), 20, 0);
        assert_eq!(s.next(), Some((5, &"c".to_string())));
        assert_eq!(
            s.pop_due(10),
            vec![(5, "c".into()), (10, "a".into()), (10, "b".into())]
        );
        assert!(s.pop_due(10).is_empty());
        assert!(s.cancel(&"d".into(), 20, 2));
        assert!(s.is_empty());
    }

    #[test]
    fn timers_survive_a_restore_and_fired_ones_stay_fired() {
        let mut s = store();
        let mut log = Vec::new();
        s.schedule("a".into(), 10, 0);
        s.schedule("b".into(), 30, 0);
        s.flush_changelog(&mut log).unwrap();
        s.pop_due(15);
        s.schedule("c".into(), 40, 12);
        s.flush_changelog(&mut log).unwrap();
        let mut rebuilt = store();
        restore(&mut rebuilt, entries(log), 0, &mut |_| {}).unwrap();
        assert!(!rebuilt.is_scheduled(&"a".into(), 10));
        assert!(rebuilt.is_scheduled(&"b".into(), 30));
        assert!(rebuilt.is_scheduled(&"c".into(), 40));
        assert_eq!(rebuilt.len(), 2);
    }

    #[test]
    fn corrupt_timer_records_are_reported() {
        let mut s = store();
        let bad = ChangelogEntry {
            partition: ChangelogPartition(1),
            offset: ChangelogOffset(8),
            key: vec![0, 1],
            value: Some(Vec::new()),
            timestamp: 0,
        };
        let err = s.apply_changelog(&bad).unwrap_err().to_string();
        assert!(err.starts_with("store timers: corrupt changelog record at partition 1 offset 8: truncated timer key"), "{err}");
    }
}
