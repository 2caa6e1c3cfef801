//! `run`'s status line: the application's state, its watermark and the
//! records per second its committed epochs took in (while it restores, the
//! restore's progress in changelog records instead). When stderr is a
//! terminal, one line redrawn in place every second; otherwise a plain line
//! every `--status-every` seconds (10 by default), so that a log file gets a
//! heartbeat rather than a line a second. Nothing under `-q`.
//!
//! Owns the line and its cadence; the figures are the application's
//! metrics.

use std::io::IsTerminal as _;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use stoatflow::{App, AppState, Watermark};

/// How often the line is redrawn on a terminal.
const REDRAW: Duration = Duration::from_secs(1);

/// What one line says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// The application's state.
    pub state: AppState,
    /// Its watermark, if it has one.
    pub watermark: Option<Watermark>,
    /// Records per second taken in since the last line.
    pub records_per_sec: f64,
    /// Changelog records restored, of those read so far.
    pub restored: (u64, u64),
}

/// The line for `r`.
pub fn line(r: &Reading) -> String {
    let watermark = match r.watermark {
        Some(w) if !w.is_none_yet() => w.to_iso8601(),
        _ => "none yet".to_owned(),
    };
    let doing = if r.state == AppState::Rebalancing {
        format!(
            "restoring {} of {} changelog records",
            r.restored.0, r.restored.1
        )
    } else {
        format!("{:.0} records/s", r.records_per_sec)
    };
    format!("{}, watermark {watermark}, {doing}", r.state)
}

enum Shown {
    /// Redrawn in place.
    Terminal(ProgressBar),
    /// A line at a time.
    Lines,
    /// `-q`.
    Off,
}

/// The status line of one run.
pub struct StatusLine {
    shown: Shown,
    every: Duration,
    /// When the last line was shown, and the records taken in by then.
    last: (Instant, u64),
}

impl StatusLine {
    /// Starts counting at `now`; `lines_every` is the plain lines' interval.
    pub fn new(lines_every: Duration, now: Instant) -> StatusLine {
        let (shown, every) = if crate::out::quiet() {
            (Shown::Off, lines_every)
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            (Shown::Terminal(bar), REDRAW)
        } else {
            (Shown::Lines, lines_every)
        };
        StatusLine {
            shown,
            every,
            last: (now, 0),
        }
    }

    /// Shows a new line if one is due at `now`.
    pub fn update(&mut self, app: &App, now: Instant) {
        if matches!(self.shown, Shown::Off) {
            return;
        }
        if let Shown::Terminal(bar) = &self.shown {
            bar.tick();
        }
        let elapsed = now.saturating_duration_since(self.last.0);
        if elapsed < self.every {
            return;
        }
        let m = app.handle().metrics();
        let reading = Reading {
            state: app.state(),
            watermark: m.watermark.map(|w| w.current),
            records_per_sec: m.records_in.saturating_sub(self.last.1) as f64
                / elapsed.as_secs_f64(),
            restored: (m.restore.records_restored, m.restore.records_total),
        };
        self.last = (now, m.records_in);
        match &self.shown {
            Shown::Terminal(bar) => bar.set_message(line(&reading)),
            Shown::Lines => eprintln!("{}", line(&reading)),
            Shown::Off => {}
        }
    }

    /// Clears the line from the terminal.
    pub fn finish(&self) {
        if let Shown::Terminal(bar) = &self.shown {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_state_watermark_and_rate_or_restore() {
        let running = Reading {
            state: AppState::Running,
            watermark: Some(Watermark::from_millis(1_790_000_000_000)),
            records_per_sec: 1234.4,
            restored: (0, 0),
        };
        assert_eq!(
            line(&running),
            "RUNNING, watermark 2026-09-21T14:13:20Z, 1234 records/s"
        );
        let restoring = Reading {
            state: AppState::Rebalancing,
            watermark: None,
            restored: (10, 300),
            ..running
        };
        assert_eq!(
            line(&restoring),
            "REBALANCING, watermark none yet, restoring 10 of 300 changelog records"
        );
    }
}
