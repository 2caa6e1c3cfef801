//! What a soak's samples say about growth: each series' per-minute growth
//! over the judged part of the run (the second half, and never before the
//! input's retention has passed; for the changelogs, never before their own
//! retention has) as a share of its mean over the first minute, and the
//! longest barrier pause of that part against the first minute's. A series
//! whose horizon lies past the run's end is not judged.
//!
//! Growth is the slope of the series' **peaks**, the highest sample of each
//! [`PEAK_SAMPLES`] in a row: what a month-long run must provision for is
//! its peak, and a saw-tooth (a store's files between one segment's drop and
//! the next) has a slope over its samples that depends only on where the
//! run happened to stop within a tooth.
//!
//! Owns the slopes, their bounds and the lines that print them. A series
//! meant to stay flat in a run that could last a month must not grow by
//! more than [`GROWTH_BOUND_PCT`] of its first-minute value per minute; the
//! longest pause between barrier commits must stay within
//! [`GAP_BOUND_INTERVALS`] commit intervals of the first minute's.

use std::fmt;
use std::time::Duration;

use super::probe::Sample;

/// The most a bounded series may grow per minute, in percent of its
/// first-minute value (its mean over the first minute).
pub const GROWTH_BOUND_PCT: f64 = 5.0;

/// How many commit intervals (the first minute's mean) the longest barrier
/// pause of the judged part may exceed the first minute's by.
pub const GAP_BOUND_INTERVALS: f64 = 2.0;

/// How many consecutive samples of the judged part give one peak (a minute
/// at the default 10 s period).
pub const PEAK_SAMPLES: usize = 6;

/// One series' growth.
#[derive(Debug, Clone, PartialEq)]
pub struct Slope {
    /// The series, as named on the sample line.
    pub series: &'static str,
    /// Seconds into the run its judged part starts at (past the run's end:
    /// not judged, and without a bound).
    pub from_s: f64,
    /// Its mean over the first minute's samples.
    pub first_minute: f64,
    /// The least-squares growth per minute of its peaks over the judged
    /// part.
    pub per_min: f64,
    /// `per_min` in percent of `first_minute` (0 for a series flat at 0,
    /// infinite for one growing from 0; NaN with fewer than two samples).
    pub pct_per_min: f64,
    /// Its bound in percent per minute, if it has one.
    pub bound_pct: Option<f64>,
}

impl Slope {
    /// Whether it is within its bound (a series without one always is; one
    /// that could not be measured is not).
    pub fn ok(&self) -> bool {
        self.bound_pct.is_none_or(|b| self.pct_per_min <= b)
    }
}

/// The longest barrier pauses.
#[derive(Debug, Clone, PartialEq)]
pub struct GapSlope {
    /// The longest pause between barrier commits in the first minute, ms.
    pub first_minute_max_ms: f64,
    /// The longest in the judged part, ms.
    pub judged_max_ms: f64,
    /// The mean commit interval of the first minute, ms.
    pub commit_interval_ms: f64,
}

impl GapSlope {
    /// The longest pause of the `first` minute's samples and of the
    /// `judged` ones taken at `judged_from_s` or later, against the first
    /// minute's mean commit interval.
    fn of(first: &[&Sample], judged: &[&Sample], judged_from_s: f64) -> GapSlope {
        let max_gap = |it: &mut dyn Iterator<Item = &&Sample>| {
            it.map(|s| s.barrier_gap_max_ms).fold(f64::NAN, f64::max)
        };
        let intervals: Vec<f64> = first
            .iter()
            .map(|s| s.commit_interval_ms)
            .filter(|i| i.is_finite())
            .collect();
        GapSlope {
            first_minute_max_ms: max_gap(&mut first.iter()),
            judged_max_ms: max_gap(&mut judged.iter().filter(|s| s.t_s >= judged_from_s)),
            commit_interval_ms: intervals.iter().sum::<f64>() / intervals.len() as f64,
        }
    }

    /// `first_minute_max_ms` plus [`GAP_BOUND_INTERVALS`] commit intervals.
    pub fn bound_ms(&self) -> f64 {
        self.first_minute_max_ms + GAP_BOUND_INTERVALS * self.commit_interval_ms
    }

    /// Whether the judged part's longest pause is within the bound.
    pub fn ok(&self) -> bool {
        self.judged_max_ms <= self.bound_ms()
    }
}

/// `per_min` in percent of `first_minute`: 0 for a series flat at (or
/// falling from) 0, infinite for one growing from 0; NaN stays NaN.
fn share_pct(per_min: f64, first_minute: f64) -> f64 {
    if first_minute != 0.0 {
        per_min / first_minute * 100.0
    } else if per_min <= 0.0 {
        0.0
    } else {
        // Growing from nothing: no share of it is small enough.
        per_min * f64::INFINITY
    }
}

/// Every series' growth over a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Slopes {
    /// Seconds into the run the first minute ends at (its samples give the
    /// first-minute values).
    pub first_minute_s: f64,
    /// Seconds into the run the judged part starts at.
    pub from_s: f64,
    /// Each series, in sample-line order.
    pub series: Vec<Slope>,
    /// The barrier pauses.
    pub gap: GapSlope,
}

impl Slopes {
    /// The slopes of `samples` from a run of `duration` whose input keeps
    /// `retention`: the judged part starts at half the run or at the
    /// retention, whichever is later; the first minute ends at 60 s or
    /// half the run, whichever is earlier.
    ///
    /// The changelogs' series starts no earlier than `changelog_retention`:
    /// before, a changelog still holds every window it was written.
    pub fn of(
        samples: &[Sample],
        duration: Duration,
        retention: Duration,
        changelog_retention: Duration,
    ) -> Slopes {
        let half = duration.as_secs_f64() / 2.0;
        let first_minute_s = half.min(60.0);
        let from_s = half.max(retention.as_secs_f64());
        let first: Vec<&Sample> = samples.iter().filter(|s| s.t_s <= first_minute_s).collect();
        // A sample's pauses cover the time since the previous one: the
        // judged part's are those of samples taken a period after it began.
        let period = samples.first().map_or(0.0, |s| s.t_s);
        let judged: Vec<&Sample> = samples.iter().filter(|s| s.t_s >= from_s).collect();
        let changelog_from_s = from_s.max(changelog_retention.as_secs_f64());
        let series = |name, series_from_s: f64, bound: Option<f64>, f: &dyn Fn(&Sample) -> f64| {
            // The mean of the first minute, not its last sample: a series
            // with a saw-tooth (the stores' files between write-backs) can
            // read 0 at any one sample.
            let first_minute = if first.is_empty() {
                samples.first().map_or(f64::NAN, f)
            } else {
                first.iter().map(|s| f(s)).sum::<f64>() / first.len() as f64
            };
            let points: Vec<(f64, f64)> = judged
                .iter()
                .filter(|s| s.t_s >= series_from_s)
                .map(|s| (s.t_s / 60.0, f(s)))
                .collect();
            let points = peaks(&points);
            // A horizon the run never reached leaves nothing to judge.
            let bound = bound.filter(|_| series_from_s < duration.as_secs_f64());
            let per_min = least_squares_slope(&points);
            Slope {
                series: name,
                from_s: series_from_s,
                first_minute,
                per_min,
                pct_per_min: share_pct(per_min, first_minute),
                bound_pct: bound,
            }
        };
        let bounded = Some(GROWTH_BOUND_PCT);
        let lag = |s: &Sample| s.watermark_lag_ms.map_or(f64::NAN, |l| l as f64);
        let series = vec![
            series("records_per_s", from_s, None, &|s| s.records_per_s),
            series("rss_mib", from_s, bounded, &|s| s.rss_mib),
            series("log_mib", from_s, None, &|s| s.log_mib),
            series("changelog_mib", changelog_from_s, bounded, &|s| {
                s.changelog_mib
            }),
            series("state_mib", from_s, bounded, &|s| s.state_mib),
            series("fds", from_s, bounded, &|s| s.fds as f64),
            series("watermark_lag_ms", from_s, None, &lag),
            series("late_records", from_s, None, &|s| s.late_records as f64),
        ];
        Slopes {
            first_minute_s,
            from_s,
            series,
            gap: GapSlope::of(&first, &judged, from_s + period),
        }
    }

    /// The bounds not met, each with its figures.
    pub fn violations(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .series
            .iter()
            .filter(|s| !s.ok())
            .map(|s| {
                format!(
                    "{} grew {:.2}%/min of its first-minute value {:.1} ({:.3}/min from {:.0} s), bound {:.0}%/min",
                    s.series,
                    s.pct_per_min,
                    s.first_minute,
                    s.per_min,
                    s.from_s,
                    s.bound_pct.unwrap_or(f64::NAN)
                )
            })
            .collect();
        if !self.gap.ok() {
            out.push(format!(
                "barrier_gap_max_ms {:.0} ms from {:.0} s against {:.0} ms in the first minute, bound {:.0} ms (+{GAP_BOUND_INTERVALS} commit intervals of {:.0} ms)",
                self.gap.judged_max_ms,
                self.from_s,
                self.gap.first_minute_max_ms,
                self.gap.bound_ms(),
                self.gap.commit_interval_ms
            ));
        }
        out
    }
}

impl fmt::Display for Slopes {
    /// One `soak-slope series=… first_minute=… per_min=… pct_per_min=… bound_pct=… ok|FAIL|-`
    /// line per series, then `soak-gap first_minute_max_ms=… judged_max_ms=… commit_interval_ms=… bound_ms=… ok|FAIL`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.series {
            let (bound, verdict) = match s.bound_pct {
                Some(b) => (format!("{b:.0}"), if s.ok() { "ok" } else { "FAIL" }),
                None => ("-".to_owned(), "-"),
            };
            writeln!(
                f,
                "soak-slope series={} from_s={:.0} first_minute_s={:.0} first_minute={:.1} per_min={:.3} pct_per_min={:.2} bound_pct={bound} {verdict}",
                s.series, s.from_s, self.first_minute_s, s.first_minute, s.per_min, s.pct_per_min
            )?;
        }
        write!(
            f,
            "soak-gap first_minute_max_ms={:.0} judged_max_ms={:.0} from_s={:.0} commit_interval_ms={:.0} bound_ms={:.0} {}",
            self.gap.first_minute_max_ms,
            self.gap.judged_max_ms,
            self.from_s,
            self.gap.commit_interval_ms,
            self.gap.bound_ms(),
            if self.gap.ok() { "ok" } else { "FAIL" }
        )
    }
}

/// The highest point of each [`PEAK_SAMPLES`] in a row (the last group may
/// be shorter), at its own time. A NaN in a group makes its peak NaN.
fn peaks(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points
        .chunks(PEAK_SAMPLES)
        .map(|group| {
            if group.iter().any(|p| p.1.is_nan()) {
                return (group[0].0, f64::NAN);
            }
            group
                .iter()
                .copied()
                .fold((group[0].0, f64::NEG_INFINITY), |a, p| {
                    if p.1 > a.1 { p } else { a }
                })
        })
        .collect()
}

/// The least-squares slope of `points` (x, y); NaN with fewer than two
/// distinct x or any NaN y.
fn least_squares_slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if points.len() < 2 {
        return f64::NAN;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if sxx == 0.0 { f64::NAN } else { sxy / sxx }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples every 10 s for 600 s; `f(t_s)` gives RSS, changelog, state
    /// and descriptors alike, the barrier gap is 600 ms throughout, the
    /// commit interval 500 ms.
    fn samples(f: impl Fn(f64) -> f64, gap: impl Fn(f64) -> f64) -> Vec<Sample> {
        (1..=60)
            .map(|i| {
                let t = i as f64 * 10.0;
                Sample {
                    t_s: t,
                    records_per_s: 30_000.0,
                    barrier_gap_max_ms: gap(t),
                    commit_interval_ms: 500.0,
                    rss_mib: f(t),
                    log_mib: 1.0 + t,
                    changelog_mib: f(t),
                    state_mib: f(t),
                    fds: f(t) as u64,
                    watermark_lag_ms: Some(11_000),
                    late_records: 0,
                }
            })
            .collect()
    }

    fn slopes(samples: &[Sample]) -> Slopes {
        Slopes::of(
            samples,
            Duration::from_secs(600),
            Duration::from_secs(300),
            Duration::from_secs(300),
        )
    }

    /// The changelogs keep every window until their own retention has
    /// passed: their growth is judged from there, and not at all when the
    /// run ends first.
    #[test]
    fn the_changelog_is_judged_from_its_own_retention_and_not_before() {
        // Everything flat but the changelog, which grows until 450 s.
        let changelog_until = |until: f64| {
            move |t: f64| {
                let mut v = samples(|_| 200.0, |_| 600.0)[0].clone();
                v.changelog_mib = 200.0 + t.min(until);
                v
            }
        };
        let run = |until: f64, retention_s: u64| {
            let samples: Vec<Sample> = (1..=60)
                .map(|i| {
                    let t = f64::from(i) * 10.0;
                    Sample {
                        t_s: t,
                        ..changelog_until(until)(t)
                    }
                })
                .collect();
            Slopes::of(
                &samples,
                Duration::from_secs(600),
                Duration::from_secs(300),
                Duration::from_secs(retention_s),
            )
        };
        let changelog = |s: &Slopes| {
            s.series
                .iter()
                .find(|x| x.series == "changelog_mib")
                .unwrap()
                .clone()
        };
        // Judged from the input's retention, its growth fails the bound.
        assert_eq!(run(450.0, 300).violations().len(), 1);
        // Judged from its own retention (450 s), it is flat.
        let s = run(450.0, 450);
        assert!(s.violations().is_empty(), "{s}");
        assert_eq!(changelog(&s).from_s, 450.0);
        assert!(
            s.to_string().contains("series=changelog_mib from_s=450 "),
            "{s}"
        );
        // A retention past the run's end: not judged, whatever it does.
        let s = run(600.0, 700);
        assert!(s.violations().is_empty(), "{s}");
        assert_eq!(changelog(&s).bound_pct, None);
        assert!(
            s.to_string().lines().any(|l| l
                .starts_with("soak-slope series=changelog_mib from_s=700 ")
                && l.ends_with(" -")),
            "{s}"
        );
    }

    #[test]
    fn flat_series_pass() {
        let s = slopes(&samples(|_| 200.0, |_| 600.0));
        assert!(s.violations().is_empty(), "{s}");
        assert_eq!((s.first_minute_s, s.from_s), (60.0, 300.0));
        assert!(
            s.series
                .iter()
                .find(|x| x.series == "rss_mib")
                .unwrap()
                .pct_per_min
                .abs()
                < 1e-9
        );
    }

    /// Growth of 6 per minute on a first-minute value of 100 is 6 %/min:
    /// above the bound; 4 per minute is not. The growth before the judged
    /// part does not count.
    #[test]
    fn growth_is_a_share_of_the_first_minute_value_per_minute() {
        let grows = |per_min: f64| {
            move |t: f64| {
                if t <= 300.0 {
                    100.0
                } else {
                    100.0 + per_min * (t - 300.0) / 60.0
                }
            }
        };
        let s = slopes(&samples(grows(6.0), |_| 600.0));
        let rss = s.series.iter().find(|x| x.series == "rss_mib").unwrap();
        assert!((rss.per_min - 6.0).abs() < 1e-6, "{s}");
        assert!((rss.pct_per_min - 6.0).abs() < 1e-6, "{s}");
        let failed = s.violations();
        assert_eq!(failed.len(), 4, "{failed:?}");
        assert!(
            failed[0].starts_with("rss_mib grew 6.00%/min"),
            "{failed:?}"
        );
        // log_mib grows faster still, but has no bound.
        assert!(
            !failed.iter().any(|v| v.starts_with("log_mib")),
            "{failed:?}"
        );
        let s = slopes(&samples(grows(4.0), |_| 600.0));
        assert!(s.violations().is_empty(), "{s}");
        let early = |t: f64| if t <= 300.0 { 100.0 + t } else { 400.0 };
        assert!(slopes(&samples(early, |_| 600.0)).violations().is_empty());
    }

    #[test]
    fn growing_from_nothing_fails_and_staying_at_nothing_passes() {
        let from_zero = |t: f64| if t <= 60.0 { 0.0 } else { t };
        assert_eq!(slopes(&samples(from_zero, |_| 600.0)).violations().len(), 4);
        assert!(slopes(&samples(|_| 0.0, |_| 600.0)).violations().is_empty());
    }

    /// The judged part's longest pause may exceed the first minute's by two
    /// commit intervals (1 000 ms here), not more.
    #[test]
    fn a_longer_barrier_pause_fails_past_two_commit_intervals() {
        let pause = |late: f64| move |t: f64| if t == 450.0 { late } else { 600.0 };
        let s = slopes(&samples(|_| 100.0, pause(1_600.0)));
        assert!(s.violations().is_empty(), "{s}");
        assert_eq!(s.gap.bound_ms(), 1_600.0);
        let s = slopes(&samples(|_| 100.0, pause(1_601.0)));
        let failed = s.violations();
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert!(
            failed[0].starts_with("barrier_gap_max_ms 1601 ms"),
            "{failed:?}"
        );
    }

    /// The first-minute value is the mean of the first minute's samples:
    /// one sample reading nothing at 60 s (a store whose cache had just
    /// been written back and its segment dropped) does not make any later
    /// growth infinite, nor does one high sample make it look small.
    #[test]
    fn the_first_minute_value_is_the_mean_of_the_first_minute() {
        let saw = |t: f64| {
            if t == 60.0 {
                0.0
            } else if t < 60.0 {
                100.0
            } else {
                100.0 + 3.0 * (t - 300.0).max(0.0) / 60.0
            }
        };
        let s = slopes(&samples(saw, |_| 600.0));
        let state = s.series.iter().find(|x| x.series == "state_mib").unwrap();
        // Five samples of 100 and one of 0.
        assert!((state.first_minute - 500.0 / 6.0).abs() < 1e-9, "{s}");
        assert!((state.pct_per_min - 3.6).abs() < 1e-6, "{s}");
        assert!(s.violations().is_empty(), "{s}");
        let spike = |t: f64| if t == 60.0 { 600.0 } else { 100.0 + t / 60.0 };
        let s = slopes(&samples(spike, |_| 600.0));
        let rss = s.series.iter().find(|x| x.series == "rss_mib").unwrap();
        assert!(
            (rss.first_minute - (500.0 + 2.5 + 600.0) / 6.0).abs() < 1e-9,
            "{s}"
        );
    }

    /// A store's files between segment drops: 16 MiB for three samples, 0.2
    /// for three, for the whole run. Its samples' slope over 300..600 s
    /// depends on the phase (it failed at 10.6 %/min in a soak whose peaks
    /// never moved); its peaks' slope is 0. A saw-tooth whose peaks climb 6
    /// a minute still fails.
    #[test]
    fn a_saw_tooth_is_judged_by_its_peaks() {
        let tooth = |climb: f64| {
            move |t: f64| {
                let phase = ((t / 10.0) as u64 + 2) % 6;
                if phase < 3 {
                    16.0 + climb * (t - 300.0).max(0.0) / 60.0
                } else {
                    0.2
                }
            }
        };
        let s = slopes(&samples(tooth(0.0), |_| 600.0));
        let state = s.series.iter().find(|x| x.series == "state_mib").unwrap();
        assert!(state.per_min.abs() < 1e-9, "{s}");
        assert!(s.violations().is_empty(), "{s}");
        let s = slopes(&samples(tooth(6.0), |_| 600.0));
        assert!(
            s.violations()
                .iter()
                .any(|v| v.starts_with("state_mib grew")),
            "{s}"
        );
    }

    #[test]
    fn least_squares_of_a_line_is_its_slope() {
        let pts: Vec<(f64, f64)> = (0..5).map(|x| (x as f64, 3.0 * x as f64 - 2.0)).collect();
        assert!((least_squares_slope(&pts) - 3.0).abs() < 1e-12);
        assert!(least_squares_slope(&pts[..1]).is_nan());
    }
}
