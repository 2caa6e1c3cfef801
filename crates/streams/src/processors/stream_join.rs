//! The stream-stream join (inner, left, outer), shaped like Kafka Streams':
//! a this-join and an other-join processor sharing two window stores (one
//! per side, keeping every arrival: duplicates are a list per key and time,
//! one arrival held inline so the usual single one allocates nothing) and,
//! for left/outer joins, one shared store of unmatched records.
//!
//! Per record: it is written to its side's store, then the other side's
//! store is probed over `[t - before, t + after]` (both edges inclusive,
//! mirrored for the right side) with `for_each_in_key_range`, which lends
//! the matched arrivals in place rather than cloning them; each match is
//! forwarded at the larger of the two times, and the matched records'
//! unmatched entries are deleted. The probe starts no earlier than the other
//! store's first live time, so an arrival its retention (window + grace) has
//! expired never matches, whatever the store's segment interval (the DSL
//! sizes join store segments to the retention, so memory follows the live
//! arrivals).
//! A record of an outer side that matched nothing is kept under its close,
//! `t + after + 1 + grace` (left) or `t + before + 1 + grace` (right)
//! (docs/late.md#closes) — each arrival separately, so N identical unmatched
//! arrivals give N null-joins — unless that close is already at or below
//! the emitted frontier, when its null-join is forwarded at once. Join
//! inputs are never dropped as late (docs/late.md#joins).
//!
//! The emission pass (the this-join processor, as a frontier operator)
//! forwards every unmatched record whose close is at or below the frontier,
//! in order of close, then key, then side, then time ([`OuterKey`]'s `Ord`,
//! on either store engine), with the unmatched record's time, persists
//! the emitted frontier in `<outer store>-emitfrontier`, and expires the
//! window stores at the frontier.
//!
//! The unmatched store's key layout ([`OuterKeyCodec`]) keeps its times in
//! byte order and names the bytes a range of closes covers, so the persistent
//! engine reads only those entries; both engines answer in `OuterKey`'s order
//! (the stores' key-order rule), and the pass's sort by `OuterKey` only keeps
//! the order it emits in independent of that (on a sorted answer it is one
//! pass).
//!
//! This module knows nothing of the DSL or of how the frontier is computed.

use std::cell::RefCell;
use std::ops::Bound;
use std::rc::Rc;
use std::sync::Arc;

use smallvec::SmallVec;
use stoatflow_state::{Codec, CodecError, KeyValueStore, Segmented, WindowStore};
use stoatflow_time::Watermark;

use crate::error::ProcessError;
use crate::processors::windowed::EmitFrontier;
use crate::record::{Headers, Record};
use crate::topology::context::{Emitted, TaskContext};
use crate::topology::graph::{Downstream, FrontierOperator, Push};

/// Every arrival of one (key, time), in arrival order; one is held inline, so the usual
/// single arrival costs no allocation (nor a free when its segment drops).
pub(crate) type Arrivals<V> = SmallVec<[V; 1]>;
/// One side's store: every arrival per (key, time), in arrival order.
pub(crate) type JoinWindowStore<K, V> = stoatflow_state::AnyWindowStore<K, Arrivals<V>>;
/// The shared store of unmatched records.
pub(crate) type OuterStore<K, V1, V2> =
    stoatflow_state::AnyKeyValueStore<OuterKey<K>, Vec<LeftOrRight<V1, V2>>>;
/// The emitted frontier of the unmatched store.
pub(crate) type JoinFrontierStore = crate::processors::windowed::FrontierStore;

/// The full joiner: `(key, left, right)`, a side `None` for a null-join.
pub(crate) type Joiner<K, V1, V2, VR> =
    Arc<dyn Fn(&K, Option<&V1>, Option<&V2>) -> VR + Send + Sync>;

/// Key of an unmatched record: ordered by close, then key, then side, then time.
/// `key` is `None` only in range bounds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct OuterKey<K> {
    pub(crate) close: i64,
    pub(crate) key: Option<K>,
    pub(crate) side: u8,
    pub(crate) ts: i64,
}

/// An unmatched value of either side.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LeftOrRight<V1, V2> {
    Left(V1),
    Right(V2),
}

pub(crate) const LEFT: u8 = 0;
pub(crate) const RIGHT: u8 = 1;

/// One side of a join.
pub(crate) struct JoinSide<K, VT, VO, V1, V2, VR> {
    pub(crate) node: String,
    pub(crate) side: u8,
    /// How far before / after this side's record the other side's may be.
    pub(crate) before_ms: i64,
    pub(crate) after_ms: i64,
    pub(crate) grace_ms: i64,
    pub(crate) this_store_name: String,
    pub(crate) this_store: Rc<RefCell<JoinWindowStore<K, VT>>>,
    pub(crate) other_store_name: String,
    pub(crate) other_store: Rc<RefCell<JoinWindowStore<K, VO>>>,
    /// Present when either side is outer.
    pub(crate) outer: Option<OuterState<K, V1, V2>>,
    pub(crate) this_outer: bool,
    pub(crate) other_outer: bool,
    /// `(key, this, other)` for a match or (other `None`) an immediate null-join.
    pub(crate) joined: Arc<dyn Fn(&K, &VT, Option<&VO>) -> VR + Send + Sync>,
    pub(crate) wrap: Arc<dyn Fn(VT) -> LeftOrRight<V1, V2> + Send + Sync>,
    /// The full joiner, for the emission pass.
    pub(crate) full: Joiner<K, V1, V2, VR>,
    pub(crate) down: Downstream<K, VR>,
}

/// The unmatched store and its emitted frontier.
pub(crate) struct OuterState<K, V1, V2> {
    pub(crate) name: String,
    pub(crate) store: Rc<RefCell<OuterStore<K, V1, V2>>>,
    /// The highest close whose null sides were emitted (`<store>-emitfrontier`).
    pub(crate) frontier: EmitFrontier,
}

impl<K, V1, V2> OuterState<K, V1, V2>
where
    K: Ord + Clone + 'static,
    V1: Clone + 'static,
    V2: Clone + 'static,
{
    fn err(&self, source: stoatflow_state::StateError) -> ProcessError {
        ProcessError::State {
            store: self.name.clone(),
            source: Box::new(source),
        }
    }

    /// The highest close already emitted (read through the store, so it is
    /// right after a restore too).
    fn emitted(&self) -> Result<Watermark, ProcessError> {
        Ok(self.frontier.value())
    }
}

fn state_err(store: &str, source: stoatflow_state::StateError) -> ProcessError {
    ProcessError::State {
        store: store.to_owned(),
        source: Box::new(source),
    }
}

impl<K, VT, VO, V1, V2, VR> Push<K, VT> for JoinSide<K, VT, VO, V1, V2, VR>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    VT: Clone + 'static,
    VO: Clone + 'static,
    V1: Clone + 'static,
    V2: Clone + 'static,
    VR: Clone + 'static,
{
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, VT>) -> Result<(), ProcessError> {
        let ts = rec.timestamp;
        // Appended in place: the arrivals list is not cloned.
        self.this_store
            .borrow_mut()
            .update(&rec.key, ts, ts, &mut |values| {
                let mut values = values.unwrap_or_default();
                values.push(rec.value.clone());
                values
            })
            .map_err(|e| state_err(&self.this_store_name, e))?;
        let other = self.other_store.borrow();
        // Arrivals the other store's retention has expired never match, however its
        // segments are sized (an expired arrival stays until its whole segment goes).
        let from = ts
            .saturating_sub(self.before_ms)
            .max(0)
            .max(other.first_live_time());
        let to = ts.saturating_add(self.after_ms).max(0);
        // The matches are read in place (not cloned); the first error stops the work and is
        // returned once the visit ends.
        let mut matched = false;
        let mut failed: Option<ProcessError> = None;
        other
            .for_each_in_key_range(&rec.key, from, to, &mut |other_ts, values| {
                matched = true;
                if failed.is_none()
                    && let Err(e) = self.forward_matches(cx, &rec, other_ts, values)
                {
                    failed = Some(e);
                }
            })
            .map_err(|e| state_err(&self.other_store_name, e))?;
        drop(other);
        if let Some(e) = failed {
            return Err(e);
        }
        if matched || !self.this_outer {
            return Ok(());
        }
        let outer = self
            .outer
            .as_ref()
            .expect("an outer side has the unmatched store");
        let close = ts
            .saturating_add(self.after_ms)
            .saturating_add(1)
            .saturating_add(self.grace_ms);
        if outer.emitted()?.has_closed(close) {
            // Its null side is already final: the pass that covered its close ran.
            tracing::debug!(node = %self.node, key = ?rec.key, timestamp = ts, close,
                "null-join of a record whose close the emitted frontier passed, forwarded at once");
            let value = (self.joined)(&rec.key, &rec.value, None);
            return self.down.forward(
                cx,
                Record {
                    key: rec.key,
                    value,
                    timestamp: ts,
                    headers: rec.headers,
                },
            );
        }
        let key = OuterKey {
            close,
            key: Some(rec.key),
            side: self.side,
            ts,
        };
        let mut store = outer.store.borrow_mut();
        let mut values = store
            .get(&key)
            .map_err(|e| outer.err(e))?
            .unwrap_or_default();
        values.push((self.wrap)(rec.value));
        store.put(key, values, ts).map_err(|e| outer.err(e))
    }
}

impl<K, VT, VO, V1, V2, VR> JoinSide<K, VT, VO, V1, V2, VR>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    VT: Clone + 'static,
    VO: Clone + 'static,
    V1: Clone + 'static,
    V2: Clone + 'static,
    VR: Clone + 'static,
{
    /// Forwards the joins of `rec` with the other side's arrivals at `other_ts` (at the
    /// larger time) and, if the other side is outer, deletes their unmatched entry.
    fn forward_matches(
        &self,
        cx: &mut TaskContext,
        rec: &Record<K, VT>,
        other_ts: i64,
        values: &Arrivals<VO>,
    ) -> Result<(), ProcessError> {
        let ts = rec.timestamp;
        if self.other_outer
            && let Some(outer) = &self.outer
        {
            // The other side's close: its `after` is this side's `before`.
            let close = other_ts
                .saturating_add(self.before_ms)
                .saturating_add(1)
                .saturating_add(self.grace_ms);
            let key = OuterKey {
                close,
                key: Some(rec.key.clone()),
                side: 1 - self.side,
                ts: other_ts,
            };
            let mut store = outer.store.borrow_mut();
            if store.get(&key).map_err(|e| outer.err(e))?.is_some() {
                store.delete(&key, ts).map_err(|e| outer.err(e))?;
            }
        }
        for other in values {
            let value = (self.joined)(&rec.key, &rec.value, Some(other));
            self.down.forward(
                cx,
                Record {
                    key: rec.key.clone(),
                    value,
                    timestamp: ts.max(other_ts),
                    headers: rec.headers.clone(),
                },
            )?;
        }
        Ok(())
    }
}

impl<K, V1, V2, VR> FrontierOperator for JoinSide<K, V1, V2, V1, V2, VR>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    V1: Clone + 'static,
    V2: Clone + 'static,
    VR: Clone + 'static,
{
    fn on_frontier(
        &mut self,
        cx: &mut TaskContext,
        frontier: Watermark,
    ) -> Result<(), ProcessError> {
        if frontier.is_none_yet() {
            return Ok(());
        }
        if let Some(outer) = &mut self.outer
            && frontier > outer.emitted()?
        {
            // Every close at or below the frontier: up to the first key of the next
            // close, or everything at the end of time (a close may saturate there).
            let bound = frontier.as_millis().checked_add(1).map(|close| OuterKey {
                close,
                key: None,
                side: 0,
                ts: i64::MIN,
            });
            let to = bound.as_ref().map_or(Bound::Unbounded, Bound::Excluded);
            let mut due = outer
                .store
                .borrow()
                .range(Bound::Unbounded, to)
                .map_err(|e| outer.err(e))?;
            // Already in `OuterKey` order on either engine; kept as the order emitted.
            due.sort_by(|a, b| a.0.cmp(&b.0));
            for (key, values) in due {
                let k = key.key.clone().expect("stored unmatched keys are Some");
                for v in &values {
                    let value = match v {
                        LeftOrRight::Left(l) => (self.full)(&k, Some(l), None),
                        LeftOrRight::Right(r) => (self.full)(&k, None, Some(r)),
                    };
                    let emitted = Emitted {
                        close: key.close,
                        start: key.ts,
                    };
                    cx.as_final(emitted, |cx| {
                        self.down.forward(
                            cx,
                            Record {
                                key: k.clone(),
                                value,
                                timestamp: key.ts,
                                headers: Headers::empty(),
                            },
                        )
                    })?;
                }
                outer
                    .store
                    .borrow_mut()
                    .delete(&key, key.ts)
                    .map_err(|e| outer.err(e))?;
            }
            outer.frontier.advance(frontier)?;
        }
        self.this_store
            .borrow_mut()
            .expire(frontier.as_millis())
            .map_err(|e| state_err(&self.this_store_name, e))?;
        self.other_store
            .borrow_mut()
            .expire(frontier.as_millis())
            .map_err(|e| state_err(&self.other_store_name, e))?;
        Ok(())
    }
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_be_bytes());
}

fn take<'a>(b: &mut &'a [u8], n: usize, what: &str) -> Result<&'a [u8], CodecError> {
    if b.len() < n {
        return Err(CodecError::new(format!(
            "truncated {what}: need {n} bytes, have {}",
            b.len()
        )));
    }
    let (head, rest) = b.split_at(n);
    *b = rest;
    Ok(head)
}

fn take_len(b: &mut &[u8], what: &str) -> Result<usize, CodecError> {
    let head = take(b, 4, what)?;
    Ok(u32::from_be_bytes(head.try_into().expect("4 bytes")) as usize)
}

/// A time as 8 bytes whose byte order is numeric order (the sign bit flipped, big-endian).
fn put_ordered_time(out: &mut Vec<u8>, t: i64) {
    out.extend_from_slice(&((t as u64) ^ (1 << 63)).to_be_bytes());
}

/// The inverse of [`put_ordered_time`].
fn take_ordered_time(b: &mut &[u8], what: &str) -> Result<i64, CodecError> {
    let head = take(b, 8, what)?;
    Ok((u64::from_be_bytes(head.try_into().expect("8 bytes")) ^ (1 << 63)) as i64)
}

/// `[count u32][len u32, bytes]...`: a side store's list of arrivals.
pub(crate) struct ListCodec<V>(pub(crate) Box<dyn Codec<V>>);

impl<V> Codec<Arrivals<V>> for ListCodec<V> {
    fn encode(&self, values: &Arrivals<V>, out: &mut Vec<u8>) -> Result<(), CodecError> {
        put_len(out, values.len());
        let mut buf = Vec::new();
        for v in values {
            buf.clear();
            self.0.encode(v, &mut buf)?;
            put_len(out, buf.len());
            out.extend_from_slice(&buf);
        }
        Ok(())
    }

    fn decode(&self, mut b: &[u8]) -> Result<Arrivals<V>, CodecError> {
        let n = take_len(&mut b, "join list count")?;
        let mut out = Arrivals::with_capacity(n.min(1024));
        for _ in 0..n {
            let len = take_len(&mut b, "join list entry length")?;
            out.push(self.0.decode(take(&mut b, len, "join list entry")?)?);
        }
        Ok(out)
    }
}

/// `[count u32][side u8, len u32, bytes]...`: unmatched values.
pub(crate) struct LeftOrRightListCodec<V1, V2>(
    pub(crate) Box<dyn Codec<V1>>,
    pub(crate) Box<dyn Codec<V2>>,
);

impl<V1, V2> Codec<Vec<LeftOrRight<V1, V2>>> for LeftOrRightListCodec<V1, V2> {
    fn encode(
        &self,
        values: &Vec<LeftOrRight<V1, V2>>,
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        put_len(out, values.len());
        let mut buf = Vec::new();
        for v in values {
            buf.clear();
            match v {
                LeftOrRight::Left(l) => {
                    out.push(LEFT);
                    self.0.encode(l, &mut buf)?;
                }
                LeftOrRight::Right(r) => {
                    out.push(RIGHT);
                    self.1.encode(r, &mut buf)?;
                }
            }
            put_len(out, buf.len());
            out.extend_from_slice(&buf);
        }
        Ok(())
    }

    fn decode(&self, mut b: &[u8]) -> Result<Vec<LeftOrRight<V1, V2>>, CodecError> {
        let n = take_len(&mut b, "unmatched count")?;
        let mut out = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            let side = take(&mut b, 1, "unmatched side")?[0];
            let len = take_len(&mut b, "unmatched length")?;
            let bytes = take(&mut b, len, "unmatched value")?;
            out.push(match side {
                LEFT => LeftOrRight::Left(self.0.decode(bytes)?),
                RIGHT => LeftOrRight::Right(self.1.decode(bytes)?),
                s => return Err(CodecError::new(format!("unmatched side byte {s}"))),
            });
        }
        Ok(out)
    }
}

/// Marks the side byte of [`OuterKeyCodec`]'s layout. The first layout wrote the
/// side as 0 or 1 and its times as plain two's complement (which sort negative
/// times after positive ones), so its keys are told apart and refused, never misread.
const ORDERED_SIDE: u8 = 0x80;

/// `[close][0x80 | side][ts][key]`, each time sign-flipped big-endian, so that byte
/// order is `OuterKey`'s order up to the key (whose bytes are `K`'s codec's).
pub(crate) struct OuterKeyCodec<K>(pub(crate) Box<dyn Codec<K>>);

impl<K> Codec<OuterKey<K>> for OuterKeyCodec<K> {
    fn encode(&self, k: &OuterKey<K>, out: &mut Vec<u8>) -> Result<(), CodecError> {
        put_ordered_time(out, k.close);
        out.push(ORDERED_SIDE | k.side);
        put_ordered_time(out, k.ts);
        match &k.key {
            Some(key) => self.0.encode(key, out),
            None => Ok(()),
        }
    }

    fn decode(&self, mut b: &[u8]) -> Result<OuterKey<K>, CodecError> {
        let close = take_ordered_time(&mut b, "unmatched key close")?;
        let side = match take(&mut b, 1, "unmatched key side")?[0] {
            s @ (LEFT | RIGHT) => {
                return Err(CodecError::new(format!(
                    "unmatched key side byte {s}: a key of the first unmatched-store layout \
                     (plain big-endian times), written by an older version; its close and \
                     time would be misread, so the store cannot be restored from it"
                )));
            }
            s if s == ORDERED_SIDE | LEFT || s == ORDERED_SIDE | RIGHT => s & !ORDERED_SIDE,
            s => return Err(CodecError::new(format!("unmatched key side byte {s}"))),
        };
        let ts = take_ordered_time(&mut b, "unmatched key time")?;
        Ok(OuterKey {
            close,
            key: Some(self.0.decode(b)?),
            side,
            ts,
        })
    }

    // Not order-preserving (the key orders before the side and time, its bytes after
    // them), but the close leads both: a range covers the byte range of its closes.
    fn covering_range(
        &self,
        from: Bound<&OuterKey<K>>,
        to: Bound<&OuterKey<K>>,
    ) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        let close = |c: i64| {
            let mut out = Vec::with_capacity(8);
            put_ordered_time(&mut out, c);
            out
        };
        let lo = match from {
            Bound::Included(k) | Bound::Excluded(k) => Bound::Included(close(k.close)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let hi = match to {
            Bound::Included(k) | Bound::Excluded(k) => k
                .close
                .checked_add(1)
                .map_or(Bound::Unbounded, |next| Bound::Excluded(close(next))),
            Bound::Unbounded => Bound::Unbounded,
        };
        (lo, hi)
    }
}

macro_rules! opaque_debug {
    ($($t:ident),*) => {$(
        impl<T> std::fmt::Debug for $t<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(stringify!($t))
            }
        }
    )*};
}
opaque_debug!(ListCodec, OuterKeyCodec);

impl<A, B> std::fmt::Debug for LeftOrRightListCodec<A, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LeftOrRightListCodec")
    }
}

#[cfg(test)]
mod tests {
    use std::ops::RangeBounds;

    use super::*;
    use stoatflow_state::{I64Codec, StringCodec};

    #[test]
    fn codecs_round_trip() {
        let c = ListCodec::<i64>(Box::new(I64Codec));
        let mut out = Vec::new();
        c.encode(&Arrivals::from_slice(&[1, 2, 3]), &mut out)
            .unwrap();
        assert_eq!(c.decode(&out).unwrap().as_slice(), &[1, 2, 3]);
        let c = LeftOrRightListCodec::<i64, String>(Box::new(I64Codec), Box::new(StringCodec));
        let v = vec![LeftOrRight::Left(4), LeftOrRight::Right("x".to_owned())];
        let mut out = Vec::new();
        c.encode(&v, &mut out).unwrap();
        assert_eq!(c.decode(&out).unwrap(), v);
        let c = OuterKeyCodec::<String>(Box::new(StringCodec));
        let k = OuterKey {
            close: 7,
            key: Some("k".to_owned()),
            side: RIGHT,
            ts: 3,
        };
        let mut out = Vec::new();
        c.encode(&k, &mut out).unwrap();
        assert_eq!(c.decode(&out).unwrap(), k);
        assert!(c.decode(&out[..5]).is_err());
    }

    /// Every key within a range (by `OuterKey`'s order) encodes within the codec's covering
    /// byte range, whose bytes a persistent store reads instead of every entry's; and the
    /// codec does not claim to preserve order (its bytes put the side before the key).
    #[test]
    fn the_covering_range_of_closes_holds_every_key_in_the_range() {
        let c = OuterKeyCodec::<i64>(Box::new(I64Codec));
        assert!(!c.preserves_order());
        let mut keys = Vec::new();
        for close in [i64::MIN, -1, 0, 7, i64::MAX] {
            for key in [None, Some(-5), Some(3)] {
                for (side, ts) in [(LEFT, i64::MIN), (RIGHT, -2), (LEFT, 9)] {
                    keys.push(OuterKey {
                        close,
                        key,
                        side,
                        ts,
                    });
                }
            }
        }
        let bounds = |k: &OuterKey<i64>| [Bound::Included(k.clone()), Bound::Excluded(k.clone())];
        let mut all: Vec<Bound<OuterKey<i64>>> = vec![Bound::Unbounded];
        all.extend(keys.iter().flat_map(bounds));
        for from in &all {
            for to in &all {
                let (lo, hi) = c.covering_range(from.as_ref(), to.as_ref());
                for k in keys
                    .iter()
                    .filter(|k| (from.as_ref(), to.as_ref()).contains(*k))
                {
                    let bytes = c.to_bytes(k).unwrap();
                    assert!(
                        (lo.as_ref(), hi.as_ref()).contains(&bytes),
                        "{k:?} in {from:?}..{to:?}, not in its bytes {lo:?}..{hi:?}"
                    );
                }
            }
        }
    }

    /// The arrivals list kept its changelog format when it moved from `Vec` to an inline
    /// small vector, and one arrival decodes without a heap allocation.
    #[test]
    fn arrivals_keep_the_list_format_and_hold_one_inline() {
        let c = ListCodec::<i64>(Box::new(I64Codec));
        let mut out = Vec::new();
        c.encode(&Arrivals::from_slice(&[7, -1]), &mut out).unwrap();
        let mut want = vec![0, 0, 0, 2, 0, 0, 0, 8];
        want.extend_from_slice(&7i64.to_be_bytes());
        want.extend_from_slice(&[0, 0, 0, 8]);
        want.extend_from_slice(&(-1i64).to_be_bytes());
        assert_eq!(out, want);
        out.clear();
        c.encode(&Arrivals::from_slice(&[5]), &mut out).unwrap();
        let one = c.decode(&out).unwrap();
        assert_eq!(one.as_slice(), &[5]);
        assert!(!one.spilled());
    }

    /// Encoded unmatched keys of one key sort as `OuterKey` does, negative and extreme
    /// times included, and the pass's bound for frontier `f` lies above exactly the
    /// entries whose close is at or below `f` (the persistent engine ranges over bytes).
    #[test]
    fn unmatched_key_bytes_sort_by_close_side_time_and_the_bound_stops_at_the_frontier() {
        let c = OuterKeyCodec::<String>(Box::new(StringCodec));
        let enc = |k: &OuterKey<String>| c.to_bytes(k).unwrap();
        let times = [
            i64::MIN,
            i64::MIN + 1,
            -51,
            -1,
            0,
            1,
            50,
            51,
            i64::MAX - 1,
            i64::MAX,
        ];
        let mut keys = Vec::new();
        for close in times {
            for side in [LEFT, RIGHT] {
                for ts in times {
                    keys.push(OuterKey {
                        close,
                        key: Some("k".to_owned()),
                        side,
                        ts,
                    });
                }
            }
        }
        let mut by_bytes = keys.clone();
        by_bytes.sort_by_key(|k| enc(k));
        keys.sort();
        assert_eq!(by_bytes, keys);
        for frontier in &times[..times.len() - 1] {
            let bound = enc(&OuterKey {
                close: frontier + 1,
                key: None,
                side: 0,
                ts: i64::MIN,
            });
            for k in &keys {
                assert_eq!(enc(k) < bound, k.close <= *frontier, "{k:?} at {frontier}");
            }
        }
        for k in &keys {
            assert_eq!(&c.decode(&enc(k)).unwrap(), k);
        }
    }

    /// A key of the first layout (plain big-endian times, side 0 or 1) is refused, not
    /// read as another close.
    #[test]
    fn unmatched_keys_of_the_first_layout_are_refused() {
        let c = OuterKeyCodec::<String>(Box::new(StringCodec));
        let mut old = 51i64.to_be_bytes().to_vec();
        old.push(LEFT);
        old.extend_from_slice(&30i64.to_be_bytes());
        old.extend_from_slice(b"k");
        let e = c.decode(&old).unwrap_err();
        assert!(e.message().contains("older version"), "{e:?}");
        old[8] = 0x82;
        assert!(c.decode(&old).is_err());
    }

    #[test]
    fn unmatched_keys_order_by_close_then_key() {
        let k = |close, key: &str, side| OuterKey {
            close,
            key: Some(key.to_owned()),
            side,
            ts: 0,
        };
        let mut v = vec![k(5, "b", LEFT), k(3, "z", RIGHT), k(5, "a", RIGHT)];
        v.sort();
        assert_eq!(v, vec![k(3, "z", RIGHT), k(5, "a", RIGHT), k(5, "b", LEFT)]);
        let bound = OuterKey::<String> {
            close: 4,
            key: None,
            side: 0,
            ts: i64::MIN,
        };
        assert!(k(3, "zzz", RIGHT) < bound && bound < k(4, "", LEFT));
    }
}
