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
//! at or before the floor, `t + D + 1 + grace` (DESIGN 3.4); otherwise each
//! window it would create or update is skipped if that window has closed.
//! It knows nothing of how the floor or the frontier were computed.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use stoatflow_state::{Segmented, ValueAndTimestamp, WindowStore};
use stoatflow_time::Watermark;

use crate::context::{DropReason, TaskContext};
use crate::error::ProcessError;
use crate::graph::{Downstream, FrontierOperator, Push};
use crate::processors::window_aggregate::{Aggregation, EmitFrontier, WindowStoreOf};
use crate::record::{Headers, Record, Windowed};
use crate::windowing::SlidingWindows;
use crate::windows::EmitStrategy;

pub(crate) struct SlidingWindowAggregate<K, V, A> {
    pub(crate) node: String,
    pub(crate) store_name: String,
    pub(crate) windows: SlidingWindows,
    pub(crate) aggregation: Aggregation<K, V, A>,
    pub(crate) store: Rc<RefCell<WindowStoreOf<K, A>>>,
    pub(crate) emit: EmitStrategy,
    pub(crate) emit_frontier: Option<EmitFrontier>,
    pub(crate) down: Downstream<Windowed<K>, Option<A>>,
    /// Window starts per key: the store is start-major, so a per-key range
    /// fetch there scans every key's windows. Pruned by retention segment
    /// exactly as the store is; rebuilt from the store on first use.
    pub(crate) starts: Option<BTreeMap<K, BTreeSet<i64>>>,
}

type Vt<A> = ValueAndTimestamp<A>;

impl<K, V, A> SlidingWindowAggregate<K, V, A>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    A: Clone + 'static,
{
    fn state_err(&self, source: stoatflow_state::StateError) -> ProcessError {
        ProcessError::State {
            store: self.store_name.clone(),
            source: Box::new(source),
        }
    }

    /// The key's windows with start in `from..=to`, ascending.
    fn fetch_key_range(
        &mut self,
        key: &K,
        from: i64,
        to: i64,
    ) -> Result<Vec<(i64, Vt<A>)>, ProcessError> {
        if self.starts.is_none() {
            let mut starts: BTreeMap<K, BTreeSet<i64>> = BTreeMap::new();
            let all = self
                .store
                .borrow()
                .fetch_all(i64::MIN, i64::MAX)
                .map_err(|e| self.state_err(e))?;
            for (start, k, _) in all {
                starts.entry(k).or_default().insert(start);
            }
            self.starts = Some(starts);
        }
        let starts = self.starts.as_ref().expect("built above");
        let Some(set) = starts.get(key) else {
            return Ok(Vec::new());
        };
        let store = self.store.borrow();
        let mut out = Vec::new();
        for &start in set.range(from..=to) {
            if let Some(vt) = store.fetch(key, start).map_err(|e| self.state_err(e))? {
                out.push((start, vt));
            }
        }
        Ok(out)
    }

    /// Adds the record to the window at `start` (holding `old`, or empty),
    /// stores and, under on-window-update, forwards it; skipped if closed.
    fn update(
        &mut self,
        cx: &mut TaskContext,
        rec: &Record<K, V>,
        start: i64,
        old: Option<Vt<A>>,
    ) -> Result<(), ProcessError> {
        let close = self.windows.close_of(start);
        if cx.floor.has_closed(close) {
            cx.metrics.drop_record(DropReason::LateWindow);
            tracing::debug!(
                node = %self.node, key = ?rec.key, timestamp = rec.timestamp, window_start = start,
                close, floor = cx.floor.as_millis(), "skipping a closed sliding window"
            );
            return Ok(());
        }
        let (agg, ts) = match old {
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
        let out = (self.emit == EmitStrategy::OnWindowUpdate).then(|| agg.clone());
        self.store
            .borrow_mut()
            .put(key.clone(), start, Vt::new(agg, ts), write_ts)
            .map_err(|e| self.state_err(e))?;
        if let Some(starts) = &mut self.starts {
            match starts.get_mut(key) {
                Some(set) => {
                    set.insert(start);
                }
                None => {
                    starts.insert(key.clone(), BTreeSet::from([start]));
                }
            }
        }
        if let Some(value) = out {
            self.down.forward(
                cx,
                Record {
                    key: Windowed::new(key.clone(), self.windows.window(start)),
                    value: Some(value),
                    timestamp: ts,
                    headers: headers.clone(),
                },
            )?;
        }
        Ok(())
    }

    /// A record at or after `D`: walk the key's windows from the newest
    /// down, updating those containing the record, then create the missing
    /// left and right windows.
    fn process(&mut self, cx: &mut TaskContext, rec: &Record<K, V>) -> Result<(), ProcessError> {
        let (ts, d) = (rec.timestamp, self.windows.time_difference_ms());
        let found = self.fetch_key_range(&rec.key, (ts - 2 * d).max(0), ts + 1)?;
        let mut seen = Vec::with_capacity(found.len());
        let mut left_agg: Option<Vt<A>> = None;
        let mut right_agg: Option<Vt<A>> = None;
        let (mut left_exists, mut right_exists) = (false, false);
        let mut previous: Option<i64> = None;
        for (start, vt) in found.into_iter().rev() {
            seen.push(start);
            let end = start + d;
            if start == ts + 1 {
                right_exists = true;
            } else if end > ts {
                if right_agg.is_none() {
                    right_agg = Some(vt.clone());
                }
                self.update(cx, rec, start, Some(vt))?;
            } else if end == ts {
                left_exists = true;
                let max = vt.timestamp;
                self.update(cx, rec, start, Some(vt))?;
                if max < ts {
                    previous = Some(max);
                } else {
                    // A record at `ts` already made every window this one needs.
                    return Ok(());
                }
            } else {
                previous = Some(vt.timestamp);
                left_agg = Some(vt);
                break;
            }
        }
        if let Some(p) = previous {
            let start = p + 1;
            if !seen.contains(&start) && start + d >= ts {
                self.update(cx, rec, start, None)?;
            }
        }
        if !left_exists {
            let base = match (previous, left_agg) {
                (Some(p), Some(l)) if ts - d <= p => Some(Vt::new(l.value, ts)),
                _ => None,
            };
            self.update(cx, rec, ts - d, base)?;
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
    ) -> Result<(), ProcessError> {
        let ts = rec.timestamp;
        let found = self.fetch_key_range(&rec.key, 0, ts + 1)?;
        let mut seen = Vec::with_capacity(found.len());
        let mut combined: Option<Vt<A>> = None;
        let mut right_agg: Option<Vt<A>> = None;
        let mut right_exists = false;
        let mut previous: Option<i64> = None;
        for (start, vt) in found {
            seen.push(start);
            if start == 0 {
                if vt.timestamp < ts {
                    previous = Some(vt.timestamp);
                }
                combined = Some(vt);
            } else if start <= ts {
                right_agg = Some(vt.clone());
                self.update(cx, rec, start, Some(vt))?;
            } else if start == ts + 1 {
                right_exists = true;
            }
        }
        if right_agg.is_none() {
            right_agg = combined.clone().filter(|c| c.timestamp > ts);
        }
        if !right_exists {
            self.create_right_window(cx, rec, right_agg)?;
        }
        if let Some(p) = previous
            && !seen.contains(&(p + 1))
        {
            self.update(cx, rec, p + 1, None)?;
        }
        self.update(cx, rec, 0, combined)
    }
}

impl<K, V, A> Push<K, V> for SlidingWindowAggregate<K, V, A>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    A: Clone + 'static,
{
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        let ts = rec.timestamp;
        let close = self.windows.close_of(ts);
        if cx.floor.has_closed(close) {
            cx.metrics.drop_record(DropReason::LateWindow);
            tracing::debug!(
                node = %self.node, key = ?rec.key, timestamp = ts, close,
                floor = cx.floor.as_millis(), "dropping a record for closed sliding windows"
            );
            return Ok(());
        }
        if ts < self.windows.time_difference_ms() {
            self.process_early(cx, &rec)
        } else {
            self.process(cx, &rec)
        }
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
        if frontier.is_none_yet() {
            return Ok(());
        }
        if let Some(ef) = &self.emit_frontier
            && frontier > ef.value()
        {
            // Windows whose close, start + D + 1 + grace, lies in (emitted, frontier].
            let span = self.windows.close_span();
            let from = ef
                .value()
                .as_millis()
                .saturating_sub(span)
                .saturating_add(1)
                .max(0);
            let to = frontier.as_millis().saturating_sub(span);
            if to >= from {
                let due = self
                    .store
                    .borrow()
                    .fetch_all(from, to)
                    .map_err(|e| self.state_err(e))?;
                for (start, key, vt) in due {
                    let key = Windowed::new(key, self.windows.window(start));
                    self.down.forward(
                        cx,
                        Record {
                            key,
                            value: Some(vt.value),
                            timestamp: vt.timestamp,
                            headers: Headers::empty(),
                        },
                    )?;
                }
            }
            self.emit_frontier
                .as_mut()
                .expect("checked above")
                .advance(frontier)?;
        }
        let dropped = self
            .store
            .borrow_mut()
            .expire(frontier.as_millis())
            .map_err(|e| self.state_err(e))?;
        if dropped > 0
            && let Some(starts) = &mut self.starts
        {
            // Forget the starts of the segments the store dropped.
            let segmented = self.store.borrow().segmented_config();
            let first_live = segmented
                .first_live_segment(frontier.as_millis())
                .saturating_mul(segmented.segment_interval_ms());
            starts.retain(|_, set| {
                *set = set.split_off(&first_live);
                !set.is_empty()
            });
        }
        Ok(())
    }
}
