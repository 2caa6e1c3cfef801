//! The time-windowed aggregation (tumbling and hopping): count, reduce and
//! aggregate, the late rule, both emit strategies, retention.
//!
//! Per record, for each window containing it: the window is dropped from the
//! update (counted `late_window`) when its close, `end + grace`, is at or
//! before the floor of the lane processing it (DESIGN 3.4); otherwise it is
//! folded in and, under `on_window_update`, forwarded. Under
//! `on_window_close` the emission pass forwards each window whose close lies
//! in (emit frontier, frontier] once, in order of close, then key, and
//! persists the new emit frontier in `<store>-emitfrontier`.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{
    InMemoryKeyValueStore, InMemoryWindowStore, Segmented, StateStore, ValueAndTimestamp,
    WindowStore,
};
use stoatflow_time::Watermark;

use crate::error::ProcessError;
use crate::record::{Headers, Record, Windowed};
use crate::topology::context::{DropReason, TaskContext};
use crate::topology::graph::{Downstream, FrontierOperator, Push};
use crate::topology::shared_store::Shared;
use crate::windows::{EmitStrategy, TimeWindows};

/// How values fold into an aggregate: the first value of a window, then each next one.
pub(crate) struct Aggregation<K, V, A> {
    pub(crate) initial: Arc<dyn Fn(&K, &V) -> A + Send + Sync>,
    pub(crate) add: Arc<dyn Fn(&K, &V, A) -> A + Send + Sync>,
}

impl<K, V, A> Clone for Aggregation<K, V, A> {
    fn clone(&self) -> Self {
        Aggregation {
            initial: self.initial.clone(),
            add: self.add.clone(),
        }
    }
}

pub(crate) type WindowStoreOf<K, A> = InMemoryWindowStore<K, ValueAndTimestamp<A>>;
pub(crate) type FrontierStore = InMemoryKeyValueStore<String, i64>;

/// The emit frontier: the highest close already emitted, kept by the state
/// crate's `EmitFrontier` in the companion store `<store>-emitfrontier` so it
/// commits with the results. Reads go through to the store, so it is right
/// after a restore that ran after instantiation.
pub(crate) struct EmitFrontier {
    inner: stoatflow_state::EmitFrontier<Shared<FrontierStore>>,
}

impl EmitFrontier {
    pub(crate) fn new(store_name: &str, store: Rc<RefCell<FrontierStore>>) -> Self {
        EmitFrontier {
            inner: stoatflow_state::EmitFrontier::new(store_name, Shared::new(store)),
        }
    }

    fn err(&self, source: stoatflow_state::StateError) -> ProcessError {
        ProcessError::State {
            store: self.inner.store().name().to_owned(),
            source: Box::new(source),
        }
    }

    /// The highest close emitted so far (`MIN` before the first).
    pub(crate) fn value(&self) -> Watermark {
        // An in-memory store read cannot fail; a failing engine reads as "nothing emitted yet",
        // and the advance below reports the error.
        self.inner
            .highest_emitted_close()
            .map_or(Watermark::MIN, Watermark::from_millis)
    }

    /// Records that every close at or below `to` has been emitted.
    pub(crate) fn advance(&mut self, to: Watermark) -> Result<(), ProcessError> {
        self.inner
            .advance_to(to.as_millis(), to.as_millis())
            .map_err(|e| self.err(e))?;
        Ok(())
    }
}

pub(crate) struct TimeWindowAggregate<K, V, A> {
    pub(crate) node: String,
    pub(crate) store_name: String,
    pub(crate) windows: TimeWindows,
    pub(crate) aggregation: Aggregation<K, V, A>,
    pub(crate) store: Rc<RefCell<WindowStoreOf<K, A>>>,
    pub(crate) emit: EmitStrategy,
    pub(crate) emit_frontier: Option<EmitFrontier>,
    pub(crate) down: Downstream<Windowed<K>, Option<A>>,
}

impl<K, V, A> TimeWindowAggregate<K, V, A>
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
}

impl<K, V, A> Push<K, V> for TimeWindowAggregate<K, V, A>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    A: Clone + 'static,
{
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        let ts = rec.timestamp;
        for start in self.windows.window_starts(ts) {
            let close = self.windows.close_of(start);
            if cx.floor.has_closed(close) {
                cx.metrics.drop_record(DropReason::LateWindow);
                tracing::debug!(
                    node = %self.node, key = ?rec.key, timestamp = ts, window_start = start, close,
                    floor = cx.floor.as_millis(), "dropping a record for a closed window"
                );
                continue;
            }
            let (mut new_ts, mut out) = (ts, None);
            let on_update = self.emit == EmitStrategy::OnWindowUpdate;
            let mut fold = |old: Option<ValueAndTimestamp<A>>| {
                let agg = match old {
                    Some(ValueAndTimestamp { value, timestamp }) => {
                        new_ts = timestamp.max(ts);
                        (self.aggregation.add)(&rec.key, &rec.value, value)
                    }
                    None => (self.aggregation.initial)(&rec.key, &rec.value),
                };
                out = on_update.then(|| agg.clone());
                ValueAndTimestamp::new(agg, new_ts)
            };
            self.store
                .borrow_mut()
                .update(&rec.key, start, ts, &mut fold)
                .map_err(|e| self.state_err(e))?;
            if let Some(value) = out {
                let key = Windowed::new(rec.key.clone(), self.windows.window(start));
                self.down.forward(
                    cx,
                    Record {
                        key,
                        value: Some(value),
                        timestamp: new_ts,
                        headers: rec.headers.clone(),
                    },
                )?;
            }
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
        if frontier.is_none_yet() {
            return Ok(());
        }
        if let Some(ef) = &self.emit_frontier
            && frontier > ef.value()
        {
            // Windows whose close lies in (emitted, frontier]; close = start + size + grace.
            let span = self
                .windows
                .size_ms()
                .saturating_add(self.windows.grace_ms());
            let from = ef
                .value()
                .as_millis()
                .saturating_sub(span)
                .saturating_add(1)
                .max(0);
            let to = frontier.as_millis().saturating_sub(span);
            if to >= from {
                let mut due = self
                    .store
                    .borrow()
                    .fetch_all(from, to)
                    .map_err(|e| self.state_err(e))?;
                due.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
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
        self.store
            .borrow_mut()
            .expire(frontier.as_millis())
            .map_err(|e| self.state_err(e))?;
        Ok(())
    }
}
