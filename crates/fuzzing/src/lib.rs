//! The fuzz harness of stoatflow's decoder tests, on the stable toolchain.
//!
//! Every surface that parses bytes from outside (log frames and batches, the
//! transaction log, offset metadata, store codecs and files, the YAML
//! configuration, HTTP request heads) has a fuzz target: an ordinary `#[test]`
//! that calls [`fuzz`] with seeds built by the real encoders. [`fuzz`] feeds
//! the target arbitrary bytes and mutated seeds ([`inputs`]: flipped bits,
//! cuts, splices, dictionary tokens, and `u32::MAX`-like values written over
//! what may be a length or count field), shrinks a failure to a small input,
//! and runs in a child process whose address space is bounded ([`bounded`]),
//! so that a decoder allocating what a length field claims aborts the test
//! rather than passing on an overcommitting machine.
//!
//! Two tiers: a few thousand executions per target in every `cargo test`, and
//! [`Tier::heavy`] executions under `STOATFLOW_HEAVY_TESTS`.
//!
//! Owns the mutation, the tiers and the bounded run. Knows nothing of any
//! decoder; the targets live beside the code they fuzz.

mod bounded;
mod mutate;

pub use bounded::{ADDRESS_SPACE_LIMIT, bounded};
pub use mutate::{Mutation, apply, inputs};

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Whether the heavy tier runs (`STOATFLOW_HEAVY_TESTS` set).
#[must_use]
pub fn heavy() -> bool {
    std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some()
}

/// How many inputs a target is fed in each tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tier {
    /// In every `cargo test`: seconds at most.
    pub short: u32,
    /// Under `STOATFLOW_HEAVY_TESTS`.
    pub heavy: u32,
}

impl Tier {
    /// The tier of a pure decoder: 4,000 inputs, a million in the heavy tier.
    pub const DECODER: Tier = Tier {
        short: 4_000,
        heavy: 1_000_000,
    };

    /// The executions of the tier that runs now.
    #[must_use]
    pub fn executions(self) -> u32 {
        if heavy() { self.heavy } else { self.short }
    }
}

/// Runs the fuzz target `module::name` (`module_path!()` of the test and the
/// test function's name): `check` on [`Tier::executions`] values of
/// `strategy`, in a child process with a bounded address space. A failing
/// value is shrunk and the test fails naming it.
///
/// # Panics
/// When `check` fails or panics on some input, or the child process dies
/// (an allocation past [`ADDRESS_SPACE_LIMIT`] aborts it).
pub fn fuzz<S: Strategy>(
    module: &str,
    name: &str,
    tier: Tier,
    strategy: S,
    check: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    bounded(module, name, || {
        let executions = tier.executions();
        let mut runner = TestRunner::new(Config {
            cases: executions,
            failure_persistence: None,
            ..Config::default()
        });
        let started = std::time::Instant::now();
        if let Err(e) = runner.run(&strategy, check) {
            panic!("fuzz target {name}: {e}");
        }
        eprintln!(
            "fuzz target {name}: {executions} executions in {:.1?}",
            started.elapsed()
        );
    });
}
