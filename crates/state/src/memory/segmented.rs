//! The in-memory segmented core under the window and session stores.
//!
//! Owns [`SegmentedCore`]: the segment map (segment id → one [`Segment`]), which segment an
//! entry goes to, retention and expiry against the monotonic committed frontier (a whole
//! segment drops with one `split_off`), the entry count, the `segments` gauge, the
//! expired-write counter, dirty tracking with the barrier flush, and restore (skipping whole
//! expired segments). A store brings its [`Segment`] (how entries are laid out inside one
//! segment, including its single-traversal upsert) and keeps its queries.
//!
//! This module never knows how a segment lays out its entries, nor which queries a store
//! answers.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::btree_map::{Range, RangeMut};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use super::{DirtyLog, SharedCodec, Slot, Slots, decode_entry, push_flushed};
use crate::changelog::ChangelogEntry;
use crate::changelog_batch::ChangelogBatch;
use crate::codec::Codec;
use crate::error::StateError;
use crate::segments::{Retention, SegmentedConfig};
use crate::store::StoreConfig;
use crate::windowed::WindowKind;

/// The window type of a segment's kind.
pub(crate) type WindowOf<K, V, S> = <<S as Segment<K, V>>::Kind as WindowKind>::Window;

/// The dirty-log id of a segment's kind.
pub(crate) type IdOf<K, V, S> = <<S as Segment<K, V>>::Kind as WindowKind>::Id<K>;

/// The entries of one retention segment, laid out as the store wants them.
pub(crate) trait Segment<K: Ord + Clone, V>: Default {
    /// Time windows or sessions.
    type Kind: WindowKind;

    /// Number of entries.
    fn len(&self) -> u64;

    /// The slot of (key, window).
    fn slot(&self, key: &K, window: WindowOf<K, V, Self>) -> Option<&Slot<V>>;

    /// The slot of (key, window), to mark it clean.
    fn slot_mut(&mut self, key: &K, window: WindowOf<K, V, Self>) -> Option<&mut Slot<V>>;

    /// Replaces the entry of (key, window) with `f(current)` in one traversal; a live write
    /// (`timestamp` given) is noted in `dirty`. The key is cloned only if the entry is new
    /// or newly dirty. Returns whether the entry is new.
    fn upsert(
        &mut self,
        key: Cow<'_, K>,
        window: WindowOf<K, V, Self>,
        timestamp: Option<i64>,
        dirty: &mut DirtyLog<IdOf<K, V, Self>>,
        f: impl FnOnce(Option<V>) -> V,
    ) -> bool;

    /// Removes (key, window).
    fn remove(&mut self, key: &K, window: WindowOf<K, V, Self>) -> Option<Slot<V>>;

    /// Visits every slot, in any order.
    fn for_each_slot<'a>(&'a self, f: &mut dyn FnMut(&'a Slot<V>));

    /// Marks every slot clean.
    fn mark_all_clean(&mut self);
}

/// A window or session store's segments, retention, dirty tracking and codecs (see the
/// module docs). `I` is the dirty-log id, [`IdOf`] the segment (a parameter rather than a
/// projection so that the stores' types need no bounds).
pub(crate) struct SegmentedCore<K, V, S, I> {
    config: StoreConfig,
    retention: Retention,
    segments: BTreeMap<i64, S>,
    entries: u64,
    dirty: DirtyLog<I>,
    key_codec: SharedCodec<K>,
    value_codec: SharedCodec<V>,
}

/// The slots of a segment map, found by dirty-log id.
struct SegmentSlots<'a, K, S> {
    segments: &'a mut BTreeMap<i64, S>,
    retention: Retention,
    _key: PhantomData<fn() -> K>,
}

impl<K: Ord + Clone, V, S: Segment<K, V>> Slots<IdOf<K, V, S>, V> for SegmentSlots<'_, K, S> {
    fn slot_mut(&mut self, id: &IdOf<K, V, S>) -> Option<&mut Slot<V>> {
        let window = S::Kind::window(id);
        self.segments
            .get_mut(&self.retention.segment_id(S::Kind::time(window)))?
            .slot_mut(S::Kind::key(id), window)
    }

    fn live(&self) -> u64 {
        self.segments.values().map(Segment::len).sum()
    }

    fn for_each_slot<'a>(&'a self, f: &mut dyn FnMut(&'a Slot<V>)) {
        for seg in self.segments.values() {
            seg.for_each_slot(f);
        }
    }

    fn mark_all_clean(&mut self) {
        for seg in self.segments.values_mut() {
            seg.mark_all_clean();
        }
    }
}

impl<K, V, S, I> SegmentedCore<K, V, S, I> {
    /// Writes `name { .. }` for the store's `Debug`.
    pub(crate) fn fmt_as(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(name)
            .field("name", &self.config.name())
            .field("segmented", &self.retention.config())
            .field("segments", &self.segments.len())
            .field("entries", &self.entries)
            .field("dirty", &self.dirty.len())
            .finish()
    }
}

impl<K: Ord + Clone, V: Clone, S: Segment<K, V>> SegmentedCore<K, V, S, IdOf<K, V, S>> {
    /// An empty store; the codecs are used only for the changelog.
    pub(crate) fn new(
        config: StoreConfig,
        segmented: SegmentedConfig,
        key_codec: impl Codec<K> + 'static,
        value_codec: impl Codec<V> + 'static,
    ) -> Self {
        Self {
            config,
            retention: Retention::new(segmented),
            segments: BTreeMap::new(),
            entries: 0,
            dirty: DirtyLog::with_leading_time(S::Kind::leading_time()),
            key_codec: Arc::new(key_codec),
            value_codec: Arc::new(value_codec),
        }
    }

    /// The retention configuration.
    pub(crate) fn segmented_config(&self) -> SegmentedConfig {
        self.retention.config()
    }

    /// The expiry state (to test windows against it while holding segments).
    pub(crate) fn retention(&self) -> Retention {
        self.retention
    }

    /// Whether a write at `time` is admitted; one to an expired time is counted and
    /// ignored.
    #[inline]
    pub(crate) fn admit(&mut self, time: i64) -> bool {
        self.retention.admit(self.config.name(), time)
    }

    /// Counts `n` writes ignored because their time had expired.
    pub(crate) fn ignored(&mut self, n: u64) {
        if n > 0 {
            self.retention.ignored(self.config.name(), n);
        }
    }

    /// Replaces the entry of (key, window) with `f(current)` in one traversal, as a restore
    /// (`timestamp` `None`) or a live write, which is logged dirty if changelogging is on.
    #[inline]
    pub(crate) fn upsert(
        &mut self,
        key: Cow<'_, K>,
        window: WindowOf<K, V, S>,
        timestamp: Option<i64>,
        f: impl FnOnce(Option<V>) -> V,
    ) {
        let timestamp = timestamp.filter(|_| self.config.changelog_enabled());
        let segment = self.retention.segment_id(S::Kind::time(window));
        let seg = self.segments.entry(segment).or_default();
        if seg.upsert(key, window, timestamp, &mut self.dirty, f) {
            self.entries += 1;
        }
    }

    /// The segment holding entries of time `time` (created if missing) and the dirty log,
    /// for a store writing several entries of one segment with one lookup; `log` says
    /// whether live writes are changelogged. The store reports each new entry with
    /// [`SegmentedCore::added`].
    #[inline]
    pub(crate) fn segment_for_write(
        &mut self,
        time: i64,
    ) -> (&mut S, &mut DirtyLog<IdOf<K, V, S>>, bool) {
        let log = self.config.changelog_enabled();
        let segment = self.retention.segment_id(time);
        (
            self.segments.entry(segment).or_default(),
            &mut self.dirty,
            log,
        )
    }

    /// Counts `n` entries a store added through [`SegmentedCore::segment_for_write`].
    #[inline]
    pub(crate) fn added(&mut self, n: u64) {
        self.entries += n;
    }

    /// The slot of (key, window).
    #[inline]
    pub(crate) fn slot(&self, key: &K, window: WindowOf<K, V, S>) -> Option<&Slot<V>> {
        self.segments
            .get(&self.retention.segment_id(S::Kind::time(window)))?
            .slot(key, window)
    }

    /// Removes (key, window) as a live write at `timestamp`: a tombstone at the next flush.
    pub(crate) fn remove(&mut self, key: &K, window: WindowOf<K, V, S>, timestamp: i64) {
        let removed = self.remove_raw(key, window);
        if self.config.changelog_enabled() {
            let dirty = removed.map_or(super::CLEAN, |slot| slot.dirty);
            self.dirty
                .note_removed(dirty, timestamp, || S::Kind::id(key.clone(), window));
        }
    }

    fn remove_raw(&mut self, key: &K, window: WindowOf<K, V, S>) -> Option<Slot<V>> {
        let segment = self.retention.segment_id(S::Kind::time(window));
        let seg = self.segments.get_mut(&segment)?;
        let old = seg.remove(key, window)?;
        if seg.len() == 0 {
            self.segments.remove(&segment);
        }
        self.entries -= 1;
        Some(old)
    }

    /// The segments that may hold times `from..=to`, in order (call only with
    /// `from <= to`).
    #[inline]
    pub(crate) fn segments_between(&self, from: i64, to: i64) -> Range<'_, i64, S> {
        self.segments
            .range(self.retention.segments_between(from, to))
    }

    /// The segments from the one holding `time` on, in order.
    pub(crate) fn segments_from(&self, time: i64) -> impl Iterator<Item = &S> {
        self.segments
            .range(self.retention.segment_id(time)..)
            .map(|(_, s)| s)
    }

    /// The segments that may hold times `from..=to` (call only with `from <= to`), and the
    /// dirty log to note live writes to them in (for a fold in place).
    pub(crate) fn segments_between_mut(
        &mut self,
        from: i64,
        to: i64,
    ) -> (RangeMut<'_, i64, S>, &mut DirtyLog<IdOf<K, V, S>>) {
        let range = self.retention.segments_between(from, to);
        (self.segments.range_mut(range), &mut self.dirty)
    }

    /// Whether changelogging is on.
    pub(crate) fn changelog_enabled(&self) -> bool {
        self.config.changelog_enabled()
    }

    // What every segmented store does, handed over by `delegate_to_segmented_core!`.

    pub(crate) fn name(&self) -> &str {
        self.config.name()
    }

    pub(crate) fn flush_changelog(&mut self, out: &mut ChangelogBatch) -> Result<(), StateError> {
        let name = self.config.name();
        let (key_codec, value_codec) = (&self.key_codec, &self.value_codec);
        let mut slots = SegmentSlots {
            segments: &mut self.segments,
            retention: self.retention,
            _key: PhantomData,
        };
        self.dirty
            .flush(out, &mut slots, |n, id, value, timestamp, out| {
                let key = |bytes: &mut Vec<u8>| {
                    key_codec.encode(S::Kind::key(id), bytes)?;
                    let codec_end = bytes.len();
                    S::Kind::push_key_suffix(S::Kind::window(id), bytes);
                    Ok(codec_end)
                };
                push_flushed(out, name, n, key, &**value_codec, value, timestamp)
            })
    }

    pub(crate) fn dirty_keys(&self) -> usize {
        self.dirty.len()
    }

    pub(crate) fn apply_changelog(&mut self, entry: &ChangelogEntry) -> Result<(), StateError> {
        let name = self.config.name();
        let (key_bytes, window) = S::Kind::restored(entry, name)?;
        let key = decode_entry(&*self.key_codec, key_bytes, "key", name, entry)?;
        match &entry.value {
            None => {
                self.remove_raw(&key, window);
            }
            Some(bytes) => {
                let value = decode_entry(&*self.value_codec, bytes, "value", name, entry)?;
                if self.retention.restores(S::Kind::time(window)) {
                    self.upsert(Cow::Owned(key), window, None, |_| value);
                }
            }
        }
        Ok(())
    }

    pub(crate) fn approximate_num_entries(&self) -> u64 {
        self.entries
    }

    pub(crate) fn expire(&mut self, committed_frontier: i64) -> Result<usize, StateError> {
        let first_live = self.retention.advance(committed_frontier);
        let live = self.segments.split_off(&first_live);
        let dropped = std::mem::replace(&mut self.segments, live);
        // Dirty entries of dropped slots stay in the log and flush as tombstones.
        self.entries -= dropped.values().map(Segment::len).sum::<u64>();
        if !dropped.is_empty() {
            tracing::debug!(
                store = self.config.name(),
                dropped = dropped.len(),
                committed_frontier,
                "dropped expired segments"
            );
        }
        Ok(dropped.len())
    }

    pub(crate) fn segments(&self) -> usize {
        self.segments.len()
    }

    pub(crate) fn expired_writes(&self) -> u64 {
        self.retention.expired_writes()
    }

    pub(crate) fn first_live_time(&self) -> i64 {
        self.retention.first_live_time()
    }
}
