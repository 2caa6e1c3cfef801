//! One result line per run, and the peak resident set size.

use std::fmt;

/// What one run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// Query or workload name.
    pub query: String,
    /// Events pushed.
    pub events: u64,
    /// Seconds spent processing (generation excluded).
    pub seconds: f64,
    /// Cores the run used.
    pub cores: u32,
    /// Whether the stores kept changelogs (`None`: the run has no such choice).
    pub changelog: Option<bool>,
    /// Records the query emitted.
    pub outputs: u64,
    /// Peak resident set size of the process, bytes.
    pub peak_rss_bytes: Option<u64>,
    /// The most entries the query's stores held at a barrier (`None`: not a task-path run).
    pub peak_store_entries: Option<u64>,
}

impl RunReport {
    /// Events per second.
    pub fn events_per_s(&self) -> f64 {
        self.events as f64 / self.seconds
    }

    /// Events per second per core used.
    pub fn events_per_s_per_core(&self) -> f64 {
        self.events_per_s() / f64::from(self.cores.max(1))
    }
}

impl fmt::Display for RunReport {
    /// `query=q5 events=… seconds=… events_per_s=… events_per_s_per_core=… cores=… changelog=on|off|- peak_rss_mib=… peak_store_entries=… outputs=…`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rss = self.peak_rss_bytes.map_or_else(
            || "unknown".to_owned(),
            |b| format!("{:.1}", b as f64 / 1048576.0),
        );
        write!(
            f,
            "query={} events={} seconds={:.3} events_per_s={:.0} events_per_s_per_core={:.0} cores={} changelog={} peak_rss_mib={} peak_store_entries={} outputs={}",
            self.query,
            self.events,
            self.seconds,
            self.events_per_s(),
            self.events_per_s_per_core(),
            self.cores,
            match self.changelog {
                Some(true) => "on",
                Some(false) => "off",
                None => "-",
            },
            rss,
            self.peak_store_entries
                .map_or_else(|| "-".to_owned(), |n| n.to_string()),
            self.outputs
        )
    }
}

/// Peak resident set size (`VmHWM` of `/proc/self/status`), bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    status_kib("VmHWM:").map(|kib| kib * 1024)
}

/// Resident set size now (`VmRSS` of `/proc/self/status`), bytes.
pub fn rss_bytes() -> Option<u64> {
    status_kib("VmRSS:").map(|kib| kib * 1024)
}

/// The KiB figure of the `/proc/self/status` line starting with `field`.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
