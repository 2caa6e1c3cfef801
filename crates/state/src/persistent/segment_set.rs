//! The keyspaces of a segmented store: a pool of slots reused as segments come and go.
//!
//! Owns [`SegmentSet`]: which engine keyspace holds which segment. A segment's entries live
//! in one slot, a keyspace named `slot<n>`; the keyspace `slots` maps each slot holding a
//! segment to its id (key: the slot number, 4 bytes big-endian; value: the segment id, 8
//! bytes big-endian). A new segment takes a free slot, or a new one when none is free, so
//! the store has at most as many slots as it ever had live segments at once. Dropping a
//! segment empties its slot (every table dropped at once, none rewritten) and frees it;
//! the keyspace itself stays. The dropped tables' files are deleted before the drop returns
//! (see [`SegmentSet::release`]). Creating and deleting a keyspace per segment is what this
//! replaces: the engine keeps a record of every keyspace it ever created or deleted, with
//! files, while the database is open, so a store running for weeks grew without bound.
//! Both the map and the slots are written only by sorted ingestion, never through the
//! journal (as every write of a persistent store is).
//!
//! This module never knows what a key or a value means, nor which segment is live: the
//! caller says which to drop.

use std::collections::BTreeMap;
use std::fmt;

use fjall::AbstractTree;

use super::{engine_err, write_sorted};
use crate::error::StateError;

/// The keyspace mapping slots to the segments they hold.
const SLOT_MAP: &str = "slots";

/// The prefix of a slot's keyspace name.
const SLOT_PREFIX: &str = "slot-";

/// A keyspace that holds one segment at a time.
#[derive(Clone)]
struct Slot {
    number: u32,
    keyspace: fjall::Keyspace,
}

/// The slots of a segmented store and the segments they hold (see the module docs).
pub(crate) struct SegmentSet {
    store: String,
    db: fjall::Database,
    map: fjall::Keyspace,
    live: BTreeMap<i64, Slot>,
    /// Empty slots, the lowest number last (taken first).
    free: Vec<Slot>,
    slots: u32,
}

impl fmt::Debug for SegmentSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SegmentSet")
            .field("store", &self.store)
            .field("segments", &self.live.keys().collect::<Vec<_>>())
            .field("slots", &self.slots)
            .finish()
    }
}

impl SegmentSet {
    /// Opens the slots already in `db` and the segments they hold.
    pub(crate) fn open(store: &str, db: fjall::Database) -> Result<Self, StateError> {
        let err = engine_err(store);
        let map = db
            .keyspace(SLOT_MAP, fjall::KeyspaceCreateOptions::default)
            .map_err(&err)?;
        let mut slots = BTreeMap::new();
        for name in db.list_keyspace_names() {
            let name: &str = &name;
            if let Some(number) = name
                .strip_prefix(SLOT_PREFIX)
                .and_then(|s| s.parse::<u32>().ok())
            {
                let keyspace = db
                    .keyspace(name, fjall::KeyspaceCreateOptions::default)
                    .map_err(&err)?;
                slots.insert(number, Slot { number, keyspace });
            }
        }
        let damaged = |detail: String| StateError::Engine {
            store: store.to_string(),
            detail: format!("keyspace {SLOT_MAP}: {detail}"),
        };
        let mut live = BTreeMap::new();
        for entry in map.iter() {
            let (key, value) = entry.into_inner().map_err(&err)?;
            let (Ok(number), Ok(segment)) = (
                <[u8; 4]>::try_from(&*key).map(u32::from_be_bytes),
                <[u8; 8]>::try_from(&*value).map(i64::from_be_bytes),
            ) else {
                return Err(damaged(format!(
                    "entry {} = {} is not a slot number and a segment id",
                    crate::error::hex(&key),
                    crate::error::hex(&value)
                )));
            };
            let slot = slots.remove(&number).ok_or_else(|| {
                damaged(format!(
                    "segment {segment} is in slot {number}, which does not exist"
                ))
            })?;
            if live.insert(segment, slot).is_some() {
                return Err(damaged(format!("segment {segment} is in two slots")));
            }
        }
        let count = live
            .values()
            .chain(slots.values())
            .map(|s: &Slot| s.number + 1)
            .max()
            .unwrap_or(0);
        let mut set = Self {
            store: store.to_string(),
            db,
            map,
            live,
            free: Vec::new(),
            slots: count,
        };
        // Slots that hold no segment are empty after a clean close; emptying them again
        // costs nothing then.
        for slot in slots.into_values().rev() {
            set.empty(&slot)?;
            set.free.push(slot);
        }
        Ok(set)
    }

    /// The keyspace of `segment`, if it has one.
    pub(crate) fn get(&self, segment: i64) -> Option<&fjall::Keyspace> {
        self.live.get(&segment).map(|s| &s.keyspace)
    }

    /// The keyspace of `segment`, giving it a slot if it has none.
    pub(crate) fn get_or_create(&mut self, segment: i64) -> Result<&fjall::Keyspace, StateError> {
        if !self.live.contains_key(&segment) {
            let slot = match self.free.pop() {
                Some(slot) => slot,
                None => self.new_slot()?,
            };
            let key = slot.number.to_be_bytes();
            let value = segment.to_be_bytes();
            let written = write_sorted(
                &self.map,
                std::iter::once((&key[..], Some(&value[..]))),
                &self.store,
            );
            if let Err(e) = written {
                self.free.push(slot);
                return Err(e);
            }
            self.live.insert(segment, slot);
        }
        Ok(&self.live[&segment].keyspace)
    }

    fn new_slot(&mut self) -> Result<Slot, StateError> {
        let number = self.slots;
        let keyspace = self
            .db
            .keyspace(
                &format!("{SLOT_PREFIX}{number}"),
                fjall::KeyspaceCreateOptions::default,
            )
            .map_err(engine_err(&self.store))?;
        self.slots += 1;
        Ok(Slot { number, keyspace })
    }

    /// Drops every segment below `first_live`: its entries are gone from reads at once, its
    /// tables deleted, its slot free for a later segment.
    pub(crate) fn drop_below(&mut self, first_live: i64) -> Result<(), StateError> {
        let live = self.live.split_off(&first_live);
        let mut dropped: Vec<Slot> = std::mem::replace(&mut self.live, live)
            .into_values()
            .collect();
        if dropped.is_empty() {
            return Ok(());
        }
        dropped.sort_by_key(|s| s.number);
        let keys: Vec<[u8; 4]> = dropped.iter().map(|s| s.number.to_be_bytes()).collect();
        let mut result = write_sorted(&self.map, keys.iter().map(|k| (&k[..], None)), &self.store);
        for slot in dropped.into_iter().rev() {
            // A slot that could not be emptied is not reused: it is emptied again at the
            // next open.
            match self.empty(&slot) {
                Ok(()) => self.free.push(slot),
                Err(e) => result = result.and(Err(e)),
            }
        }
        self.free.sort_by_key(|s| std::cmp::Reverse(s.number));
        result
    }

    /// Empties a slot: drops all its tables in one step (entries reach a slot only by
    /// sorted ingestion, so tables are all it has), and clears it should anything remain.
    /// A slot with no table is left alone (a drop would still write the engine a version).
    fn empty(&self, slot: &Slot) -> Result<(), StateError> {
        let err = engine_err(&self.store);
        let ks = &slot.keyspace;
        if ks.table_count() > 0 {
            ks.tree
                .drop_range::<&[u8], _>(..)
                .map_err(|e| err(e.into()))?;
        }
        if ks.table_count() > 0 || ks.first_key_value().is_some() {
            tracing::warn!(store = %self.store, slot = slot.number, "a dropped segment's slot kept entries after its tables were dropped; clearing it");
            ks.clear().map_err(&err)?;
        }
        self.release(ks)
    }

    /// Deletes the files of the tables `ks` no longer holds, which only its earlier versions
    /// still name. The engine records each change to a keyspace's tables as a new version,
    /// and deletes a table's file once no version it keeps names it. It forgets old versions
    /// as a flush or a compaction of the keyspace ends, but not after a drop, so a dropped
    /// segment's tables stayed on disk until its slot was next compacted: for good in a slot
    /// no later segment took. A version must be kept while a snapshot older than its
    /// successor is open. Only this store reads its database, never while it drops
    /// segments, so none is open here and every version but the newest goes; should one be
    /// open, the engine's own, later, bound applies.
    fn release(&self, ks: &fjall::Keyspace) -> Result<(), StateError> {
        let snapshots = &self.db.supervisor.snapshot_tracker;
        let below = if snapshots.open_snapshots() == 0 {
            // Every version is numbered below the next snapshot the engine would open.
            snapshots.get()
        } else {
            snapshots.get_seqno_safe_to_gc()
        };
        ks.tree
            .get_version_history_lock()
            .maintenance(ks.path(), below)
            .map_err(|e| engine_err(&self.store)(e.into()))
    }

    /// The ids of the segments that have a slot.
    pub(crate) fn ids(&self) -> impl Iterator<Item = i64> + '_ {
        self.live.keys().copied()
    }

    pub(crate) fn approximate_len(&self) -> u64 {
        self.live
            .values()
            .map(|s| s.keyspace.approximate_len() as u64)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persistent::{PersistentConfig, StoreDirectory, open_database};

    fn put(set: &mut SegmentSet, segment: i64, key: &[u8]) {
        let ks = set.get_or_create(segment).unwrap().clone();
        write_sorted(&ks, std::iter::once((key, Some(&b"v"[..]))), "s").unwrap();
    }

    fn keys(set: &SegmentSet, segment: i64) -> Vec<Vec<u8>> {
        set.get(segment)
            .into_iter()
            .flat_map(|ks| ks.iter())
            .map(|g| g.key().unwrap().to_vec())
            .collect()
    }

    /// A dropped segment's slot keeps no older version of its tables: the engine deletes a
    /// table's file only once no version it keeps names it, and it used to keep the version
    /// before the drop until the slot's next compaction.
    #[test]
    fn a_free_slot_keeps_no_version_naming_the_dropped_tables() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = StoreDirectory::open(&PersistentConfig::new(tmp.path(), "app"), "s").unwrap();
        let mut set = SegmentSet::open("s", open_database(&dir).unwrap()).unwrap();
        for segment in 0..8 {
            for key in 0..3 {
                put(&mut set, segment, format!("k{segment}-{key}").as_bytes());
            }
        }
        for first_live in [2, 3, 7, 8] {
            set.drop_below(first_live).unwrap();
            for slot in &set.free {
                assert_eq!(slot.keyspace.table_count(), 0);
                assert_eq!(
                    slot.keyspace.tree.version_free_list_len(),
                    0,
                    "free slot {} after the drop below {first_live}",
                    slot.number
                );
            }
        }
        assert_eq!(set.free.len(), 8);
    }

    /// A dropped segment's entries are gone at once, its slot holds the next segment with
    /// none of them, the store never has more slots than segments live at once, and a
    /// reopen finds exactly the live segments.
    #[test]
    fn slots_are_reused_and_a_reopen_sees_the_live_segments() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = StoreDirectory::open(&PersistentConfig::new(tmp.path(), "app"), "s").unwrap();
        let mut set = SegmentSet::open("s", open_database(&dir).unwrap()).unwrap();
        for segment in 0..50 {
            put(&mut set, segment, format!("k{segment}").as_bytes());
            set.drop_below(segment - 1).unwrap();
            assert!(set.get(segment - 2).is_none());
            assert_eq!(
                keys(&set, segment),
                vec![format!("k{segment}").into_bytes()]
            );
        }
        assert_eq!(set.ids().collect::<Vec<_>>(), vec![48, 49]);
        assert_eq!(set.slots, 3, "{set:?}");
        drop(set);
        dir.write_checkpoint(&[]).unwrap();
        let mut set = SegmentSet::open("s", open_database(&dir).unwrap()).unwrap();
        assert_eq!(set.ids().collect::<Vec<_>>(), vec![48, 49]);
        assert_eq!(keys(&set, 48), vec![b"k48".to_vec()]);
        assert_eq!(keys(&set, 49), vec![b"k49".to_vec()]);
        // The free slot is empty and taken first.
        assert!(keys(&set, 50).is_empty());
        put(&mut set, 50, b"k50");
        assert_eq!(keys(&set, 50), vec![b"k50".to_vec()]);
        assert_eq!(set.slots, 3, "{set:?}");
    }
}
