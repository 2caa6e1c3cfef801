//! The node that runs a user [`Processor`]: records through `process`,
//! STREAM_TIME punctuators and event-time timers on watermark events,
//! processing-time timers then WALL_CLOCK_TIME punctuators on wall-clock
//! ticks. `init` runs lazily before
//! the first of any of these, so it sees restored stores. A punctuator that
//! panics fails its task with an error naming the processor and the
//! punctuator (the task is not used again).
//!
//! This module knows nothing of where watermarks or ticks come from.

use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};

use stoatflow_time::{WallTime, Watermark};

use crate::error::ProcessError;
use crate::processor::{NodeState, Processor, ProcessorContext, PunctuationType};
use crate::record::Record;
use crate::topology::context::TaskContext;
use crate::topology::graph::{Push, TimeOperator};

pub(crate) struct CustomProcessor<P, KIn, VIn, KOut, VOut> {
    processor: P,
    state: NodeState<KOut, VOut>,
    initialized: bool,
    _p: PhantomData<fn(KIn, VIn)>,
}

impl<P, KIn, VIn, KOut, VOut> CustomProcessor<P, KIn, VIn, KOut, VOut>
where
    P: Processor<KIn, VIn, KOut, VOut>,
    KOut: Clone + 'static,
    VOut: Clone + 'static,
{
    pub(crate) fn new(processor: P, state: NodeState<KOut, VOut>) -> Self {
        CustomProcessor {
            processor,
            state,
            initialized: false,
            _p: PhantomData,
        }
    }

    fn ensure_init(&mut self, cx: &mut TaskContext) -> Result<(), ProcessError> {
        if !self.initialized {
            self.initialized = true;
            let mut ctx = ProcessorContext {
                task: cx,
                node: &mut self.state,
                current: None,
            };
            self.processor.init(&mut ctx)?;
        }
        Ok(())
    }

    fn punctuate(
        &mut self,
        cx: &mut TaskContext,
        kind: PunctuationType,
        now: i64,
    ) -> Result<(), ProcessError> {
        let mut i = 0;
        while i < self.state.schedules.len() {
            let s = &mut self.state.schedules[i];
            if s.kind == kind && !s.cancelled && s.next <= now {
                s.advance(now);
                if let Some(mut callback) = s.callback.take() {
                    let mut ctx = ProcessorContext {
                        task: cx,
                        node: &mut self.state,
                        current: None,
                    };
                    // Unwind safety: a panic fails the task, which is then
                    // dropped, never run again.
                    let r = panic::catch_unwind(AssertUnwindSafe(|| callback(&mut ctx, now)));
                    self.state.schedules[i].callback = Some(callback);
                    r.unwrap_or_else(|payload| {
                        Err(ProcessError::Processor {
                            node: self.state.name.clone(),
                            reason: format!(
                                "its {} punctuator panicked: {}",
                                match kind {
                                    PunctuationType::StreamTime => "stream-time",
                                    PunctuationType::WallClockTime => "wall-clock",
                                },
                                panic_message(&*payload)
                            ),
                        })
                    })?;
                }
            }
            i += 1;
        }
        Ok(())
    }
}

/// What a panic said, when it said it with a string.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "a panic without a message"
    }
}

impl<P, KIn, VIn, KOut, VOut> Push<KIn, VIn> for CustomProcessor<P, KIn, VIn, KOut, VOut>
where
    P: Processor<KIn, VIn, KOut, VOut>,
    KOut: Clone + 'static,
    VOut: Clone + 'static,
{
    fn push(&mut self, cx: &mut TaskContext, rec: Record<KIn, VIn>) -> Result<(), ProcessError> {
        self.ensure_init(cx)?;
        let mut ctx = ProcessorContext {
            task: cx,
            node: &mut self.state,
            current: Some((rec.timestamp, rec.headers.clone())),
        };
        self.processor.process(&mut ctx, rec)
    }
}

impl<P, KIn, VIn, KOut, VOut> TimeOperator for CustomProcessor<P, KIn, VIn, KOut, VOut>
where
    P: Processor<KIn, VIn, KOut, VOut>,
    KOut: Clone + 'static,
    VOut: Clone + 'static,
{
    fn on_event_time(
        &mut self,
        cx: &mut TaskContext,
        punctuation: Watermark,
        timers: Watermark,
    ) -> Result<(), ProcessError> {
        self.ensure_init(cx)?;
        if !punctuation.is_none_yet() {
            self.punctuate(cx, PunctuationType::StreamTime, punctuation.as_millis())?;
        }
        if timers.is_none_yet() {
            return Ok(());
        }
        loop {
            let Some(t) = self.state.timers.as_mut() else {
                return Ok(());
            };
            let Some((ts, key)) = t.pop_due(timers.as_millis())? else {
                return Ok(());
            };
            let mut ctx = ProcessorContext {
                task: cx,
                node: &mut self.state,
                current: None,
            };
            self.processor.on_timer(&mut ctx, &key, ts)?;
        }
    }

    fn on_wall_clock(&mut self, cx: &mut TaskContext, now: WallTime) -> Result<(), ProcessError> {
        self.ensure_init(cx)?;
        let now = now.as_millis();
        // Processing-time timers due by `now`, in order of time then key;
        // each is removed before its callback, so it fires once.
        while let Some(t) = self.state.wall_timers.as_mut() {
            let Some((ts, key)) = t.pop_due(now)? else {
                break;
            };
            let mut ctx = ProcessorContext {
                task: cx,
                node: &mut self.state,
                current: None,
            };
            self.processor
                .on_processing_time_timer(&mut ctx, &key, ts)?;
        }
        self.punctuate(cx, PunctuationType::WallClockTime, now)
    }
}
