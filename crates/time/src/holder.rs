//! Which partition holds the application's watermark back, and why
//! (docs/time.md#holder): what `/watermarks`, the live page, `stoatflow
//! watermarks` and the close summary say, even while there is no watermark
//! at all.
//!
//! Owns the reasons and their one wording each ([`fmt::Display`]), and the
//! way a countdown is written ([`human_duration`]). The tracker decides which
//! reason applies; the server and the command line only render the text.
//! Plain data: it knows nothing of JSON, HTML or terminals.

use std::fmt;
use std::time::Duration;

use crate::SourcePartition;

/// The partition the global watermark waits on, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatermarkHolder {
    /// The partition.
    pub partition: SourcePartition,
    /// Why it holds the watermark.
    pub reason: HoldReason,
}

/// Why a partition holds the global watermark where it is (or keeps it
/// from existing).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HoldReason {
    /// It has never received a record, so it has no watermark and neither
    /// has the application. `idle_in` is how long until its idleness
    /// timeout leaves it out of the minimum; `None` when idleness is off for
    /// its source (it then holds the watermark until a record arrives).
    NeverReceived {
        /// Time left until it counts as idle.
        idle_in: Option<Duration>,
    },
    /// It received records but its generator has made no watermark (a
    /// `no_watermarks()` source never makes one; a custom generator may not
    /// have emitted yet).
    NoWatermarkYet,
    /// Its watermark is the lowest of the partitions that count. `quiet_for`
    /// is how long since its last record (or since it was registered);
    /// `idle_in` as for [`HoldReason::NeverReceived`].
    Lowest {
        /// Time since its last record.
        quiet_for: Duration,
        /// Time left until it counts as idle.
        idle_in: Option<Duration>,
    },
    /// Its next record is stamped ahead of the others' and waits its turn
    /// (docs/time.md#future-heads); `preview` when its preview watermark
    /// stands in meanwhile.
    FutureHead {
        /// Whether it contributes a preview watermark.
        preview: bool,
    },
    /// An alignment hold waits on it: it is its group's minimum, other
    /// members are held, and it has nothing buffered (docs/time.md#alignment).
    AlignmentHold {
        /// The alignment group.
        group: String,
    },
    /// Every partition is idle: the watermark stays where it is until a
    /// record arrives. The holder named is the one with the lowest watermark.
    Idle,
}

impl HoldReason {
    /// A stable code for machines (`/watermarks`' `holder.reason`).
    pub fn code(&self) -> &'static str {
        match self {
            HoldReason::NeverReceived { .. } => "never_received",
            HoldReason::NoWatermarkYet => "no_watermark_yet",
            HoldReason::Lowest { .. } => "lowest",
            HoldReason::FutureHead { .. } => "future_head",
            HoldReason::AlignmentHold { .. } => "alignment_hold",
            HoldReason::Idle => "idle",
        }
    }

    /// Time left until the holder counts as idle, where a countdown runs.
    pub fn idle_in(&self) -> Option<Duration> {
        match self {
            HoldReason::NeverReceived { idle_in } | HoldReason::Lowest { idle_in, .. } => *idle_in,
            _ => None,
        }
    }
}

/// "counts as idle in 4 m 12 s", or what is true when idleness is off.
fn countdown(idle_in: Option<Duration>) -> String {
    match idle_in {
        Some(d) if d.is_zero() => "counts as idle at the next recompute".into(),
        Some(d) => format!("counts as idle in {}", human_duration(d)),
        None => "idleness is off for its source (timeout 0), so it never counts as idle".into(),
    }
}

impl fmt::Display for HoldReason {
    /// The "why", in the words docs/time.md#holder lists.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HoldReason::NeverReceived { idle_in } => {
                write!(f, "never received a record; {}", countdown(*idle_in))
            }
            HoldReason::NoWatermarkYet => f.write_str(
                "received records but its generator has made no watermark (a no_watermarks() source never makes one)",
            ),
            HoldReason::Lowest { quiet_for, idle_in } => write!(
                f,
                "lowest watermark; last record {} ago; {}",
                human_duration(*quiet_for),
                countdown(*idle_in)
            ),
            HoldReason::FutureHead { preview: true } => f.write_str(
                "its next record is stamped ahead of the others' and waits its turn; its preview watermark stands in",
            ),
            HoldReason::FutureHead { preview: false } => f.write_str(
                "its next record is stamped ahead of the others' and waits its turn; its generator gives no preview, so the watermark waits for that record",
            ),
            HoldReason::AlignmentHold { group } => write!(
                f,
                "alignment hold: group {group} holds its other members until this one catches up, and it has nothing buffered"
            ),
            HoldReason::Idle => f.write_str(
                "idle, as is every partition: the watermark stays where it is until a record arrives",
            ),
        }
    }
}

impl fmt::Display for WatermarkHolder {
    /// `topic:partition: why`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.partition, self.reason)
    }
}

/// A span as people read a countdown: `850 ms`, `42 s`, `4 m 12 s`,
/// `2 h 5 m` (whole units, rounded down).
pub fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    let s = d.as_secs();
    if ms < 1_000 {
        format!("{ms} ms")
    } else if s < 60 {
        format!("{s} s")
    } else if s < 3_600 {
        format!("{} m {} s", s / 60, s % 60)
    } else {
        format!("{} h {} m", s / 3_600, s / 60 % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_a_countdown() {
        let ms = Duration::from_millis;
        assert_eq!(human_duration(ms(850)), "850 ms");
        assert_eq!(human_duration(ms(42_900)), "42 s");
        assert_eq!(human_duration(ms(252_000)), "4 m 12 s");
        assert_eq!(human_duration(ms(300_000)), "5 m 0 s");
        assert_eq!(human_duration(ms(7_500_000)), "2 h 5 m");
    }

    #[test]
    fn each_reason_says_why_in_its_own_words() {
        let never = HoldReason::NeverReceived {
            idle_in: Some(Duration::from_millis(252_000)),
        };
        assert_eq!(
            never.to_string(),
            "never received a record; counts as idle in 4 m 12 s"
        );
        assert_eq!(never.code(), "never_received");
        let off = HoldReason::NeverReceived { idle_in: None };
        assert!(off.to_string().contains("never counts as idle"), "{off}");
        assert!(
            HoldReason::AlignmentHold { group: "g".into() }
                .to_string()
                .starts_with("alignment hold: group g")
        );
        assert!(HoldReason::Idle.to_string().starts_with("idle"));
        let holder = WatermarkHolder {
            partition: SourcePartition::new("readings", 2),
            reason: never,
        };
        assert_eq!(
            holder.to_string(),
            "readings:2: never received a record; counts as idle in 4 m 12 s"
        );
    }
}
