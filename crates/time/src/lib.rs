//! # stoatflow-time
//!
//! Event time for stoatflow, as a pure library: no I/O, no threads. Wall time
//! comes in through a [`Clock`] so tests control it.
//!
//! A short tour:
//! - [`EventTime`] and [`WallTime`]: milliseconds since the epoch, two types
//!   that never convert silently. [`Watermark`] is a monotonic claim with an
//!   explicit "none yet" state ([`Watermark::MIN`]).
//! - [`WatermarkStrategy`]: Flink's per-source API. Its typed half assigns
//!   event time to records; its untyped half, [`SourceTimePolicy`], is what
//!   runs per partition ([`WatermarkGenerator`] for custom logic).
//! - [`WatermarkTracker`]: one generator per source partition and the one
//!   application-wide watermark: the minimum over non-idle partitions,
//!   published only when it increases. It also holds partitions for
//!   alignment, counts late arrivals and produces the `/watermarks` view
//!   ([`WatermarksSnapshot`]), which names the partition holding the
//!   watermark and why ([`WatermarkHolder`]).
//! - [`OrderedDispatch`]: merges per-partition buffers, always serving the
//!   oldest head, each partition in offset order, skipping held partitions.
//!
//! Built-in generators differ from Flink's by one millisecond: see
//! [`generator`].
//!
//! ```
//! use std::time::Duration;
//! use stoatflow_time::{EventTime, ManualClock, Clock, Offset, OrderedDispatch, SourcePartition,
//!     TrackerConfig, WallTime, Watermark, WatermarkStrategy, WatermarkTracker};
//!
//! let clock = ManualClock::new(WallTime::from_millis(0));
//! let strategy = WatermarkStrategy::<(), &str>::for_bounded_out_of_orderness(Duration::from_millis(5));
//! let mut tracker = WatermarkTracker::new(TrackerConfig::default());
//! let p0 = tracker.register(SourcePartition::new("orders", 0), strategy.policy(), clock.now())?;
//! let p1 = tracker.register(SourcePartition::new("orders", 1), strategy.policy(), clock.now())?;
//!
//! let mut dispatch = OrderedDispatch::new();
//! dispatch.push(&mut tracker, p0, Offset(0), EventTime::new(30)?, "a", clock.now())?;
//! dispatch.push(&mut tracker, p0, Offset(1), EventTime::new(40)?, "b", clock.now())?;
//! dispatch.push(&mut tracker, p1, Offset(0), EventTime::new(20)?, "c", clock.now())?;
//!
//! let order: Vec<&str> = dispatch.drain_ready(&mut tracker, clock.now()).into_iter().map(|d| d.record).collect();
//! assert_eq!(order, ["c", "a", "b"]);                 // oldest head first
//! assert_eq!(tracker.force_watermark(clock.now()), Watermark::from_millis(15)); // min(40, 20) - 5
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod clock;
mod dispatch;
pub mod generator;
mod holder;
mod instant;
mod iso;
mod partition;
mod snapshot;
mod strategy;
mod tracker;
mod watermark;

pub use clock::{Clock, ManualClock, SystemClock};
pub use dispatch::{DispatchError, Dispatched, OrderedDispatch};
pub use generator::{WatermarkGenerator, WatermarkOutput};
pub use holder::{HoldReason, WatermarkHolder, human_duration};
pub use instant::{EventTime, MAX_EVENT_TIME_MS, TimeError, WallTime, duration_ms};
pub use iso::civil_from_days;
pub use partition::{Offset, PartitionIndex, SourcePartition};
pub use snapshot::{PartitionSnapshot, WatermarksSnapshot};
pub use strategy::{
    AlignmentSpec, GeneratorFactory, GeneratorSpec, RecordTimestampExtractor, SourceTimePolicy,
    StrategyError, TimestampAssigner, TimestampExtractor, WatermarkStrategy,
};
pub use tracker::{
    Head, TrackerConfig, TrackerError, TrackerMetrics, TrackerWarning, WatermarkTracker,
};
pub use watermark::Watermark;
