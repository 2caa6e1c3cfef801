//! What every windowed aggregation shares (time, sliding and session, and
//! their cogroup forms, which are the same operators over `CogroupValue`):
//! the fold ([`Aggregation`]), the emit frontier, and [`WindowedOutput`]:
//! the late rule's drop accounting, forwarding, and the emission pass
//! against the committed frontier followed by retention.
//!
//! Each operator keeps only what differs: which windows a record touches
//! (and, for sessions, the merge) and how its store lists the windows due.
//! Dirty tracking for the changelog is the stores' own (`state` crate).
//!
//! It knows nothing of how the floor or the frontier were computed.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{InMemoryKeyValueStore, Segmented, StateError, StateStore};
use stoatflow_time::Watermark;

use crate::error::ProcessError;
use crate::record::{Headers, Record, Window, Windowed};
use crate::topology::context::{DropReason, Emitted, TaskContext};
use crate::topology::graph::Downstream;
use crate::topology::shared_store::Shared;
use crate::windows::EmitStrategy;

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

pub(crate) type WindowStoreOf<K, A> = crate::WindowStoreOf<K, A>;
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

/// The output side of a windowed aggregation: its node and store names, its
/// emit strategy, the emit frontier (on-window-close only), its children, and
/// whether the record being pushed has already been counted as dropped.
pub(crate) struct WindowedOutput<K, A> {
    pub(crate) node: String,
    /// Set by the first window the current record missed; cleared by
    /// [`WindowedOutput::next_record`] (the metric counts records, not windows).
    pub(crate) drop_counted: Cell<bool>,
    pub(crate) store_name: String,
    pub(crate) emit: EmitStrategy,
    pub(crate) emit_frontier: Option<EmitFrontier>,
    pub(crate) down: Downstream<Windowed<K>, Option<A>>,
}

impl<K, A> WindowedOutput<K, A>
where
    K: Clone + std::fmt::Debug + 'static,
    A: Clone + 'static,
{
    pub(crate) fn state_err(&self, source: StateError) -> ProcessError {
        ProcessError::State {
            store: self.store_name.clone(),
            source: Box::new(source),
        }
    }

    /// Whether every update is forwarded as it happens (on-window-update).
    #[inline]
    pub(crate) fn forwards_updates(&self) -> bool {
        self.emit == EmitStrategy::OnWindowUpdate
    }

    /// A new record is being pushed: its first missed window will count.
    #[inline(always)]
    pub(crate) fn next_record(&self) {
        self.drop_counted.set(false);
    }

    /// The late rule (docs/late.md#late-rule): whether `window`, closing at
    /// `close`, has closed at the floor; if so the record is dropped from it.
    /// The metric counts the record once under `reason`, at the first window
    /// it missed since [`WindowedOutput::next_record`] (Kafka Streams counts
    /// per window; we count records, docs/late.md#counting); every window
    /// missed is a [`DropEvent`](crate::DropEvent) and a debug line.
    #[inline(always)]
    pub(crate) fn closed(
        &self,
        cx: &mut TaskContext,
        reason: DropReason,
        key: &K,
        timestamp: i64,
        window: Window,
        close: i64,
    ) -> bool {
        let closed = cx.floor.has_closed(close);
        if closed {
            self.count_drop(cx, reason, key, (timestamp, window, close));
        }
        closed
    }

    /// Counts one drop (once per record) and says why at debug level, off
    /// the hot path.
    #[cold]
    #[inline(never)]
    fn count_drop(
        &self,
        cx: &mut TaskContext,
        reason: DropReason,
        key: &K,
        (timestamp, window, close): (i64, Window, i64),
    ) {
        let counted = !self.drop_counted.replace(true);
        cx.drop_record(
            &self.node,
            Some(key),
            timestamp,
            reason,
            Some((window, close)),
            counted,
        );
        tracing::debug!(
            node = %self.node, key = ?key, timestamp, window_start = window.start,
            window_end = window.end, close, floor = cx.floor.as_millis(), ?reason,
            "dropping a record for a closed window"
        );
    }

    /// Forwards one window's value (an update, a result or a tombstone).
    #[inline]
    pub(crate) fn forward(
        &self,
        cx: &mut TaskContext,
        key: K,
        window: Window,
        value: Option<A>,
        timestamp: i64,
        headers: Headers,
    ) -> Result<(), ProcessError> {
        self.down.forward(
            cx,
            Record {
                key: Windowed::new(key, window),
                value,
                timestamp,
                headers,
            },
        )
    }

    /// Under on-window-close, records every close at or below `close` as
    /// emitted (a takeover from Kafka Streams, which emitted them); a no-op
    /// under on-window-update, which keeps no emit frontier.
    pub(crate) fn seed_emitted(&mut self, close: i64) -> Result<(), ProcessError> {
        match &mut self.emit_frontier {
            Some(ef) => ef.advance(Watermark::from_millis(close)),
            None => Ok(()),
        }
    }

    /// A takeover from Kafka Streams: records as emitted the closes up to
    /// `after_emit_final(M)` when Kafka Streams' emit-final metadata names
    /// this store with M, else up to `by_stream_time`.
    pub(crate) fn seed_from_kafka_streams(
        &mut self,
        emit_final: &dyn Fn(&str) -> Option<i64>,
        after_emit_final: impl FnOnce(i64) -> i64,
        by_stream_time: i64,
    ) -> Result<(), ProcessError> {
        let close = emit_final(&self.store_name).map_or(by_stream_time, after_emit_final);
        self.seed_emitted(close)
    }

    /// The frontier moved: under on-window-close, the emission pass forwards
    /// once every window whose close lies in (emit frontier, frontier], in
    /// the order `due` lists them, and persists the new emit frontier; then
    /// the store expires what retention no longer keeps (nothing windowed
    /// expires except here).
    ///
    /// A window's close is its store time (window start, session end) plus
    /// `span`; `due(store, from, to)` lists the windows with store time in
    /// `from..=to` (`from` no lower than `lowest`), `result` turns one
    /// into (key, window, value, timestamp), and `store_time` gives a
    /// window's store time back (its close is that plus `span`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_frontier<S: Segmented, T>(
        &mut self,
        cx: &mut TaskContext,
        frontier: Watermark,
        store: &RefCell<S>,
        span: i64,
        lowest: i64,
        due: impl FnOnce(&S, i64, i64) -> Result<Vec<T>, StateError>,
        result: impl Fn(T) -> (K, Window, A, i64),
        store_time: impl Fn(&Window) -> i64,
    ) -> Result<(), ProcessError> {
        if frontier.is_none_yet() {
            return Ok(());
        }
        if let Some(ef) = &self.emit_frontier
            && frontier > ef.value()
        {
            let from = ef
                .value()
                .as_millis()
                .saturating_sub(span)
                .saturating_add(1)
                .max(lowest);
            // At the end of time every window is due, a close that saturated there too.
            let to = match frontier == Watermark::MAX {
                true => i64::MAX,
                false => frontier.as_millis().saturating_sub(span),
            };
            if to >= from {
                let due = due(&store.borrow(), from, to).map_err(|e| self.state_err(e))?;
                for item in due {
                    let (key, window, value, timestamp) = result(item);
                    let emitted = Emitted {
                        close: store_time(&window).saturating_add(span),
                        start: window.start,
                    };
                    cx.as_final(emitted, |cx| {
                        self.forward(cx, key, window, Some(value), timestamp, Headers::empty())
                    })?;
                }
            }
            self.emit_frontier
                .as_mut()
                .expect("checked above")
                .advance(frontier)?;
        }
        store
            .borrow_mut()
            .expire(frontier.as_millis())
            .map_err(|e| self.state_err(e))?;
        Ok(())
    }
}
