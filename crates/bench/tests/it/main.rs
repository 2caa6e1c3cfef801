//! Integration tests of the benchmark suite: each Nexmark query against a
//! straightforward reference computation on a small generated input, each
//! windowed workload against one on a small input, a smoke run of every
//! benchmark, and the soak.

mod e2e;
mod queries;
mod smoke;
mod soak;
mod workloads;
