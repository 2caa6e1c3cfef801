//! # stoatflow-bench
//!
//! The benchmark suite: a Nexmark event [`nexmark::Generator`] faithful to
//! the reference generator, the Nexmark [`queries`] and the windowed
//! [`workloads`] written with the public DSL, and a [`pipeline::Pipeline`] that
//! runs every sub-topology of a topology as tasks on one thread, wiring
//! repartition topics in-process (the task path: typed input, no broker).
//! [`run::run`] measures one query; the `stoatflow-bench` binary prints one
//! [`report::RunReport`] line per run. [`check`] compares the windows several
//! systems computed (`bench/compare`'s result check). [`soak`] runs the
//! end-to-end tumbling count for a long time at a steady rate and reports
//! what grows.
//!
//! ```
//! use stoatflow_bench::run::{Query, RunOptions, run};
//!
//! let report = run(Query::Q2, &RunOptions { events: 5_000, ..RunOptions::default() })?;
//! assert_eq!(report.events, 5_000);
//! println!("{report}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod check;
pub mod e2e;
pub mod e2e_queried;
pub mod e2e_queries;
mod error;
pub mod nexmark;
pub mod pipeline;
pub mod queries;
pub mod report;
pub mod restore;
pub mod run;
pub mod serdes;
pub mod soak;
pub mod workloads;
