//! Integration tests of the benchmark suite: each Nexmark query against a
//! straightforward reference computation on a small generated input, each
//! windowed workload against one on a small input, and a smoke run of every
//! benchmark.

mod e2e;
mod queries;
mod smoke;
mod workloads;
