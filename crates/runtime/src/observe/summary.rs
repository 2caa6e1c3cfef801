//! [`RunSummary`]: what an application did, in a few lines, for the end of
//! a run (`StreamsApp::close` logs it, `StreamsApp::summary` returns it, the
//! command line's `run` prints it): records in and out, drops by reason,
//! the final watermark and the partition that held it, with why.
//!
//! Built from the figures the runtime already keeps (the metrics snapshot
//! and the `/watermarks` view); the "why" is the time crate's text, shown
//! as it is. Knows no metric name, JSON or terminal.

use std::fmt;

use stoatflow_streams::DropReason;
use stoatflow_time::{Watermark, WatermarkHolder, WatermarksSnapshot};

use crate::observe::metrics::MetricsSnapshot;

/// An application's figures at the end of a run (or now).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// Records that entered the tasks through a source, in committed epochs.
    pub records_in: u64,
    /// Records that left the tasks through a sink, in committed epochs.
    pub records_out: u64,
    /// Records dropped, by reason (every reason, zeros included).
    pub dropped: Vec<(DropReason, u64)>,
    /// Whether event time is tracked (without it there is no watermark to
    /// report, and none is missed).
    pub event_time_tracking: bool,
    /// The global watermark last published ([`Watermark::MIN`]: none).
    pub watermark: Watermark,
    /// The partition that held it, and why.
    pub holder: Option<WatermarkHolder>,
}

impl RunSummary {
    /// The summary of `metrics` and the `/watermarks` view `watermarks`.
    pub(crate) fn new(metrics: &MetricsSnapshot, watermarks: Option<&WatermarksSnapshot>) -> Self {
        RunSummary {
            records_in: metrics.records_in,
            records_out: metrics.records_out,
            dropped: metrics.dropped.to_vec(),
            event_time_tracking: metrics.event_time_tracking,
            watermark: watermarks.map_or(Watermark::MIN, |w| w.global),
            holder: watermarks.and_then(|w| w.holder.clone()),
        }
    }
}

impl fmt::Display for RunSummary {
    /// Two lines, three when there was no watermark:
    ///
    /// ```text
    /// records in: 4, out: 0; dropped: none
    /// final watermark: N/A, held by readings:2: never received a record; counts as idle in 4 m 52 s
    /// no watermark, so no window closed and nothing final was emitted
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let drops: Vec<String> = self
            .dropped
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(r, n)| format!("{n} {}", r.label()))
            .collect();
        let drops = if drops.is_empty() {
            "none".to_owned()
        } else {
            drops.join(", ")
        };
        writeln!(
            f,
            "records in: {}, out: {}; dropped: {drops}",
            self.records_in, self.records_out
        )?;
        if !self.event_time_tracking {
            return write!(f, "no event time is tracked: there is no watermark");
        }
        write!(f, "final watermark: {}", self.watermark.to_iso8601())?;
        if let Some(h) = &self.holder {
            write!(f, ", held by {h}")?;
        }
        if self.watermark.is_none_yet() {
            write!(
                f,
                "\nno watermark, so no window closed and nothing final was emitted"
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use stoatflow_time::{HoldReason, SourcePartition};

    use super::*;

    fn summary(watermark: Watermark, dropped: u64) -> RunSummary {
        RunSummary {
            records_in: 4,
            records_out: 0,
            dropped: vec![(DropReason::LateWindow, dropped), (DropReason::NullKey, 0)],
            event_time_tracking: true,
            watermark,
            holder: Some(WatermarkHolder {
                partition: SourcePartition::new("readings", 2),
                reason: HoldReason::NeverReceived {
                    idle_in: Some(Duration::from_secs(292)),
                },
            }),
        }
    }

    #[test]
    fn without_a_watermark_it_names_the_holder_and_says_nothing_closed() {
        assert_eq!(
            summary(Watermark::MIN, 0).to_string(),
            "records in: 4, out: 0; dropped: none\n\
             final watermark: N/A, held by readings:2: never received a record; counts as idle in 4 m 52 s\n\
             no watermark, so no window closed and nothing final was emitted"
        );
    }

    #[test]
    fn with_a_watermark_and_drops_it_lists_them_by_reason() {
        let text = summary(Watermark::from_millis(1_790_000_000_000), 2).to_string();
        assert!(text.starts_with("records in: 4, out: 0; dropped: 2 late_window\n"));
        assert!(text.contains("final watermark: 2026-09-21T14:13:20Z, held by readings:2"));
        assert!(!text.contains("nothing final"), "{text}");
    }
}
