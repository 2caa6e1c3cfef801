//! A scheduled source: produces records from a generator on a wall-clock
//! interval, a cron expression (both on the task's wall-clock tick) or an
//! interval of watermark progress (on watermark events,
//! docs/barriers.md#watermark-events). Missed
//! firings collapse into one, as Kafka Streams' punctuators do; each firing
//! stamps its records with the time it fires at.
//!
//! This module never reads the system clock.

use std::sync::Arc;
use std::time::Duration;

use stoatflow_time::{WallTime, Watermark, duration_ms};

use crate::cron::CronSchedule;
use crate::error::TopologyError;

use crate::error::ProcessError;
use crate::record::Record;
use crate::topology::context::{RecordMetadata, TaskContext};
use crate::topology::graph::{Downstream, TimeOperator};

/// When a scheduled source fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// Every interval (ms) of wall-clock time, the first one interval after start.
    WallClock(i64),
    /// At the times of a cron expression (UTC).
    Cron(CronSchedule),
    /// Every interval (ms) of watermark progress, aligned to 0.
    StreamTime(i64),
}

impl Schedule {
    /// Every `interval` of wall-clock time.
    pub fn wall_clock(interval: Duration) -> Self {
        Schedule::WallClock(duration_ms(interval).max(1))
    }

    /// At the times of a five-field cron expression.
    pub fn cron(expr: &str) -> Result<Self, TopologyError> {
        CronSchedule::parse(expr).map(Schedule::Cron)
    }

    /// Every `interval` of watermark progress.
    pub fn stream_time(interval: Duration) -> Self {
        Schedule::StreamTime(duration_ms(interval).max(1))
    }
}

pub(crate) type Generator<K, V> = Arc<dyn Fn(i64) -> Vec<(K, V)> + Send + Sync>;

pub(crate) struct ScheduledSource<K, V> {
    pub(crate) schedule: Schedule,
    pub(crate) generator: Generator<K, V>,
    pub(crate) next: Option<i64>,
    pub(crate) down: Downstream<K, V>,
}

impl<K: Clone + 'static, V: Clone + 'static> ScheduledSource<K, V> {
    fn fire(&mut self, cx: &mut TaskContext, at: i64) -> Result<(), ProcessError> {
        cx.meta = RecordMetadata::default();
        for (k, v) in (self.generator)(at) {
            cx.metrics.records_in += 1;
            self.down.forward(cx, Record::new(k, v, at))?;
        }
        Ok(())
    }

    /// Interval schedules: fire once if due, then the next aligned time after `now`.
    fn interval_tick(
        &mut self,
        cx: &mut TaskContext,
        interval: i64,
        now: i64,
    ) -> Result<(), ProcessError> {
        let Some(next) = self.next else {
            return Ok(());
        };
        if now < next {
            return Ok(());
        }
        let missed = (now - next) / interval;
        self.next = Some(next.saturating_add((missed + 1).saturating_mul(interval)));
        self.fire(cx, now)
    }
}

impl<K: Clone + 'static, V: Clone + 'static> TimeOperator for ScheduledSource<K, V> {
    fn on_event_time(
        &mut self,
        cx: &mut TaskContext,
        punctuation: Watermark,
        _timers: Watermark,
    ) -> Result<(), ProcessError> {
        if let Schedule::StreamTime(interval) = self.schedule
            && !punctuation.is_none_yet()
        {
            // Aligned to 0, as a STREAM_TIME punctuator.
            self.next.get_or_insert(0);
            return self.interval_tick(cx, interval, punctuation.as_millis());
        }
        Ok(())
    }

    fn on_wall_clock(&mut self, cx: &mut TaskContext, now: WallTime) -> Result<(), ProcessError> {
        let now = now.as_millis();
        match &self.schedule {
            Schedule::WallClock(interval) => {
                let interval = *interval;
                if self.next.is_none() {
                    // The first tick arms the schedule: first firing one interval later.
                    self.next = Some(now.saturating_add(interval));
                    return Ok(());
                }
                self.interval_tick(cx, interval, now)
            }
            Schedule::Cron(cron) => {
                let Some(next) = self.next else {
                    self.next = cron.next_after(now);
                    return Ok(());
                };
                if now < next {
                    return Ok(());
                }
                self.next = cron.next_after(now);
                self.fire(cx, now)
            }
            Schedule::StreamTime(_) => Ok(()),
        }
    }
}
