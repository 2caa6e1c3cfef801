//! The session-window aggregation: count, reduce and aggregate over
//! sessions `[first, last]` of records no more than the inactivity gap apart,
//! with the merge scan, the merger, tombstones for absorbed sessions, the
//! late rule, both emit strategies and retention.
//!
//! Per record at `t`: the merge scan finds the key's sessions overlapping
//! `[t − gap, t + gap]`; a session that has **closed** (its close,
//! `end + gap + 1 + grace`, at or before the floor) is left out, so an
//! on-time record within its gap starts a new session (docs/late.md#sessions). The
//! open sessions found are merged with the record; the merged session is
//! judged against the floor after the merge and dropped (`late_session`)
//! if closed, so a late record bridging two open sessions is rescued.
//! Under on-window-update every absorbed session is forwarded as a
//! tombstone, then the merged session; each carries the session's end as
//! its timestamp (docs/emission.md#timestamps).
//!
//! It knows nothing of how the floor or the frontier were computed.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{SessionStore, SessionWindow};
use stoatflow_time::Watermark;

use crate::error::ProcessError;
use crate::processors::windowed::{Aggregation, WindowedOutput};
use crate::record::{Record, Window};
use crate::topology::context::{DropReason, TaskContext};
use crate::topology::graph::{FrontierOperator, Push};
use crate::windows::SessionWindows;

/// How sessions fold: the per-record [`Aggregation`], an optional initial
/// aggregate the merge starts from (none for reduce), and the merger.
pub(crate) struct SessionAggregation<K, V, A> {
    pub(crate) per_record: Aggregation<K, V, A>,
    pub(crate) init: Option<Arc<dyn Fn() -> A + Send + Sync>>,
    pub(crate) merge: Arc<dyn Fn(&K, A, A) -> A + Send + Sync>,
}

impl<K, V, A> Clone for SessionAggregation<K, V, A> {
    fn clone(&self) -> Self {
        SessionAggregation {
            per_record: self.per_record.clone(),
            init: self.init.clone(),
            merge: self.merge.clone(),
        }
    }
}

pub(crate) type SessionStoreOf<K, A> = crate::SessionStoreOf<K, A>;

pub(crate) struct SessionWindowAggregate<K, V, A> {
    pub(crate) windows: SessionWindows,
    pub(crate) aggregation: SessionAggregation<K, V, A>,
    pub(crate) store: Rc<RefCell<SessionStoreOf<K, A>>>,
    pub(crate) out: WindowedOutput<K, A>,
}

fn window_of(w: SessionWindow) -> Window {
    Window::new(w.start, w.end)
}

impl<K, V, A> Push<K, V> for SessionWindowAggregate<K, V, A>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    A: Clone + 'static,
{
    fn push(&mut self, cx: &mut TaskContext, rec: Record<K, V>) -> Result<(), ProcessError> {
        self.out.next_record();
        let (ts, gap) = (rec.timestamp, self.windows.inactivity_gap_ms());
        let found = self
            .store
            .borrow()
            .find_sessions(&rec.key, ts.saturating_sub(gap), ts.saturating_add(gap))
            .map_err(|e| self.out.state_err(e))?;
        let new_session = SessionWindow::new(ts, ts);
        let mut merged = new_session;
        let mut acc: Option<A> = self.aggregation.init.as_ref().map(|f| f());
        let mut absorbed = Vec::with_capacity(found.len());
        for (w, value) in found {
            if cx.floor.has_closed(self.windows.close_of_end(w.end)) {
                // A closed session is final: left out of the merge scan (docs/late.md#sessions).
                continue;
            }
            acc = Some(match acc {
                None => value,
                Some(a) => (self.aggregation.merge)(&rec.key, a, value),
            });
            merged = SessionWindow::new(merged.start.min(w.start), merged.end.max(w.end));
            absorbed.push(w);
        }
        let close = self.windows.close_of_end(merged.end);
        let window = window_of(merged);
        if self
            .out
            .closed(cx, DropReason::LateSession, &rec.key, ts, window, close)
        {
            return Ok(());
        }
        let forward_updates = self.out.forwards_updates();
        if merged != new_session {
            for w in absorbed {
                self.store
                    .borrow_mut()
                    .remove(&rec.key, w, ts)
                    .map_err(|e| self.out.state_err(e))?;
                if forward_updates {
                    let (key, headers) = (rec.key.clone(), rec.headers.clone());
                    self.out
                        .forward(cx, key, window_of(w), None, w.end, headers)?;
                }
            }
        }
        let agg = match acc {
            None => (self.aggregation.per_record.initial)(&rec.key, &rec.value),
            Some(a) => (self.aggregation.per_record.add)(&rec.key, &rec.value, a),
        };
        let out = forward_updates.then(|| agg.clone());
        self.store
            .borrow_mut()
            .put(rec.key.clone(), merged, agg, ts)
            .map_err(|e| self.out.state_err(e))?;
        if let Some(value) = out {
            self.out
                .forward(cx, rec.key, window, Some(value), merged.end, rec.headers)?;
        }
        Ok(())
    }
}

impl<K, V, A> FrontierOperator for SessionWindowAggregate<K, V, A>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    A: Clone + 'static,
{
    fn on_frontier(
        &mut self,
        cx: &mut TaskContext,
        frontier: Watermark,
    ) -> Result<(), ProcessError> {
        // Sessions whose close, end + gap + 1 + grace, lies in (emitted, frontier].
        self.out.on_frontier(
            cx,
            frontier,
            &self.store,
            self.windows.close_span(),
            i64::MIN,
            |store, from, to| {
                // By end (so close), then key, then start, as both engines answer (the
                // stores' key-order rule); the sort keeps the order emitted independent of it.
                let mut due = store.fetch_all_by_end(from, to)?;
                due.sort_by(|a, b| (a.0.end, &a.1, a.0.start).cmp(&(b.0.end, &b.1, b.0.start)));
                Ok(due)
            },
            |(w, key, value)| (key, window_of(w), value, w.end),
            |w| w.end,
        )
    }

    fn seed_emitted_by_kafka_streams(
        &mut self,
        stream_time: i64,
        emit_final: &dyn Fn(&str) -> Option<i64>,
    ) -> Result<(), ProcessError> {
        // Suppress emitted a session once end + gap + grace <= stream time;
        // our close, end + gap + 1 + grace, is one more. Emit-final committed
        // M = stream time - grace - gap and emitted the sessions ending
        // before M: our closes up to M + gap + grace.
        let after = self
            .windows
            .inactivity_gap_ms()
            .saturating_add(self.windows.grace_ms());
        self.out.seed_from_kafka_streams(
            emit_final,
            |m| m.saturating_add(after),
            stream_time.saturating_add(1),
        )
    }
}
