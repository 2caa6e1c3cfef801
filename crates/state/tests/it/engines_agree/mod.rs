//! The two engines answer alike: random sequences of operations, applied side by side to
//! an in-memory store and a persistent one (through the `Any*` stores, so the choice is
//! exercised too), must get the same answer from both after every operation.
//!
//! Covered: the key-value, window and session stores and the engine's own stores (emit
//! frontier, watermark store) over both engines; every read and write, the records of each
//! flush in order, retention (expiry, ignored writes, the segments gauge, the first live
//! time), and restore of every flushed record into fresh stores of both engines. Keys come
//! from small pools holding the empty key, keys that are prefixes of each other and the
//! extreme integers; times include `i64::MIN`, `i64::MAX`, negatives and both sides of
//! segment edges, against retentions and segment intervals from 0 / 1 ms to `i64::MAX`.
//!
//! Three key codecs: `StringCodec`, whose byte order is the key order; `I64Codec` (Kafka's
//! big-endian two's complement), whose byte order puts negative keys after the others but
//! which names a sortable form the persistent engine keeps instead; and the same bytes
//! under a codec that says nothing of its order ([`Unsorted`]), which the persistent engine
//! orders by decoded key. The contract is the key order (`K: Ord`), whatever the codec: which keys a
//! range's bounds admit, the order of every answer holding several keys, and the order of a
//! flush's records; every one of them is compared exactly, for both codecs
//! (docs/state.md#key-order).
//!
//! This module owns the harness: the key types and their pools, times, running an
//! operation on both engines and comparing, the flush. Each store kind has its module.

mod kv;
mod negative_keys;
mod own_stores;
mod sessions;
mod windows;

use std::fmt;
use std::path::Path;

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use stoatflow_state::{
    ChangelogBatch, Codec, CodecError, I64Codec, PersistentConfig, Segmented, SegmentedConfig,
    StateError, StateStore, StoreConfig, StringCodec,
};

use crate::engines::Changelog;

/// Size of every key pool; operations name keys by their index in it.
const KEYS: usize = 10;

/// A key type under test, with its codec and a pool of keys at the edges of its order.
trait TestKey: Ord + Clone + fmt::Debug + 'static {
    /// The key codec.
    type Codec: Codec<Self> + Default + 'static;

    /// [`KEYS`] keys.
    fn pool() -> Vec<Self>;
}

impl TestKey for String {
    type Codec = StringCodec;

    fn pool() -> Vec<Self> {
        // The empty key, keys that are prefixes of each other, bytes 0x00, 0x01, 0x7f and a
        // two-byte character.
        [
            "", "\0", "a", "a\0", "a\u{1}", "ab", "abc", "b", "\u{7f}", "é",
        ]
        .map(String::from)
        .to_vec()
    }
}

impl TestKey for i64 {
    type Codec = I64Codec;

    fn pool() -> Vec<Self> {
        vec![
            i64::MIN,
            i64::MIN + 1,
            -256,
            -1,
            0,
            1,
            255,
            256,
            i64::MAX - 1,
            i64::MAX,
        ]
    }
}

/// An `i64` key whose codec writes Kafka's bytes and says nothing of their order: the
/// persistent engine's path for a user serde that neither preserves order nor names a
/// sortable form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Unsorted(i64);

/// The codec of [`Unsorted`].
#[derive(Debug, Clone, Copy, Default)]
struct UnsortedCodec;

impl Codec<Unsorted> for UnsortedCodec {
    fn encode(&self, v: &Unsorted, out: &mut Vec<u8>) -> Result<(), CodecError> {
        I64Codec.encode(&v.0, out)
    }
    fn decode(&self, b: &[u8]) -> Result<Unsorted, CodecError> {
        I64Codec.decode(b).map(Unsorted)
    }
}

impl TestKey for Unsorted {
    type Codec = UnsortedCodec;

    fn pool() -> Vec<Self> {
        i64::pool().into_iter().map(Unsorted).collect()
    }
}

/// A time, resolved against a store's segment interval.
#[derive(Debug, Clone, Copy)]
enum Time {
    /// This time.
    At(i64),
    /// `segment * interval + offset`, saturating: either side of a segment edge.
    Edge(i8, i8),
}

impl Time {
    fn at(self, interval: i64) -> i64 {
        match self {
            Time::At(t) => t,
            Time::Edge(segment, offset) => i64::from(segment)
                .saturating_mul(interval)
                .saturating_add(i64::from(offset)),
        }
    }
}

fn time() -> impl Strategy<Value = Time> {
    prop_oneof![
        select(vec![
            i64::MIN,
            i64::MIN + 1,
            -1,
            0,
            1,
            i64::MAX - 1,
            i64::MAX
        ])
        .prop_map(Time::At),
        (-2i8..=2, -1i8..=1).prop_map(|(s, o)| Time::Edge(s, o)),
        (-3i64..=3).prop_map(Time::At),
    ]
}

/// The timestamp of a write (it becomes the changelog record's).
fn timestamp() -> impl Strategy<Value = i64> {
    prop_oneof![Just(i64::MIN), Just(i64::MAX), -3i64..=3]
}

fn key() -> impl Strategy<Value = usize> {
    0..KEYS
}

/// Values, the empty one included.
fn value() -> impl Strategy<Value = String> {
    "[ab]{0,2}"
}

/// Whether stores changelog their writes (mostly they do).
fn changelogged() -> impl Strategy<Value = bool> {
    prop_oneof![4 => Just(true), 1 => Just(false)]
}

/// Retentions and segment intervals from the smallest to `i64::MAX`.
fn segmented() -> impl Strategy<Value = SegmentedConfig> {
    (
        select(vec![0i64, 1, 5, 60, 1_000, i64::MAX]),
        select(vec![1i64, 3, 10, 60_000, i64::MAX]),
    )
        .prop_map(|(retention, interval)| {
            SegmentedConfig::new(retention).with_segment_interval(interval)
        })
}

/// The same operation's result on both engines, in-memory first; an error from either
/// fails the case, naming the engine.
fn both<S, T>(
    stores: &mut [S; 2],
    mut f: impl FnMut(&mut S) -> Result<T, StateError>,
) -> Result<[T; 2], TestCaseError> {
    let [mem, per] = stores;
    let m = f(mem).map_err(|e| TestCaseError::fail(format!("in-memory engine: {e}")))?;
    let p = f(per).map_err(|e| TestCaseError::fail(format!("persistent engine: {e}")))?;
    Ok([m, p])
}

/// Fails the case unless both engines answered `op` alike.
fn agree<T: PartialEq + fmt::Debug>(
    op: &dyn fmt::Debug,
    [mem, per]: [T; 2],
) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        mem,
        per,
        "in-memory (left) and persistent (right) differ on {:?}",
        op
    );
    Ok(())
}

/// Flushes both stores and requires the same records in the same order, appended to `log`.
fn flush(
    mut stores: [&mut dyn StateStore; 2],
    log: &mut Changelog,
    op: &dyn fmt::Debug,
) -> Result<(), TestCaseError> {
    let [mem, per] = both(&mut stores, |s| {
        let mut batch = ChangelogBatch::new();
        s.flush_changelog(&mut batch)?;
        Ok(batch.to_records())
    })?;
    agree(op, [&mem, &per])?;
    log.append(mem);
    Ok(())
}

/// Both stores as plain state stores.
fn pair<S: StateStore>(stores: &mut [S; 2]) -> [&mut dyn StateStore; 2] {
    let [mem, per] = stores;
    [mem, per]
}

/// The write-back cache bounds a case runs under: none (every write reaches the engine at
/// once), a few entries (the cache spills and empties often), and the default (it never
/// does here). Part of the case, so a failure replays from its seed.
fn cache_bound() -> impl Strategy<Value = usize> {
    select(vec![0, 400, stoatflow_state::DEFAULT_CACHE_MAX_BYTES])
}

/// A persistent configuration in `dir` (one directory per set of stores) with a write-back
/// cache of `cache_bound` bytes.
fn persistent(dir: &Path, cache_bound: usize) -> PersistentConfig {
    PersistentConfig::new(dir, "agree").with_cache_max_bytes_unfloored(cache_bound)
}

fn store_config(name: &str, changelogged: bool) -> StoreConfig {
    StoreConfig::new(name).with_changelog_enabled(changelogged)
}

/// What every store reports alike after every operation: whether the next flush writes
/// anything. The count itself may differ, never below the persistent engine's: the
/// in-memory engine may count a key deleted and then written again in one epoch twice.
fn agree_dirty<S: StateStore>(stores: &[S; 2], op: &dyn fmt::Debug) -> Result<(), TestCaseError> {
    let [mem, per] = stores.each_ref().map(|s| s.dirty_keys());
    prop_assert!(
        mem >= per,
        "dirty keys after {:?}: in-memory {} < persistent {}",
        op,
        mem,
        per
    );
    agree(op, [mem > 0, per > 0])
}

/// What a segmented store reports alike after every operation.
fn agree_retention<S: Segmented>(
    stores: &[S; 2],
    op: &dyn fmt::Debug,
) -> Result<(), TestCaseError> {
    agree(
        op,
        stores
            .each_ref()
            .map(|s| (s.segments(), s.live_segments(), s.expired_writes())),
    )?;
    agree_dirty(stores, op)
}
