//! The time-windowed aggregation (tumbling and hopping): count, reduce and
//! aggregate, the late rule, both emit strategies, retention.
//!
//! Per record, for each window containing it: the window is dropped from the
//! update (counted `late_window`) when its close, `end + grace`, is at or
//! before the floor of the lane processing it (docs/late.md#late-rule); otherwise it is
//! folded in and, under `on_window_update`, forwarded. Under
//! `on_window_close` the emission pass forwards each window whose close lies
//! in (emit frontier, frontier] once, in order of close, then key, and
//! persists the new emit frontier in `<store>-emitfrontier`.
//!
//! A hopping record's windows are written with one `update_windows` call, so
//! the store finds the key once for all of them rather than once per window.

use std::cell::RefCell;
use std::rc::Rc;

use smallvec::SmallVec;
use stoatflow_state::{ValueAndTimestamp, WindowStore};
use stoatflow_time::Watermark;

use crate::error::ProcessError;
use crate::processors::windowed::{Aggregation, WindowStoreOf, WindowedOutput};
use crate::record::Record;
use crate::topology::context::{DropReason, TaskContext};
use crate::topology::graph::{FrontierOperator, Push};
use crate::windows::TimeWindows;

pub(crate) struct TimeWindowAggregate<K, V, A> {
    pub(crate) windows: TimeWindows,
    pub(crate) aggregation: Aggregation<K, V, A>,
    pub(crate) store: Rc<RefCell<WindowStoreOf<K, A>>>,
    pub(crate) out: WindowedOutput<K, A>,
}

impl<K, V, A> Push<K, V> for TimeWindowAggregate<K, V, A>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    A: Clone + 'static,
{
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        self.out.next_record();
        let ts = rec.timestamp;
        // The open windows containing the record, by start (closing times grow with the
        // start, so the closed ones come first).
        let mut open: SmallVec<[i64; 8]> = SmallVec::new();
        for start in self.windows.window_starts(ts) {
            let (window, close) = (self.windows.window(start), self.windows.close_of(start));
            if !self
                .out
                .closed(cx, DropReason::LateWindow, &rec.key, ts, window, close)
            {
                open.push(start);
            }
        }
        let on_update = self.out.forwards_updates();
        let mut updates: SmallVec<[(i64, A, i64); 1]> = SmallVec::new();
        let aggregation = &self.aggregation;
        let mut fold = |start: i64, old: Option<ValueAndTimestamp<A>>| {
            let (agg, new_ts) = match old {
                Some(ValueAndTimestamp { value, timestamp }) => (
                    (aggregation.add)(&rec.key, &rec.value, value),
                    timestamp.max(ts),
                ),
                None => ((aggregation.initial)(&rec.key, &rec.value), ts),
            };
            if on_update {
                updates.push((start, agg.clone(), new_ts));
            }
            ValueAndTimestamp::new(agg, new_ts)
        };
        let mut store = self.store.borrow_mut();
        let written = match open.as_slice() {
            [] => Ok(()),
            // Tumbling windows: one window per record.
            &[start] => store.update(&rec.key, start, ts, &mut |old| fold(start, old)),
            // Hopping windows: the key is found once for all of them.
            starts => store.update_windows(&rec.key, starts, ts, &mut fold),
        };
        drop(store);
        written.map_err(|e| self.out.state_err(e))?;
        for (start, value, new_ts) in updates {
            let (key, headers) = (rec.key.clone(), rec.headers.clone());
            let window = self.windows.window(start);
            self.out
                .forward(cx, key, window, Some(value), new_ts, headers)?;
        }
        Ok(())
    }
}

impl<K, V, A> FrontierOperator for TimeWindowAggregate<K, V, A>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    A: Clone + 'static,
{
    fn on_frontier(
        &mut self,
        cx: &mut TaskContext,
        frontier: Watermark,
    ) -> Result<(), ProcessError> {
        // Windows whose close, start + size + grace, lies in (emitted, frontier],
        // by close, then key.
        let windows = self.windows;
        let span = windows.size_ms().saturating_add(windows.grace_ms());
        self.out.on_frontier(
            cx,
            frontier,
            &self.store,
            span,
            0,
            |store, from, to| {
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
        emit_final: &dyn Fn(&str) -> Option<i64>,
    ) -> Result<(), ProcessError> {
        // Suppress emitted a window once end + grace <= stream time: our
        // close, end + grace, is then at or below it. Emit-final committed
        // M = the largest window end emitted: our closes up to M + grace.
        let grace = self.windows.grace_ms();
        self.out
            .seed_from_kafka_streams(emit_final, |m| m.saturating_add(grace), stream_time)
    }
}
