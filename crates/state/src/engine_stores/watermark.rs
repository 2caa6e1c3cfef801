//! The `stoatflow-watermark` store: barrier stamps and the graceful-flush marker.

use std::fmt;
use std::ops::Bound;

use crate::codec::{Codec, CodecError, I64Codec};
use crate::error::StateError;
use crate::memory::InMemoryKeyValueStore;
use crate::store::{KeyValueStore, StoreConfig};

/// The store's name; its changelog is `<application.id>-stoatflow-watermark-changelog`,
/// compacted, one partition per task (the runtime keeps one stamp ring per task, so the
/// ring moves with the task between instances).
pub const WATERMARK_STORE_NAME: &str = "stoatflow-watermark";

/// How many of the newest stamps the store keeps (the crash rule needs the newest three).
pub const RETAINED_STAMPS: usize = 4;

/// The watermark stamped on a commit barrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BarrierStamp {
    /// The barrier's number (epochs count up from 1).
    pub barrier: u64,
    /// The global watermark fixed at that barrier, epoch ms (`i64::MIN` = none yet).
    pub watermark: i64,
}

/// Keys of the watermark store. Their order (the marker, then the stamps by barrier) is
/// their codec's byte order, so the codec preserves order (docs/state.md#key-order): keep
/// the variants in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WatermarkKey {
    /// Present when the newest barrier was a graceful shutdown's flushing barrier; the value
    /// is that barrier's number.
    GracefulFlush,
    /// The stamp of this barrier; the value is the watermark.
    Stamp(u64),
}

/// Encodes [`WatermarkKey`]: `b's'` + barrier `u64` big-endian, or `b'g'` (which sorts
/// first, as the key does: the codec preserves order).
#[derive(Debug, Clone, Copy, Default)]
pub struct WatermarkKeyCodec;

impl Codec<WatermarkKey> for WatermarkKeyCodec {
    fn encode(&self, value: &WatermarkKey, out: &mut Vec<u8>) -> Result<(), CodecError> {
        match value {
            WatermarkKey::Stamp(b) => {
                out.push(b's');
                out.extend_from_slice(&b.to_be_bytes());
            }
            WatermarkKey::GracefulFlush => out.push(b'g'),
        }
        Ok(())
    }

    fn decode(&self, bytes: &[u8]) -> Result<WatermarkKey, CodecError> {
        match bytes {
            [b'g'] => Ok(WatermarkKey::GracefulFlush),
            [b's', rest @ ..] => {
                let b: [u8; 8] = rest.try_into().map_err(|_| {
                    CodecError::new(format!(
                        "stamp key needs 8 barrier bytes, got {}",
                        rest.len()
                    ))
                })?;
                Ok(WatermarkKey::Stamp(u64::from_be_bytes(b)))
            }
            _ => Err(CodecError::new(format!(
                "unknown watermark store key of {} bytes",
                bytes.len()
            ))),
        }
    }

    fn preserves_order(&self) -> bool {
        true
    }
}

/// What a restarted application seeds its lanes with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatermarkSeed {
    /// Every record lane's floor (`i64::MIN` when there is none).
    pub floor: i64,
    /// Every punctuation lane's frontier (`i64::MIN` when there is none).
    pub frontier: i64,
    /// The stamps to seed the lanes' rings with, oldest first (after a crash, without the
    /// newest committed one).
    pub stamps: Vec<BarrierStamp>,
    /// The newest committed barrier, so numbering continues after it.
    pub last_barrier: Option<u64>,
    /// Whether the last run ended with a graceful, flushing barrier.
    pub graceful: bool,
}

/// The watermark store over any key-value store.
pub struct WatermarkStore<S> {
    store: S,
}

impl<S: fmt::Debug> fmt::Debug for WatermarkStore<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatermarkStore")
            .field("store", &self.store)
            .finish()
    }
}

impl<S: KeyValueStore<WatermarkKey, i64>> WatermarkStore<S> {
    /// Wraps `store` (named [`WATERMARK_STORE_NAME`]).
    pub fn new(store: S) -> Self {
        Self { store }
    }

    /// The stamps held, oldest first.
    ///
    /// # Errors
    /// Whatever the underlying store reports.
    pub fn stamps(&self) -> Result<Vec<BarrierStamp>, StateError> {
        let from = WatermarkKey::Stamp(0);
        let to = WatermarkKey::Stamp(u64::MAX);
        Ok(self
            .store
            .range(Bound::Included(&from), Bound::Included(&to))?
            .into_iter()
            .filter_map(|(k, watermark)| match k {
                WatermarkKey::Stamp(barrier) => Some(BarrierStamp { barrier, watermark }),
                WatermarkKey::GracefulFlush => None,
            })
            .collect())
    }

    /// Records barrier `stamp` (written before the epoch rotates, so it commits in the
    /// barrier's transaction), keeps only the [`RETAINED_STAMPS`] newest, and clears the
    /// graceful-flush marker: a new barrier supersedes it.
    ///
    /// # Errors
    /// Whatever the underlying store reports.
    pub fn record_stamp(&mut self, stamp: BarrierStamp, timestamp: i64) -> Result<(), StateError> {
        self.store.put(
            WatermarkKey::Stamp(stamp.barrier),
            stamp.watermark,
            timestamp,
        )?;
        let stamps = self.stamps()?;
        let excess = stamps.len().saturating_sub(RETAINED_STAMPS);
        for old in &stamps[..excess] {
            self.store
                .delete(&WatermarkKey::Stamp(old.barrier), timestamp)?;
        }
        if self.store.get(&WatermarkKey::GracefulFlush)?.is_some() {
            self.store.delete(&WatermarkKey::GracefulFlush, timestamp)?;
        }
        Ok(())
    }

    /// Records that barrier `barrier` (already stamped) was a graceful shutdown's flushing
    /// barrier: every window closing at or before its stamp has been emitted.
    ///
    /// # Errors
    /// [`StateError::InvalidConfig`] if `barrier` is not the newest stamp held.
    pub fn mark_graceful_flush(&mut self, barrier: u64, timestamp: i64) -> Result<(), StateError> {
        let newest = self.stamps()?.last().map(|s| s.barrier);
        if newest != Some(barrier) {
            return Err(StateError::InvalidConfig {
                store: self.store.name().to_string(),
                detail: format!(
                    "graceful flush of barrier {barrier} but the newest stamp is {newest:?}"
                ),
            });
        }
        let value = i64::try_from(barrier).unwrap_or(i64::MAX);
        self.store
            .put(WatermarkKey::GracefulFlush, value, timestamp)
    }

    /// The floor and frontier to seed after a restart, from the restored store
    /// (docs/state.md#restart).
    ///
    /// In steady state a record lane past barrier N has floor W(N) and the punctuation lane
    /// has frontier W(N-1). Let c be the newest committed barrier; the consumer resumes at
    /// barrier c's offsets, so every record read again belongs to an epoch after c.
    /// - After a graceful shutdown (the marker names c) the final barrier flushed everything
    ///   up to W(c): floor = frontier = W(c), and every stamp is kept.
    /// - After a crash the newest stamp is left out of the frontier and the ring: the emission
    ///   pass barrier c triggered would only have committed with transaction c+1, so frontier =
    ///   W(c-1), and the first barrier after the restart runs that pass again (the emit frontier
    ///   prevents a second emission). The floor stays W(c): the records read again were judged
    ///   against W(c) before the crash, and a record late then must be late now (a floor of
    ///   W(c-1) admitted records the uninterrupted run dropped; found by the runtime's crash
    ///   enumeration).
    ///
    /// Missing stamps read as `i64::MIN` (no floor, no emission pass).
    ///
    /// # Errors
    /// Whatever the underlying store reports.
    pub fn seed(&self) -> Result<WatermarkSeed, StateError> {
        let mut stamps = self.stamps()?;
        let last_barrier = stamps.last().map(|s| s.barrier);
        let marker = self.store.get(&WatermarkKey::GracefulFlush)?;
        let graceful = match (marker, last_barrier) {
            (Some(m), Some(c)) => u64::try_from(m).ok() == Some(c),
            _ => false,
        };
        let watermark_at = |stamps: &[BarrierStamp], back: usize| {
            stamps
                .len()
                .checked_sub(back + 1)
                .map_or(i64::MIN, |i| stamps[i].watermark)
        };
        let floor = watermark_at(&stamps, 0);
        let frontier = if graceful {
            floor
        } else {
            stamps.pop();
            watermark_at(&stamps, 0)
        };
        Ok(WatermarkSeed {
            floor,
            frontier,
            stamps,
            last_barrier,
            graceful,
        })
    }

    /// The underlying store (to flush and restore it like any other).
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The underlying store, mutably.
    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    /// Gives the store back.
    pub fn into_inner(self) -> S {
        self.store
    }
}

/// A watermark store in a fresh in-memory store, as the engine runs it.
pub fn in_memory_watermark_store(
    changelog_enabled: bool,
) -> WatermarkStore<InMemoryKeyValueStore<WatermarkKey, i64>> {
    let config = StoreConfig::new(WATERMARK_STORE_NAME).with_changelog_enabled(changelog_enabled);
    WatermarkStore::new(InMemoryKeyValueStore::new(
        config,
        WatermarkKeyCodec,
        I64Codec,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changelog::{ChangelogEntry, ChangelogOffset, ChangelogPartition};
    use crate::changelog_batch::ChangelogBatch;
    use crate::restore::restore;
    use crate::store::StateStore;

    fn stamp(barrier: u64, watermark: i64) -> BarrierStamp {
        BarrierStamp { barrier, watermark }
    }

    fn restart(
        ws: &mut WatermarkStore<InMemoryKeyValueStore<WatermarkKey, i64>>,
        log: &mut Vec<ChangelogEntry>,
    ) -> WatermarkSeed {
        let mut batch = ChangelogBatch::new();
        ws.store_mut().flush_changelog(&mut batch).unwrap();
        let out = batch.to_records();
        for r in out {
            let off = ChangelogOffset(log.len() as u64);
            log.push(ChangelogEntry::from_record(r, ChangelogPartition(0), off));
        }
        let mut fresh = in_memory_watermark_store(true);
        restore(
            fresh.store_mut(),
            log.clone(),
            log.len() as u64,
            &mut |_| {},
        )
        .unwrap();
        fresh.seed().unwrap()
    }

    #[test]
    fn key_codec_round_trips_and_rejects_junk() {
        let c = WatermarkKeyCodec;
        for k in [WatermarkKey::Stamp(7), WatermarkKey::GracefulFlush] {
            assert_eq!(c.decode(&c.to_bytes(&k).unwrap()), Ok(k));
        }
        assert!(c.decode(b"s123").is_err());
        assert!(c.decode(b"x").is_err());
        assert!(c.decode(b"").is_err());
    }

    /// The codec says it preserves order: its bytes sort as the keys do.
    #[test]
    fn key_codec_bytes_sort_as_the_keys() {
        let c = WatermarkKeyCodec;
        let keys = [
            WatermarkKey::GracefulFlush,
            WatermarkKey::Stamp(0),
            WatermarkKey::Stamp(1),
            WatermarkKey::Stamp(256),
            WatermarkKey::Stamp(u64::MAX),
        ];
        assert!(c.preserves_order());
        for a in keys {
            for b in keys {
                let (x, y) = (c.to_bytes(&a).unwrap(), c.to_bytes(&b).unwrap());
                assert_eq!(x.cmp(&y), a.cmp(&b), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn keeps_only_the_newest_stamps() {
        let mut ws = in_memory_watermark_store(true);
        for b in 1..=10 {
            ws.record_stamp(stamp(b, b as i64 * 100), 0).unwrap();
        }
        let held: Vec<u64> = ws.stamps().unwrap().iter().map(|s| s.barrier).collect();
        assert_eq!(held, vec![7, 8, 9, 10]);
    }

    #[test]
    fn after_a_crash_the_newest_stamp_is_left_out_of_the_frontier_not_the_floor() {
        let mut ws = in_memory_watermark_store(true);
        let mut log = Vec::new();
        for b in 1..=5 {
            ws.record_stamp(stamp(b, b as i64 * 100), 0).unwrap();
        }
        let seed = restart(&mut ws, &mut log);
        assert!(!seed.graceful);
        assert_eq!(seed.last_barrier, Some(5));
        // Records read again were judged against W(c) before the crash: the floor keeps it.
        assert_eq!(seed.floor, 500);
        assert_eq!(seed.frontier, 400);
        assert_eq!(seed.stamps.last(), Some(&stamp(4, 400)));
    }

    #[test]
    fn after_a_graceful_shutdown_the_newest_stamp_is_kept() {
        let mut ws = in_memory_watermark_store(true);
        let mut log = Vec::new();
        for b in 1..=5 {
            ws.record_stamp(stamp(b, b as i64 * 100), 0).unwrap();
        }
        ws.mark_graceful_flush(5, 0).unwrap();
        let seed = restart(&mut ws, &mut log);
        assert!(seed.graceful);
        assert_eq!((seed.floor, seed.frontier), (500, 500));
        assert_eq!(seed.stamps.len(), 4);
        // The next run's first barrier clears the marker: a crash after it is a crash.
        ws.record_stamp(stamp(6, 650), 0).unwrap();
        let seed = restart(&mut ws, &mut log);
        assert!(!seed.graceful);
        assert_eq!((seed.floor, seed.frontier), (650, 500));
    }

    #[test]
    fn few_stamps_seed_min() {
        let empty = in_memory_watermark_store(true);
        let seed = empty.seed().unwrap();
        assert_eq!(
            (seed.floor, seed.frontier, seed.last_barrier),
            (i64::MIN, i64::MIN, None)
        );
        let mut one = in_memory_watermark_store(true);
        one.record_stamp(stamp(1, 10), 0).unwrap();
        let seed = one.seed().unwrap();
        assert_eq!((seed.floor, seed.frontier), (10, i64::MIN));
        one.record_stamp(stamp(2, 20), 0).unwrap();
        let seed = one.seed().unwrap();
        assert_eq!((seed.floor, seed.frontier), (20, 10));
    }

    #[test]
    fn graceful_flush_must_name_the_newest_barrier() {
        let mut ws = in_memory_watermark_store(true);
        ws.record_stamp(stamp(1, 10), 0).unwrap();
        ws.record_stamp(stamp(2, 20), 0).unwrap();
        let err = ws.mark_graceful_flush(1, 0).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "store stoatflow-watermark: invalid configuration: graceful flush of barrier 1"
            ),
            "{err}"
        );
    }
}
