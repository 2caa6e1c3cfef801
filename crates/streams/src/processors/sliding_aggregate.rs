//! The sliding-window aggregation: count, reduce and aggregate over
//! `[start, start + D]` windows (both ends inclusive), with Kafka Streams'
//! left/right window creation, the late rule, both emit strategies and
//! retention.
//!
//! The windows of a key are exactly: for each record at `t`, its left window
//! `[t − D, t]`, and its right window `[t + 1, t + 1 + D]` when a later record
//! falls in it; records before `D` share the window `[0, D]` (no window
//! starts below 0). Each window carries the time of its latest record, which
//! is how the operator finds the previous record when a new one arrives.
//!
//! A record is dropped (`late_window`) when the window `[t, t + D]` closes
//! at or before the floor, `t + D + 1 + grace` (docs/late.md#closes); otherwise each
//! window it would create or update is skipped if that window has closed.
//! It knows nothing of how the floor or the frontier were computed.
//!
//! Per record the key's window set comes from the store itself, read
//! backwards from the newest window (`for_each_in_key_range_backward`, in
//! place: the in-memory store keeps a key's windows together, so the
//! operator keeps no index of its own): the windows from `t − D` on, then
//! the one window before them that names the previous record; the windows
//! containing the record are folded in one pass with `update_key_range`,
//! and a new window is written with `update` or `put`; only the value a new
//! left or right window starts from is cloned.

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::rc::Rc;

use stoatflow_state::{ValueAndTimestamp, WindowStore};
use stoatflow_time::Watermark;

use crate::error::ProcessError;
use crate::processors::windowed::{Aggregation, WindowStoreOf, WindowedOutput};
use crate::record::{Headers, Record};
use crate::topology::context::{DropReason, TaskContext};
use crate::topology::graph::{FrontierOperator, Push};
use crate::windows::SlidingWindows;

pub(crate) struct SlidingWindowAggregate<K, V, A> {
    pub(crate) windows: SlidingWindows,
    pub(crate) aggregation: Aggregation<K, V, A>,
    pub(crate) store: Rc<RefCell<WindowStoreOf<K, A>>>,
    pub(crate) out: WindowedOutput<K, A>,
    /// Scratch for one record's window set, (start, time of the window's
    /// latest record) by start, reused so a record allocates nothing.
    pub(crate) window_set: Vec<(i64, i64)>,
}

type Vt<A> = ValueAndTimestamp<A>;

impl<K, V, A> SlidingWindowAggregate<K, V, A>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    A: Clone + 'static,
{
    /// The key's windows with start in `from..=to` into `out`, by start, as
    /// (start, time of the window's latest record): read in place from the
    /// store, whose layout keeps a key's windows together.
    fn window_set(
        &self,
        key: &K,
        from: i64,
        to: i64,
        out: &mut Vec<(i64, i64)>,
    ) -> Result<(), ProcessError> {
        out.clear();
        self.store
            .borrow()
            .for_each_in_key_range(key, from, to, &mut |start, vt| {
                out.push((start, vt.timestamp))
            })
            .map_err(|e| self.out.state_err(e))
    }

    /// The key's windows with start in `from..=to` into `out`, by start, as
    /// (start, time of the window's latest record), and the newest window
    /// with start in `before_from..from`, if any: read backwards in place
    /// from the store, so the windows before `from` cost one step, not a
    /// read of each.
    fn window_set_and_before(
        &self,
        key: &K,
        before_from: i64,
        (from, to): (i64, i64),
        out: &mut Vec<(i64, i64)>,
    ) -> Result<Option<(i64, i64)>, ProcessError> {
        out.clear();
        let mut before = None;
        self.store
            .borrow()
            .for_each_in_key_range_backward(key, before_from, to, &mut |start, vt| {
                if start < from {
                    before = Some((start, vt.timestamp));
                    return ControlFlow::Break(());
                }
                out.push((start, vt.timestamp));
                ControlFlow::Continue(())
            })
            .map_err(|e| self.out.state_err(e))?;
        out.reverse();
        Ok(before)
    }

    /// The stored window of `key` at `start`.
    fn fetch(&self, key: &K, start: i64) -> Result<Option<Vt<A>>, ProcessError> {
        self.store
            .borrow()
            .fetch(key, start)
            .map_err(|e| self.out.state_err(e))
    }

    /// Whether the window at `start` has closed; if so the skip is counted.
    fn closed(&self, cx: &mut TaskContext, rec: &Record<K, V>, start: i64) -> bool {
        let (window, close) = (self.windows.window(start), self.windows.close_of(start));
        let (key, ts) = (&rec.key, rec.timestamp);
        self.out
            .closed(cx, DropReason::LateWindow, key, ts, window, close)
    }

    /// Adds the record to the window at `start` in place (starting it if
    /// there is none) and, under on-window-update, forwards it; skipped if
    /// closed. With `keep_old`, returns the window as it was before.
    fn fold(
        &mut self,
        cx: &mut TaskContext,
        rec: &Record<K, V>,
        start: i64,
        keep_old: bool,
    ) -> Result<Option<Vt<A>>, ProcessError> {
        if self.closed(cx, rec, start) {
            return if keep_old {
                self.fetch(&rec.key, start)
            } else {
                Ok(None)
            };
        }
        let emit = self.out.forwards_updates();
        let (mut old_copy, mut out) = (None, None);
        let (key, value, ts) = (&rec.key, &rec.value, rec.timestamp);
        let aggregation = &self.aggregation;
        self.store
            .borrow_mut()
            .update(key, start, ts, &mut |old| {
                let new = match old {
                    Some(Vt {
                        value: agg,
                        timestamp,
                    }) => {
                        if keep_old {
                            old_copy = Some(Vt::new(agg.clone(), timestamp));
                        }
                        Vt::new((aggregation.add)(key, value, agg), timestamp.max(ts))
                    }
                    None => Vt::new((aggregation.initial)(key, value), ts),
                };
                if emit {
                    out = Some(new.clone());
                }
                new
            })
            .map_err(|e| self.out.state_err(e))?;
        if let Some(vt) = out {
            self.forward(cx, &rec.key, start, vt.value, vt.timestamp, &rec.headers)?;
        }
        Ok(old_copy)
    }

    /// Creates the window at `start` from `base` (or empty) plus the record;
    /// skipped if closed.
    fn create(
        &mut self,
        cx: &mut TaskContext,
        rec: &Record<K, V>,
        start: i64,
        base: Option<Vt<A>>,
    ) -> Result<(), ProcessError> {
        if self.closed(cx, rec, start) {
            return Ok(());
        }
        let (agg, ts) = match base {
            Some(Vt { value, timestamp }) => (
                (self.aggregation.add)(&rec.key, &rec.value, value),
                timestamp.max(rec.timestamp),
            ),
            None => (
                (self.aggregation.initial)(&rec.key, &rec.value),
                rec.timestamp,
            ),
        };
        self.put_and_forward(cx, &rec.key, start, agg, ts, &rec.headers, rec.timestamp)
    }

    #[allow(clippy::too_many_arguments)]
    fn put_and_forward(
        &mut self,
        cx: &mut TaskContext,
        key: &K,
        start: i64,
        agg: A,
        ts: i64,
        headers: &Headers,
        write_ts: i64,
    ) -> Result<(), ProcessError> {
        let out = (self.out.forwards_updates()).then(|| agg.clone());
        self.store
            .borrow_mut()
            .put(key.clone(), start, Vt::new(agg, ts), write_ts)
            .map_err(|e| self.out.state_err(e))?;
        if let Some(value) = out {
            self.forward(cx, key, start, value, ts, headers)?;
        }
        Ok(())
    }

    /// Forwards the window at `start` (on-window-update).
    fn forward(
        &self,
        cx: &mut TaskContext,
        key: &K,
        start: i64,
        value: A,
        ts: i64,
        headers: &Headers,
    ) -> Result<(), ProcessError> {
        let window = self.windows.window(start);
        self.out
            .forward(cx, key.clone(), window, Some(value), ts, headers.clone())
    }

    /// Adds the record to `existing` (the key's stored windows containing it,
    /// by start) in one pass over the store, skipping the closed ones, and
    /// under on-window-update forwards them newest first. Returns the window
    /// at `keep` (if given) as it was before the record.
    fn fold_existing(
        &mut self,
        cx: &mut TaskContext,
        rec: &Record<K, V>,
        existing: &[(i64, i64)],
        keep: Option<i64>,
    ) -> Result<Option<Vt<A>>, ProcessError> {
        // Closing times grow with the start: the closed windows come first.
        let mut first_open = None;
        for &(start, _) in existing {
            if !self.closed(cx, rec, start) {
                first_open = Some(start);
                break;
            }
        }
        let mut kept = None;
        if let Some(k) = keep
            && first_open.is_none_or(|open| k < open)
        {
            kept = self.fetch(&rec.key, k)?;
        }
        let (Some(from), Some(&(to, _))) = (first_open, existing.last()) else {
            return Ok(kept);
        };
        let emit = self.out.forwards_updates();
        let mut updated = Vec::new();
        let (key, value, ts) = (&rec.key, &rec.value, rec.timestamp);
        let aggregation = &self.aggregation;
        self.store
            .borrow_mut()
            .update_key_range(key, from, to, ts, &mut |start, old| {
                let Vt {
                    value: agg,
                    timestamp,
                } = old;
                if keep == Some(start) {
                    kept = Some(Vt::new(agg.clone(), timestamp));
                }
                let new = Vt::new((aggregation.add)(key, value, agg), timestamp.max(ts));
                if emit {
                    updated.push((start, new.clone()));
                }
                new
            })
            .map_err(|e| self.out.state_err(e))?;
        for (start, vt) in updated.into_iter().rev() {
            self.forward(cx, &rec.key, start, vt.value, vt.timestamp, &rec.headers)?;
        }
        Ok(kept)
    }

    /// A record at or after `D`: add it to the key's windows containing it,
    /// then create the missing left and right windows (and the window just
    /// after the previous record, if it now holds this one).
    fn process(
        &mut self,
        cx: &mut TaskContext,
        rec: &Record<K, V>,
        set: &mut Vec<(i64, i64)>,
    ) -> Result<(), ProcessError> {
        let (ts, d) = (rec.timestamp, self.windows.time_difference_ms());
        // The windows with start in [ts - D, ts + 1], and the newest one
        // before them (from ts - 2D: a window starting earlier ends before
        // the previous record could have been).
        let before =
            self.window_set_and_before(&rec.key, (ts - 2 * d).max(0), (ts - d, ts + 1), set)?;
        let right_exists = set.last().is_some_and(|&(start, _)| start == ts + 1);
        // The windows containing the record: start in [ts - D, ts].
        let hi = set.partition_point(|&(start, _)| start <= ts);
        let containing = &set[..hi];
        // The newest of them other than the left window: the right window
        // starts as it was before the record.
        let right_source = containing
            .last()
            .filter(|&&(start, max)| start > ts - d && !right_exists && max > ts)
            .map(|&(start, _)| start);
        let right_agg = self.fold_existing(cx, rec, containing, right_source)?;
        // The left window's latest record, if the window exists.
        let left = containing
            .first()
            .filter(|&&(start, _)| start == ts - d)
            .map(|&(_, max)| max);
        if left.is_some_and(|max| max >= ts) {
            // A record at `ts` already made every window this one needs.
            return Ok(());
        }
        // The record before this one: the latest of the newest window ending
        // before `ts`, else of the left window.
        let previous = before.map(|(_, max)| max).or(left);
        if let Some(p) = previous {
            let start = p + 1;
            if set.binary_search_by_key(&start, |&(s, _)| s).is_err() && start + d >= ts {
                self.fold(cx, rec, start, false)?;
            }
        }
        if left.is_none() {
            let base = match before {
                Some((start, p)) if ts - d <= p => {
                    self.fetch(&rec.key, start)?.map(|vt| Vt::new(vt.value, ts))
                }
                _ => None,
            };
            self.create(cx, rec, ts - d, base)?;
        }
        if !right_exists {
            self.create_right_window(cx, rec, right_agg)?;
        }
        Ok(())
    }

    /// The record's right window holds what the window it joined held after it.
    fn create_right_window(
        &mut self,
        cx: &mut TaskContext,
        rec: &Record<K, V>,
        right_agg: Option<Vt<A>>,
    ) -> Result<(), ProcessError> {
        if let Some(r) = right_agg.filter(|r| r.timestamp > rec.timestamp) {
            self.put_and_forward(
                cx,
                &rec.key,
                rec.timestamp + 1,
                r.value,
                r.timestamp,
                &rec.headers,
                rec.timestamp,
            )?;
        }
        Ok(())
    }

    /// A record before `D`: it belongs to the shared window `[0, D]`.
    fn process_early(
        &mut self,
        cx: &mut TaskContext,
        rec: &Record<K, V>,
        set: &mut Vec<(i64, i64)>,
    ) -> Result<(), ProcessError> {
        let ts = rec.timestamp;
        self.window_set(&rec.key, 0, ts + 1, set)?;
        let right_exists = set.last().is_some_and(|&(start, _)| start == ts + 1);
        // The time of the shared window's latest record, if it exists.
        let combined = set
            .first()
            .filter(|&&(start, _)| start == 0)
            .map(|&(_, max)| max);
        let previous = combined.filter(|&max| max < ts);
        // The newest window after 0 containing the record: the right window
        // starts as it was before the record.
        let right_source = set
            .iter()
            .rev()
            .find(|&&(start, _)| start > 0 && start <= ts)
            .map(|&(start, _)| start);
        let mut right_agg: Option<Vt<A>> = None;
        for &(start, max) in set.iter() {
            if start > 0 && start <= ts {
                let keep = !right_exists && max > ts && Some(start) == right_source;
                let old = self.fold(cx, rec, start, keep)?;
                if keep {
                    right_agg = old;
                }
            }
        }
        if right_source.is_none() && !right_exists && combined.is_some_and(|max| max > ts) {
            right_agg = self.fetch(&rec.key, 0)?;
        }
        if !right_exists {
            self.create_right_window(cx, rec, right_agg)?;
        }
        if let Some(p) = previous
            && set.binary_search_by_key(&(p + 1), |&(s, _)| s).is_err()
        {
            self.fold(cx, rec, p + 1, false)?;
        }
        self.fold(cx, rec, 0, false).map(|_| ())
    }
}

impl<K, V, A> Push<K, V> for SlidingWindowAggregate<K, V, A>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    A: Clone + 'static,
{
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        self.out.next_record();
        let ts = rec.timestamp;
        // The record's own window [ts, ts + D] closes last among those it
        // touches: if it has closed, so have the others.
        let (window, close) = (self.windows.window(ts), self.windows.close_of(ts));
        if self
            .out
            .closed(cx, DropReason::LateWindow, &rec.key, ts, window, close)
        {
            return Ok(());
        }
        let mut set = std::mem::take(&mut self.window_set);
        let result = if ts < self.windows.time_difference_ms() {
            self.process_early(cx, &rec, &mut set)
        } else {
            self.process(cx, &rec, &mut set)
        };
        self.window_set = set;
        result
    }
}

impl<K, V, A> FrontierOperator for SlidingWindowAggregate<K, V, A>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    A: Clone + 'static,
{
    fn on_frontier(
        &mut self,
        cx: &mut TaskContext,
        frontier: Watermark,
    ) -> Result<(), ProcessError> {
        // Windows whose close, start + D + 1 + grace, lies in (emitted, frontier].
        let windows = self.windows;
        self.out.on_frontier(
            cx,
            frontier,
            &self.store,
            windows.close_span(),
            0,
            |store, from, to| {
                // By start (so close), then key, as both engines answer (the stores'
                // key-order rule); the sort keeps the order emitted independent of it.
                let mut due = store.fetch_all(from, to)?;
                due.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
                Ok(due)
            },
            |(start, key, vt)| (key, windows.window(start), vt.value, vt.timestamp),
            |w| w.start,
        )
    }

    fn seed_emitted_by_kafka_streams(
        &mut self,
        stream_time: i64,
        _emit_final: &dyn Fn(&str) -> Option<i64>,
    ) -> Result<(), ProcessError> {
        // Kafka Streams emitted a window [start, start + D] once start + D +
        // grace <= stream time; our close is one more (both ends inclusive).
        self.out.seed_emitted(stream_time.saturating_add(1))
    }
}
